//! `SCHED_DEADLINE` reservations under the multiprocessor bandwidth
//! inheritance protocol (M-BWI, the M-BWI paper's §3.5–3.6; Faggioli, Lipari and
//! Cucinotta, Real-Time Systems 48, 2012).
//!
//! Under M-BWI a task blocked on a mutex lends its reservation (budget and
//! deadline) to the owner at the end of its blocking chain, or busy-waits
//! on its own budget while that owner runs on another CPU. Either way the
//! time is charged to the *waiter's* reservation: the reservations are scheduled
//! exactly as independent CBS reservations, and what a task loses
//! to others is its **interference** `B_i` (the M-BWI paper calls it `I_i`), taken
//! from its own budget. So:
//!
//! 1. **Admission** of the reservations of a group — the reservations pinned to
//!    one CPU, or those free on all `m` CPUs. On one CPU the exact EDF
//!    processor-demand criterion `∀t: h(t) ≤ t` over the reservations' chunks,
//!    by QPA ([`crate::pdc`]; Zhang and Burns 2009): `(Q, D, P)` sporadic
//!    for a reservation whose jobs fit one budget and never wait without
//!    bandwidth inheritance, a ramp (`D < P`: chunks `P` apart, one cut
//!    at a wake-up) or renewable (`D = P`) otherwise. Waiting never enters it (CBS isolation; under M-BWI the
//!    waiter's reservation stays ready and pays), except for Linux's deadline
//!    inheritance, whose boosted owner is refilled from nobody's budget
//!    when its own runs out (`throttle_risk`). Globally the density form
//!    of Goossens, Funk and Baruah's test `Σ Q_j/D_j ≤ m − (m−1)·max_j
//!    Q_j/D_j` (GFB, RTS 2003; density form in Bertogna, Cirinei and
//!    Lipari, ECRTS 2005), sufficient only. Compared exactly.
//! 2. **Interference** `B_i` from the critical sections of the blocking
//!    chains that start at τ_i: `closure(i)` = the mutexes τ_i locks, and,
//!    transitively, those locked inside a section on a mutex of the closure
//!    (the chains through nested sections of the M-BWI paper's §3.5); `Γ_i` = the other
//!    tasks of the group that lock a mutex of the closure; `L_x` = the
//!    longest outermost section of x that contains a section on the
//!    closure, `S_x` the sum of those sections per job.
//!    - one CPU: `B_i = Σ_{x ∈ Γ_i, D_x ≥ D_i} L_x` (see [`analyze_group`]
//!      for why only those, once each);
//!    - global: `B_i = Σ_{x ∈ Γ_i} ⌈(D_i + D_x)/T_x⌉ · S_x` (every job of x
//!      that can be pending during τ_i's job, whatever the queue order).
//! 3. **Guarantee**: a task whose job fits its budget, `C_i + B_i ≤ Q_i`,
//!    and whose interferers `Γ_i` are guaranteed the same way (their own
//!    budgets never run out inside a section), finishes each job by its
//!    reservation deadline: bound `D_i`, or on one CPU Spuri's EDF response
//!    time over the reservations' chunks when smaller
//!    ([`crate::pdc::response_bound`]). On one CPU a job that does not fit
//!    takes `k` reservation periods, `k` the least with
//!    `k·Q_i ≥ C_i + B_i + (k−1)·Σ_{x ∈ Γ_i} L_x` (after each replenishment
//!    every interferer may again be inside one section): bound
//!    `(k−1)·P_i + D_i`, if that is at most the job period `T_i`.
//! 4. A task whose chain reaches a mutex without bandwidth inheritance that
//!    another member uses (`none`, `ceiling`, `inherit`) has no bound: its
//!    owner runs on its own deadline and budget, and the CBS wake-up rule
//!    renews or cuts the waiter's budget (docs/ANALYSIS.md §5.3).

use crate::edf::{sum_le_one, Reservation};
use crate::fp::{TaskResult, Unbounded};
use crate::model::{Class, MutexProtocol, Nanos, Task, TaskSet};

