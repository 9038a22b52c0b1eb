//! Robust PI mutexes: a [`RawPiMutex`](crate::RawPiMutex) held by a thread
//! that exits is marked `FUTEX_OWNER_DIED` by the kernel, so the next locker
//! gets [`Error::OwnerDead`](crate::Error::OwnerDead) instead of `ESRCH`.
//!
//! # How (and why this way)
//!
//! The kernel walks one *robust list* per thread when the thread exits
//! (`Documentation/locking/robust-futex-ABI.rst`): a list head registered
//! with `set_robust_list` — `{ next, futex_offset, list_op_pending }` —
//! whose entries are links embedded in the locks, the futex word at
//! `link + futex_offset`, bit 0 of a link marking a PI futex. For each word
//! still owned by the dying thread it sets `FUTEX_OWNER_DIED` and clears the
//! owner (keeping `FUTEX_WAITERS`); then the PI-state cleanup hands a PI
//! futex to its top waiter, keeping the bit. The next owner sees it.
//!
//! There is one list per thread, and glibc registers it for every thread it
//! starts (`struct pthread`'s `robust_head`, for its robust mutexes).
//! Registering heir's own head would silently turn glibc's robust mutexes
//! into plain ones in that thread. So heir *joins glibc's list*: its link
//! has exactly the layout of the list linkage inside glibc's
//! `pthread_mutex_t` on 64-bit Linux — a `prev` pointer then the `next`
//! pointer, the futex word 32 bytes before `next` (`futex_offset` −32, both
//! part of glibc's ABI since `pthread_mutex_t`'s layout cannot change) — and
//! is linked and unlinked as glibc's own `ENQUEUE_MUTEX_PI`/`DEQUEUE_MUTEX`
//! do: at the head, `prev` pointing at the previous link (or the head),
//! with `list_op_pending` set around each change. glibc's code and heir's
//! only ever touch a thread's list from that thread, so they never race.
//!
//! heir joins a thread's list only if `get_robust_list` reports a head of
//! the kernel's size whose `futex_offset` is −32 (glibc on 64-bit Linux);
//! elsewhere (another C library, 32-bit) its PI mutexes are not robust: a
//! thread exiting holding one leaves `ESRCH` to later lockers, as before.

use std::sync::atomic::{compiler_fence, AtomicU32, AtomicUsize, Ordering};

use crate::sys;

/// The futex word of a PI mutex with its robust-list link, laid out as the
/// `__lock` … `__list` part of glibc's 64-bit `pthread_mutex_t`: word at 0,
/// `prev` at 24, `next` at 32.
#[repr(C, align(8))]
#[derive(Debug, Default)]
pub(crate) struct RobustWord {
    /// Owner TID | `FUTEX_WAITERS` | `FUTEX_OWNER_DIED`.
    pub word: AtomicU32,
    /// [`CONSISTENT`], [`INCONSISTENT`] or [`NOT_RECOVERABLE`].
    pub state: AtomicU32,
    /// The TID the engine records as owner (0: none).
    pub tracked: AtomicU32,
    _pad: [u32; 3],
    /// The previous link's `next` field (or the list head) while linked.
    prev: AtomicUsize,
    /// The next link (bit 0: PI) while linked; 0 when not linked.
    next: AtomicUsize,
}

/// The mutex's state is consistent.
pub(crate) const CONSISTENT: u32 = 0;
/// Its owner died holding it; the current owner has not made it consistent.
pub(crate) const INCONSISTENT: u32 = 1;
/// It was unlocked while inconsistent: nobody may lock it again.
pub(crate) const NOT_RECOVERABLE: u32 = 2;

/// `link + FUTEX_OFFSET` is the futex word.
const FUTEX_OFFSET: isize = -32;

const _: () = {
    assert!(std::mem::offset_of!(RobustWord, word) == 0);
    assert!(std::mem::offset_of!(RobustWord, prev) == 24);
    assert!(std::mem::offset_of!(RobustWord, next) == 32);
};

/// The kernel's `struct robust_list_head`.
#[repr(C)]
struct RobustListHead {
    list: usize,
    futex_offset: isize,
    list_op_pending: usize,
}

/// [`probe`]'s answer when this thread's list cannot be joined (else the
/// head's address).
const UNUSABLE: usize = 1;

/// The calling thread's robust-list head if heir can join it, else
/// [`UNUSABLE`]: asked of the kernel once per thread (kept in
/// [`crate::rt::me`]).
pub(crate) fn probe() -> usize {
    if !cfg!(all(
        target_os = "linux",
        target_env = "gnu",
        target_pointer_width = "64"
    )) {
        return UNUSABLE;
    }
    match sys::get_robust_list() {
        Some((head, len))
            if head > UNUSABLE
                && head % std::mem::align_of::<RobustListHead>() == 0
                && len == std::mem::size_of::<RobustListHead>() =>
        {
            // SAFETY: the kernel returned this thread's registered head, a
            // live `struct robust_list_head` for the thread's lifetime (glibc
            // keeps it in the thread's descriptor); reading a field is sound.
            let off = unsafe {
                std::ptr::read_volatile(&(*(head as *const RobustListHead)).futex_offset)
            };
            if off == FUTEX_OFFSET {
                head
            } else {
                UNUSABLE
            }
        }
        _ => UNUSABLE,
    }
}

