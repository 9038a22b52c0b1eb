//! One mutex type over a raw lock: [`Mutex<R, T>`] protects a `T` with a
//! [`RawLock`] `R` and hands out access through a [`MutexGuard`].
//!
//! heir-rt has three raw locks — the kernel PI futex of
//! [`RawPiMutex`](crate::RawPiMutex), the engine-managed
//! [`RawEngineMutex`](crate::RawEngineMutex) (ceiling protocol) and the
//! engine lock itself (`rt`'s `PiFutex`) — and one way to put data behind
//! them: [`PiMutex<T>`](crate::PiMutex) and
//! [`CeilingMutex<T>`](crate::CeilingMutex) are `Mutex` over the first two,
//! and the engine state is a `Mutex` over the third. The split follows
//! parking_lot's `lock_api`: the raw lock promises mutual exclusion (an
//! `unsafe` trait, implemented beside each raw lock, whose code the promise
//! is about), and this module, in return, is the only place that turns that
//! promise into `&mut T` (the `UnsafeCell` behind the guard).
//!
//! Unlike `lock_api`, taking a raw lock can fail (a deadline, a deadlock
//! the engine refuses, a robust mutex whose owner died) and an owner's
//! death is reported with the lock held ([`Acquired::OwnerDied`]): the
//! typed mutex does not hand out data its dead owner may have left half
//! updated unless asked to ([`Mutex::lock_recover`]).
//!
//! **Caveat** (as before this module existed): [`Mutex::raw`] and
//! [`MutexGuard::raw`] are safe, and the raw PI and engine mutexes have a
//! safe public `unlock`, so a caller can release the raw lock under a live
//! guard, after which another thread's guard may alias this one. heir-rt's
//! own code never does (a condition-variable wait releases and re-takes
//! the raw lock while it borrows the guard mutably). `lock_api` makes its
//! `raw` unsafe for this reason; here the tests and the condition
//! variables use `raw()` for ids and waits, so it stays as it was.

use std::cell::UnsafeCell;
use std::marker::PhantomData;
use std::ops::{Deref, DerefMut};

use crate::Error;

/// How a raw lock was taken.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Acquired {
    /// Taken; what it protects is as its last owner left it.
    Clean,
    /// Taken, but its previous owner exited holding it (a robust PI
    /// mutex, `EOWNERDEAD`): what it protects may be half updated.
    OwnerDied,
}

/// The operations of a raw lock that [`Mutex`] builds on.
///
/// # Safety
///
/// An implementation must be exclusive: from an [`acquire`](Self::acquire)
/// or [`try_acquire`](RawTryLock::try_acquire) that returns `Ok` (with
/// [`Acquired`]) on a thread until that thread's
/// [`release`](Self::release), no call on any other thread returns `Ok`
/// with [`Acquired`]. [`Mutex`] hands out `&mut T` on that promise alone.
/// `release` by a thread that does not hold the lock must leave it as it
/// is.
pub unsafe trait RawLock {
    /// Takes the lock, blocking until the absolute `CLOCK_MONOTONIC`
    /// deadline (`None`: as long as needed). `Ok`: the calling thread holds
    /// it; `Err`: it does not ([`Error::TimedOut`], [`Error::Deadlock`], …).
    fn acquire(&self, deadline_ns: Option<u64>) -> Result<Acquired, Error>;

    /// Releases the lock the calling thread holds. Errors are the raw
    /// lock's to report or absorb: a guard's drop cannot return them.
    fn release(&self);
}

/// A raw lock that can also be taken without waiting.
///
/// # Safety
///
/// As [`RawLock`]: `try_acquire` returning `Ok(Some(_))` is a success of
/// the same exclusive kind.
pub unsafe trait RawTryLock: RawLock {
    /// Takes the lock if nobody holds it: `Ok(None)` if another thread
    /// does.
    fn try_acquire(&self) -> Result<Option<Acquired>, Error>;
}

/// A `T` behind the raw lock `R`: reached only through a [`MutexGuard`].
pub struct Mutex<R, T: ?Sized> {
    raw: R,
    data: UnsafeCell<T>,
}

// SAFETY: `&Mutex` reaches `data` only through a `MutexGuard`, which exists
// only while the calling thread holds `raw`; `R: RawLock` promises that at
// most one thread holds it at a time. `T: Send` because the guards of
// successive owners on different threads each get `&mut T`.
unsafe impl<R: RawLock + Sync, T: ?Sized + Send> Sync for Mutex<R, T> {}