/// The admission of one group of reservations.
#[derive(Clone, Debug, PartialEq)]
pub struct GroupAdmission {
    /// The CPU of a partitioned group, `None` for the global group.
    pub cpu: Option<u32>,
    /// CPUs the group runs on (1 when partitioned).
    pub cpus: u32,
    /// What was tested, in words.
    pub test: String,
    /// The reservations' load `Σ Q/D`.
    pub load: f64,
    /// What it is compared with: 1, or `m − (m−1)·max Q/D` (global).
    pub limit: f64,
    /// `Σ (C+B)/D`: the load with the budgets the tasks need (tasks without
    /// a known `B` left out); `None` for the deadline-inheritance test.
    pub needed_load: Option<f64>,
    /// The test passed.
    pub admitted: bool,
}

/// The reservation `(Q, D, P)` of a deadline task, as the engine's type
/// (the one the simulator charges); for a fixed-priority task, its demand,
/// deadline and period.
pub(crate) fn reservation(t: &Task) -> Reservation {
    let (runtime_ns, deadline_ns, period_ns) = match t.class {
        Class::Deadline {
            runtime,
            deadline,
            period,
        } => (runtime, deadline, period),
        Class::Fixed { .. } => (t.demand, t.deadline, t.period),
    };
    Reservation {
        runtime_ns,
        deadline_ns,
        period_ns,
    }
}

/// Per task of a group: what the interference computation found.
#[derive(Clone, Debug, Default)]
struct Interf {
    /// `B_i` (first reservation period on one CPU; the job's window globally).
    b: Nanos,
    /// `Σ_{x ∈ Γ_i} L_x`: what each later reservation period can lose (one CPU).
    b_all: Nanos,
    /// `Γ_i`, as task indices of the set.
    gamma: Vec<usize>,
    /// A mutex of the closure without bandwidth inheritance that another
    /// member uses (one only τ_i uses never blocks it).
    not_bwi: Option<usize>,
    /// τ_i's sections on mutexes other members use: how many times a job
    /// can wait.
    waits: u64,
}

/// Per mutex: whether at least two of `members` use it.
fn shared_mutexes(set: &TaskSet, members: &[usize]) -> Vec<bool> {
    let mut users = vec![0u32; set.mutexes.len()];
    let mut seen = vec![false; set.mutexes.len()];
    for &x in members {
        seen.iter_mut().for_each(|v| *v = false);
        for s in &set.tasks[x].sections {
            if !seen[s.mutex] {
                seen[s.mutex] = true;
                users[s.mutex] += 1;
            }
        }
    }
    users.into_iter().map(|u| u >= 2).collect()
}

/// The mutexes of `closure(i)`: those τ_i locks, and those locked inside a
/// section on a closure mutex by any task of `members`.
fn closure(set: &TaskSet, i: usize, members: &[usize]) -> Vec<bool> {
    let m = set.mutexes.len();
    let mut cl = vec![false; m];
    for s in &set.tasks[i].sections {
        cl[s.mutex] = true;
    }
    // outer -> inner edges of the group (acyclic, validated): m passes.
    for _ in 0..m {
        let mut changed = false;
        for &x in members {
            let secs = &set.tasks[x].sections;
            for s in secs {
                let mut p = s.parent;
                while let Some(pi) = p {
                    if cl[secs[pi].mutex] && !cl[s.mutex] {
                        cl[s.mutex] = true;
                        changed = true;
                    }
                    p = secs[pi].parent;
                }
            }
        }
        if !changed {
            break;
        }
    }
    cl
}

/// The outermost sections of `t` that contain a section on a mutex of `cl`:
/// `(longest, sum)`.
fn outer_sections(t: &Task, cl: &[bool]) -> (Nanos, Nanos) {
    let secs = &t.sections;
    let mut marked = vec![false; secs.len()];
    for (k, s) in secs.iter().enumerate() {
        if cl[s.mutex] {
            let mut root = k;
            while let Some(p) = secs[root].parent {
                root = p;
            }
            marked[root] = true;
        }
    }
    secs.iter()
        .zip(&marked)
        .filter(|(_, &mk)| mk)
        .fold((0, 0), |(mx, sum): (Nanos, Nanos), (s, _)| {
            (mx.max(s.length), sum.saturating_add(s.length))
        })
}

