//! [`Engine::check_invariants`]: the structure checks and a from-scratch
//! evaluation of every effective urgency.
//!
//! The evaluation deliberately shares nothing with the chain walk: it reads
//! only the primary relations (who is blocked on what, with which enqueue
//! sequence; which tasks each object targets; each object's spec and when
//! its floor was set; bases), orders the tasks topologically with Kahn's
//! algorithm (which also proves the wait-for graph acyclic and measures the
//! longest chain), and evaluates `eff` in that order. The incrementally
//! maintained values — effective urgencies, waiter entries, inputs — are
//! then compared with it.

use smallvec::SmallVec;

use crate::state::Waiter;
use crate::{ContextId, Effective, Engine, InvariantError, ObjId, Source, TaskId, MAX_CHAIN_DEPTH};

fn fail<T>(msg: String) -> Result<T, InvariantError> {
    Err(InvariantError(msg))
}

pub(crate) fn check(e: &Engine) -> Result<(), InvariantError> {
    check_slots(e)?;
    check_structure(e)?;
    check_targets(e)?;
    check_contexts(e)?;
    check_effective(e)
}

/// Free slots: every removed task's and object's slot is on its free list
/// exactly once (unless its generations ran out: retired), holds nothing,
/// and no live slot is on a free list.
fn check_slots(e: &Engine) -> Result<(), InvariantError> {
    let mut free_task = vec![0u32; e.tasks.len()];
    for &i in &e.free_tasks {
        match free_task.get_mut(i as usize) {
            Some(n) => *n += 1,
            None => return fail(format!("free task slot {i} is beyond the arena")),
        }
    }
    for (i, ts) in e.tasks.iter().enumerate() {
        let want = u32::from(!ts.alive && ts.gen != u32::MAX);
        if !ts.alive && ts.gen == u32::MAX && free_task[i] == 0 {
            continue;
        }
        if free_task[i] != want {
            return fail(format!(
                "task slot {i} (alive {}) is on the free list {} times",
                ts.alive, free_task[i]
            ));
        }
    }
    let mut free_obj = vec![0u32; e.objs.len()];
    for &i in &e.free_objs {
        match free_obj.get_mut(i as usize) {
            Some(n) => *n += 1,
            None => return fail(format!("free object slot {i} is beyond the arena")),
        }
    }
    for (i, os) in e.objs.iter().enumerate() {
        if !os.alive && (!os.targets.is_empty() || !os.queue.is_empty()) {
            return fail(format!(
                "removed object slot {i} still has targets or waiters"
            ));
        }
        let want = u32::from(!os.alive && os.gen != u32::MAX);
        if !os.alive && os.gen == u32::MAX && free_obj[i] == 0 {
            continue;
        }
        if free_obj[i] != want {
            return fail(format!(
                "object slot {i} (alive {}) is on the free list {} times",
                os.alive, free_obj[i]
            ));
        }
    }
    Ok(())
}

