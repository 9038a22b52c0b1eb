//! Helper threads: request/reply over condition variables and queues read
//! as the RPCs of the PI-CV paper's §5 (docs/ANALYSIS.md §4.1).
//!
//! A **helper thread** is a `SCHED_FIFO`/`SCHED_RR` task of one thread,
//! pinned to one CPU, with no `timer` and at least one *block* — a `wait`
//! on a condition variable or a `pop` of a queue. Its events, in order
//! (cyclically when the task repeats), are cut at each block:
//!
//! - the **start-up**: from its start to its first block;
//! - a **serve** per block: from the block's return to the next block. The
//!   object it blocked on is a *request* object; the conds it signals or
//!   broadcasts and the queues it pushes in the serve are its *replies*.
//!   Every serve must reply, but
//! - the **exit**: of a task that does not repeat (`loop` 1), the events
//!   after its last block, which run once after its last request.
//!
//! A periodic job's `wait` on a cond, or `pop` of a queue, that one helper
//! thread `H` alone signals/broadcasts or pushes is a **call** to the server
//! `H` with `D` = `H`'s start-up + `H`'s exit + the largest serve of `H`
//! that replies that object (a request that comes before `H` first blocks
//! waits for the start-up; the once-only segments are charged to every
//! call, which covers them whenever they run). `H`'s critical sections in
//! those segments are critical sections of the calling job (the work is
//! the job's, done by `H` on its behalf).
//!
//! With PI-CV the call inherits (`Server::inherits`) when every cond `H`
//! replies on names it in its `helpers` (a queue's poppers always lend to
//! its pushers); a reply cond naming other tasks too is refused then.
//!
//! A signal/broadcast to one of `H`'s request conds, or a push to one of
//! its request queues, is a *request*: in a periodic job each request must
//! be answered by a later call to `H` in the same job (its work is then
//! paid by that call), except the requests after the last `timer` of a task
//! that does not repeat (its shutdown: they wake `H`'s exit; for a helper
//! that does not repeat, its serves may not outnumber the run's calls).

use std::collections::HashMap;

use heir_scenario::{Event, EventKind, Policy, ResourceKind, Scenario, Task as ScTask};

use super::{
    at_event, at_task, one_cpu, resource_name, single_mode, unroll, unsupported, us,
    MAX_UNROLLED_EVENTS,
};
use crate::error::{AnalysisError, Location};
use crate::model::{MutexProtocol, Nanos, Section, Server};

/// A segment of a helper thread: its start-up, a serve or its exit.
#[derive(Clone, Debug, Default)]
pub(super) struct Segment {
    pub work: Nanos,
    /// Its critical sections (parents index this list).
    pub sections: Vec<Section>,
    /// Resources (conds, queues) it signals, broadcasts or pushes.
    pub replies: Vec<usize>,
}

/// One helper thread.
#[derive(Clone, Debug)]
pub(super) struct Helper {
    /// Scenario task index.
    pub task: usize,
    /// Index into the task set's servers.
    pub server: usize,
    pub startup: Segment,
    pub exit: Segment,
    /// Its serves: of one pass when it repeats, else of the whole run.
    pub serves: Vec<Segment>,
    /// Whether its events repeat (`loop` other than 1).
    pub repeats: bool,
}

impl Helper {
    /// `D` of a call answered by reply `r`, and the sections it charges to
    /// the calling job; `None` when no serve replies `r`.
    pub fn call_of(&self, r: usize) -> Option<(Nanos, Vec<Section>)> {
        let serving: Vec<&Segment> = self
            .serves
            .iter()
            .filter(|s| s.replies.contains(&r))
            .collect();
        let serve = serving.iter().map(|s| s.work).max()?;
        let d = self
            .startup
            .work
            .saturating_add(self.exit.work)
            .saturating_add(serve);
        let mut sections: Vec<Section> = Vec::new();
        for seg in [&self.startup, &self.exit].into_iter().chain(serving) {
            let off = sections.len();
            sections.extend(seg.sections.iter().map(|s| Section {
                mutex: s.mutex,
                length: s.length,
                parent: s.parent.map(|p| p + off),
            }));
        }
        Some((d, sections))
    }
}

