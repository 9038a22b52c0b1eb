//! The trace hook: where heir-rt writes what it does while a tracer
//! listens.
//!
//! libheir records nothing by itself and knows no tracer. A tracer hands it
//! a file descriptor with [`set_sink`] — `heir run --trace` hands it the
//! `trace_marker` of its ftrace instance (heir-runner's `tracefs` module,
//! docs/TRACING.md) — and takes it back with [`take_sink`]. While a sink is
//! set, the library writes one line per event into it, each with one
//! `write(2)` and no lock in user space:
//!
//! - `heir boost AT TID DONOR URGENCY` for each change of a registered
//!   thread's effective urgency the engine returns (the thread's tid, its
//!   donor's tid, `-` for its own base or `=` for an object's floor, and
//!   [`urgency_code`]);
//! - `heir prio AT TID PRIO` for each `sched_setattr` heir-rt made that
//!   succeeded ([`kernel_prio`]: the kernel has no event for it);
//! - `heir i KIND AT cID` for a condition variable's `wait`, `woken`,
//!   `signal` and `broadcast` ([`mark_cond`]).
//!
//! `AT` is `CLOCK_MONOTONIC` in ns. Whoever holds the hook may write lines
//! of its own through [`mark`] (the runner marks job releases, completions
//! and a scenario's resource events the same way). With no sink set,
//! [`tracing`] is one relaxed atomic load and nothing is formatted.

use std::fmt::{self, Write as _};
use std::os::fd::RawFd;
use std::sync::atomic::{AtomicI32, Ordering};

use crate::sys;

/// The descriptor heir-rt writes its events into (-1: none).
static SINK_FD: AtomicI32 = AtomicI32::new(-1);

/// Writes heir-rt's events into `fd` from now on (a tracer's
/// `trace_marker`, or any file or pipe). The caller keeps `fd` open until
/// it takes it back with [`take_sink`]; a negative `fd` sets none.
pub fn set_sink(fd: RawFd) {
    SINK_FD.store(fd.max(-1), Ordering::Release);
}

/// Stops writing events and returns the descriptor that was set (-1: none);
/// it stays the caller's to close. Async-signal-safe (one atomic swap): a
/// signal handler may take it and close it.
pub fn take_sink() -> RawFd {
    SINK_FD.swap(-1, Ordering::AcqRel)
}

/// Writes heir-rt's events into the file at `path` (an ftrace instance's
/// `trace_marker`: what a program run by `heir exec --trace` does, the
/// instance being its parent's) from now on, for the rest of the process;
/// the file is kept open. Nothing changes when a sink is set already: that
/// one stays.
///
/// # Errors
/// The file cannot be opened for writing.
pub fn sink_into(path: &std::path::Path) -> std::io::Result<()> {
    use std::os::fd::IntoRawFd;
    let fd = std::fs::OpenOptions::new()
        .write(true)
        .open(path)?
        .into_raw_fd();
    if SINK_FD
        .compare_exchange(-1, fd, Ordering::AcqRel, Ordering::Acquire)
        .is_err()
    {
        // SAFETY: `fd` was opened just above and is shared with no one.
        unsafe { libc::close(fd) };
    }
    Ok(())
}

/// True while a sink is set.
#[inline]
pub fn tracing() -> bool {
    SINK_FD.load(Ordering::Relaxed) >= 0
}

/// A line of at most 256 bytes on the stack, its newline included (longer
/// ones are cut).
struct Line {
    buf: [u8; 256],
    len: usize,
}

impl fmt::Write for Line {
    fn write_str(&mut self, s: &str) -> fmt::Result {
        let n = s.len().min(self.buf.len() - 1 - self.len);
        self.buf[self.len..self.len + n].copy_from_slice(&s.as_bytes()[..n]);
        self.len += n;
        Ok(())
    }
}

/// Writes `heir <args>` and a newline into the sink (one `write`, formatted
/// on the stack; nothing when no sink is set). `trace_marker` makes each
/// write one record, and adds no newline of its own to a line that ends
/// with one.
pub fn mark(args: fmt::Arguments<'_>) {
    let fd = SINK_FD.load(Ordering::Acquire);
    if fd < 0 {
        return;
    }
    let mut line = Line {
        buf: [0; 256],
        len: 0,
    };
    let _ = line.write_str("heir ");
    let _ = line.write_fmt(args);
    line.buf[line.len] = b'\n';
    line.len += 1;
    sys::write_fd(fd, &line.buf[..line.len]);
}

