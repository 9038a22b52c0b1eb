//! [`Engine::check_invariants`]: the structure checks and a from-scratch
//! evaluation of every effective urgency.
//!
//! The evaluation deliberately shares nothing with the chain walk: it reads
//! only the primary relations (who is blocked on what, with which enqueue
//! sequence; who owns which mutex; who helps which condvar; bases and
//! protocols), orders the tasks topologically with Kahn's algorithm (which
//! also proves the wait-for graph acyclic and measures the longest chain),
//! and evaluates `eff` in that order. The incrementally maintained values —
//! effective urgencies, waiter entries, pi_waiters, floors — are then compared
//! with it.

use crate::state::{Obj, Waiter};
use crate::{Effective, Engine, InvariantError, Protocol, TaskId, Urgency, MAX_CHAIN_DEPTH};

fn fail<T>(msg: String) -> Result<T, InvariantError> {
    Err(InvariantError(msg))
}

/// Every object, as the engine's internal key.
fn objects(e: &Engine) -> impl Iterator<Item = Obj> + '_ {
    (0..e.mutexes.len())
        .map(|i| Obj::Mutex(crate::MutexId(i as u32)))
        .chain((0..e.conds.len()).map(|i| Obj::Cond(crate::CondId(i as u32))))
}

pub(crate) fn check(e: &Engine) -> Result<(), InvariantError> {
    check_structure(e)?;
    check_effective(e)
}