/// The helper threads of a scenario.
#[derive(Default)]
pub(super) struct Helpers {
    pub list: Vec<Helper>,
    /// Scenario task → index into `list`.
    pub of_task: HashMap<usize, usize>,
    /// Reply object (resource) → helper (index into `list`).
    pub reply_of: HashMap<usize, usize>,
    /// Request object (resource) → helper.
    pub request_of: HashMap<usize, usize>,
    /// Refusals that hold only with PI-CV on (the waits would lend where
    /// the model does not follow), with where.
    pub pi_cv_refusal: Option<AnalysisError>,
}

/// Whether `t` is analysed as a helper thread: real-time fixed priority,
/// no timer, at least one block, threads to run.
pub(super) fn is_helper_candidate(t: &ScTask) -> bool {
    matches!(t.sched.policy, Policy::Fifo | Policy::Rr)
        && t.instance > 0
        && !super::all_events(t).any(|e| matches!(e.kind, EventKind::Timer { .. }))
        && super::all_events(t)
            .any(|e| matches!(e.kind, EventKind::Wait { .. } | EventKind::Pop(_)))
}

/// "task X has no timer, so it is analysed as a helper thread …: " + why.
fn rule(t: &ScTask, why: impl std::fmt::Display) -> String {
    format!(
        "task {} has no \"timer\" (a periodic task needs one) and blocks, so it is analysed as a helper thread (block on a cond or queue → work → signal/broadcast/push, docs/ANALYSIS.md §4.1), but {why}",
        t.name
    )
}

impl Helpers {
    /// Finds and cuts the helper threads; their servers are numbered from
    /// `first_server` in file order.
    pub fn of(
        sc: &Scenario,
        is_server: &[bool],
        mutexes: &HashMap<usize, usize>,
        first_server: usize,
    ) -> Result<(Helpers, Vec<Server>), AnalysisError> {
        let mut hs = Helpers::default();
        let mut servers = Vec::new();
        for (ti, t) in sc.tasks.iter().enumerate() {
            if is_server[ti] || !is_helper_candidate(t) {
                continue;
            }
            if t.instance > 1 {
                return Err(unsupported(
                    at_task(t),
                    rule(t, format!("it has {} instances: a pool of helpers is not analysed (the PI-CV paper's §5 has one server per endpoint)", t.instance)),
                ));
            }
            single_mode(t)?;
            let cpu = one_cpu(t)?;
            let (startup, serves, exit) = cut(sc, t, mutexes)?;
            let k = hs.list.len();
            for seg in &serves {
                for &r in &seg.replies {
                    hs.claim_reply(sc, t, r, k)?;
                }
            }
            for &r in startup.replies.iter().chain(&exit.replies) {
                hs.claim_reply(sc, t, r, k)?;
            }
            for e in super::all_events(t) {
                let r = match e.kind {
                    EventKind::Wait { cond, .. } => cond.0,
                    EventKind::Pop(q) => q.0,
                    _ => continue,
                };
                if let Some(&other) = hs.request_of.get(&r) {
                    if other != k {
                        let name = &sc.tasks[hs.list[other].task].name;
                        return Err(unsupported(
                            at_event(e),
                            rule(t, format!("{} is also waited on by helper thread {name}: a request object with several helpers is not analysed", resource_name(sc, r))),
                        ));
                    }
                }
                hs.request_of.insert(r, k);
            }
            hs.of_task.insert(ti, k);
            hs.list.push(Helper {
                task: ti,
                server: first_server + servers.len(),
                startup,
                exit,
                serves,
                repeats: t.loops != Some(1),
            });
            servers.push(Server {
                name: t.name.clone(),
                cpu,
                priority: t.sched.priority,
                inherits: true,
            });
        }
        hs.check_objects(sc)?;
        for (k, server) in servers.iter_mut().enumerate() {
            server.inherits = hs.inherits(sc, k);
        }
        Ok((hs, servers))
    }

