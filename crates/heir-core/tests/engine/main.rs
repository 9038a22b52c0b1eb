//! heir-core integration tests: one binary, a module per behaviour.
//!
//! Topology tests are tables: each row builds a fresh world, runs its setup,
//! then one operation, and states the exact value, the exact [`Changes`]
//! (order, old and new values with donors) and the effective values after.
//! Each module draws the wait-for graphs before/after in ASCII; `X(p)` is task
//! X at base priority p (`SCHED_FIFO`, higher is more urgent), `─▶` a
//! wait-for edge (waiter → object → owner/helper).
//!
//! [`Changes`]: heir_core::Changes

mod support;

mod budgets;
mod ceiling;
mod chain;
mod changes;
mod contexts;
mod cycles;
mod errors;
mod kinds;
mod lifecycle;
mod lifetimes;
mod long_chains;
mod ordering;
mod picv;
mod properties;
mod protocol_none;
mod wait_release;