fn check_structure(e: &Engine) -> Result<(), InvariantError> {
    if !e.scratch.worklist.is_empty() || !e.scratch.changes.is_empty() || e.scratch.spilled {
        return fail(
            "the chain walk's worklist or changes are not empty between operations".into(),
        );
    }
    if let Some(i) = (0..e.tasks.len()).find(|&i| e.scratch.queued[i] || e.scratch.recorded[i]) {
        return fail(format!("T{i}: stale chain-walk marks between operations"));
    }
    if e.scratch.cut.is_some() {
        return fail("a probe's cut is left set between operations".into());
    }
    let live = |t: TaskId| {
        e.tasks
            .get(t.0 as usize)
            .is_some_and(|ts| ts.alive && ts.gen == t.1)
    };
    let live_obj = |o: ObjId| {
        e.objs
            .get(o.0 as usize)
            .is_some_and(|os| os.alive && os.gen == o.1)
    };

    // Dead tasks hold nothing; live ones name live objects only.
    for (i, ts) in e.tasks.iter().enumerate() {
        if !ts.alive {
            continue;
        }
        let named = ts.blocked.iter().chain(&ts.targeted).chain(&ts.inputs);
        if let Some(o) = named.copied().find(|&o| !live_obj(o)) {
            return fail(format!("T{i} names {o:?}, not a live object"));
        }
    }
    for (i, ts) in e.tasks.iter().enumerate() {
        if !ts.alive && (ts.blocked.is_some() || !ts.targeted.is_empty() || !ts.inputs.is_empty()) {
            return fail(format!("removed task T{i} still blocked or targeted"));
        }
    }

    // Wait queues: live waiters blocked on this object, with the task's
    // sequence and effective value, strictly in (urgency desc, seq asc)
    // order; sequence numbers unique across the engine.
    let mut seqs: Vec<u64> = Vec::new();
    let mut listed = vec![0u32; e.tasks.len()];
    for (oi, os) in e.objs.iter().enumerate() {
        let o = ObjId(oi as u32, os.gen);
        let q = &os.queue.waiters;
        for (k, w) in q.iter().enumerate() {
            if !live(w.task) {
                return fail(format!("{o:?}: waiter {:?} is not a live task", w.task));
            }
            let ts = &e.tasks[w.task.0 as usize];
            if ts.blocked != Some(o) {
                return fail(format!(
                    "{o:?}: waiter {:?} is blocked on {:?}",
                    w.task, ts.blocked
                ));
            }
            if w.seq != ts.seq || w.seq >= e.next_seq {
                return fail(format!(
                    "{o:?}: waiter {:?} has sequence {} (task says {}, next {})",
                    w.task, w.seq, ts.seq, e.next_seq
                ));
            }
            if w.key.urgency() != ts.eff.key.urgency() {
                return fail(format!(
                    "{o:?}: waiter {:?} entry carries {:?}, task is at {:?}",
                    w.task,
                    w.key.urgency(),
                    e.public(ts.eff)
                ));
            }
            seqs.push(w.seq);
            listed[w.task.0 as usize] += 1;
            if k > 0 && !Waiter::before(&q[k - 1], w) {
                return fail(format!(
                    "{o:?}: waiters out of order at {k}: {:?} then {:?}",
                    q[k - 1],
                    w
                ));
            }
        }
    }
    seqs.sort_unstable();
    if let Some(w) = seqs.windows(2).find(|w| w[0] == w[1]) {
        return fail(format!("sequence {} used twice", w[0]));
    }
    // The count of blocked tasks the probes rely on.
    let blocked = e.tasks.iter().filter(|ts| ts.blocked.is_some()).count();
    if blocked != e.blocked_count {
        return fail(format!(
            "{blocked} tasks are blocked but the engine counts {}",
            e.blocked_count
        ));
    }
    // Every blocked task is listed exactly once (entries were checked to
    // name tasks blocked on that very object), every other task nowhere.
    for (i, ts) in e.tasks.iter().enumerate() {
        let expected = u32::from(ts.blocked.is_some());
        if listed[i] != expected {
            return fail(format!(
                "T{i} blocked on {:?} but listed {} times in wait queues",
                ts.blocked, listed[i]
            ));
        }
    }
    Ok(())
}