    /// Records that helper `k` (task `t`) replies on `r`.
    fn claim_reply(
        &mut self,
        sc: &Scenario,
        t: &ScTask,
        r: usize,
        k: usize,
    ) -> Result<(), AnalysisError> {
        if let Some(&other) = self.reply_of.get(&r) {
            if other != k {
                let name = &sc.tasks[self.list[other].task].name;
                return Err(unsupported(
                    at_task(t),
                    rule(t, format!("{} is also signalled or pushed by helper thread {name}: a reply with several helpers is not analysed", resource_name(sc, r))),
                ));
            }
        }
        self.reply_of.insert(r, k);
        Ok(())
    }

    /// Cross-task checks on the helpers' objects: a reply is signalled
    /// (pushed) by its helper only and waited on by periodic jobs only; a
    /// request is sent by periodic jobs only; and, with PI-CV, every wait
    /// lends only where the model follows it.
    fn check_objects(&mut self, sc: &Scenario) -> Result<(), AnalysisError> {
        for (ti, t) in sc.tasks.iter().enumerate() {
            let own = self.of_task.get(&ti).copied();
            for e in super::all_events(t) {
                match e.kind {
                    EventKind::Signal(r) | EventKind::Broadcast(r) | EventKind::Push(r) => {
                        if let Some(&k) = self.reply_of.get(&r.0) {
                            if own != Some(k) {
                                let h = &sc.tasks[self.list[k].task].name;
                                return Err(unsupported(
                                    at_event(e),
                                    format!("task {} signals or pushes {}, a reply of helper thread {h}: a wait on it would not be a call to one helper (docs/ANALYSIS.md §4.1)", t.name, resource_name(sc, r.0)),
                                ));
                            }
                        }
                        let non_rt =
                            matches!(t.sched.policy, Policy::Other | Policy::Batch | Policy::Idle);
                        if let (true, Some(k)) =
                            (non_rt && t.instance > 0, self.request_of.get(&r.0))
                        {
                            let h = &sc.tasks[self.list[*k].task].name;
                            return Err(unsupported(
                                at_event(e),
                                format!("task {} is {} and signals or pushes {}, a request object of helper thread {h}: the work it asks for would be charged to no analysed job", t.name, t.sched.policy.name(), resource_name(sc, r.0)),
                            ));
                        }
                        if let (Some(_), Some(k)) = (own, self.request_of.get(&r.0)) {
                            let h = &sc.tasks[self.list[*k].task].name;
                            return Err(unsupported(
                                at_event(e),
                                rule(t, format!("it signals or pushes {}, a request object of helper thread {h}: a helper asking another helper (nested calls) is not analysed", resource_name(sc, r.0))),
                            ));
                        }
                    }
                    EventKind::Wait { cond: r, .. } | EventKind::Pop(r) => {
                        if let (Some(_), Some(&k)) = (own, self.reply_of.get(&r.0)) {
                            let h = &sc.tasks[self.list[k].task].name;
                            return Err(unsupported(
                                at_event(e),
                                rule(t, format!("it waits on {}, a reply of helper thread {h}: a helper calling a helper (nested calls) is not analysed", resource_name(sc, r.0))),
                            ));
                        }
                    }
                    _ => {}
                }
            }
        }
        self.check_lending(sc);
        Ok(())
    }