fn check_structure(e: &Engine) -> Result<(), InvariantError> {
    if !e.scratch.worklist.is_empty() {
        return fail("the chain walk's worklist is not empty between operations".into());
    }
    if let Some(i) = (0..e.tasks.len()).find(|&i| e.scratch.queued[i] || e.scratch.recorded[i]) {
        return fail(format!("T{i}: stale chain-walk marks between operations"));
    }
    let live = |t: TaskId| e.tasks.get(t.0 as usize).is_some_and(|ts| ts.alive);

    // Dead tasks hold nothing.
    for (i, ts) in e.tasks.iter().enumerate() {
        if !ts.alive
            && (ts.blocked.is_some()
                || !ts.owned.is_empty()
                || !ts.helps.is_empty()
                || !ts.pi_waiters.is_empty())
        {
            return fail(format!("removed task T{i} still blocked/owning/helping"));
        }
    }

    // Wait queues: live waiters blocked on this object, with the task's
    // sequence and effective value, strictly in (urgency desc, seq asc)
    // order; sequence numbers unique across the engine.
    let mut seqs: Vec<u64> = Vec::new();
    let mut listed = vec![0u32; e.tasks.len()];
    for o in objects(e) {
        let q = &e.queue(o).waiters;
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
            if w.eff != ts.eff {
                return fail(format!(
                    "{o:?}: waiter {:?} entry carries {:?}, task is at {:?}",
                    w.task, w.eff, ts.eff
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

    // Owners.
    for (i, ms) in e.mutexes.iter().enumerate() {
        if let Some(t) = ms.owner {
            if !live(t) {
                return fail(format!("M{i}: owner {t:?} is not a live task"));
            }
            let n = e.tasks[t.0 as usize]
                .owned
                .iter()
                .filter(|m| m.0 as usize == i)
                .count();
            if n != 1 {
                return fail(format!("M{i}: owner {t:?} lists it {n} times"));
            }
        }
    }
    for (i, ts) in e.tasks.iter().enumerate() {
        for m in &ts.owned {
            if e.mutexes.get(m.0 as usize).and_then(|ms| ms.owner) != Some(TaskId(i as u32)) {
                return fail(format!("T{i} lists {m:?} as owned, its owner differs"));
            }
        }
    }

    // Helpers.
    for (i, cs) in e.conds.iter().enumerate() {
        for (k, h) in cs.helpers.iter().enumerate() {
            if !live(*h) {
                return fail(format!("C{i}: helper {h:?} is not a live task"));
            }
            if cs.helpers[..k].contains(h) {
                return fail(format!("C{i}: helper {h:?} listed twice"));
            }
            let n = e.tasks[h.0 as usize]
                .helps
                .iter()
                .filter(|c| c.0 as usize == i)
                .count();
            if n != 1 {
                return fail(format!("C{i}: helper {h:?} lists it {n} times"));
            }
        }
    }
    for (i, ts) in e.tasks.iter().enumerate() {
        for c in &ts.helps {
            let ok = e
                .conds
                .get(c.0 as usize)
                .is_some_and(|cs| cs.helpers.contains(&TaskId(i as u32)));
            if !ok {
                return fail(format!("T{i} lists {c:?} as helped, the condvar does not"));
            }
        }
    }

    // pi_waiters and floors.
    let mut expected: Vec<Obj> = Vec::new();
    let mut actual: Vec<Obj> = Vec::new();
    for (i, ts) in e.tasks.iter().enumerate() {
        if !ts.alive {
            continue;
        }
        expected.clear();
        let mut floor: Option<Urgency> = None;
        for &m in &ts.owned {
            let ms = &e.mutexes[m.0 as usize];
            match ms.protocol {
                Protocol::Inherit if !ms.queue.waiters.is_empty() => {
                    expected.push(Obj::Mutex(m));
                }
                Protocol::Ceiling(c) => floor = Some(floor.map_or(c, |f: Urgency| f.max(c))),
                _ => {}
            }
        }
        for &c in &ts.helps {
            if !e.conds[c.0 as usize].queue.waiters.is_empty() {
                expected.push(Obj::Cond(c));
            }
        }
        actual.clear();
        actual.extend_from_slice(&ts.pi_waiters);
        let key = |o: &Obj| match o {
            Obj::Mutex(m) => (0, m.0),
            Obj::Cond(c) => (1, c.0),
        };
        expected.sort_by_key(key);
        actual.sort_by_key(key);
        if expected != actual {
            return fail(format!(
                "T{i}: pi_waiters {actual:?}, expected {expected:?}"
            ));
        }
        if floor != ts.floor {
            return fail(format!("T{i}: floor {:?}, expected {floor:?}", ts.floor));
        }
    }
    Ok(())
}

/// Index of an object in a flat per-object table: mutexes, then condvars.
fn slot(e: &Engine, o: Obj) -> usize {
    match o {
        Obj::Mutex(m) => m.0 as usize,
        Obj::Cond(c) => e.mutexes.len() + c.0 as usize,
    }
}

fn check_effective(e: &Engine) -> Result<(), InvariantError> {
    let n = e.tasks.len();
    // The primary relations, indexed: waiters per object (from the tasks'
    // side, in task order), mutexes owned and condvars helped per task (from
    // the objects' side).
    let mut waiters: Vec<Vec<TaskId>> = vec![Vec::new(); e.mutexes.len() + e.conds.len()];
    let mut owns: Vec<Vec<usize>> = vec![Vec::new(); n];
    let mut helps: Vec<Vec<usize>> = vec![Vec::new(); n];
    for (i, ts) in e.tasks.iter().enumerate() {
        if let (true, Some(o)) = (ts.alive, ts.blocked) {
            waiters[slot(e, o)].push(TaskId(i as u32));
        }
    }
    for (i, ms) in e.mutexes.iter().enumerate() {
        if let Some(t) = ms.owner {
            owns[t.0 as usize].push(i);
        }
    }
    for (i, cs) in e.conds.iter().enumerate() {
        for h in &cs.helpers {
            helps[h.0 as usize].push(i);
        }
    }
    // Task-level edges w → u (u a target of w's object) and in-degrees.
    let mut indeg = vec![0usize; n];
    let mut out: Vec<Vec<TaskId>> = vec![Vec::new(); n];
    for (i, ts) in e.tasks.iter().enumerate() {
        if let (true, Some(o)) = (ts.alive, ts.blocked) {
            let targets: &[TaskId] = match o {
                Obj::Mutex(m) => e.mutexes[m.0 as usize].owner.as_slice(),
                Obj::Cond(c) => &e.conds[c.0 as usize].helpers,
            };
            for &u in targets {
                out[i].push(u);
                indeg[u.0 as usize] += 1;
            }
        }
    }
    // Kahn: a task is evaluated after every task upstream of it.
    let mut order: Vec<TaskId> = Vec::with_capacity(n);
    let mut ready: Vec<TaskId> = (0..n)
        .filter(|&i| e.tasks[i].alive && indeg[i] == 0)
        .map(|i| TaskId(i as u32))
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

    // Evaluate in topological order.
    let mut eff: Vec<Option<Effective>> = vec![None; n];
    for &u in &order {
        let ui = u.0 as usize;
        let ts = &e.tasks[ui];
        let mut urgency = ts.base;
        for &mi in &owns[ui] {
            if let Protocol::Ceiling(c) = e.mutexes[mi].protocol {
                urgency = urgency.max(c);
            }
        }
        let mut best = Effective { urgency, donor: u };
        let mut best_seq: Option<u64> = None;
        let donating = owns[ui]
            .iter()
            .copied()
            .filter(|&mi| e.mutexes[mi].protocol == Protocol::Inherit)
            .chain(helps[ui].iter().map(|&ci| e.mutexes.len() + ci));
        for o in donating {
            // Top waiter: greatest effective urgency, earliest enqueued.
            let mut top: Option<(Effective, u64)> = None;
            for w in &waiters[o] {
                let Some(we) = eff[w.0 as usize] else {
                    return fail(format!("{w:?} evaluated after {u:?}"));
                };
                let seq = e.tasks[w.0 as usize].seq;
                let wins = match top {
                    None => true,
                    Some((te, ts)) => {
                        we.urgency > te.urgency || (we.urgency == te.urgency && seq < ts)
                    }
                };
                if wins {
                    top = Some((we, seq));
                }
            }
            if let Some((te, seq)) = top {
                let wins = te.urgency > best.urgency
                    || (te.urgency == best.urgency && best_seq.is_some_and(|s| seq < s));
                if wins {
                    best = te;
                    best_seq = Some(seq);
                }
            }
        }
        if best != ts.eff {
            return fail(format!(
                "{u:?}: effective {:?}, from scratch {best:?}",
                ts.eff
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
        e.tasks[a.0 as usize].eff.urgency = Urgency::fixed(10);
        let err = e.check_invariants().unwrap_err();
        assert!(err.0.contains("TaskId(0)"), "{err}");
    }

    #[test]
    fn detects_a_missing_pi_waiters_entry() {
        let mut e = Engine::new();
        e.set_debug_checks(false);
        let a = e.add_task(Urgency::fixed(10));
        let b = e.add_task(Urgency::fixed(50));
        let m = e.add_mutex(Protocol::Inherit);
        e.lock(a, m).unwrap();
        e.lock(b, m).unwrap();
        e.tasks[a.0 as usize].pi_waiters.clear();
        let err = e.check_invariants().unwrap_err();
        assert!(err.0.contains("pi_waiters"), "{err}");
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
        e.check_block(b, crate::state::Obj::Mutex(m1)).unwrap_err();
        e.add_edge(b, crate::state::Obj::Mutex(m1));
        let err = e.check_invariants().unwrap_err();
        assert!(err.0.contains("cycle"), "{err}");
    }
}
