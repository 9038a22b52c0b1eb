//! Thin wrappers over the Linux system calls heir-rt needs: `gettid`,
//! `sched_getattr`/`sched_setattr`, `futex` (wait/wake on a private word,
//! `FUTEX_LOCK_PI2`/`FUTEX_UNLOCK_PI`), clocks and CPU affinity, `tgkill`
//! and the wake signal's no-op handler (`sigaction`, kernel-boosted
//! condition-variable waits).
//!
//! Every system call and libc function heir-rt makes is here, and each
//! wrapper is a safe function whose arguments make the call sound
//! (references to live memory, sizes from `size_of`).
//!
//! `unsafe` outside this module, each for a reason a wrapper here cannot
//! take away (the crate root denies undocumented `unsafe` blocks and
//! `unsafe fn`s without a `# Safety` section):
//!
//! - [`crate::lock`]: the `UnsafeCell` behind [`crate::lock::MutexGuard`]
//!   (the one place data behind a raw lock is reached), and the `unsafe`
//!   trait [`crate::lock::RawLock`] whose promise of exclusion it relies on;
//! - `unsafe impl RawLock` beside each raw lock — `rt` (the engine lock's
//!   PI futex), `mutex` ([`crate::RawPiMutex`]), `ceiling`
//!   ([`crate::RawEngineMutex`]) — because the argument is about that lock's
//!   own code;
//! - [`crate::robust`]: reads and writes of the thread's robust futex list,
//!   memory shared with glibc and the kernel and reached by address;
//! - [`crate::capi`]: the C API's raw pointers (`unsafe extern "C"`
//!   functions, each with its `# Safety`).

use std::sync::atomic::{AtomicBool, AtomicU32, Ordering};

/// An OS error number (`errno`).
pub type Errno = i32;

/// `SCHED_OTHER`.
pub const SCHED_OTHER: u32 = 0;
/// `SCHED_FIFO`.
pub const SCHED_FIFO: u32 = 1;
/// `SCHED_RR`.
pub const SCHED_RR: u32 = 2;
/// `SCHED_BATCH`.
pub const SCHED_BATCH: u32 = 3;
/// `SCHED_IDLE`.
pub const SCHED_IDLE: u32 = 5;
/// `SCHED_DEADLINE`.
pub const SCHED_DEADLINE: u32 = 6;
/// `SCHED_FLAG_RESET_ON_FORK`.
pub const SCHED_FLAG_RESET_ON_FORK: u64 = 0x01;

/// The owner-TID bits of a PI futex word.
pub const FUTEX_TID_MASK: u32 = 0x3fff_ffff;
/// Set by a contender: the owner must unlock through the kernel.
pub const FUTEX_WAITERS: u32 = 0x8000_0000;

const FUTEX_WAKE: i32 = 1;
const FUTEX_LOCK_PI: i32 = 6;
const FUTEX_UNLOCK_PI: i32 = 7;
const FUTEX_WAIT_BITSET: i32 = 9;
const FUTEX_LOCK_PI2: i32 = 13;
const FUTEX_PRIVATE_FLAG: i32 = 128;
const FUTEX_BITSET_MATCH_ANY: u32 = 0xffff_ffff;

/// The kernel's `struct sched_attr` (`SCHED_ATTR_SIZE_VER1`, 56 bytes).
#[repr(C)]
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct SchedAttr {
    /// Size of the structure (filled in by the wrappers).
    pub size: u32,
    /// `SCHED_*` policy.
    pub sched_policy: u32,
    /// `SCHED_FLAG_*` flags.
    pub sched_flags: u64,
    /// Nice value (fair policies).
    pub sched_nice: i32,
    /// Real-time priority (FIFO/RR).
    pub sched_priority: u32,
    /// `SCHED_DEADLINE` runtime (ns).
    pub sched_runtime: u64,
    /// `SCHED_DEADLINE` relative deadline (ns).
    pub sched_deadline: u64,
    /// `SCHED_DEADLINE` period (ns).
    pub sched_period: u64,
    /// Utilisation clamp minimum.
    pub sched_util_min: u32,
    /// Utilisation clamp maximum.
    pub sched_util_max: u32,
}