    /// With PI-CV the waiters of a cond lend to its declared helpers, and
    /// the poppers of a queue to its pushers: a caller's wait on a reply
    /// must lend to its helper and nobody else, and a helper waiting for a
    /// request must not lend above a lower sender (its work would run at
    /// the helper's priority). Refusals kept for when PI-CV is on.
    fn check_lending(&mut self, sc: &Scenario) {
        for h in &self.list {
            let t = &sc.tasks[h.task];
            for e in super::all_events(t) {
                let (r, lent): (usize, Vec<usize>) = match e.kind {
                    EventKind::Wait { cond, .. } => match &sc.resources[cond.0].kind {
                        ResourceKind::Cond { helpers } => {
                            (cond.0, helpers.iter().map(|x| x.0).collect())
                        }
                        _ => continue,
                    },
                    EventKind::Pop(q) => match &sc.resources[q.0].kind {
                        ResourceKind::Queue { pushers, .. } => {
                            (q.0, pushers.iter().map(|x| x.0).collect())
                        }
                        _ => continue,
                    },
                    _ => continue,
                };
                let low = lent.iter().find(|&&x| {
                    let o = &sc.tasks[x];
                    x != h.task
                        && !(matches!(o.sched.policy, Policy::Fifo | Policy::Rr)
                            && o.sched.priority >= t.sched.priority)
                });
                if let Some(&x) = low {
                    self.pi_cv_refusal.get_or_insert_with(|| {
                        unsupported(
                            at_event(e),
                            rule(t, format!("with PI-CV, while it waits for a request on {} it lends its priority {} to {} (a helper or pusher of it) below or beside it: that task's work would run at the helper's priority, which the model does not follow; analyse with PI-CV off, or do not declare {} a helper", resource_name(sc, r), t.sched.priority, sc.tasks[x].name, sc.tasks[x].name)),
                        )
                    });
                }
            }
        }
        let mut replies: Vec<(usize, usize)> =
            self.reply_of.iter().map(|(&r, &k)| (r, k)).collect();
        replies.sort_unstable();
        for (r, k) in replies {
            let h = self.list[k].task;
            let ResourceKind::Cond { helpers } = &sc.resources[r].kind else {
                continue;
            };
            if helpers.iter().all(|x| x.0 == h) {
                continue;
            }
            let names: Vec<&str> = helpers
                .iter()
                .map(|x| sc.tasks[x.0].name.as_str())
                .collect();
            let (cond, name) = (resource_name(sc, r), &sc.tasks[h].name);
            let at = Some(Location::path(&sc.resources[r].path));
            self.pi_cv_refusal.get_or_insert_with(|| {
                unsupported(
                    at,
                    format!("cond {cond} is the reply of helper thread {name} but its \"helpers\" are {names:?}: with PI-CV its waiters lend to the others too, whose work would then run at a caller's priority, which the model does not follow; name only {name} (or none: no lending), or analyse with PI-CV off"),
                )
            });
        }
    }

    /// Whether, with PI-CV, the callers of helper `k` lend it their
    /// priority: every cond it replies on names it as its helper (a
    /// queue's poppers always lend to its pushers).
    fn inherits(&self, sc: &Scenario, k: usize) -> bool {
        let h = self.list[k].task;
        self.reply_of
            .iter()
            .filter(|&(_, &x)| x == k)
            .all(|(&r, _)| match &sc.resources[r].kind {
                ResourceKind::Cond { helpers } => helpers.iter().any(|x| x.0 == h),
                _ => true,
            })
    }
}

/// A section open in a helper's walk.
struct OpenSec {
    /// Index into the segment's sections.
    section: usize,
    /// Resource index.
    resource: usize,
}