/// The calling thread's robust list, when heir can join it: look it up
/// once per lock or unlock ([`List::current`]) and pass it along.
#[derive(Clone, Copy, Debug)]
pub(crate) struct List(*mut RobustListHead);

impl List {
    /// The calling thread's list, if heir can join it.
    #[inline]
    pub(crate) fn current() -> Option<List> {
        Self::of(crate::rt::me())
    }

    /// The list of the thread `me` describes (the calling thread).
    #[inline]
    pub(crate) fn of(me: crate::rt::Me) -> Option<List> {
        (me.head > UNUSABLE).then_some(List(me.head as *mut RobustListHead))
    }

    /// Announces that the calling thread is about to take or release `w`
    /// (`list_op_pending`): if it dies in between, the kernel still handles
    /// `w`. Followed by [`List::link`] or [`List::unlink`], then
    /// [`List::done`].
    #[inline]
    pub(crate) fn pending(self, w: &RobustWord) {
        // SAFETY: `self.0` is this thread's live robust-list head (a `List`
        // is only made by `current` on this thread and never sent); only
        // this thread (heir or glibc) writes it, never concurrently with us.
        unsafe { std::ptr::write_volatile(&mut (*self.0).list_op_pending, entry(w)) };
        compiler_fence(Ordering::SeqCst);
    }

    /// Ends an operation announced with [`List::pending`].
    #[inline]
    pub(crate) fn done(self) {
        compiler_fence(Ordering::SeqCst);
        // SAFETY: as in `pending`.
        unsafe { std::ptr::write_volatile(&mut (*self.0).list_op_pending, 0) };
    }

    /// Links `w` (just acquired by the calling thread) at the head of the
    /// thread's robust list, as glibc's `ENQUEUE_MUTEX_PI`.
    #[inline]
    pub(crate) fn link(self, w: &RobustWord) {
        if w.next.load(Ordering::Relaxed) != 0 {
            return;
        }
        let h = self.0;
        // SAFETY: `h` is this thread's live head and every link on its list
        // is a live lock this thread holds (glibc's or heir's: both unlink
        // before the lock is released, and a held heir mutex is never freed,
        // see `RawPiMutex`'s drop). Each link's `prev` slot is the
        // pointer-sized word before its `next` (glibc's `__pthread_list_t`;
        // for the head, glibc's `robust_prev`). Only this thread changes the
        // list.
        unsafe {
            let first = std::ptr::read_volatile(&(*h).list);
            w.next.store(first, Ordering::Relaxed);
            w.prev.store(h as usize, Ordering::Relaxed);
            let first_prev = ((first & !1) - std::mem::size_of::<usize>()) as *mut usize;
            std::ptr::write_volatile(first_prev, entry(w) & !1);
            // The link is complete before it is published to the kernel.
            compiler_fence(Ordering::SeqCst);
            std::ptr::write_volatile(&mut (*h).list, entry(w));
        }
    }

    /// Unlinks `w` (held by the calling thread, about to be released) from
    /// the thread's robust list, as glibc's `DEQUEUE_MUTEX`.
    #[inline]
    pub(crate) fn unlink(self, w: &RobustWord) {
        let next = w.next.load(Ordering::Relaxed);
        if next == 0 {
            return;
        }
        let prev = w.prev.load(Ordering::Relaxed);
        // SAFETY: `w` is linked in this thread's list (its `next` is set), so
        // `next` is the following link (or the head) and `prev` the previous
        // link's `next` field (or the head): live memory of this thread's
        // list, changed only by this thread.
        unsafe {
            let next_prev = ((next & !1) - std::mem::size_of::<usize>()) as *mut usize;
            std::ptr::write_volatile(next_prev, prev);
            std::ptr::write_volatile(prev as *mut usize, next);
        }
        compiler_fence(Ordering::SeqCst);
        w.next.store(0, Ordering::Relaxed);
        w.prev.store(0, Ordering::Relaxed);
    }
}

/// The list entry for `w`: the address of its `next` field, bit 0 set (PI).
#[inline]
fn entry(w: &RobustWord) -> usize {
    (&w.next as *const AtomicUsize as usize) | 1
}

/// True if `w` is on a robust list (of the thread that holds it).
#[inline]
pub(crate) fn linked(w: &RobustWord) -> bool {
    w.next.load(Ordering::Relaxed) != 0
}

/// True if the calling thread's PI mutexes are robust here.
pub fn available() -> bool {
    List::current().is_some()
}

#[cfg(test)]
mod tests {
    /// The fast path's view of the calling thread (`rt::me`: glibc's
    /// descriptor, or heir's own thread-local copy) is the kernel's: its
    /// tid, and the robust-list head the kernel has registered for it.
    #[test]
    fn every_thread_sees_its_own_tid_and_robust_head() {
        let check = || {
            let me = crate::rt::me();
            assert_eq!(me.tid, crate::sys::gettid());
            assert_eq!(crate::rt::tid(), me.tid);
            let joined = super::probe();
            if joined > super::UNUSABLE {
                assert_eq!(me.head, joined);
                assert!(super::List::current().is_some());
            } else {
                assert!(super::List::current().is_none());
            }
        };
        check();
        let hs: Vec<_> = (0..4).map(|_| std::thread::spawn(check)).collect();
        for h in hs {
            h.join().expect("thread");
        }
    }
}