/// Marks an instant of the calling thread on condition variable `cond`
/// (`wait`, `woken`, `signal`, `broadcast`).
#[inline]
pub fn mark_cond(kind: &str, cond: heir_core::CondId) {
    if tracing() {
        mark(format_args!("i {kind} {} c{}", sys::now_ns(), cond.0));
    }
}

/// `u` in a marker: `f<prio>`, `n<nice>`, `d<abs ns>`.
pub fn urgency_code(u: heir_core::Urgency) -> impl fmt::Display {
    struct Code(heir_core::Urgency);
    impl fmt::Display for Code {
        fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
            match self.0 {
                heir_core::Urgency::Fixed { prio } => write!(f, "f{prio}"),
                heir_core::Urgency::Other { nice } => write!(f, "n{nice}"),
                heir_core::Urgency::Deadline { abs_ns } => write!(f, "d{abs_ns}"),
            }
        }
    }
    Code(u)
}

/// Parses [`urgency_code`]'s text.
pub fn parse_urgency(s: &str) -> Option<heir_core::Urgency> {
    let (k, v) = s.split_at_checked(1)?;
    match k {
        "f" => v.parse().ok().map(heir_core::Urgency::fixed),
        "n" => v.parse().ok().map(heir_core::Urgency::other),
        "d" => v.parse().ok().map(heir_core::Urgency::deadline),
        _ => None,
    }
}

/// The kernel priority (`prio` of sched events) of attributes heir-rt set:
/// 99 − rtprio, 120 + nice, -1 for `SCHED_DEADLINE`.
pub fn kernel_prio(attr: &sys::SchedAttr) -> i32 {
    match attr.sched_policy {
        sys::SCHED_FIFO | sys::SCHED_RR => 99 - attr.sched_priority as i32,
        sys::SCHED_DEADLINE => -1,
        _ => 120 + attr.sched_nice,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn urgency_codes_read_back() {
        for u in [
            heir_core::Urgency::fixed(30),
            heir_core::Urgency::other(-5),
            heir_core::Urgency::deadline(5_331_200_000_500),
        ] {
            assert_eq!(parse_urgency(&urgency_code(u).to_string()), Some(u));
        }
        assert_eq!(parse_urgency("x1"), None);
        assert_eq!(parse_urgency(""), None);
    }

    #[test]
    fn a_sink_receives_one_line_per_mark_until_taken_back() {
        let mut fds = [0; 2];
        // SAFETY: `fds` is a live array of two ints for pipe(2) to fill.
        assert_eq!(unsafe { libc::pipe(fds.as_mut_ptr()) }, 0, "pipe");
        let [rd, wr] = fds;
        assert!(!tracing());
        set_sink(wr);
        assert!(tracing());
        mark(format_args!("prio {} {} {}", 7, 1234, 89));
        mark_cond("signal", heir_core::CondId(3, 0));
        mark(format_args!("{}", "x".repeat(300)));
        assert_eq!(take_sink(), wr);
        assert!(!tracing());
        mark(format_args!("not written"));
        // SAFETY: `wr` is ours (taken back above) and closed once.
        unsafe { libc::close(wr) };
        let mut text = Vec::new();
        let mut buf = [0u8; 512];
        loop {
            // SAFETY: `buf` is a live buffer of `buf.len()` bytes.
            let n = unsafe { libc::read(rd, buf.as_mut_ptr().cast(), buf.len()) };
            if n <= 0 {
                break;
            }
            text.extend_from_slice(&buf[..n as usize]);
        }
        // SAFETY: `rd` is ours, closed once.
        unsafe { libc::close(rd) };
        let text = String::from_utf8(text).expect("utf-8");
        // Other unit tests' threads may mark meanwhile (the hook is
        // process-wide): ours are in order, each on a line of its own.
        let lines: Vec<&str> = text.lines().collect();
        let at = |p: &dyn Fn(&str) -> bool| lines.iter().position(|l| p(l));
        let prio = at(&|l| l == "heir prio 7 1234 89").expect("the prio line");
        let cond = at(&|l| {
            let f: Vec<&str> = l.split(' ').collect();
            f.len() == 5
                && (f[0], f[1], f[2], f[4]) == ("heir", "i", "signal", "c3")
                && f[3].parse::<u64>().is_ok()
        })
        .expect("the condition variable's line");
        let long = "heir ".to_string() + &"x".repeat(256 - "heir ".len() - 1);
        let cut = at(&|l| l == long).expect("the long line, cut to 256 bytes");
        assert!(prio < cond && cond < cut, "{text:?}");
        assert!(!text.contains("not written"), "{text:?}");
    }
}