const SCHED_ATTR_SIZE: u32 = std::mem::size_of::<SchedAttr>() as u32;

/// The symbolic name of an errno (`EPERM`), or `errno N` for one this
/// table lacks.
pub fn errno_name(e: Errno) -> std::borrow::Cow<'static, str> {
    let name = match e {
        libc::EPERM => "EPERM",
        libc::ENOENT => "ENOENT",
        libc::ESRCH => "ESRCH",
        libc::EINTR => "EINTR",
        libc::EIO => "EIO",
        libc::E2BIG => "E2BIG",
        libc::EAGAIN => "EAGAIN",
        libc::ENOMEM => "ENOMEM",
        libc::EACCES => "EACCES",
        libc::EFAULT => "EFAULT",
        libc::EBUSY => "EBUSY",
        libc::EEXIST => "EEXIST",
        libc::EINVAL => "EINVAL",
        libc::ENOSYS => "ENOSYS",
        libc::EDEADLK => "EDEADLK",
        libc::ELOOP => "ELOOP",
        libc::ETIMEDOUT => "ETIMEDOUT",
        libc::EOWNERDEAD => "EOWNERDEAD",
        libc::ENOTRECOVERABLE => "ENOTRECOVERABLE",
        _ => return format!("errno {e}").into(),
    };
    name.into()
}

fn errno() -> Errno {
    std::io::Error::last_os_error()
        .raw_os_error()
        .unwrap_or(libc::EIO)
}

/// `sched_yield()`: the calling thread goes to the end of its priority's
/// run queue.
pub fn sched_yield() {
    // SAFETY: sched_yield takes no arguments and cannot fail on Linux.
    unsafe { libc::sched_yield() };
}

/// The calling thread's kernel thread id.
pub fn gettid() -> i32 {
    // SAFETY: gettid takes no arguments and cannot fail.
    unsafe { libc::syscall(libc::SYS_gettid) as i32 }
}

/// `sched_getattr(tid)`: the attributes as the user set them (never the
/// PI-boosted priority).
pub fn sched_getattr(tid: i32) -> Result<SchedAttr, Errno> {
    let mut attr = SchedAttr {
        size: SCHED_ATTR_SIZE,
        ..SchedAttr::default()
    };
    // SAFETY: `attr` is a live, writable `struct sched_attr` of the size we
    // pass; the kernel writes at most that many bytes.
    let r = unsafe {
        libc::syscall(
            libc::SYS_sched_getattr,
            tid,
            &mut attr as *mut SchedAttr,
            SCHED_ATTR_SIZE,
            0u32,
        )
    };
    if r == 0 {
        Ok(attr)
    } else {
        Err(errno())
    }
}

/// `sched_setattr(tid, attr)`. Does not sleep for FIFO/RR/OTHER targets.
pub fn sched_setattr(tid: i32, attr: &SchedAttr) -> Result<(), Errno> {
    let mut a = *attr;
    a.size = SCHED_ATTR_SIZE;
    // SAFETY: `a` is a live `struct sched_attr` with its size field set; the
    // kernel only reads it.
    let r = unsafe { libc::syscall(libc::SYS_sched_setattr, tid, &a as *const SchedAttr, 0u32) };
    if r == 0 {
        Ok(())
    } else {
        Err(errno())
    }
}

/// True if `tid` is a thread of this process (`tgkill(getpid(), tid, 0)`).
pub fn is_own_thread(tid: i32) -> bool {
    if tid <= 0 {
        return false;
    }
    let pid = std::process::id() as libc::pid_t;
    // SAFETY: signal 0 only checks existence and permission; no signal is sent.
    let r = unsafe { libc::syscall(libc::SYS_tgkill, pid, tid, 0) };
    r == 0
}