impl<R, T> Mutex<R, T> {
    /// `v` behind `raw`, which must be unlocked.
    pub const fn from_raw(raw: R, v: T) -> Self {
        Mutex {
            raw,
            data: UnsafeCell::new(v),
        }
    }
}

impl<R: RawLock, T: ?Sized> Mutex<R, T> {
    /// Locks, blocking as long as needed.
    ///
    /// If the previous owner exited holding it (a robust PI mutex), the
    /// data may be half updated: `lock` does not hand it out — it unlocks
    /// (which makes a robust mutex unusable) and returns
    /// [`Error::OwnerDead`] ([`Error::NotRecoverable`] to every later
    /// locker). [`Mutex::lock_recover`] hands it out for repair.
    pub fn lock(&self) -> Result<MutexGuard<'_, R, T>, Error> {
        self.checked(self.raw.acquire(None))
    }

    /// Locks, giving up at the absolute `CLOCK_MONOTONIC` deadline
    /// ([`Error::TimedOut`]); owner death as [`Mutex::lock`].
    pub fn lock_until(&self, deadline_ns: u64) -> Result<MutexGuard<'_, R, T>, Error> {
        self.checked(self.raw.acquire(Some(deadline_ns)))
    }

    /// Locks; `true` with the guard if the previous owner exited holding
    /// it: repair the data, then make the mutex consistent (a PI mutex's
    /// [`MutexGuard::make_consistent`]) — a guard dropped without it leaves
    /// the mutex unusable.
    pub fn lock_recover(&self) -> Result<(MutexGuard<'_, R, T>, bool), Error> {
        let died = self.raw.acquire(None)? == Acquired::OwnerDied;
        Ok((self.guard(), died))
    }

    /// The raw lock.
    pub fn raw(&self) -> &R {
        &self.raw
    }

    /// A guard for `acquire`'s outcome, owner death refused (see
    /// [`Mutex::lock`]).
    fn checked(&self, r: Result<Acquired, Error>) -> Result<MutexGuard<'_, R, T>, Error> {
        match r? {
            Acquired::Clean => Ok(self.guard()),
            Acquired::OwnerDied => {
                // Held, inconsistent: released so, it is not recoverable.
                self.raw.release();
                Err(Error::OwnerDead)
            }
        }
    }

    /// The guard of a lock the calling thread has just taken (only called
    /// after an `acquire`/`try_acquire` that returned `Ok`: one guard per
    /// acquisition).
    fn guard(&self) -> MutexGuard<'_, R, T> {
        MutexGuard {
            mutex: self,
            _not_send: PhantomData,
        }
    }
}

impl<R: RawTryLock, T: ?Sized> Mutex<R, T> {
    /// Locks if free: `Ok(None)` if another thread holds it (owner death
    /// as [`Mutex::lock`]).
    pub fn try_lock(&self) -> Result<Option<MutexGuard<'_, R, T>>, Error> {
        match self.raw.try_acquire()? {
            None => Ok(None),
            Some(a) => self.checked(Ok(a)).map(Some),
        }
    }
}

/// Exclusive access to a [`Mutex`]'s data; releases the raw lock on drop.
/// Not `Send`: the raw locks are owned by a thread (a PI futex by its TID,
/// an engine mutex by its task), so the thread that locked must unlock.
pub struct MutexGuard<'a, R: RawLock, T: ?Sized> {
    mutex: &'a Mutex<R, T>,
    _not_send: PhantomData<*const ()>,
}

impl<'a, R: RawLock, T: ?Sized> MutexGuard<'a, R, T> {
    /// The raw lock (held by the calling thread while the guard lives).
    pub fn raw(&self) -> &'a R {
        &self.mutex.raw
    }
}

impl<R: RawLock, T: ?Sized> Deref for MutexGuard<'_, R, T> {
    type Target = T;
    fn deref(&self) -> &T {
        // SAFETY: a guard exists only while the calling thread holds the
        // raw lock, one guard per acquisition (`Mutex::guard`), and
        // `R: RawLock` promises no other thread holds it meanwhile (unless a
        // caller released it through `raw()`: the module's caveat): no
        // `&mut T` exists but through this guard, which `&self` borrows.
        unsafe { &*self.mutex.data.get() }
    }
}

impl<R: RawLock, T: ?Sized> DerefMut for MutexGuard<'_, R, T> {
    fn deref_mut(&mut self) -> &mut T {
        // SAFETY: as in `deref`; `&mut self` also excludes every other
        // reference made through this guard.
        unsafe { &mut *self.mutex.data.get() }
    }
}

impl<R: RawLock, T: ?Sized> Drop for MutexGuard<'_, R, T> {
    fn drop(&mut self) {
        self.mutex.raw.release();
    }
}
