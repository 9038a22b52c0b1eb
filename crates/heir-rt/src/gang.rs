//! Gang priority management in user space (the GPM paper's §4.2, L-GPM), boosted
//! through heir's engine, and a barrier built on it.
//!
//! A [`Gang`] has *passive* members (threads added with a 32-bit
//! [`ControlWord`] each); a member is *active* for a run while its word
//! shares a bit with the run's mask. [`Gang::run`] boosts every active
//! member to the gang's priority — the maximum user priority of all
//! members, passive and active ([`gang_priority`]) — until the member calls
//! [`Gang::notify`]; [`Gang::wait_until`] returns when every active member has
//! notified, or at its deadline; [`Gang::fd`] is an eventfd readable
//! exactly when a wait would return at once (K-GPM's gang descriptor is
//! pollable the same way).
//!
//! # What a boost is made of
//!
//! Each gang is an engine object of [`Spec::GANG`]: `run` makes each active
//! member a *target* of it ([`heir_core::Engine::add_target`]) and sets its
//! *floor* to the gang priority ([`heir_core::Engine::set_floor`]); a
//! member's notify drops it as a target. The engine's effective urgency of
//! a member is then `max(base, gang floor, what it inherits through heir
//! mutexes and condition variables)`, and heir-rt writes it with
//! `sched_setattr` as for every other boost ([`crate::rt`]). The kernel
//! schedules a thread at `max(the priority set, its top PI-futex waiter)`,
//! so a member that holds a [`crate::PiMutex`] runs at the maximum of the
//! gang priority and its lock-inherited priority, and at
//! `max(user, lock-inherited)` after its notify: the GPM paper's Invariant 1.
//!
//! # The control word
//!
//! | bits | name | who writes it |
//! |---|---|---|
//! | 0..=27 | membership mask ([`MASK_BITS`]) | the member, by CAS ([`ControlWord::activate`], [`ControlWord::deactivate`]) |
//! | 28 | reserved, 0 | — |
//! | 29 | [`MEMBER`]: a member of a gang | add_member / remove_member |
//! | 30 | [`BOOSTED`]: the gang's floor lifts it now | run / notify |
//! | 31 | [`RUN`]: counted in the run in progress; must notify | run / notify |
//!
//! `run` decides each member's activity with one CAS on its word (set
//! [`RUN`] only if the word shares a bit with the mask), so a member that
//! clears its bits concurrently either is not counted or learns from the
//! value its own CAS returns that it was — and then notifies (the GPM paper's §3:
//! a thread that withdraws while counted must still notify).
//!
//! # Deadline members
//!
//! The gang priority is the maximum user priority of the members that are
//! not `SCHED_DEADLINE` ([`gang_priority`]): a gang never lifts a
//! fixed-priority or fair member into the deadline class (heir-rt cannot
//! lend a deadline with `sched_setattr`, and a gang has no reservation to
//! lend). A deadline member is counted like any other (it must notify) but
//! is not boosted: it already runs above every fixed priority, and heir-rt
//! never calls `sched_setattr` on another thread that is `SCHED_DEADLINE`
//! (that leaked its admitted bandwidth on this kernel, docs/DEADLINE.md).
//!
//! # Locking
//!
//! The gangs live with the engine under the engine lock ([`crate::rt`]).
//! Under it `run` and `notify` make only non-sleeping system calls:
//! `sched_setattr`, `read`/`write` of the non-blocking eventfd, and `poll`
//! with a zero timeout of a member's pidfd. Waiters of a gang sleep on a
//! futex word outside the lock; the notify that completes a run wakes them
//! after releasing it.
//!
//! # Exits
//!
//! A member's exit is its removal. A thread that called heir-rt itself is
//! purged by its thread-local exit hook ([`Gang::add_member`] of the caller
//! registers it so); a thread added by tid that never did is watched
//! through a pidfd polled by `run`, `wait` (every [`EXIT_POLL_NS`] while
//! such a member is counted), `pending` and [`Gang::has_member`].

use std::collections::HashMap;
use std::os::fd::{AsFd, BorrowedFd, OwnedFd};
use std::ptr::NonNull;
use std::sync::atomic::{AtomicBool, AtomicU32, Ordering};
use std::sync::Arc;

use heir_core::{Changes, ObjId, Spec, TaskId, Urgency};

use crate::rt::{self, State};
use crate::sys::{self, FutexWait};
use crate::Error;

/// The membership mask: the low 28 bits of a control word.
pub const MASK_BITS: u32 = 0x0FFF_FFFF;
/// Control word: the thread is a member of a gang.
pub const MEMBER: u32 = 1 << 29;
/// Control word: the gang's priority lifts the thread now (it is a target
/// of the gang's engine object).
pub const BOOSTED: u32 = 1 << 30;
/// Control word: the thread was counted in the run in progress and has not
/// notified yet.
pub const RUN: u32 = 1 << 31;

/// A gang's id (unique in the process, never 0, never reused).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct GangId(pub u32);

/// A member's 32-bit control word (see the module docs for its layout):
/// a handle to an atomic word shared by the member and the gang.
/// [`ControlWord::new`] allocates one; the C API passes the caller's own
/// `uint32_t` ([`ControlWord::from_ptr`]). Clones name the same word.
#[derive(Debug, Clone)]
pub struct ControlWord {
    ptr: NonNull<AtomicU32>,
    /// Keeps a word allocated by [`ControlWord::new`] alive; `None` for a
    /// word whose owner promised its lifetime ([`ControlWord::from_ptr`]).
    _keep: Option<Arc<AtomicU32>>,
}

// SAFETY: the word is only ever accessed atomically (`&AtomicU32`), which
// is `Send + Sync`; it is either kept alive by the `Arc` this handle holds
// or, for `from_ptr`, by its owner's promise to keep it alive and in place
// while any handle to it exists.
unsafe impl Send for ControlWord {}
// SAFETY: as for `Send`.
unsafe impl Sync for ControlWord {}