/// `CLOCK_MONOTONIC` now, in ns.
pub fn now_ns() -> u64 {
    clock_ns(libc::CLOCK_MONOTONIC)
}

fn clock_ns(clock: libc::clockid_t) -> u64 {
    let mut ts = libc::timespec {
        tv_sec: 0,
        tv_nsec: 0,
    };
    // SAFETY: `ts` is a live timespec; clock_gettime writes it.
    unsafe { libc::clock_gettime(clock, &mut ts) };
    ts.tv_sec as u64 * 1_000_000_000 + ts.tv_nsec as u64
}

/// Converts ns to a `timespec`.
pub fn timespec(ns: u64) -> libc::timespec {
    libc::timespec {
        tv_sec: (ns / 1_000_000_000) as libc::time_t,
        tv_nsec: (ns % 1_000_000_000) as libc::c_long,
    }
}

/// Sleeps until `CLOCK_MONOTONIC` reaches `abs_ns` (`TIMER_ABSTIME`).
pub fn sleep_until(abs_ns: u64) {
    let ts = timespec(abs_ns);
    loop {
        // SAFETY: `ts` is a live timespec; the remainder pointer may be null
        // with TIMER_ABSTIME.
        let r = unsafe {
            libc::clock_nanosleep(
                libc::CLOCK_MONOTONIC,
                libc::TIMER_ABSTIME,
                &ts,
                std::ptr::null_mut(),
            )
        };
        if r != libc::EINTR {
            return;
        }
    }
}

/// Result of [`futex_wait`].
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum FutexWait {
    /// Woken (or spuriously returned, or the word differed): re-check.
    Retry,
    /// The absolute deadline passed.
    TimedOut,
}

/// `FUTEX_WAIT_BITSET` (private) while `*word == expected`, until the
/// absolute `CLOCK_MONOTONIC` deadline if any.
pub fn futex_wait(word: &AtomicU32, expected: u32, deadline_ns: Option<u64>) -> FutexWait {
    let ts = deadline_ns.map(timespec);
    let tsp = ts
        .as_ref()
        .map_or(std::ptr::null(), |t| t as *const libc::timespec);
    // SAFETY: `word` is a live, aligned u32 for the whole call; `tsp` is null
    // or points at a live timespec.
    let r = unsafe {
        libc::syscall(
            libc::SYS_futex,
            word.as_ptr(),
            FUTEX_WAIT_BITSET | FUTEX_PRIVATE_FLAG,
            expected,
            tsp,
            std::ptr::null::<u32>(),
            FUTEX_BITSET_MATCH_ANY,
        )
    };
    if r != 0 && errno() == libc::ETIMEDOUT {
        FutexWait::TimedOut
    } else {
        FutexWait::Retry
    }
}

/// `FUTEX_WAKE` (private) of up to `n` waiters of `word`.
pub fn futex_wake(word: &AtomicU32, n: i32) {
    // SAFETY: `word` is a live, aligned u32; FUTEX_WAKE only uses its address.
    unsafe {
        libc::syscall(
            libc::SYS_futex,
            word.as_ptr(),
            FUTEX_WAKE | FUTEX_PRIVATE_FLAG,
            n,
        )
    };
}

static NO_LOCK_PI2: AtomicBool = AtomicBool::new(false);