/// Targets agree on both sides and respect each spec's limit; inputs are
/// exactly the contributing objects a task is a target of.
fn check_targets(e: &Engine) -> Result<(), InvariantError> {
    let live = |t: TaskId| {
        e.tasks
            .get(t.0 as usize)
            .is_some_and(|ts| ts.alive && ts.gen == t.1)
    };
    for (oi, os) in e.objs.iter().enumerate() {
        let o = ObjId(oi as u32, os.gen);
        if let Some(max) = os.spec.max_targets {
            if os.targets.len() > usize::from(max) {
                return fail(format!("{o:?}: {} targets, limit {max}", os.targets.len()));
            }
        }
        if os.joined.len() != os.targets.len() {
            return fail(format!(
                "{o:?}: {} join stamps for {} targets",
                os.joined.len(),
                os.targets.len()
            ));
        }
        for (k, t) in os.targets.iter().enumerate() {
            if !live(*t) {
                return fail(format!("{o:?}: target {t:?} is not a live task"));
            }
            if os.targets[..k].contains(t) {
                return fail(format!("{o:?}: target {t:?} listed twice"));
            }
            let n = e.tasks[t.0 as usize]
                .targeted
                .iter()
                .filter(|x| **x == o)
                .count();
            if n != 1 {
                return fail(format!("{o:?}: target {t:?} lists it {n} times"));
            }
        }
    }
    let mut expected: Vec<ObjId> = Vec::new();
    let mut actual: Vec<ObjId> = Vec::new();
    for (i, ts) in e.tasks.iter().enumerate() {
        let t = TaskId(i as u32, ts.gen);
        for o in &ts.targeted {
            let ok = e
                .objs
                .get(o.0 as usize)
                .is_some_and(|os| os.targets.contains(&t));
            if !ok {
                return fail(format!(
                    "{t:?} lists {o:?} as targeting it, the object does not"
                ));
            }
        }
        expected.clear();
        expected.extend(ts.targeted.iter().copied().filter(|o| {
            let os = &e.objs[o.0 as usize];
            os.spec.floor.is_some() || (os.spec.donates && !os.queue.waiters.is_empty())
        }));
        actual.clear();
        actual.extend_from_slice(&ts.inputs);
        expected.sort_unstable();
        actual.sort_unstable();
        if expected != actual {
            return fail(format!("{t:?}: inputs {actual:?}, expected {expected:?}"));
        }
    }
    Ok(())
}

/// Contexts: each live task's context is live and bound to it, each live
/// context's task is live and has it (so a context is bound to at most one
/// task and a task to at most one context); removed contexts are unbound,
/// hold no reservation, and are on the free list exactly once (unless
/// retired); a throttled context has a reservation; reservations and
/// inherited parameters are valid.
fn check_contexts(e: &Engine) -> Result<(), InvariantError> {
    for (i, ts) in e.tasks.iter().enumerate().filter(|(_, ts)| ts.alive) {
        if let Some(c) = ts.context {
            match e.contexts.get(c.0 as usize) {
                Some(cs)
                    if cs.alive && cs.gen == c.1 && cs.bound == Some(TaskId(i as u32, ts.gen)) => {}
                _ => return fail(format!("T{i}: context {c:?} is not bound to it")),
            }
        }
    }
    let mut free = vec![0u32; e.contexts.len()];
    for &i in &e.free_contexts {
        match free.get_mut(i as usize) {
            Some(n) => *n += 1,
            None => return fail(format!("free context slot {i} is beyond the arena")),
        }
    }
    for (ci, cs) in e.contexts.iter().enumerate() {
        let id = ContextId(ci as u32, cs.gen);
        if !cs.alive {
            if cs.bound.is_some() || cs.reservation.is_some() {
                return fail(format!("removed context slot {ci} is bound or reserved"));
            }
            if cs.gen == u32::MAX && free[ci] == 0 {
                continue;
            }
        }
        if free[ci] != u32::from(!cs.alive) {
            return fail(format!(
                "context slot {ci} (alive {}) is on the free list {} times",
                cs.alive, free[ci]
            ));
        }
        if let Some(t) = cs.bound {
            let ok = e
                .tasks
                .get(t.0 as usize)
                .is_some_and(|ts| ts.alive && ts.gen == t.1 && ts.context == Some(id));
            if !ok {
                return fail(format!("{id:?}: bound to {t:?}, which does not have it"));
            }
        }
        if cs.budget.throttled && cs.reservation.is_none() {
            return fail(format!("{id:?}: throttled without a reservation"));
        }
        if [cs.reservation, cs.inherited]
            .iter()
            .flatten()
            .any(|r| !r.is_valid())
        {
            return fail(format!("{id:?}: an invalid reservation"));
        }
    }
    Ok(())
}

/// The primary relations, indexed: waiters per object (from the tasks'
/// side, in task order), objects targeting each task (from the objects'
/// side).
struct Relations {
    waiters: Vec<Vec<TaskId>>,
    targeting: Vec<Vec<usize>>,
}