impl ControlWord {
    /// A new word holding the membership bits `bits` (masked to
    /// [`MASK_BITS`]).
    pub fn new(bits: u32) -> ControlWord {
        let a = Arc::new(AtomicU32::new(bits & MASK_BITS));
        ControlWord {
            ptr: NonNull::from(&*a),
            _keep: Some(a),
        }
    }

    /// A handle to a word the caller owns (the C API's `uint32_t *`);
    /// `None` for a null or misaligned pointer.
    ///
    /// # Safety
    /// `p` must point at a `u32` that stays allocated, in place, and is
    /// only accessed atomically, for as long as any handle made from it
    /// exists — in particular while its thread is a member of a gang
    /// (until `remove`, or the thread's exit, drops the gang's handle).
    pub unsafe fn from_ptr(p: *mut u32) -> Option<ControlWord> {
        if p.is_null() || !(p as usize).is_multiple_of(std::mem::align_of::<AtomicU32>()) {
            return None;
        }
        Some(ControlWord {
            // SAFETY: not null (checked), aligned for `AtomicU32` (checked;
            // same size as `u32`), live by the caller's promise.
            ptr: unsafe { NonNull::new_unchecked(p.cast::<AtomicU32>()) },
            _keep: None,
        })
    }

    fn word(&self) -> &AtomicU32 {
        // SAFETY: `ptr` is live while `self` is (kept by `_keep`, or by the
        // promise of `from_ptr`'s caller) and only accessed atomically.
        unsafe { self.ptr.as_ref() }
    }

    /// True if both handles name the same word.
    pub fn same(&self, other: &ControlWord) -> bool {
        self.ptr == other.ptr
    }

    /// The word now.
    pub fn load(&self) -> WordState {
        WordState(self.word().load(Ordering::Acquire))
    }

    /// Sets membership bits (`bits & MASK_BITS`) with one CAS, without a
    /// system call; returns the word as it was before. A member that
    /// becomes active after a run started is not counted in that run
    /// (its [`WordState::counted`] is false): a barrier checks its own
    /// flag at its barrier points.
    pub fn activate(&self, bits: u32) -> WordState {
        WordState(self.word().fetch_or(bits & MASK_BITS, Ordering::AcqRel))
    }

    /// Clears membership bits (`bits & MASK_BITS`) with one CAS, without a
    /// system call; returns the word as it was before. If
    /// [`WordState::counted`] is set in the result, a run counted this
    /// thread before it withdrew: it must still [`Gang::notify`] (the GPM
    /// paper's §3).
    pub fn deactivate(&self, bits: u32) -> WordState {
        WordState(self.word().fetch_and(!(bits & MASK_BITS), Ordering::AcqRel))
    }

    /// The previous release's name of [`ControlWord::activate`].
    #[deprecated(note = "renamed `activate`")]
    pub fn set_active(&self, bits: u32) -> WordState {
        self.activate(bits)
    }

    /// The previous release's name of [`ControlWord::deactivate`].
    #[deprecated(note = "renamed `deactivate`")]
    pub fn set_passive(&self, bits: u32) -> WordState {
        self.deactivate(bits)
    }

    /// `run`'s decision for one member: sets [`RUN`] (and [`BOOSTED`] if
    /// `boosted`) if the word shares a bit with `mask`. True if it did.
    fn mark_run(&self, mask: u32, boosted: bool) -> bool {
        let add = RUN | if boosted { BOOSTED } else { 0 };
        self.word()
            .fetch_update(Ordering::AcqRel, Ordering::Acquire, |w| {
                (w & mask != 0).then_some(w | add)
            })
            .is_ok()
    }

    /// Clears [`RUN`] and [`BOOSTED`]; the word before.
    fn clear_run(&self) -> WordState {
        WordState(self.word().fetch_and(!(RUN | BOOSTED), Ordering::AcqRel))
    }

    fn set_flags(&self, set: u32, clear: u32) {
        let _ = self
            .word()
            .fetch_update(Ordering::AcqRel, Ordering::Acquire, |w| {
                Some((w & !clear) | set)
            });
    }
}

/// A control word's value, with its fields by name.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct WordState(pub u32);

impl WordState {
    /// The membership mask (bits 0..=27).
    pub fn mask(self) -> u32 {
        self.0 & MASK_BITS
    }

    /// A member of a gang ([`MEMBER`]).
    pub fn member(self) -> bool {
        self.0 & MEMBER != 0
    }

    /// Counted in the run in progress, not notified yet ([`RUN`]).
    pub fn counted(self) -> bool {
        self.0 & RUN != 0
    }

    /// Lifted by the gang's priority now ([`BOOSTED`]).
    pub fn boosted(self) -> bool {
        self.0 & BOOSTED != 0
    }
}

/// How a gang is created (C: `heir_gang_attr_t`).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct GangAttr {
    /// Gang priority management: `run` boosts the active members. False
    /// keeps the counting, the waiting and the control words but boosts
    /// nobody: the GPM paper's no-GPM baseline (`--gpm off`). (Named
    /// `boost` in the previous release: a field can have no deprecated
    /// alias.)
    pub gpm: bool,
}

impl Default for GangAttr {
    fn default() -> Self {
        GangAttr { gpm: true }
    }
}

/// What [`Gang::run`] did.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct RunOutcome {
    /// Active members counted (each must notify before the run completes;
    /// 0: the run completed at once).
    pub active: u32,
    /// Of those, how many the gang's floor lifts (0 without boosting; a
    /// deadline member is never lifted).
    pub boosted: u32,
    /// The gang priority ([`gang_priority`]; `None` if every member is a
    /// deadline thread, or the gang has none).
    pub priority: Option<Urgency>,
}