/// `FUTEX_LOCK_PI2` (private; `CLOCK_MONOTONIC` absolute timeout), falling
/// back to `FUTEX_LOCK_PI` (`CLOCK_REALTIME` timeout) on kernels before 5.14.
/// Returns 0 when the caller owns the futex, else the errno (`ETIMEDOUT`,
/// `EDEADLK`, `EINTR`, `EAGAIN`, ...).
pub fn futex_lock_pi(word: &AtomicU32, deadline_ns: Option<u64>) -> Errno {
    let pi2 = !NO_LOCK_PI2.load(Ordering::Relaxed);
    let ts = deadline_ns.map(|d| {
        if pi2 {
            timespec(d)
        } else {
            // FUTEX_LOCK_PI measures its timeout on CLOCK_REALTIME.
            let now_m = now_ns();
            let now_r = clock_ns(libc::CLOCK_REALTIME);
            timespec(now_r + d.saturating_sub(now_m))
        }
    });
    let tsp = ts
        .as_ref()
        .map_or(std::ptr::null(), |t| t as *const libc::timespec);
    let op = if pi2 { FUTEX_LOCK_PI2 } else { FUTEX_LOCK_PI };
    // SAFETY: `word` is a live, aligned u32 for the whole call; `tsp` is null
    // or a live timespec.
    let r = unsafe {
        libc::syscall(
            libc::SYS_futex,
            word.as_ptr(),
            op | FUTEX_PRIVATE_FLAG,
            0,
            tsp,
        )
    };
    if r == 0 {
        return 0;
    }
    let e = errno();
    if e == libc::ENOSYS && pi2 {
        NO_LOCK_PI2.store(true, Ordering::Relaxed);
        return futex_lock_pi(word, deadline_ns);
    }
    e
}

/// `FUTEX_UNLOCK_PI` (private): the kernel hands the futex to its top waiter.
/// Never sleeps.
pub fn futex_unlock_pi(word: &AtomicU32) -> Result<(), Errno> {
    // SAFETY: `word` is a live, aligned u32 owned by the caller.
    let r = unsafe {
        libc::syscall(
            libc::SYS_futex,
            word.as_ptr(),
            FUTEX_UNLOCK_PI | FUTEX_PRIVATE_FLAG,
        )
    };
    if r == 0 {
        Ok(())
    } else {
        Err(errno())
    }
}

/// `tgkill(getpid(), tid, sig)`: sends `sig` to thread `tid` of this
/// process. Does not sleep.
pub fn tgkill(tid: i32, sig: i32) -> Result<(), Errno> {
    let pid = std::process::id() as libc::pid_t;
    // SAFETY: tgkill takes integers only and reads no memory of ours.
    let r = unsafe { libc::syscall(libc::SYS_tgkill, pid, tid, sig) };
    if r == 0 {
        Ok(())
    } else {
        Err(errno())
    }
}

/// The real-time signal heir-rt sends to a thread sleeping in a kernel
/// condition-variable wait to end that wait (`SIGRTMAX - 2`; see
/// [`crate::condvar`]'s kernel boost). Its handler does nothing: the
/// interrupted `FUTEX_LOCK_PI` is restarted by the kernel and finds its
/// word free.
pub fn wake_signal() -> i32 {
    libc::SIGRTMAX() - 2
}

extern "C" fn wake_handler(_sig: libc::c_int) {}

static WAKE_HANDLER: std::sync::OnceLock<Result<(), Errno>> = std::sync::OnceLock::new();

/// Installs the no-op handler of [`wake_signal`] (`SA_RESTART`), once per
/// process. `Err(EBUSY)` if the program already has a handler (or
/// `SIG_IGN`) of its own on that signal: heir-rt does not take it over.
pub fn install_wake_handler() -> Result<(), Errno> {
    *WAKE_HANDLER.get_or_init(|| {
        let sig = wake_signal();
        // SAFETY: an all-zero sigaction is a valid value of the plain C
        // struct (SIG_DFL, no flags, empty mask).
        let mut old: libc::sigaction = unsafe { std::mem::zeroed() };
        // SAFETY: a null new action only reads the current one into `old`,
        // a live, writable sigaction.
        if unsafe { libc::sigaction(sig, std::ptr::null(), &mut old) } != 0 {
            return Err(errno());
        }
        if old.sa_sigaction != libc::SIG_DFL {
            return Err(libc::EBUSY);
        }
        // SAFETY: as above.
        let mut act: libc::sigaction = unsafe { std::mem::zeroed() };
        act.sa_sigaction = wake_handler as extern "C" fn(libc::c_int) as libc::sighandler_t;
        act.sa_flags = libc::SA_RESTART;
        // SAFETY: `act` is a live sigaction with an empty mask (zeroed) and
        // a handler that touches nothing (async-signal-safe); the old
        // action is not read back.
        if unsafe { libc::sigaction(sig, &act, std::ptr::null_mut()) } != 0 {
            return Err(errno());
        }
        Ok(())
    })
}

