//! Capability detection: can this process use real-time scheduling here?
//!
//! Tests and `heir run` ask [`Capabilities::detect`] first. heir never changes
//! RT throttling (`/proc/sys/kernel/sched_rt_runtime_us`); it only reports it.
//!
//! [`FileLock`] serialises real-time work among cooperating processes: heir's
//! real-time tests — of every test binary, of every checkout on the machine —
//! hold [`rt_tests_lock_path`] while they run, and `heir run` claims the CPUs
//! it runs on (heir-runner's `cpus` module).

use std::fs::File;
use std::path::{Path, PathBuf};

use crate::sched;
use crate::sys;

/// An exclusive advisory lock (`flock`) on a file, released when dropped or
/// when the process ends, however it ends.
#[derive(Debug)]
pub struct FileLock {
    _file: File,
}

impl FileLock {
    fn open(path: &Path) -> std::io::Result<File> {
        // Read access is enough for flock, so a lock file another user
        // created (mode 0644) still works.
        std::fs::OpenOptions::new()
            .read(true)
            .write(true)
            .create(true)
            .truncate(false)
            .open(path)
            .or_else(|_| File::open(path))
    }

    /// Takes the lock, waiting as long as another process holds it.
    pub fn acquire(path: &Path) -> std::io::Result<FileLock> {
        let file = Self::open(path)?;
        sys::flock_exclusive(&file, true).map_err(std::io::Error::from_raw_os_error)?;
        Ok(FileLock { _file: file })
    }

    /// Takes the lock if nobody holds it; `Ok(None)` if another open file
    /// (another process, or another lock in this one) holds it.
    pub fn try_acquire(path: &Path) -> std::io::Result<Option<FileLock>> {
        let file = Self::open(path)?;
        match sys::flock_exclusive(&file, false) {
            Ok(()) => Ok(Some(FileLock { _file: file })),
            Err(e) if e == libc::EWOULDBLOCK => Ok(None),
            Err(e) => Err(std::io::Error::from_raw_os_error(e)),
        }
    }
}

/// The lock every heir real-time test holds while it runs
/// (`$TMPDIR/heir-rt-tests.lock`): real-time tests of different test
/// binaries — and of different checkouts on one machine — never overlap.
pub fn rt_tests_lock_path() -> PathBuf {
    std::env::temp_dir().join("heir-rt-tests.lock")
}

/// What the machine and the process allow.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Capabilities {
    /// CPUs the process may run on.
    pub cpus: Vec<u32>,
    /// `sched_getattr`/`sched_setattr` work (Linux ≥ 3.14), else why not.
    pub sched_setattr: Result<(), String>,
    /// A thread may switch itself to `SCHED_FIFO` (root, `CAP_SYS_NICE` or
    /// `RLIMIT_RTPRIO`), else why not.
    pub fifo: Result<(), String>,
    /// `sched_rt_runtime_us` (RT throttling; -1 = off), if readable.
    pub rt_runtime_us: Option<i64>,
    /// `sched_rt_period_us`, if readable.
    pub rt_period_us: Option<i64>,
}

fn read_i64(path: &str) -> Option<i64> {
    std::fs::read_to_string(path).ok()?.trim().parse().ok()
}

impl Capabilities {
    /// Probes on a short-lived thread (the caller's attributes are not
    /// touched).
    pub fn detect() -> Capabilities {
        let cpus = sys::allowed_cpus();
        let probe = std::thread::spawn(|| {
            let me = sys::gettid();
            let attr = match sys::sched_getattr(me) {
                Ok(a) => a,
                Err(e) => {
                    let msg = format!("sched_getattr failed: errno {e}");
                    return (Err(msg.clone()), Err(msg));
                }
            };
            let fifo = match sys::sched_setattr(me, &sched::fifo(1)) {
                Ok(()) => {
                    let _ = sys::sched_setattr(me, &attr);
                    Ok(())
                }
                Err(e) if e == libc::EPERM => Err(
                    "no permission to set SCHED_FIFO (run as root, or grant CAP_SYS_NICE / RLIMIT_RTPRIO)"
                        .to_string(),
                ),
                Err(e) => Err(format!("sched_setattr(SCHED_FIFO) failed: errno {e}")),
            };
            (Ok(()), fifo)
        });
        let (setattr, fifo) = probe.join().unwrap_or_else(|_| {
            (
                Err("probe thread panicked".into()),
                Err("probe thread panicked".into()),
            )
        });
        Capabilities {
            cpus,
            sched_setattr: setattr,
            fifo,
            rt_runtime_us: read_i64("/proc/sys/kernel/sched_rt_runtime_us"),
            rt_period_us: read_i64("/proc/sys/kernel/sched_rt_period_us"),
        }
    }

    /// Why real-time runs are impossible here, or `None` if they are possible.
    pub fn realtime_missing(&self) -> Option<String> {
        if let Err(e) = &self.sched_setattr {
            return Some(e.clone());
        }
        if let Err(e) = &self.fifo {
            return Some(e.clone());
        }
        if self.cpus.is_empty() {
            return Some("no CPU available".into());
        }
        None
    }

    /// The CPU tests pin to: the last allowed CPU.
    pub fn test_cpu(&self) -> u32 {
        self.cpus.last().copied().unwrap_or(0)
    }
}