/// How [`Gang::wait_until`] ended.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum GangWait {
    /// Every member counted in the run notified (or no run was in progress).
    Completed,
    /// The deadline passed first; the run goes on.
    TimedOut,
}

/// What a [`Gang::notify`] (or a [`Gang::remove_member`], which notifies
/// for the removed thread) counted.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Notified {
    /// The thread was counted in the run in progress: its boost ended and
    /// it is discounted. `completed`: it was the last one.
    Counted {
        /// The run completed with this notify.
        completed: bool,
    },
    /// Nothing to count: not a member, not active when the run started,
    /// already notified, or no run in progress. Harmless.
    NotCounted,
}

/// The gang priority of members whose base urgencies are `bases`: the
/// maximum over the members that are not `SCHED_DEADLINE`. A gang never
/// lifts a member into the deadline class; deadline members need no boost
/// (module docs).
pub fn gang_priority(bases: impl IntoIterator<Item = Urgency>) -> Option<Urgency> {
    bases
        .into_iter()
        .filter(|u| !matches!(u, Urgency::Deadline { .. }))
        .max()
}

/// The part of a gang that outlives the engine lock: the futex word its
/// waiters sleep on (bumped at each completion) and its eventfd.
#[derive(Debug)]
struct GangShared {
    done: AtomicU32,
    efd: OwnedFd,
}

#[derive(Debug)]
struct MemberRec {
    task: TaskId,
    tid: i32,
    word: ControlWord,
    /// A target of the gang's object now.
    targeted: bool,
    /// A pidfd of the member's thread (`PIDFD_THREAD`), readable once it
    /// exits: how the exit of a member that never called heir-rt itself
    /// (added by tid) is seen ([`reap`]). `None` where the kernel has
    /// no thread pidfds (then `tgkill(pid, tid, 0)`), or for the caller
    /// itself, whose exit purges it.
    exit: Option<OwnedFd>,
}

/// How long a [`Gang::wait_until`] sleeps at most, while a member counted
/// by the run has no exit hook of its own, before it checks whether that
/// member exited (`reap`).
pub const EXIT_POLL_NS: u64 = 10_000_000;

#[derive(Debug)]
struct GangRec {
    obj: ObjId,
    boost: bool,
    members: Vec<MemberRec>,
    /// Members counted in the run in progress that have not notified.
    pending: u32,
    /// The handle was closed: freed once the last member leaves.
    closed: bool,
    shared: Arc<GangShared>,
}

/// Every gang of the process, under the engine lock (a field of
/// [`State`]).
#[derive(Debug, Default)]
pub(crate) struct Gangs {
    recs: HashMap<GangId, GangRec>,
    member_of: HashMap<TaskId, GangId>,
    next: u32,
}

/// A gang (C: `heir_gang_init`; dropping it, or [`Gang::destroy`], is
/// `heir_gang_destroy`: the gang goes away once its last member has
/// left). Share it between threads with an `Arc` or by reference.
#[derive(Debug)]
pub struct Gang {
    id: GangId,
    shared: Arc<GangShared>,
}

impl Gang {
    /// A new gang without members, boosting ([`GangAttr::default`]).
    pub fn new() -> Result<Gang, Error> {
        Gang::with_attr(GangAttr::default())
    }

    /// A new gang without members. Its eventfd starts readable (a wait
    /// would return at once).
    pub fn with_attr(attr: GangAttr) -> Result<Gang, Error> {
        let efd = sys::eventfd_new().map_err(|errno| Error::Os {
            op: "eventfd",
            errno,
        })?;
        sys::eventfd_add(efd.as_fd(), 1).map_err(|errno| Error::Os {
            op: "eventfd write",
            errno,
        })?;
        let shared = Arc::new(GangShared {
            done: AtomicU32::new(0),
            efd,
        });
        let mut st = rt::state();
        let obj = st.engine.add_object(Spec::GANG);
        let g = &mut st.gangs;
        g.next += 1;
        let id = GangId(g.next);
        g.recs.insert(
            id,
            GangRec {
                obj,
                boost: attr.gpm,
                members: Vec::new(),
                pending: 0,
                closed: false,
                shared: shared.clone(),
            },
        );
        Ok(Gang { id, shared })
    }

    /// The gang's id, unique in the process.
    pub fn id(&self) -> GangId {
        self.id
    }