/// Pins thread `tid` (0 = caller) to `cpus`.
pub fn set_affinity(tid: i32, cpus: &[u32]) -> Result<(), Errno> {
    // SAFETY: an all-zero cpu_set_t is a valid empty set.
    let mut set: libc::cpu_set_t = unsafe { std::mem::zeroed() };
    for &c in cpus {
        if (c as usize) < libc::CPU_SETSIZE as usize {
            // SAFETY: `c` is below CPU_SETSIZE, so the bit is inside `set`.
            unsafe { libc::CPU_SET(c as usize, &mut set) };
        }
    }
    // SAFETY: `set` is a live cpu_set_t of the size passed.
    let r = unsafe { libc::sched_setaffinity(tid, std::mem::size_of::<libc::cpu_set_t>(), &set) };
    if r == 0 {
        Ok(())
    } else {
        Err(errno())
    }
}

/// The CPUs this process may run on: its main thread's affinity (`taskset`
/// on the process), whatever the calling thread is pinned to.
pub fn allowed_cpus() -> Vec<u32> {
    affinity_of(std::process::id() as libc::pid_t)
}

/// The CPUs the calling thread may run on.
pub fn thread_cpus() -> Vec<u32> {
    affinity_of(0)
}

fn affinity_of(tid: libc::pid_t) -> Vec<u32> {
    // SAFETY: an all-zero cpu_set_t is a valid empty set.
    let mut set: libc::cpu_set_t = unsafe { std::mem::zeroed() };
    // SAFETY: `set` is a live cpu_set_t of the size passed.
    let r =
        unsafe { libc::sched_getaffinity(tid, std::mem::size_of::<libc::cpu_set_t>(), &mut set) };
    if r != 0 {
        return vec![0];
    }
    (0..libc::CPU_SETSIZE as usize)
        // SAFETY: `i` is below CPU_SETSIZE.
        .filter(|&i| unsafe { libc::CPU_ISSET(i, &set) })
        .map(|i| i as u32)
        .collect()
}

/// The calling thread's voluntary context switches so far
/// (`getrusage(RUSAGE_THREAD)`): it moves whenever the thread sleeps — a
/// futex wait, a `clock_nanosleep` — and not when it is preempted.
pub fn voluntary_switches() -> u64 {
    // SAFETY: an all-zero rusage is a valid value of the plain C struct.
    let mut ru: libc::rusage = unsafe { std::mem::zeroed() };
    // SAFETY: `ru` is a live, writable rusage.
    let r = unsafe { libc::getrusage(libc::RUSAGE_THREAD, &mut ru) };
    if r == 0 {
        ru.ru_nvcsw as u64
    } else {
        0
    }
}

/// `flock(fd, LOCK_EX)`, or with `LOCK_NB` when `wait` is false
/// (`EWOULDBLOCK` if another open file description holds it).
pub fn flock_exclusive(file: &std::fs::File, wait: bool) -> Result<(), Errno> {
    use std::os::fd::AsRawFd;
    let op = if wait {
        libc::LOCK_EX
    } else {
        libc::LOCK_EX | libc::LOCK_NB
    };
    loop {
        // SAFETY: the descriptor is open for the borrow of `file`; flock
        // takes no pointers.
        let r = unsafe { libc::flock(file.as_raw_fd(), op) };
        if r == 0 {
            return Ok(());
        }
        let e = errno();
        if e != libc::EINTR {
            return Err(e);
        }
    }
}