impl Relations {
    fn of(e: &Engine) -> Relations {
        let mut r = Relations {
            waiters: vec![Vec::new(); e.objs.len()],
            targeting: vec![Vec::new(); e.tasks.len()],
        };
        for (i, ts) in e.tasks.iter().enumerate() {
            if let (true, Some(o)) = (ts.alive, ts.blocked) {
                r.waiters[o.0 as usize].push(TaskId(i as u32, ts.gen));
            }
        }
        for (oi, os) in e.objs.iter().enumerate() {
            for t in &os.targets {
                r.targeting[t.0 as usize].push(oi);
            }
        }
        r
    }
}

/// The live tasks in topological order of the wait-for graph (Kahn: a task
/// after every task upstream of it); refused if the graph has a cycle or a
/// chain longer than [`MAX_CHAIN_DEPTH`].
fn topological_order(e: &Engine) -> Result<Vec<TaskId>, InvariantError> {
    let n = e.tasks.len();
    // Task-level edges w → u (u a target of w's object) and in-degrees.
    let mut indeg = vec![0usize; n];
    let mut out: Vec<Vec<TaskId>> = vec![Vec::new(); n];
    for (i, ts) in e.tasks.iter().enumerate() {
        if let (true, Some(o)) = (ts.alive, ts.blocked) {
            for &u in &e.objs[o.0 as usize].targets {
                out[i].push(u);
                indeg[u.0 as usize] += 1;
            }
        }
    }
    let mut order: Vec<TaskId> = Vec::with_capacity(n);
    let mut ready: Vec<TaskId> = (0..n)
        .filter(|&i| e.tasks[i].alive && indeg[i] == 0)
        .map(|i| TaskId(i as u32, e.tasks[i].gen))
        .collect();
    // Longest chain ending at each task, in blocked tasks strictly upstream.
    let mut upstream = vec![0usize; n];
    let mut longest = 0usize;
    while let Some(w) = ready.pop() {
        order.push(w);
        let wi = w.0 as usize;
        if e.tasks[wi].blocked.is_some() {
            longest = longest.max(upstream[wi] + 1);
        }
        for &u in &out[wi] {
            let ui = u.0 as usize;
            upstream[ui] = upstream[ui].max(upstream[wi] + 1);
            indeg[ui] -= 1;
            if indeg[ui] == 0 {
                ready.push(u);
            }
        }
    }
    let alive = e.tasks.iter().filter(|ts| ts.alive).count();
    if order.len() != alive {
        let stuck: Vec<usize> = (0..n)
            .filter(|&i| e.tasks[i].alive && indeg[i] > 0)
            .collect();
        return fail(format!(
            "the wait-for graph has a cycle through tasks {stuck:?}"
        ));
    }
    if longest > MAX_CHAIN_DEPTH {
        return fail(format!(
            "a chain of {longest} blocked tasks exceeds {MAX_CHAIN_DEPTH}"
        ));
    }
    Ok(order)
}

/// A candidate for `eff` with its tie-break rank: (class, sequence).
type Ranked = (Effective, (u8, u64));

/// What object `oi` contributes to its target `u`, from scratch, with the
/// rank that breaks ties: its floor (class 1, by how long it has applied to
/// `u`) and, if it donates, its top waiter (class 2, by enqueue order; the
/// waiters' values are already in `eff`).
fn contributions(
    e: &Engine,
    rel: &Relations,
    eff: &[Option<Effective>],
    oi: usize,
    u: TaskId,
) -> Result<SmallVec<[Ranked; 2]>, InvariantError> {
    let os = &e.objs[oi];
    let mut out = SmallVec::new();
    if let Some(f) = os.spec.floor {
        let floor = Effective {
            urgency: f,
            source: Source::Floor {
                object: ObjId(oi as u32, os.gen),
                task: u,
            },
        };
        // Applying since the later of its set and the target's join.
        let k = os
            .targets
            .iter()
            .position(|x| *x == u)
            .map_or(0, |i| os.joined[i]);
        out.push((floor, (1, k.max(os.floor_seq))));
    }
    if os.spec.donates {
        // Top waiter: greatest effective urgency, earliest enqueued.
        let mut top: Option<(Effective, u64)> = None;
        for w in &rel.waiters[oi] {
            let Some(we) = eff[w.0 as usize] else {
                return fail(format!("{w:?} evaluated after {u:?}"));
            };
            let seq = e.tasks[w.0 as usize].seq;
            let wins = match top {
                None => true,
                Some((te, ts)) => we.urgency > te.urgency || (we.urgency == te.urgency && seq < ts),
            };
            if wins {
                top = Some((we, seq));
            }
        }
        if let Some((te, seq)) = top {
            out.push((te, (2, seq)));
        }
    }
    Ok(out)
}