    /// The eventfd that is readable (`POLLIN`) exactly when
    /// [`Gang::wait_until`] would return at once: no run in progress, or
    /// the last one completed. Do not read it (the gang does).
    pub fn fd(&self) -> BorrowedFd<'_> {
        self.shared.efd.as_fd()
    }

    /// Makes thread `tid` (of this process) a passive member with control
    /// word `word` (its membership bits are the word's; [`MEMBER`] is set,
    /// stale [`RUN`]/[`BOOSTED`] cleared). A member added during a run is
    /// not counted in it. [`Error::AlreadyMember`] if the thread is in a
    /// gang (at most one), or the word is another member's;
    /// [`Error::NoSuchThread`] if `tid` is not a thread of this process.
    pub fn add_member(&self, tid: i32, word: &ControlWord) -> Result<(), Error> {
        let me = tid == rt::tid();
        // Another thread's exit is watched through a pidfd, opened before
        // the engine lock (the caller's own exit purges it).
        let exit = if me {
            None
        } else {
            sys::pidfd_open_thread(tid).ok()
        };
        let mut st = rt::state();
        let t = if me {
            st.current()?
        } else {
            st.task_of_tid(tid)?
        };
        let g = &mut st.gangs;
        if let Some(&other) = g.member_of.get(&t) {
            return Err(Error::AlreadyMember { tid, gang: other.0 });
        }
        let rec = g.recs.get_mut(&self.id).ok_or(Error::Invalid)?;
        if rec.members.iter().any(|m| m.word.same(word)) {
            return Err(Error::AlreadyMember {
                tid,
                gang: self.id.0,
            });
        }
        word.set_flags(MEMBER, RUN | BOOSTED);
        rec.members.push(MemberRec {
            task: t,
            tid,
            word: word.clone(),
            targeted: false,
            exit,
        });
        g.member_of.insert(t, self.id);
        Ok(())
    }

    /// The previous release's name of [`Gang::add_member`].
    #[deprecated(note = "renamed `add_member`")]
    pub fn insert(&self, tid: i32, word: &ControlWord) -> Result<(), Error> {
        self.add_member(tid, word)
    }

    /// Thread `tid` leaves this gang. If it was counted in the run in
    /// progress and had not notified, this is its notify (its boost ends,
    /// it is discounted). [`Error::NotMember`] if it is not a member of
    /// this gang (C: `heir_gang_remove_member`).
    pub fn remove_member(&self, tid: i32) -> Result<Notified, Error> {
        remove_tid(tid, Some(self.id))
    }

    /// True if thread `tid` is a member of this gang (a member found
    /// exited has left; C: `heir_gang_has_member`).
    pub fn has_member(&self, tid: i32) -> bool {
        gang_of(tid) == Some(self.id)
    }

    /// `gang_notify` by the calling thread, a member of this gang: ends
    /// its gang boost (back to `max(user, lock-inherited)` priority) and
    /// discounts it from the run in progress, waking the gang's waiters if
    /// it was the last. [`Notified::NotCounted`] if it was not active when
    /// the run started, notified already, or no run is in progress; it
    /// may come before or after the waiter's `wait`.
    /// [`Error::NotMember`] if the caller is not a member of this gang
    /// (C: `heir_gang_notify`).
    pub fn notify(&self) -> Result<Notified, Error> {
        notify_inner(false, Some(self.id)).map(|(n, _)| n)
    }

    /// The members' tids, in the order they were added.
    pub fn members(&self) -> Vec<i32> {
        let st = rt::state();
        st.gangs
            .recs
            .get(&self.id)
            .map(|r| r.members.iter().filter_map(|m| st.tid_of(m.task)).collect())
            .unwrap_or_default()
    }

    /// Members counted in the run in progress that have not notified (0:
    /// no run in progress).
    pub fn pending(&self) -> u32 {
        let mut st = rt::state();
        reap(&mut st, self.id);
        st.gangs.recs.get(&self.id).map_or(0, |r| r.pending)
    }

    /// `gang_run`: counts every member whose control word shares a bit
    /// with `mask` (1..=[`MASK_BITS`]) and boosts them to the gang priority
    /// (see the module docs) until each notifies. [`Error::GangRunning`]
    /// if members of the previous run have not all notified — nothing is
    /// changed then; [`Error::Invalid`] for a mask outside the 28 bits.
    pub fn run(&self, mask: u32) -> Result<RunOutcome, Error> {
        if mask == 0 || mask & !MASK_BITS != 0 {
            return Err(Error::Invalid);
        }
        let mut st = rt::state();
        let st = &mut *st;
        reap(st, self.id);
        let rec = st.gangs.recs.get(&self.id).ok_or(Error::Invalid)?;
        if rec.pending > 0 {
            return Err(Error::GangRunning {
                pending: rec.pending,
            });
        }
        let obj = rec.obj;
        let boost = rec.boost;
        let bases: Vec<Urgency> = rec
            .members
            .iter()
            .map(|m| st.engine.base(m.task))
            .collect::<Result<_, _>>()?;
        let priority = gang_priority(bases.iter().copied());
        let mut out = RunOutcome {
            active: 0,
            boosted: 0,
            priority,
        };
        let mut all = Changes::new();
        let rec = st.gangs.recs.get_mut(&self.id).ok_or(Error::Invalid)?;
        for (m, base) in rec.members.iter_mut().zip(&bases) {
            let lift = boost && priority.is_some() && !matches!(base, Urgency::Deadline { .. });
            if !m.word.mark_run(mask, lift) {
                continue;
            }
            out.active += 1;
            if lift {
                // A gang has no waiters, so no edge can close a cycle; the
                // member is live (purged members leave their gang first).
                match st.engine.add_target(obj, m.task) {
                    Ok(ch) => {
                        all.extend(ch);
                        m.targeted = true;
                        out.boosted += 1;
                    }
                    Err(e) => {
                        m.word.set_flags(0, BOOSTED);
                        st.stats.engine_failed(e);
                    }
                }
            }
        }
        if out.boosted > 0 {
            match st.engine.set_floor(obj, priority) {
                Ok(ch) => all.extend(ch),
                Err(e) => st.stats.engine_failed(e),
            }
        }
        rec.pending = out.active;
        if out.active > 0 {
            sys::eventfd_drain(rec.shared.efd.as_fd());
        }
        st.apply(&all);
        Ok(out)
    }

    /// `gang_wait`: returns [`GangWait::Completed`] once every member
    /// counted in the run in progress has notified (at once if none is in
    /// progress), or [`GangWait::TimedOut`] at the absolute
    /// `CLOCK_MONOTONIC` deadline (`None`: no deadline). Any thread may
    /// wait, any number at once.
    ///
    /// A counted member's exit is its notify. A member that called heir-rt
    /// itself is purged by its own exit; while a counted member has no such
    /// hook (added by tid, it never called heir-rt), the wait sleeps at
    /// most [`EXIT_POLL_NS`] at a time and checks that member's pidfd
    /// (`reap`), so its exit ends the wait within that slice.
    pub fn wait_until(&self, deadline_ns: Option<u64>) -> Result<GangWait, Error> {
        let (seen, mut watch) = {
            let mut st = rt::state();
            reap(&mut st, self.id);
            let rec = st.gangs.recs.get(&self.id).ok_or(Error::Invalid)?;
            if rec.pending == 0 {
                return Ok(GangWait::Completed);
            }
            (self.shared.done.load(Ordering::Acquire), unhooked(&st, rec))
        };
        loop {
            if self.shared.done.load(Ordering::Acquire) != seen {
                return Ok(GangWait::Completed);
            }
            let until = match (watch, deadline_ns) {
                (false, d) => d,
                (true, d) => {
                    let slice = sys::now_ns().saturating_add(EXIT_POLL_NS);
                    Some(d.map_or(slice, |d| d.min(slice)))
                }
            };
            if sys::futex_wait(&self.shared.done, seen, until) == FutexWait::TimedOut {
                let mut st = rt::state();
                reap(&mut st, self.id);
                let rec = st.gangs.recs.get(&self.id);
                let pending = rec.map_or(0, |r| r.pending);
                if self.shared.done.load(Ordering::Acquire) != seen || pending == 0 {
                    return Ok(GangWait::Completed);
                }
                if deadline_ns.is_some_and(|d| sys::now_ns() >= d) {
                    return Ok(GangWait::TimedOut);
                }
                watch = rec.is_some_and(|r| unhooked(&st, r));
            }
        }
    }

    /// True if a wait would return at once (no run in progress).
    pub fn is_complete(&self) -> bool {
        self.pending() == 0
    }

    /// `heir_gang_destroy`: the same as dropping the handle.
    pub fn destroy(self) {}

    /// The previous release's name of [`Gang::destroy`].
    #[deprecated(note = "renamed `destroy`")]
    pub fn close(self) {}
}