/// The calling thread's CPU time (`CLOCK_THREAD_CPUTIME_ID`), in ns: what
/// it ran, whatever preempted it.
pub fn thread_cpu_ns() -> u64 {
    clock_ns(libc::CLOCK_THREAD_CPUTIME_ID)
}

/// Clock ticks per second of `/proc` times (`sysconf(_SC_CLK_TCK)`; 100
/// when unknown).
pub fn clock_ticks_per_second() -> u64 {
    // SAFETY: sysconf takes an integer and reads no memory of ours.
    let r = unsafe { libc::sysconf(libc::_SC_CLK_TCK) };
    if r > 0 {
        r as u64
    } else {
        100
    }
}

/// `FUTEX_OWNER_DIED`: set in a PI futex word by the kernel when its owner
/// exits holding it (robust futexes).
pub const FUTEX_OWNER_DIED: u32 = 0x4000_0000;

/// `get_robust_list(0)`: the calling thread's registered robust-list head
/// and the size the kernel was given for it (`None` if the call failed).
pub fn get_robust_list() -> Option<(usize, usize)> {
    let mut head: usize = 0;
    let mut len: usize = 0;
    // SAFETY: both out-pointers are live, writable usizes (the kernel writes
    // a pointer and a size_t).
    let r = unsafe {
        libc::syscall(
            libc::SYS_get_robust_list,
            0 as libc::c_int,
            &mut head as *mut usize,
            &mut len as *mut usize,
        )
    };
    (r == 0).then_some((head, len))
}

/// The CPU time (ns) thread `tid` of this process has used so far: its
/// per-thread `CLOCK_SCHED` CPU clock, read with `clock_gettime` (the
/// kernel's encoding of a thread CPU clock id: `(!tid << 3) | 6`). `None`
/// if `tid` is not a live thread of this process.
pub fn thread_cpu_ns_of(tid: i32) -> Option<u64> {
    if tid <= 0 {
        return None;
    }
    let clock = ((!tid) << 3) | 6;
    let mut ts = libc::timespec {
        tv_sec: 0,
        tv_nsec: 0,
    };
    // SAFETY: `ts` is a live timespec; clock_gettime writes it and fails
    // with EINVAL for a clock id that names no thread of this process.
    let r = unsafe { libc::clock_gettime(clock as libc::clockid_t, &mut ts) };
    (r == 0).then(|| ts.tv_sec as u64 * 1_000_000_000 + ts.tv_nsec as u64)
}

/// `eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK)`: a counter readable (`POLLIN`)
/// while it is not zero. Non-blocking, so neither [`eventfd_add`] nor
/// [`eventfd_drain`] ever sleeps (the engine lock may be held).
pub fn eventfd_new() -> Result<std::os::fd::OwnedFd, Errno> {
    use std::os::fd::FromRawFd;
    // SAFETY: eventfd takes two integers and returns a new descriptor or -1.
    let fd = unsafe { libc::eventfd(0, libc::EFD_CLOEXEC | libc::EFD_NONBLOCK) };
    if fd < 0 {
        return Err(errno());
    }
    // SAFETY: `fd` is a fresh descriptor nothing else owns.
    Ok(unsafe { std::os::fd::OwnedFd::from_raw_fd(fd) })
}

/// Adds `n` to an eventfd's counter (`write`); `EAGAIN` only if the counter
/// would overflow.
pub fn eventfd_add(fd: std::os::fd::BorrowedFd<'_>, n: u64) -> Result<(), Errno> {
    use std::os::fd::AsRawFd;
    let v = n.to_ne_bytes();
    // SAFETY: `v` is 8 live bytes, the size an eventfd write takes; the fd
    // is borrowed, so open for the call.
    let r = unsafe { libc::write(fd.as_raw_fd(), v.as_ptr().cast(), v.len()) };
    if r == 8 {
        Ok(())
    } else {
        Err(errno())
    }
}