/// Cuts helper `t` into start-up, serves and exit, checking its events.
fn cut(
    sc: &Scenario,
    t: &ScTask,
    mutexes: &HashMap<usize, usize>,
) -> Result<(Segment, Vec<Segment>, Segment), AnalysisError> {
    let repeats = t.loops != Some(1);
    let seq = unroll(t)?;
    if repeats && t.phases.len() > 1 {
        return Err(unsupported(
            at_task(t),
            rule(t, "it repeats several phases: a repeating helper thread is analysed with one phase only"),
        ));
    }
    if seq.len() > MAX_UNROLLED_EVENTS {
        return Err(unsupported(at_task(t), rule(t, "it has too many events")));
    }
    // The segments done, and the one being walked (with the block that
    // began it).
    let mut segs: Vec<(Segment, Option<&Event>)> = Vec::new();
    let mut cur: (Segment, Option<&Event>) = (Segment::default(), None);
    let mut open: Vec<OpenSec> = Vec::new();
    for &e in &seq {
        let seg = &mut cur.0;
        match &e.kind {
            EventKind::Run(m) | EventKind::Runtime(m) => {
                let w = us(m.max());
                seg.work = seg.work.saturating_add(w);
                for o in &open {
                    let s = &mut seg.sections[o.section];
                    s.length = s.length.saturating_add(w);
                }
            }
            EventKind::Lock(r) => {
                let m = helper_mutex(sc, t, e, r.0, mutexes)?;
                seg.sections.push(Section {
                    mutex: m,
                    length: 0,
                    parent: open.last().map(|o| o.section),
                });
                open.push(OpenSec {
                    section: seg.sections.len() - 1,
                    resource: r.0,
                });
            }
            EventKind::Unlock(r) => match open.last() {
                Some(o) if o.resource == r.0 => {
                    open.pop();
                }
                _ => {
                    return Err(unsupported(
                        at_event(e),
                        rule(t, format!("this unlock of {} is not of its innermost held mutex", resource_name(sc, r.0))),
                    ))
                }
            },
            EventKind::Signal(r) | EventKind::Broadcast(r) | EventKind::Push(r) => {
                if matches!(e.kind, EventKind::Push(_)) && !queue_never_full(sc, r.0) {
                    return Err(queue_may_fill(sc, t, e, r.0));
                }
                if !seg.replies.contains(&r.0) {
                    seg.replies.push(r.0);
                }
            }
            EventKind::Yield | EventKind::Resume(_) => {}
            EventKind::Wait { mutex, .. } => {
                // The wait releases `mutex` (its innermost section) and
                // takes it again on return: a section of the next serve.
                match open.as_slice() {
                    [o] if o.resource == mutex.0 => {}
                    _ => {
                        return Err(unsupported(
                            at_event(e),
                            rule(t, format!("this wait does not hold exactly its own mutex {}: a block inside another critical section is not analysed", resource_name(sc, mutex.0))),
                        ))
                    }
                }
                open.clear();
                let m = helper_mutex(sc, t, e, mutex.0, mutexes)?;
                segs.push(std::mem::replace(&mut cur, (Segment::default(), Some(e))));
                cur.0.sections.push(Section {
                    mutex: m,
                    length: 0,
                    parent: None,
                });
                open.push(OpenSec {
                    section: 0,
                    resource: mutex.0,
                });
            }
            EventKind::Pop(_) => {
                if let Some(o) = open.last() {
                    return Err(unsupported(
                        at_event(e),
                        rule(t, format!("it pops holding {}: a block inside a critical section is not analysed", resource_name(sc, o.resource))),
                    ));
                }
                segs.push(std::mem::replace(&mut cur, (Segment::default(), Some(e))));
            }
            _ => {
                return Err(unsupported(
                    at_event(e),
                    rule(t, format!("\"{}\" is not one of a helper's events (run, lock, unlock, wait, pop, signal, broad, push, yield)", e.key)),
                ))
            }
        }
    }
    if let Some(o) = open.last() {
        if repeats {
            return Err(unsupported(
                at_task(t),
                rule(t, format!("it holds {} across the end of its events: a repeating helper must release its mutexes before it loops back", resource_name(sc, o.resource))),
            ));
        }
    }
    segs.push(cur);
    let mut segs = segs.into_iter();
    let startup = segs.next().map(|s| s.0).unwrap_or_default();
    let mut serves: Vec<(Segment, Option<&Event>)> = segs.collect();
    let exit = if repeats {
        // The tail and the head form the serve that spans the loop back;
        // the head alone (the start-up) is charged once more on its own.
        if let Some(last) = serves.last_mut() {
            last.0.work = last.0.work.saturating_add(startup.work);
            let off = last.0.sections.len();
            last.0
                .sections
                .extend(startup.sections.iter().map(|s| Section {
                    mutex: s.mutex,
                    length: s.length,
                    parent: s.parent.map(|p| p + off),
                }));
            for &r in &startup.replies {
                if !last.0.replies.contains(&r) {
                    last.0.replies.push(r);
                }
            }
        }
        Segment::default()
    } else {
        serves.pop().map(|s| s.0).unwrap_or_default()
    };
    for (s, block) in &serves {
        if s.replies.is_empty() {
            let after = block.map_or(String::new(), |b| format!(" after {}", b.path));
            return Err(unsupported(
                at_task(t),
                rule(t, format!("its serve{after} signals, broadcasts or pushes nothing: its work would be charged to no caller")),
            ));
        }
    }
    Ok((startup, serves.into_iter().map(|s| s.0).collect(), exit))
}