/// `B_i`, `Σ L_x`, `Γ_i` and the first non-bwi closure mutex of task `i`.
fn interference(
    set: &TaskSet,
    i: usize,
    members: &[usize],
    global: bool,
    shared: &[bool],
) -> Interf {
    let cl = closure(set, i, members);
    let not_bwi = (0..cl.len())
        .find(|&r| cl[r] && shared[r] && set.mutexes[r].protocol != MutexProtocol::Bwi);
    let Reservation {
        deadline_ns: di, ..
    } = reservation(&set.tasks[i]);
    let waits = set.tasks[i]
        .sections
        .iter()
        .filter(|s| shared[s.mutex])
        .count() as u64;
    let mut out = Interf {
        not_bwi,
        waits,
        ..Interf::default()
    };
    for &x in members {
        if x == i {
            continue;
        }
        let tx = &set.tasks[x];
        if !tx.sections.iter().any(|s| cl[s.mutex]) {
            continue;
        }
        let (longest, sum) = outer_sections(tx, &cl);
        out.gamma.push(x);
        let Reservation {
            deadline_ns: dx, ..
        } = reservation(tx);
        out.b_all = out.b_all.saturating_add(longest);
        if global {
            let jobs = di.saturating_add(dx).div_ceil(tx.period.max(1));
            out.b = out.b.saturating_add(jobs.saturating_mul(sum));
        } else if dx >= di {
            out.b = out.b.saturating_add(longest);
        }
    }
    out
}

/// The admission of the reservations of `members` on `cpus` CPUs (see the
/// module docs), and each one's density.
fn admission(set: &TaskSet, members: &[usize], cpu: Option<u32>, cpus: u32) -> GroupAdmission {
    let dens: Vec<(u64, u64)> = members
        .iter()
        .map(|&i| {
            let Reservation {
                runtime_ns: q,
                deadline_ns: d,
                ..
            } = reservation(&set.tasks[i]);
            (q, d)
        })
        .collect();
    let load: f64 = dens.iter().map(|&(q, d)| q as f64 / d as f64).sum();
    if cpus <= 1 {
        return GroupAdmission {
            cpu,
            cpus: 1,
            test: "EDF density test Σ Q/D ≤ 1 (the M-BWI paper's §3.3 with D = P)".into(),
            load,
            limit: 1.0,
            needed_load: None,
            admitted: sum_le_one(&dens),
        };
    }
    // GFB: Σ δ + (m−1)·δ_max ≤ m, i.e. Σ δ/m + (m−1)·δ_max/m ≤ 1, exactly.
    let m = u64::from(cpus);
    let max = dens
        .iter()
        .copied()
        .max_by(|&(q1, d1), &(q2, d2)| (q1 as u128 * d2 as u128).cmp(&(q2 as u128 * d1 as u128)))
        .unwrap_or((0, 1));
    let mut terms: Vec<(u64, u64)> = dens
        .iter()
        .map(|&(q, d)| (q, d.saturating_mul(m)))
        .collect();
    terms.push(((m - 1).saturating_mul(max.0), max.1.saturating_mul(m)));
    let dmax = max.0 as f64 / max.1 as f64;
    GroupAdmission {
        cpu,
        cpus,
        test: format!(
            "global EDF, GFB density test Σ Q/D ≤ m − (m−1)·max Q/D with m = {cpus} (Goossens, Funk, Baruah 2003; sufficient, not necessary)"
        ),
        load,
        limit: cpus as f64 - (cpus as f64 - 1.0) * dmax,
        needed_load: None,
        admitted: sum_le_one(&terms),
    }
}

/// What one task of a group gets before the interferers are checked.
enum Pre {
    /// Final: unbounded for this reason.
    Out(Unbounded, Option<Nanos>),
    /// Fits its budget: bound `D_i` if its interferers are guaranteed.
    Fits,
    /// Needs several reservation periods: this bound if its interferers are
    /// guaranteed.
    Spans(Nanos),
}