impl Drop for Gang {
    fn drop(&mut self) {
        let mut st = rt::state();
        let g = &mut st.gangs;
        let Some(rec) = g.recs.get_mut(&self.id) else {
            return;
        };
        rec.closed = true;
        if rec.members.is_empty() {
            free_gang(&mut st, self.id);
        }
    }
}

/// Drops a closed gang without members; its engine object is removed
/// (its floor goes with it; its slot is reused by a later object).
fn free_gang(st: &mut State, id: GangId) {
    if let Some(rec) = st.gangs.recs.remove(&id) {
        st.remove_object(rec.obj);
    }
}

/// The previous release's call without a gang: the gang thread `tid` is a
/// member of ([`Gang::id`]), if any.
#[deprecated(note = "name the gang: `Gang::has_member`")]
pub fn get(tid: i32) -> Option<GangId> {
    gang_of(tid)
}

/// The gang thread `tid` is a member of ([`Gang::id`]), if any (`None`
/// for a member found exited: it has left).
pub(crate) fn gang_of(tid: i32) -> Option<GangId> {
    let mut st = rt::state();
    let t = st.lookup_tid(tid)?;
    let gid = st.gangs.member_of.get(&t).copied()?;
    reap(&mut st, gid);
    let t = st.lookup_tid(tid)?;
    st.gangs.member_of.get(&t).copied()
}

/// True if some member of `rec` counted by its run has no exit hook of
/// its own (see [`Gang::wait_until`]).
fn unhooked(st: &State, rec: &GangRec) -> bool {
    rec.members
        .iter()
        .any(|m| m.word.load().counted() && !st.hooked(m.task))
}

/// Purges every member of gang `gid` without an exit hook whose thread has
/// exited (its pidfd readable; without one, `tgkill(pid, tid, 0)` fails):
/// as the hook would have, so its exit is its removal — its notify if
/// counted, waking the waiters if it was the last. Under the engine lock:
/// `poll` with a zero timeout does not sleep. Returns how many.
fn reap(st: &mut State, gid: GangId) -> usize {
    let Some(rec) = st.gangs.recs.get(&gid) else {
        return 0;
    };
    let gone: Vec<TaskId> = rec
        .members
        .iter()
        .filter(|m| !st.hooked(m.task))
        .filter(|m| match &m.exit {
            Some(fd) => sys::poll_readable(fd.as_fd(), 0).unwrap_or(false),
            None => !sys::is_own_thread(m.tid),
        })
        .map(|m| m.task)
        .collect();
    for &t in &gone {
        st.vanished(t);
    }
    gone.len()
}

/// The previous release's call without a gang: [`Gang::notify`] for
/// whichever gang the caller is in ([`Notified::NotCounted`] for none).
#[deprecated(note = "name the gang: `Gang::notify`")]
pub fn notify() -> Notified {
    notify_inner(false, None).map_or(Notified::NotCounted, |(n, _)| n)
}

/// The caller's notify; with `only`, [`Error::NotMember`] unless it is a
/// member of that gang (checked under the same engine lock). With
/// `withdraw`, first clears the caller's membership bits (under the engine
/// lock, so atomically with respect to `run`) and returns its word and the
/// bits it had, to set again later.
fn notify_inner(
    withdraw: bool,
    only: Option<GangId>,
) -> Result<(Notified, Option<(ControlWord, u32)>), Error> {
    let me = rt::tid();
    let (n, wake, deferred, word) = {
        let mut st = rt::state();
        let t = st.lookup_tid(me);
        if let Some(gid) = only {
            if t.and_then(|t| st.gangs.member_of.get(&t)) != Some(&gid) {
                return Err(Error::NotMember(me));
            }
        }
        let Some(t) = t else {
            return Ok((Notified::NotCounted, None));
        };
        let word = if withdraw {
            member_word(&st, t).map(|w| {
                let bits = w.deactivate(MASK_BITS).mask();
                (w, bits)
            })
        } else {
            None
        };
        let (n, changes, wake) = discount(&mut st, t);
        // The last notify wakes the waiters before its own de-boost: back
        // at its user priority first, it could be preempted by a thread
        // between that and the gang priority before waking them (the
        // inversion the gang exists to prevent).
        let defer = wake.is_some().then_some(t);
        let deferred = st.apply_except(&changes, defer).then_some(t);
        (n, wake, deferred, word)
    };
    if let Some(s) = wake {
        sys::futex_wake(&s.done, i32::MAX);
    }
    if let Some(t) = deferred {
        rt::state().sync(t);
    }
    Ok((n, word))
}