/// The mutex index of resource `r`, locked by helper `t` at `e`: it must
/// have a protocol (inheritance, bandwidth inheritance or a ceiling).
fn helper_mutex(
    sc: &Scenario,
    t: &ScTask,
    e: &Event,
    r: usize,
    mutexes: &HashMap<usize, usize>,
) -> Result<usize, AnalysisError> {
    let Some(&m) = mutexes.get(&r) else {
        return Err(unsupported(
            at_event(e),
            "lock of a resource that is not a mutex",
        ));
    };
    if matches!(
        sc.resources[r].kind,
        ResourceKind::Mutex {
            protocol: MutexProtocol::None
        }
    ) {
        return Err(unsupported(
            at_event(e),
            rule(t, format!("it locks {}, which has no protocol: a helper's sections are charged to its callers, which holds only when the helper runs them at a protocol's priority (inherit, bwi or a ceiling)", resource_name(sc, r))),
        ));
    }
    Ok(m)
}

/// Whether queue `q` can never be full: every push of the whole run
/// (each task's pushes × its passes × its threads) fits in its capacity.
/// A task that repeats forever and pushes it makes this false.
pub(super) fn queue_never_full(sc: &Scenario, q: usize) -> bool {
    let ResourceKind::Queue { capacity, .. } = sc.resources[q].kind else {
        return false;
    };
    let mut total: u64 = 0;
    for t in &sc.tasks {
        let per_pass: u64 = t
            .phases
            .iter()
            .map(|p| {
                let n = p
                    .events
                    .iter()
                    .filter(|e| matches!(e.kind, EventKind::Push(r) if r.0 == q))
                    .count() as u64;
                n.saturating_mul(p.loops)
            })
            .fold(0, u64::saturating_add);
        if per_pass == 0 {
            continue;
        }
        let Some(passes) = t.loops else {
            return false;
        };
        total = total.saturating_add(
            per_pass
                .saturating_mul(passes)
                .saturating_mul(u64::from(t.instance)),
        );
    }
    total <= u64::from(capacity)
}

/// The refusal of a push, by `t` at `e`, to queue `q` that may fill.
pub(super) fn queue_may_fill(sc: &Scenario, t: &ScTask, e: &Event, q: usize) -> AnalysisError {
    unsupported(
        at_event(e),
        format!(
            "push of {} in task {}: the run may push more items than its capacity, so a push can block (a self-suspension); a push is analysed only to a queue whose capacity holds every push of the run (tasks with a finite \"loop\")",
            resource_name(sc, q),
            t.name
        ),
    )
}

/// How many calls to helper `k` the whole run makes: each periodic task's
/// waits and pops on its replies × the task's passes × its threads (`None`:
/// without end, a task that loops forever calls it).
pub(super) fn calls_in_run(sc: &Scenario, hs: &Helpers, k: usize) -> Option<u64> {
    let mut total: u64 = 0;
    for (ti, t) in sc.tasks.iter().enumerate() {
        if hs.of_task.contains_key(&ti) {
            continue;
        }
        let per_pass: u64 = t
            .phases
            .iter()
            .map(|p| {
                let n = p
                    .events
                    .iter()
                    .filter(|e| match e.kind {
                        EventKind::Wait { cond: r, .. } | EventKind::Pop(r) => {
                            hs.reply_of.get(&r.0) == Some(&k)
                        }
                        _ => false,
                    })
                    .count() as u64;
                n.saturating_mul(p.loops)
            })
            .fold(0, u64::saturating_add);
        if per_pass == 0 {
            continue;
        }
        let passes = t.loops?;
        total = total.saturating_add(
            per_pass
                .saturating_mul(passes)
                .saturating_mul(u64::from(t.instance)),
        );
    }
    Some(total)
}