/// Analyses one group of `SCHED_DEADLINE` tasks under M-BWI: the tasks of
/// `members` pinned to `cpu` (`cpus == 1`) or free on `cpus` CPUs
/// (`cpu == None`). Fills `out` for every member and returns the group's
/// admission.
///
/// Why, on one CPU, only interferers with `D_x ≥ D_i` count, each once:
/// while τ_i's job is pending and its reservation has budget, the reservation is
/// ready (τ_i runs, or lends it down its chain), so no reservation with a later
/// deadline runs, and a job released after τ_i's with a later deadline
/// cannot start. A task runs on τ_i's budget only when τ_i's reservation is the
/// most urgent it may use; a guaranteed task with an earlier deadline uses
/// its own, which has budget while its job is pending. So the tasks that
/// take τ_i's budget had a later (or equal) deadline and were already
/// inside an outermost section when τ_i was released, and can take it only
/// until they leave that section. This is why every interferer must be
/// guaranteed too: one whose budget runs out inside a section would run on
/// τ_i's (the greatest set of tasks closed under this is computed).
pub fn analyze_group(
    set: &TaskSet,
    members: &[usize],
    cpu: Option<u32>,
    cpus: u32,
    out: &mut [Option<TaskResult>],
) -> GroupAdmission {
    let global = cpu.is_none();
    let shared = shared_mutexes(set, members);
    if let Some(cpu) = cpu {
        return analyze_pinned(set, members, cpu, &shared, out);
    }
    let mut adm = admission(set, members, None, cpus);
    let inter: Vec<Interf> = members
        .iter()
        .map(|&i| interference(set, i, members, global, &shared))
        .collect();
    adm.needed_load = Some(
        members
            .iter()
            .zip(&inter)
            .filter(|(_, f)| f.not_bwi.is_none())
            .map(|(&i, f)| {
                let t = &set.tasks[i];
                t.demand.saturating_add(f.b) as f64 / reservation(t).deadline_ns as f64
            })
            .sum(),
    );
    let pre: Vec<Pre> = members
        .iter()
        .zip(&inter)
        .map(|(&i, f)| pre_verdict(&set.tasks[i], f, &adm, global))
        .collect();
    // The guaranteed self-sufficient tasks: fitting ones whose interferers
    // are all in the set (greatest fixed point).
    let ok = self_sufficient(
        members,
        &inter,
        pre.iter().map(|p| matches!(p, Pre::Fits)).collect(),
    );
    let pos = |x: usize| members.iter().position(|&y| y == x);
    for (k, &i) in members.iter().enumerate() {
        let t = &set.tasks[i];
        let f = &inter[k];
        let blocked_by = f
            .gamma
            .iter()
            .copied()
            .find(|&x| pos(x).is_some_and(|p| !ok[p]));
        out[i] = Some(match (&pre[k], blocked_by) {
            (Pre::Out(why, b), _) => TaskResult::unbounded(why.clone(), *b),
            (_, Some(other)) => TaskResult::unbounded(Unbounded::Interferer { other }, Some(f.b)),
            (Pre::Fits, None) => TaskResult::bounded(reservation(t).deadline_ns, f.b, t.deadline),
            (Pre::Spans(r), None) => TaskResult::bounded(*r, f.b, t.deadline),
        });
    }
    adm
}