/// The control word of member `t` (engine lock held).
fn member_word(st: &State, t: TaskId) -> Option<ControlWord> {
    let gid = st.gangs.member_of.get(&t)?;
    let rec = st.gangs.recs.get(gid)?;
    rec.members
        .iter()
        .find(|m| m.task == t)
        .map(|m| m.word.clone())
}

/// The previous release's call without a gang: thread `tid` leaves
/// whichever gang it is in ([`Gang::remove_member`]; [`Error::NotMember`]
/// if in none).
#[deprecated(note = "name the gang: `Gang::remove_member`")]
pub fn remove(tid: i32) -> Result<Notified, Error> {
    remove_tid(tid, None)
}

/// Thread `tid` leaves its gang, which must be `only` if given (checked
/// under the same engine lock): its notify if counted, then its
/// membership. [`Error::NotMember`] if it is in no gang, or another.
pub(crate) fn remove_tid(tid: i32, only: Option<GangId>) -> Result<Notified, Error> {
    let (n, wake) = {
        let mut st = rt::state();
        if let Some(gid) = only {
            // A member found exited has left (as `has_member` sees it).
            reap(&mut st, gid);
        }
        let t = st.lookup_tid(tid).ok_or(Error::NotMember(tid))?;
        if only.is_some_and(|gid| st.gangs.member_of.get(&t) != Some(&gid)) {
            return Err(Error::NotMember(tid));
        }
        let (n, changes, wake) = leave(&mut st, t).ok_or(Error::NotMember(tid))?;
        st.apply(&changes);
        (n, wake)
    };
    if let Some(s) = wake {
        sys::futex_wake(&s.done, i32::MAX);
    }
    Ok(n)
}

/// What the completion of a run leaves for after the engine lock: the
/// waiters to wake.
type Wake = Option<Arc<GangShared>>;

/// The notify of task `t` under the engine lock: clears its run bits,
/// drops it as a target, counts it; returns the engine changes to apply and
/// the gang to wake when the run completed.
fn discount(st: &mut State, t: TaskId) -> (Notified, Changes, Wake) {
    let mut changes = Changes::new();
    let Some(&gid) = st.gangs.member_of.get(&t) else {
        return (Notified::NotCounted, changes, None);
    };
    let Some(rec) = st.gangs.recs.get_mut(&gid) else {
        return (Notified::NotCounted, changes, None);
    };
    let Some(m) = rec.members.iter_mut().find(|m| m.task == t) else {
        return (Notified::NotCounted, changes, None);
    };
    let before = m.word.clear_run();
    if m.targeted {
        m.targeted = false;
        match st.engine.remove_target(rec.obj, t) {
            Ok(ch) => changes = ch,
            Err(e) => st.stats.engine_failed(e),
        }
    }
    if !before.counted() || rec.pending == 0 {
        return (Notified::NotCounted, changes, None);
    }
    rec.pending -= 1;
    if rec.pending > 0 {
        return (Notified::Counted { completed: false }, changes, None);
    }
    // The last one: no target is left; the floor goes.
    match st.engine.set_floor(rec.obj, None) {
        Ok(ch) => changes.extend(ch),
        Err(e) => st.stats.engine_failed(e),
    }
    rec.shared.done.fetch_add(1, Ordering::Release);
    // Never fails: `run` drained the counter, so it cannot overflow.
    let _ = sys::eventfd_add(rec.shared.efd.as_fd(), 1);
    let wake = Some(rec.shared.clone());
    (Notified::Counted { completed: true }, changes, wake)
}

/// Task `t` leaves its gang (`remove_member`, or the thread's exit): its
/// notify, then its membership; a closed gang without members is freed.
/// `None` if it is in no gang.
fn leave(st: &mut State, t: TaskId) -> Option<(Notified, Changes, Wake)> {
    let gid = *st.gangs.member_of.get(&t)?;
    let (n, changes, wake) = discount(st, t);
    st.gangs.member_of.remove(&t);
    let free = match st.gangs.recs.get_mut(&gid) {
        Some(rec) => {
            if let Some(i) = rec.members.iter().position(|m| m.task == t) {
                let m = rec.members.remove(i);
                m.word.set_flags(0, MEMBER | RUN | BOOSTED);
            }
            rec.closed && rec.members.is_empty()
        }
        None => false,
    };
    if free {
        free_gang(st, gid);
    }
    Some((n, changes, wake))
}

/// For [`State::purge`]: a departing thread leaves its gang (counted as its
/// notify). Its waiters are woken here, under the engine lock (a futex wake
/// does not sleep; purges are rare). Returns the changes to apply.
pub(crate) fn purge_member(st: &mut State, t: TaskId) -> Changes {
    match leave(st, t) {
        Some((_, changes, wake)) => {
            if let Some(s) = wake {
                sys::futex_wake(&s.done, i32::MAX);
            }
            changes
        }
        None => Changes::new(),
    }
}

/// The membership bit a [`Barrier`]'s members set.
pub const BARRIER_BIT: u32 = 1;

/// How a barrier point ([`Barrier::point_until`]) ended.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum PointResult {
    /// No barrier was active: the thread goes on.
    Passed,
    /// A barrier was active: the thread notified, blocked on the
    /// resumption condition, and the initiator released it.
    Released,
    /// The deadline passed while blocked on the resumption condition.
    TimedOut,
}

/// A barrier on a gang (the GPM paper's §3): the initiator sets the barrier-active
/// flag and runs the gang ([`Barrier::start`]); a member at its barrier
/// point ([`Barrier::point_until`]) that sees the flag notifies and blocks
/// on the resumption condition; the barrier is *complete* when every
/// active member has notified ([`Barrier::wait_until`], the gang's wait);
/// the initiator then releases them ([`Barrier::release`]). With
/// [`GangAttr::gpm`] false it is the same barrier without boosts (the
/// no-GPM baseline).
#[derive(Debug)]
pub struct Barrier {
    gang: Gang,
    active: AtomicBool,
    /// The resumption condition: bumped by each release.
    resume: AtomicU32,
}