/// Evaluates every effective urgency in topological order and compares it
/// with the incrementally maintained one. A candidate wins over the best so
/// far if more urgent, or equally urgent and earlier in (class, sequence):
/// the base (class 0) first.
fn check_effective(e: &Engine) -> Result<(), InvariantError> {
    let rel = Relations::of(e);
    let mut eff: Vec<Option<Effective>> = vec![None; e.tasks.len()];
    for u in topological_order(e)? {
        let ui = u.0 as usize;
        let ts = &e.tasks[ui];
        let mut best = Effective {
            urgency: ts.base,
            source: Source::Task(u),
        };
        let mut key = (0u8, 0u64);
        for &oi in &rel.targeting[ui] {
            for (c, k) in contributions(e, &rel, &eff, oi, u)? {
                if c.urgency > best.urgency || (c.urgency == best.urgency && k < key) {
                    best = c;
                    key = k;
                }
            }
        }
        if best != e.public(ts.eff) {
            return fail(format!(
                "{u:?}: effective {:?}, from scratch {best:?}",
                e.public(ts.eff)
            ));
        }
        eff[ui] = Some(best);
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use crate::{Engine, Protocol, Urgency};

    #[test]
    fn detects_a_corrupted_effective_value() {
        let mut e = Engine::new();
        e.set_debug_checks(false);
        let a = e.add_task(Urgency::fixed(10));
        let b = e.add_task(Urgency::fixed(50));
        let m = e.add_mutex(Protocol::Inherit);
        e.lock(a, m).unwrap();
        e.lock(b, m).unwrap();
        assert_eq!(e.check_invariants(), Ok(()));
        e.tasks[a.0 as usize].eff.key = crate::packed::Key::of(Urgency::fixed(10));
        let err = e.check_invariants().unwrap_err();
        assert!(err.0.contains("TaskId(0)"), "{err}");
    }

    #[test]
    fn detects_a_missing_input() {
        let mut e = Engine::new();
        e.set_debug_checks(false);
        let a = e.add_task(Urgency::fixed(10));
        let b = e.add_task(Urgency::fixed(50));
        let m = e.add_mutex(Protocol::Inherit);
        e.lock(a, m).unwrap();
        e.lock(b, m).unwrap();
        e.tasks[a.0 as usize].inputs.clear();
        let err = e.check_invariants().unwrap_err();
        assert!(err.0.contains("inputs"), "{err}");
    }

    #[test]
    fn detects_a_cycle_injected_behind_the_engine() {
        let mut e = Engine::new();
        e.set_debug_checks(false);
        let a = e.add_task(Urgency::fixed(10));
        let b = e.add_task(Urgency::fixed(20));
        let m1 = e.add_mutex(Protocol::None);
        let m2 = e.add_mutex(Protocol::None);
        e.lock(a, m1).unwrap();
        e.lock(b, m2).unwrap();
        e.lock(a, m2).unwrap();
        // Force b onto m1 without the engine's cycle check.
        e.check_block(b, m1.into()).unwrap_err();
        e.add_edge(b, m1.into());
        let err = e.check_invariants().unwrap_err();
        assert!(err.0.contains("cycle"), "{err}");
    }
}