/// Reads an eventfd's counter back to zero (`read`); returns what it held
/// (0 if it was zero already: `EAGAIN` of a non-blocking eventfd).
pub fn eventfd_drain(fd: std::os::fd::BorrowedFd<'_>) -> u64 {
    use std::os::fd::AsRawFd;
    let mut v = [0u8; 8];
    // SAFETY: `v` is 8 live writable bytes; the fd is borrowed, so open.
    let r = unsafe { libc::read(fd.as_raw_fd(), v.as_mut_ptr().cast(), v.len()) };
    if r == 8 {
        u64::from_ne_bytes(v)
    } else {
        0
    }
}

/// `pidfd_open(tid, PIDFD_THREAD)` (Linux ≥ 6.9): a descriptor of thread
/// `tid` that becomes readable (`POLLIN`) when that thread exits, and keeps
/// naming it if its tid is reused.
pub fn pidfd_open_thread(tid: i32) -> Result<std::os::fd::OwnedFd, Errno> {
    use std::os::fd::FromRawFd;
    /// `PIDFD_THREAD` (= `O_EXCL`): the pid is a thread's, not a process's.
    const PIDFD_THREAD: libc::c_uint = libc::O_EXCL as libc::c_uint;
    // SAFETY: pidfd_open takes a pid and flags and returns a new
    // descriptor or -1.
    let fd = unsafe { libc::syscall(libc::SYS_pidfd_open, tid, PIDFD_THREAD) };
    if fd < 0 {
        return Err(errno());
    }
    // SAFETY: `fd` is a fresh descriptor (close-on-exec) nothing else owns.
    Ok(unsafe { std::os::fd::OwnedFd::from_raw_fd(fd as i32) })
}

/// `poll` for `POLLIN` on one descriptor, `timeout_ms` (-1: no timeout):
/// true if readable.
pub fn poll_readable(fd: std::os::fd::BorrowedFd<'_>, timeout_ms: i32) -> Result<bool, Errno> {
    use std::os::fd::AsRawFd;
    let mut p = libc::pollfd {
        fd: fd.as_raw_fd(),
        events: libc::POLLIN,
        revents: 0,
    };
    // SAFETY: `p` is one live pollfd, and 1 is the count passed.
    let r = unsafe { libc::poll(&mut p, 1, timeout_ms) };
    if r < 0 {
        return Err(errno());
    }
    Ok(r > 0 && p.revents & libc::POLLIN != 0)
}

/// `write(fd, buf)` once, the result ignored (heir's trace markers: a lost
/// marker is not an error of the run).
pub fn write_fd(fd: i32, buf: &[u8]) {
    // SAFETY: `buf` is a live slice of `buf.len()` bytes; a bad fd only
    // makes write(2) fail with EBADF.
    unsafe { libc::write(fd, buf.as_ptr().cast(), buf.len()) };
}

/// `mount -t tracefs nodev TARGET`.
pub fn mount_tracefs(target: &str) -> Result<(), Errno> {
    let target = std::ffi::CString::new(target).map_err(|_| libc::EINVAL)?;
    // SAFETY: every pointer is a live NUL-terminated string; a null data
    // argument is allowed.
    let r = unsafe {
        libc::mount(
            c"nodev".as_ptr(),
            target.as_ptr(),
            c"tracefs".as_ptr(),
            0,
            std::ptr::null(),
        )
    };
    if r == 0 {
        Ok(())
    } else {
        Err(errno())
    }
}

/// Gives SIGPIPE back its default action (the Rust runtime ignores it, so
/// a write to a closed pipe fails with EPIPE and `println!` panics): a
/// command-line tool whose output goes into `| head` then ends quietly,
/// as `cat` does.
pub fn default_sigpipe() {
    // SAFETY: signal(2) with SIG_DFL installs no handler and touches no
    // memory of this process.
    unsafe { libc::signal(libc::SIGPIPE, libc::SIG_DFL) };
}