impl Barrier {
    /// A new barrier without members.
    pub fn new(attr: GangAttr) -> Result<Barrier, Error> {
        Ok(Barrier {
            gang: Gang::with_attr(attr)?,
            active: AtomicBool::new(false),
            resume: AtomicU32::new(0),
        })
    }

    /// Its gang.
    pub fn gang(&self) -> &Gang {
        &self.gang
    }

    /// Thread `tid` becomes a member with a new control word, returned.
    /// `active`: [`BARRIER_BIT`] set, so the barriers count it
    /// ([`ControlWord::deactivate`] withdraws it while it sleeps or does
    /// I/O). Passive: it counts for the gang priority (an initiator of
    /// higher priority, as T_H in the GPM paper's Fig. 1) but not in the
    /// barriers until [`BARRIER_BIT`] is set in its word. The errors of
    /// [`Gang::add_member`] (C: `heir_barrier_add_member`).
    pub fn add_member(&self, tid: i32, active: bool) -> Result<ControlWord, Error> {
        let w = ControlWord::new(if active { BARRIER_BIT } else { 0 });
        self.gang.add_member(tid, &w)?;
        Ok(w)
    }

    /// Thread `tid` leaves (counted as its notify if a barrier counts it).
    /// [`Error::NotMember`] if it is not a member (C:
    /// `heir_barrier_remove_member`).
    pub fn remove_member(&self, tid: i32) -> Result<Notified, Error> {
        self.gang.remove_member(tid)
    }

    /// The previous release's call: `add_member(thread::current_tid(), true)`.
    #[deprecated(note = "use `add_member(tid, true)`")]
    pub fn join(&self) -> Result<ControlWord, Error> {
        self.add_member(rt::tid(), true)
    }

    /// The previous release's call: `add_member(thread::current_tid(), false)`.
    #[deprecated(note = "use `add_member(tid, false)`")]
    pub fn join_passive(&self) -> Result<ControlWord, Error> {
        self.add_member(rt::tid(), false)
    }

    /// The previous release's call: `remove_member(thread::current_tid())`.
    #[deprecated(note = "use `remove_member(tid)`")]
    pub fn leave(&self) -> Result<Notified, Error> {
        self.remove_member(rt::tid())
    }

    /// True while a barrier is active (started, not yet released).
    pub fn is_active(&self) -> bool {
        self.active.load(Ordering::Acquire)
    }

    /// The initiator: sets the barrier-active flag and runs the gang over
    /// the active members. [`Error::Busy`] if a barrier is active already;
    /// the gang's errors otherwise (the flag is cleared again).
    pub fn start(&self) -> Result<RunOutcome, Error> {
        if self
            .active
            .compare_exchange(false, true, Ordering::AcqRel, Ordering::Acquire)
            .is_err()
        {
            return Err(Error::Busy);
        }
        match self.gang.run(BARRIER_BIT) {
            Ok(o) => Ok(o),
            Err(e) => {
                self.active.store(false, Ordering::Release);
                Err(e)
            }
        }
    }

    /// Waits for the barrier's completion (every active member notified)
    /// until the absolute deadline.
    pub fn wait_until(&self, deadline_ns: Option<u64>) -> Result<GangWait, Error> {
        self.gang.wait_until(deadline_ns)
    }

    /// The initiator releases the members blocked on the resumption
    /// condition and clears the flag.
    pub fn release(&self) {
        self.active.store(false, Ordering::Release);
        self.resume.fetch_add(1, Ordering::Release);
        sys::futex_wake(&self.resume, i32::MAX);
    }