/// The verdict of task `t` from its own numbers and the admission.
fn pre_verdict(t: &Task, f: &Interf, adm: &GroupAdmission, global: bool) -> Pre {
    let Reservation {
        runtime_ns: q,
        deadline_ns: d,
        period_ns: p,
    } = reservation(t);
    if !adm.admitted {
        let why = if global {
            Unbounded::NotAdmittedGlobal {
                load: adm.load,
                limit: adm.limit,
                cpus: adm.cpus,
            }
        } else {
            Unbounded::NotAdmitted { load: adm.load }
        };
        return Pre::Out(why, f.not_bwi.is_none().then_some(f.b));
    }
    if let Some(mutex) = f.not_bwi {
        return Pre::Out(Unbounded::NotBwi { mutex }, None);
    }
    if t.period < p {
        return Pre::Out(Unbounded::ReservationPeriod, Some(f.b));
    }
    let needed = t.demand.saturating_add(f.b);
    if needed <= q && !exact_budget_hazard(t, needed) {
        return Pre::Fits;
    }
    // Several reservation periods: on one CPU, or globally without interferers.
    if global && !f.gamma.is_empty() {
        return Pre::Out(
            Unbounded::OverBudget {
                needed,
                runtime: q,
                global: true,
            },
            Some(f.b),
        );
    }
    let per_later = if global { 0 } else { f.b_all };
    if q <= per_later {
        return Pre::Out(
            Unbounded::OverBudget {
                needed,
                runtime: q,
                global: false,
            },
            Some(f.b),
        );
    }
    // k = 1 + ⌈(needed − Q) / (Q − Σ L_x)⌉ (k = 2 for a job of exactly Q
    // that cannot count on a fresh chunk, `exact_budget_hazard`).
    let k = 1 + (needed.max(q + 1) - q).div_ceil(q - per_later);
    let r = (k - 1).saturating_mul(p).saturating_add(d);
    if r > t.period {
        return Pre::Out(Unbounded::JobsOverlap { bound: r }, Some(f.b));
    }
    Pre::Spans(r)
}

/// What a task of a pinned group gets before the admission.
enum PinnedPre {
    /// Final: unbounded for this reason.
    Out(Unbounded, Option<Nanos>),
    /// Its job fits one budget (`C + B ≤ Q`): bound `D` if its interferers
    /// are guaranteed too.
    Fits,
    /// Several reservation periods (M-BWI): this bound if its interferers are
    /// guaranteed.
    Spans(Nanos),
}

/// A member holding an `inherit` mutex that another member uses, whose
/// budget can run out inside the section: under Linux's deadline
/// inheritance a boosted deadline owner is then replenished with its
/// waiter's budget, charged to nobody (docs/DEADLINE.md §3.2), which no
/// reservation's guarantee accounts for. It cannot happen when the job fits its
/// budget (`E ≤ Q`), the deadline is implicit (`D = P`: a wake-up renews
/// the budget rather than cutting it, Linux's `dl_revised_wakeup`) and the
/// job period leaves room for every renewal (`T ≥ (waits + 1)·P`: each job
/// starts on a fresh budget). With the mutex.
fn throttle_risk(
    set: &TaskSet,
    members: &[usize],
    shared: &[bool],
    inter: &[Interf],
) -> Option<(usize, usize)> {
    members.iter().zip(inter).find_map(|(&x, f)| {
        let t = &set.tasks[x];
        let Reservation {
            runtime_ns: q,
            deadline_ns: d,
            period_ns: p,
        } = reservation(t);
        let room = f.waits.saturating_add(1).saturating_mul(p);
        if t.demand <= q && d >= p && t.period >= room {
            return None;
        }
        t.sections
            .iter()
            .find(|s| shared[s.mutex] && set.mutexes[s.mutex].protocol == MutexProtocol::Inherit)
            .map(|s| (x, s.mutex))
    })
}

