//! `libheir_preload.so`: heir for unmodified, dynamically linked pthread
//! programs (`heir exec`, docs/EXEC.md). Loaded with `LD_PRELOAD`, it
//! defines `pthread_mutex_*`, `pthread_cond_*` and `pthread_barrier_*`
//! ahead of glibc's:
//!
//! - mutexes → heir's PI mutexes ([`heir::RawPiMutex`]), types kept
//!   (normal, errorcheck, recursive, robust; trylock, timed lock);
//! - condition variables → heir's PI condition variables whose helpers
//!   are learned from who signals ([`learn`]);
//! - barriers → a barrier whose waiters lend their priority to the
//!   threads that have not arrived (gang priority management).
//!
//! Process-shared and priority-ceiling objects are left to glibc
//! (its own functions, reached with `dlsym(RTLD_NEXT)`) and counted
//! ([`summary`]).
//!
//! **Where the state lives.** A program's object (40, 48 or 32 bytes)
//! holds, at offset 0, a pointer to heir's state, allocated on first use —
//! so glibc's static initialisers (all zero, the type of
//! `PTHREAD_RECURSIVE_MUTEX_INITIALIZER_NP` and friends at glibc's
//! `__kind` offset 16) work — and never on the fast path. `*_destroy`
//! frees it after a quarantine of [`QUARANTINE`] later destroys (a thread
//! may still be returning from the unlock or signal that let the
//! destroyer go on).

#![deny(
    clippy::undocumented_unsafe_blocks,
    clippy::missing_safety_doc,
    unsafe_op_in_unsafe_fn
)]

pub mod config;
pub mod learn;
pub mod record;
pub mod summary;

#[cfg(not(test))]
mod exports;
#[cfg(not(test))]
mod objects;
#[cfg(not(test))]
mod real;

/// Destroyed states kept before they are freed.
pub const QUARANTINE: usize = 256;
