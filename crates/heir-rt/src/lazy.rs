//! State installed on first use behind an atomic pointer: what makes an
//! object usable without an init call (`HEIR_MUTEX_INITIALIZER` and the
//! other static initialisers of `heir.h`, and the `pthread_mutex_t` and
//! `pthread_cond_t` that heir-preload takes over, initialised or not).
//!
//! The caller's storage holds a pointer, null until the first use; the
//! first thread to use the object makes the state and installs it with one
//! compare-and-swap. A thread that loses the race drops what it made and
//! uses the winner's: every thread sees the same state, and no lock is
//! taken.

use std::ptr;
use std::sync::atomic::{AtomicPtr, Ordering};

/// Who installed the state [`installed`] returns.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Install {
    /// It was there already.
    Found,
    /// This call made and installed it.
    Made,
    /// This call made one, another thread installed its own first: this
    /// call's was dropped (undo what making it counted).
    Lost,
}

/// The state behind `slot`, made by `make` and installed on first use.
///
/// # Safety
///
/// Every non-null pointer ever stored in `slot` came from
/// `Box::into_raw(Box<T>)` and stays valid for `'a`: its owner frees it
/// only once no thread can reach it through `slot` any more (after the
/// object's destroy, which the caller's contract says no other call on it
/// overlaps).
pub unsafe fn installed<'a, T>(slot: &AtomicPtr<T>, make: impl FnOnce() -> T) -> (&'a T, Install) {
    let p = slot.load(Ordering::Acquire);
    if !p.is_null() {
        // SAFETY: a pointer from `Box::into_raw`, valid for 'a (the
        // caller's contract).
        return (unsafe { &*p }, Install::Found);
    }
    let new = Box::into_raw(Box::new(make()));
    match slot.compare_exchange(ptr::null_mut(), new, Ordering::AcqRel, Ordering::Acquire) {
        // SAFETY: installed just now, from `Box::into_raw`; valid for 'a
        // as every pointer in the slot (the caller's contract).
        Ok(_) => (unsafe { &*new }, Install::Made),
        Err(cur) => {
            // SAFETY: `new` came from `Box::into_raw` above and was never
            // shared.
            drop(unsafe { Box::from_raw(new) });
            // SAFETY: the winner's pointer (the caller's contract).
            (unsafe { &*cur }, Install::Lost)
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::sync::atomic::AtomicUsize;
    use std::sync::{Arc, Barrier};

    /// Eight threads race to install: all get the same state, exactly one
    /// reports `Made`, the others `Found` or `Lost`, and as many states as
    /// `Lost`s were dropped.
    #[test]
    fn racing_threads_share_one_state() {
        static DROPPED: AtomicUsize = AtomicUsize::new(0);
        struct S(u32);
        impl Drop for S {
            fn drop(&mut self) {
                DROPPED.fetch_add(1, Ordering::Relaxed);
            }
        }
        let slot = Arc::new(AtomicPtr::<S>::new(ptr::null_mut()));
        let start = Arc::new(Barrier::new(8));
        let hs: Vec<_> = (0..8u32)
            .map(|i| {
                let (slot, start) = (slot.clone(), start.clone());
                std::thread::spawn(move || {
                    start.wait();
                    // SAFETY: only Box pointers go in the slot; freed below
                    // after every thread joined.
                    let (s, how) = unsafe { installed(&slot, || S(i)) };
                    (s as *const S as usize, how)
                })
            })
            .collect();
        let got: Vec<(usize, Install)> = hs.into_iter().map(|h| h.join().unwrap()).collect();
        let p = slot.load(Ordering::Acquire);
        assert!(got.iter().all(|&(a, _)| a == p as usize));
        // SAFETY: the installed Box, still in the slot.
        assert!(unsafe { &*p }.0 < 8);
        assert_eq!(got.iter().filter(|g| g.1 == Install::Made).count(), 1);
        let lost = got.iter().filter(|g| g.1 == Install::Lost).count();
        assert_eq!(DROPPED.load(Ordering::Relaxed), lost);
        // SAFETY: the installed Box, no thread left to use it.
        drop(unsafe { Box::from_raw(p) });
        assert_eq!(DROPPED.load(Ordering::Relaxed), lost + 1);
    }
}