/// One CPU: the reservations' admission by the exact processor-demand criterion
/// (QPA), then each member's bound. See docs/ANALYSIS.md §5.
fn analyze_pinned(
    set: &TaskSet,
    members: &[usize],
    cpu: u32,
    shared: &[bool],
    out: &mut [Option<TaskResult>],
) -> GroupAdmission {
    use crate::pdc::{self, Demand, Failure};
    let inter: Vec<Interf> = members
        .iter()
        .map(|&i| interference(set, i, members, false, shared))
        .collect();
    let risk = throttle_risk(set, members, shared, &inter);
    let pre: Vec<PinnedPre> = members
        .iter()
        .zip(&inter)
        .map(|(&i, f)| pinned_pre(&set.tasks[i], f))
        .collect();
    let ok = self_sufficient(
        members,
        &inter,
        pre.iter().map(|p| matches!(p, PinnedPre::Fits)).collect(),
    );
    let pos = |x: usize| members.iter().position(|&y| y == x);
    // The reservations' chunks: P apart for a guaranteed job that fits its
    // budget and never waits without bandwidth inheritance; otherwise its
    // deadline can be renewed (D = P), or (D < P) its chunks come P apart
    // and one taken up at a wake-up is cut to its share (a ramp).
    let clean: Vec<bool> = (0..members.len())
        .map(|k| ok[k] && inter[k].not_bwi.is_none())
        .collect();
    let demands: Vec<Demand> = members
        .iter()
        .enumerate()
        .map(|(k, &i)| {
            let Reservation {
                runtime_ns: q,
                deadline_ns: d,
                period_ns: p,
            } = reservation(&set.tasks[i]);
            if clean[k] {
                Demand::Sporadic { q, d, s: p }
            } else if d >= p {
                Demand::Fluid { q, p }
            } else {
                Demand::Ramp { q, d, p }
            }
        })
        .collect();
    let window = pdc::qpa(&demands);
    let load: f64 = members
        .iter()
        .map(|&i| {
            let Reservation {
                runtime_ns: q,
                period_ns: p,
                ..
            } = reservation(&set.tasks[i]);
            q as f64 / p as f64
        })
        .sum();
    // Σ Q/S: the long-run load of the chunks.
    let chunk_load: f64 = demands
        .iter()
        .map(|d| match *d {
            Demand::Sporadic { q, s, .. } => q as f64 / s as f64,
            Demand::Fluid { q, p } | Demand::Ramp { q, p, .. } => q as f64 / p as f64,
        })
        .sum();
    let group_out: Option<Unbounded> = match (window, risk) {
        (_, Some((holder, mutex))) => Some(Unbounded::ThrottledHolder { holder, mutex }),
        (Err(Failure::Overload), None) => Some(Unbounded::NotAdmitted { load: chunk_load }),
        (Err(Failure::Demand { at, demand }), None) => {
            Some(Unbounded::DemandExceeded { at, demand })
        }
        (Err(Failure::Limit), None) => Some(Unbounded::BusyPeriod),
        (Ok(()), None) => None,
    };
    let test = "EDF processor-demand criterion h(t) ≤ t for every t (exact on one CPU; QPA, Zhang and Burns 2009)".to_string();
    let needed_load = Some(
        members
            .iter()
            .zip(&inter)
            .filter(|(_, f)| f.not_bwi.is_none())
            .map(|(&i, f)| {
                let t = &set.tasks[i];
                t.demand.saturating_add(f.b) as f64 / reservation(t).deadline_ns as f64
            })
            .sum(),
    );
    for (k, &i) in members.iter().enumerate() {
        let t = &set.tasks[i];
        let f = &inter[k];
        let b = f.not_bwi.is_none().then_some(f.b);
        let blocked_by = f
            .gamma
            .iter()
            .copied()
            .find(|&x| pos(x).is_some_and(|p| !ok[p]));
        out[i] = Some(match (&group_out, &pre[k], blocked_by) {
            (Some(why), _, _) => TaskResult::unbounded(why.clone(), b),
            (None, PinnedPre::Out(why, b), _) => TaskResult::unbounded(why.clone(), *b),
            (None, _, Some(other)) => {
                TaskResult::unbounded(Unbounded::Interferer { other }, Some(f.b))
            }
            (None, PinnedPre::Fits, None) => {
                let Reservation {
                    deadline_ns: d,
                    period_ns: p,
                    ..
                } = reservation(t);
                let r = fits_bound(&demands, k, t, f.b, d, p);
                TaskResult::bounded(r, f.b, t.deadline)
            }
            (None, PinnedPre::Spans(r), None) => TaskResult::bounded(*r, f.b, t.deadline),
        });
    }
    GroupAdmission {
        cpu: Some(cpu),
        cpus: 1,
        test,
        load,
        limit: 1.0,
        needed_load,
        admitted: group_out.is_none(),
    }
}