    /// A member's barrier point: if a barrier is active, withdraw (clear
    /// its membership bits), notify, and block on the resumption condition
    /// until released or the absolute deadline (`None`: none); then set
    /// its bits again. A thread blocked there is at a safe point, so it is
    /// not an active member: a run that starts while it blocks does not
    /// count it.
    pub fn point_until(&self, deadline_ns: Option<u64>) -> PointResult {
        let gen = self.resume.load(Ordering::Acquire);
        if !self.active.load(Ordering::Acquire) {
            return PointResult::Passed;
        }
        // Blocked on the resumption condition it is at a safe point, not
        // an active member: it withdraws (and notifies if counted) in one
        // step under the engine lock, and rejoins once released. Else a
        // member that arrives between the flag and the run would notify
        // before the run counts it, and never again.
        // Never an error without `only`.
        let word = notify_inner(true, None).ok().and_then(|(_, w)| w);
        let r = loop {
            if self.resume.load(Ordering::Acquire) != gen {
                break PointResult::Released;
            }
            if sys::futex_wait(&self.resume, gen, deadline_ns) == FutexWait::TimedOut {
                break if self.resume.load(Ordering::Acquire) != gen {
                    PointResult::Released
                } else {
                    PointResult::TimedOut
                };
            }
        };
        if let Some((w, bits)) = word {
            w.activate(bits);
        }
        r
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn gang_priority_is_the_highest_non_deadline_base() {
        let cases: [(&[Urgency], Option<Urgency>); 5] = [
            (&[], None),
            (
                &[Urgency::fixed(10), Urgency::fixed(30)],
                Some(Urgency::fixed(30)),
            ),
            (
                &[Urgency::other(5), Urgency::other(-3)],
                Some(Urgency::other(-3)),
            ),
            (
                &[
                    Urgency::deadline(1_000),
                    Urgency::fixed(12),
                    Urgency::other(0),
                ],
                Some(Urgency::fixed(12)),
            ),
            (&[Urgency::deadline(1_000)], None),
        ];
        for (bases, want) in cases {
            assert_eq!(gang_priority(bases.iter().copied()), want, "{bases:?}");
        }
    }

    #[test]
    fn control_word_bits_change_by_cas_and_report_the_run() {
        let w = ControlWord::new(0xF000_0001);
        assert_eq!(w.load(), WordState(1), "only mask bits are taken");
        assert!(!w.mark_run(0x2, true), "no shared bit: not counted");
        assert!(w.mark_run(0x1, true));
        let s = w.load();
        assert!(s.counted() && s.boosted() && s.mask() == 1);
        let before = w.deactivate(0x1);
        assert!(before.counted(), "withdrawing learns it was counted");
        assert_eq!(w.load().mask(), 0);
        assert!(w.load().counted(), "still counted until it notifies");
        assert!(w.clear_run().counted());
        assert_eq!(w.load(), WordState(0));
        let prev = w.activate(0x3);
        assert_eq!(prev.mask(), 0);
        assert_eq!(w.load().mask(), 3);
        let mut raw = 0u32;
        // SAFETY: `raw` outlives `cw` (both locals, `cw` dropped first) and
        // is only accessed through it.
        let cw = unsafe { ControlWord::from_ptr(&mut raw) }.expect("aligned");
        cw.activate(5);
        assert_eq!(cw.load().mask(), 5);
        drop(cw);
        assert_eq!(raw, 5);
        // SAFETY: a null pointer is refused before any use.
        assert!(unsafe { ControlWord::from_ptr(std::ptr::null_mut()) }.is_none());
    }

    /// A member's notify under the engine lock while another thread waits
    /// for the lock: its own de-boost is not written until the lock is let
    /// go (the kernel may not lend the waiter's priority to a holder that
    /// got the lock by hand-over: `rt::self_lowering_waits`). Real threads:
    /// the member at FIFO 10 boosted to 16 on one CPU, a FIFO 16 thread
    /// blocked on the engine lock on the other; the member's user priority
    /// read with `sched_getattr` under the lock and after.
    #[test]
    fn own_deboost_waits_until_the_engine_lock_is_let_go() {
        let caps = crate::caps::Capabilities::detect();
        let missing = caps
            .realtime_missing()
            .or_else(|| (caps.cpus.len() < 2).then(|| "needs 2 CPUs".to_string()));
        if let Some(why) = missing {
            assert_ne!(
                std::env::var("CI").as_deref(),
                Ok("true"),
                "real-time capability missing under CI=true: {why}"
            );
            eprintln!("own_deboost_waits_until_the_engine_lock_is_let_go: SKIPPED: {why}");
            return;
        }
        let _across = crate::caps::FileLock::acquire(&crate::caps::rt_tests_lock_path())
            .expect("the real-time tests' lock");
        let (c0, c1) = (caps.cpus[0], caps.cpus[1]);
        let limit = sys::now_ns() + 10_000_000_000;
        let r = std::thread::spawn(move || {
            let _ = sys::set_affinity(0, &[c0]);
            crate::thread::set_sched(&crate::sched::fifo(10)).expect("FIFO 10");
            let g = Arc::new(Gang::new().expect("gang"));
            // The passive member that makes the gang priority 16.
            let (ptx, prx) = std::sync::mpsc::channel::<()>();
            let (tid_tx, tid_rx) = std::sync::mpsc::channel::<i32>();
            let passive = std::thread::spawn(move || {
                let _ = sys::set_affinity(0, &[c1]);
                crate::thread::set_sched(&crate::sched::fifo(16)).expect("FIFO 16");
                tid_tx.send(rt::tid()).expect("send");
                let _ = prx.recv();
            });
            let ptid = tid_rx.recv().expect("tid");
            g.add_member(ptid, &ControlWord::new(0))
                .expect("add passive");
            let me = rt::tid();
            g.add_member(me, &ControlWord::new(1)).expect("add_member");
            let out = g.run(1).expect("run");
            assert_eq!((out.active, out.boosted), (1, 1));
            let prio = || sys::sched_getattr(0).expect("getattr").sched_priority;
            assert_eq!(prio(), 16, "boosted by the run");
            // The waiter: FIFO 16 on the other CPU, takes the engine lock.
            let go = Arc::new(AtomicBool::new(false));
            let (rtx, rrx) = std::sync::mpsc::channel::<()>();
            let waiter = {
                let go = go.clone();
                std::thread::spawn(move || {
                    let _ = sys::set_affinity(0, &[c1]);
                    crate::thread::set_sched(&crate::sched::fifo(16)).expect("FIFO 16");
                    rtx.send(()).expect("send");
                    while !go.load(Ordering::Acquire) && sys::now_ns() < limit {
                        std::thread::yield_now();
                    }
                    gang_of(me)
                })
            };
            rrx.recv().expect("waiter ready");
            let mut st = rt::state();
            go.store(true, Ordering::Release);
            while !rt::engine_lock_waited() && sys::now_ns() < limit {
                std::hint::spin_loop();
            }
            assert!(rt::engine_lock_waited(), "the waiter blocked on the lock");
            let t = st.lookup_tid(me).expect("registered");
            let (n, changes, _wake) = discount(&mut st, t);
            st.apply(&changes);
            let under = prio();
            drop(st);
            let after = prio();
            let seen = waiter.join().expect("waiter");
            let _ = g.remove_member(me);
            let _ = g.remove_member(ptid);
            drop(ptx);
            passive.join().expect("passive");
            (n, under, after, seen, g.id())
        })
        .join()
        .expect("member thread");
        let (n, under, after, seen, id) = r;
        assert_eq!(n, Notified::Counted { completed: true });
        assert_eq!(
            under, 16,
            "not lowered while a thread waits for the engine lock"
        );
        assert_eq!(after, 10, "lowered once the lock is let go");
        assert_eq!(seen, Some(id), "the waiter had the lock");
    }
}