/// The bound of a guaranteed member `k` of an admitted CPU whose job fits
/// its budget (`C + B ≤ Q`): its server deadline `D`, or Spuri's EDF
/// response-time bound over the servers' chunks when that is smaller
/// ([`crate::pdc::response_bound`]): the job runs on one fresh chunk per
/// release (jobs at least `T ≥ P` apart) and needs `C + B` of it; every
/// other server is charged its whole budget per chunk, as in the admission.
fn fits_bound(
    demands: &[crate::pdc::Demand],
    k: usize,
    t: &Task,
    b: Nanos,
    d: Nanos,
    p: Nanos,
) -> Nanos {
    let others: Vec<crate::pdc::Demand> = demands
        .iter()
        .enumerate()
        .filter(|&(j, _)| j != k)
        .map(|(_, x)| *x)
        .collect();
    let e = t.demand.saturating_add(b);
    crate::pdc::response_bound(&others, e, d, t.period.max(p)).map_or(d, |r| r.min(d))
}

/// A job that can need exactly its budget (`C + B = Q`) leaves its server
/// at runtime 0, throttled and replenished at its next period (`P` after
/// the chunk's start) with a deadline `D` later. With `D < P` the next job
/// then starts on that chunk rather than a fresh one when it is released
/// after the replenishment and before the period after it (`P < T < 2P`):
/// inside the chunk its budget is cut by the revised wake-up rule; after
/// the chunk's deadline it is throttled until that next period. (Released
/// at the replenishment, `T = P`, the chunk is the fresh one; at `2P` or
/// later it is past.) Such a task is analysed as a job spanning two
/// chunks.
fn exact_budget_hazard(t: &Task, needed: Nanos) -> bool {
    let Reservation {
        runtime_ns: q,
        deadline_ns: d,
        period_ns: p,
    } = reservation(t);
    needed == q && d < p && t.period > p && t.period < p.saturating_mul(2)
}

/// The verdict of a member of a pinned group from its own numbers.
fn pinned_pre(t: &Task, f: &Interf) -> PinnedPre {
    let Reservation {
        runtime_ns: q,
        deadline_ns: d,
        period_ns: p,
    } = reservation(t);
    if t.period < p {
        return PinnedPre::Out(Unbounded::ReservationPeriod, Some(f.b));
    }
    if let Some(mutex) = f.not_bwi {
        return PinnedPre::Out(Unbounded::NotBwi { mutex }, None);
    }
    let needed = t.demand.saturating_add(f.b);
    if needed <= q && !exact_budget_hazard(t, needed) {
        return PinnedPre::Fits;
    }
    if q <= f.b_all {
        return PinnedPre::Out(
            Unbounded::OverBudget {
                needed,
                runtime: q,
                global: false,
            },
            Some(f.b),
        );
    }
    // k = 1 + ⌈(needed − Q) / (Q − Σ L_x)⌉ (k = 2 for a job of exactly Q
    // that cannot count on a fresh chunk, `exact_budget_hazard`).
    let k = 1 + (needed.max(q + 1) - q).div_ceil(q - f.b_all);
    let r = (k - 1).saturating_mul(p).saturating_add(d);
    if r > t.period {
        return PinnedPre::Out(Unbounded::JobsOverlap { bound: r }, Some(f.b));
    }
    PinnedPre::Spans(r)
}

/// The greatest fixed point of "fits and every interferer is in the set":
/// starting from `ok` (the tasks that fit on their own), drops each task
/// with an interferer (`gamma`) among `members` that is not ok, until
/// nothing changes.
fn self_sufficient(members: &[usize], inter: &[Interf], mut ok: Vec<bool>) -> Vec<bool> {
    let pos = |x: usize| members.iter().position(|&y| y == x);
    loop {
        let mut changed = false;
        for k in 0..members.len() {
            if ok[k]
                && inter[k]
                    .gamma
                    .iter()
                    .any(|&x| pos(x).is_some_and(|p| !ok[p]))
            {
                ok[k] = false;
                changed = true;
            }
        }
        if !changed {
            return ok;
        }
    }
}
