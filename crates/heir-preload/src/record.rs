//! What `heir exec --trace` and `heir exec --scenario` see of the program:
//! each interposed synchronisation operation, as a marker in the kernel's
//! trace (`--trace`) and as a record in a per-process file (`--scenario`).
//!
//! **Markers.** With `HEIR_EXEC_TRACE_MARKER` naming the `trace_marker`
//! file of `heir exec`'s ftrace instance, the library writes heir-rt's
//! instant markers (heir-runner's `tracefs::Marker`) there: `i KIND NS rADDR`,
//! `KIND` one of `blocked` (a lock that found the mutex held), `lock`,
//! `unlock`, `wait`, `woken`, `signal`, `broadcast`, `barrier`, and
//! `ADDR` the program's object (its address, in decimal). heir-rt adds its
//! own boosts (`boost`, `prio`) and condition-variable instants (by engine
//! id; `heir exec` keeps the library's, by address).
//!
//! **Records.** With `HEIR_EXEC_RECORD` naming a directory, each process
//! maps the file `DIR/PID.rec` (sparse, [`CAPACITY`] records) and every
//! operation appends one [`RECORD`]-byte record (one atomic add for its
//! slot, no system call but the clock reads): a `HEADER`-byte header
//! (`b"HEIRREC1"`, then at 8 the slots taken and at 16 the capacity,
//! `u64` each), then records of little-endian fields:
//!
//! | offset | field |
//! |---|---|
//! | 0 | `CLOCK_MONOTONIC` ns when the operation began |
//! | 8 | the thread's CPU time (`CLOCK_THREAD_CPUTIME_ID`, ns) then |
//! | 16 | `CLOCK_MONOTONIC` ns when it returned |
//! | 24 | the thread's CPU time then |
//! | 32 | the object (address; [`Kind::Sched`]: the affinity mask of CPUs 0..63; [`Kind::Name`]: the name's first 8 bytes; [`Kind::Sleep`]: the requested ns) |
//! | 40 | a second object (the mutex of a wait; a barrier's count; [`Kind::Name`]: the name's last 8 bytes; [`Kind::Sleep`]: 1 when the time was absolute) |
//! | 48 | the thread id (`i32`) |
//! | 52 | the [`Kind`] (`u8`, written last: 0 is a record not finished) |
//! | 53 | [`Kind::Sched`]: the policy (`u8`); other kinds: flags ([`TIMED_OUT`]) |
//! | 54 | [`Kind::Sched`]: the real-time priority or the nice value (`i16`) |
//!
//! A thread's first record is preceded by its [`Kind::Sched`] and
//! [`Kind::Name`] records; its own `pthread_setschedparam`/
//! `pthread_setschedprio` after that makes a [`Kind::Sched`] record at once. A thread that made a
//! record makes a last one, [`Kind::Exit`], when it exits (a thread-local
//! destructor: at `pthread_exit`, the return of its start routine, or the
//! process's `exit` for the thread that calls it), so that the CPU time it
//! used after its last operation is known.

use std::cell::Cell;
use std::sync::atomic::{AtomicPtr, AtomicU64, AtomicU8, Ordering};

/// Bytes of the file's header.
pub const HEADER: usize = 64;
/// Bytes of a record.
pub const RECORD: usize = 64;
/// Records a process's file holds (64 MiB, sparse): later ones are lost
/// (the header's count says how many were tried).
pub const CAPACITY: u64 = 1 << 20;

/// What a record is.
#[repr(u8)]
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Kind {
    /// The thread's policy, priority and affinity.
    Sched = 1,
    /// The thread's name (`comm`, 16 bytes).
    Name = 2,
    /// `pthread_mutex_lock` (and trylock, timed lock) that got the mutex.
    Lock = 3,
    /// `pthread_mutex_unlock`.
    Unlock = 4,
    /// `pthread_cond_*wait`: begin = the wait, end = woken.
    Wait = 5,
    /// `pthread_cond_signal`.
    Signal = 6,
    /// `pthread_cond_broadcast`.
    Broadcast = 7,
    /// `pthread_barrier_wait`.
    Barrier = 8,
    /// `sem_post`.
    SemPost = 9,
    /// `sem_wait`.
    SemWait = 10,
    /// `nanosleep` / `clock_nanosleep` / `usleep` / `sleep`.
    Sleep = 11,
    /// `sem_init`: the object, and its initial value (second object).
    SemInit = 12,
    /// The thread exits (its CPU time then).
    Exit = 13,
    /// A timed operation that gave up ([`TIMED_OUT`]): a timed mutex
    /// lock (`pthread_mutex_timedlock`/`clocklock`) or `sem_timedwait`/
    /// `sem_clockwait`; begin and end say how long it blocked.
    GaveUp = 14,
}

/// Flag (byte 53) of a [`Kind::Wait`] that timed out, and of every
/// [`Kind::GaveUp`].
pub const TIMED_OUT: u8 = 1;

/// The mapped file of this process (null: not recording).
static MAP: AtomicPtr<u8> = AtomicPtr::new(std::ptr::null_mut());

thread_local! {
    /// The thread's scheduling and name are recorded (cleared by its own
    /// scheduling changes).
    static SEEN: Cell<bool> = const { Cell::new(false) };
    /// Armed with the thread's id at its first record: its destructor
    /// records [`Kind::Exit`].
    static EXIT: ExitGuard = const { ExitGuard { tid: Cell::new(0) } };
}

/// Records [`Kind::Exit`] when the thread's thread-locals are destroyed.
struct ExitGuard {
    /// 0: not armed (the thread made no record in this process).
    tid: Cell<i32>,
}

impl Drop for ExitGuard {
    fn drop(&mut self) {
        let tid = self.tid.get();
        let base = MAP.load(Ordering::Acquire);
        if tid == 0 || base.is_null() {
            return;
        }
        let (mono, cpu) = (heir::sys::now_ns(), cpu_ns());
        write(base, [mono, cpu, mono, cpu, 0, 0], tid, Kind::Exit, 0, 0);
    }
}

/// Maps `DIR/PID.rec` when `HEIR_EXEC_RECORD` names a directory (the
/// constructor, and the child after `fork`).
pub fn open() {
    MAP.store(std::ptr::null_mut(), Ordering::Release);
    // A fork child's thread starts its own file: its scheduling and name
    // come first there too, and its exit is its own (a new tid).
    sched_changed();
    let _ = EXIT.try_with(|e| e.tid.set(0));
    let Some(dir) = crate::config::get().record.as_deref() else {
        return;
    };
    // SAFETY: getpid has no preconditions.
    let pid = unsafe { libc::getpid() };
    let Ok(path) = std::ffi::CString::new(format!("{dir}/{pid}.rec")) else {
        return;
    };
    let len = HEADER + RECORD * CAPACITY as usize;
    // SAFETY: a NUL-terminated path; the flags and mode are open(2)'s.
    let fd = unsafe {
        libc::open(
            path.as_ptr(),
            libc::O_RDWR | libc::O_CREAT | libc::O_TRUNC | libc::O_CLOEXEC,
            0o600,
        )
    };
    if fd < 0 {
        return;
    }
    // SAFETY: `fd` is ours; ftruncate makes the file sparse.
    let ok = unsafe { libc::ftruncate(fd, len as libc::off_t) } == 0;
    let p = if ok {
        // SAFETY: a shared mapping of the whole file, which is `len` long.
        unsafe {
            libc::mmap(
                std::ptr::null_mut(),
                len,
                libc::PROT_READ | libc::PROT_WRITE,
                libc::MAP_SHARED,
                fd,
                0,
            )
        }
    } else {
        libc::MAP_FAILED
    };
    // SAFETY: `fd` is ours; the mapping stays valid after close.
    unsafe { libc::close(fd) };
    if p == libc::MAP_FAILED {
        return;
    }
    let base = p as *mut u8;
    // SAFETY: the mapping is at least HEADER bytes, page-aligned.
    unsafe {
        std::ptr::copy_nonoverlapping(b"HEIRREC1".as_ptr(), base, 8);
        (*(base.add(16) as *const AtomicU64)).store(CAPACITY, Ordering::Relaxed);
    }
    MAP.store(base, Ordering::Release);
}

/// True when operations are recorded or traced.
#[inline]
pub fn active() -> bool {
    !MAP.load(Ordering::Relaxed).is_null() || heir::trace::tracing()
}

/// Whether the kernel's trace takes heir's markers.
#[inline]
pub fn tracing() -> bool {
    heir::trace::tracing()
}

/// An instant marker `i KIND NOW rADDR` (when tracing).
pub fn mark(kind: &str, addr: usize) {
    if heir::trace::tracing() {
        heir::trace::mark(format_args!("i {kind} {} r{addr}", heir::sys::now_ns()));
    }
}

fn cpu_ns() -> u64 {
    let mut ts = libc::timespec {
        tv_sec: 0,
        tv_nsec: 0,
    };
    // SAFETY: `ts` is a local the call fills.
    unsafe { libc::clock_gettime(libc::CLOCK_THREAD_CPUTIME_ID, &mut ts) };
    (ts.tv_sec as u64).saturating_mul(1_000_000_000) + ts.tv_nsec as u64
}

/// When an operation began (both clocks; zero when not recording).
#[derive(Clone, Copy, Debug, Default)]
pub struct Begin {
    mono: u64,
    cpu: u64,
}

/// The clocks now, if recording.
#[inline]
pub fn begin() -> Begin {
    if MAP.load(Ordering::Relaxed).is_null() {
        return Begin::default();
    }
    Begin {
        cpu: cpu_ns(),
        mono: heir::sys::now_ns(),
    }
}

/// The calling thread's next record is preceded by a new [`Kind::Sched`]
/// (a fork child's first).
pub fn sched_changed() {
    let _ = SEEN.try_with(|s| s.set(false));
}

/// The calling thread just changed its own scheduling: a [`Kind::Sched`]
/// record now, with the clocks now (where in its run the change happened),
/// if it already made records; else its first record will say it.
pub fn sched_now() {
    let base = MAP.load(Ordering::Acquire);
    if base.is_null() || !SEEN.try_with(|s| s.get()).unwrap_or(false) {
        sched_changed();
        return;
    }
    write_sched(base, heir::rt::tid(), heir::sys::now_ns(), cpu_ns());
}

/// A [`Kind::Sched`] record of thread `tid` at (`mono`, `cpu`).
fn write_sched(base: *mut u8, tid: i32, mono: u64, cpu: u64) {
    let (policy, prio, mask) = sched_of(tid);
    write(
        base,
        [mono, cpu, mono, cpu, mask, 0],
        tid,
        Kind::Sched,
        policy,
        prio,
    );
}

/// Records an operation that began at `b` and ends now.
pub fn end(b: Begin, kind: Kind, obj: u64, obj2: u64) {
    end_flagged(b, kind, obj, obj2, 0);
}

/// [`end`] with flags ([`TIMED_OUT`]).
pub fn end_flagged(b: Begin, kind: Kind, obj: u64, obj2: u64, flags: u8) {
    let base = MAP.load(Ordering::Acquire);
    if base.is_null() {
        return;
    }
    let (mono, cpu) = (heir::sys::now_ns(), cpu_ns());
    put(base, b, (mono, cpu), kind, obj, obj2, flags);
}

/// Records an operation that does not block (an unlock, a signal, a
/// post): one reading of the clocks for its beginning and its end (the
/// thread's CPU clock is a system call).
pub fn instant(kind: Kind, obj: u64, obj2: u64) {
    let base = MAP.load(Ordering::Acquire);
    if base.is_null() {
        return;
    }
    let b = begin();
    put(base, b, (b.mono, b.cpu), kind, obj, obj2, 0);
}

/// Records an operation that began at `b` and did not block (a lock
/// that got the mutex at once): `b` is its end too.
pub fn end_at_begin(b: Begin, kind: Kind, obj: u64, obj2: u64) {
    let base = MAP.load(Ordering::Acquire);
    if !base.is_null() {
        put(base, b, (b.mono, b.cpu), kind, obj, obj2, 0);
    }
}

fn put(
    base: *mut u8,
    b: Begin,
    (mono, cpu): (u64, u64),
    kind: Kind,
    obj: u64,
    obj2: u64,
    flags: u8,
) {
    let tid = heir::rt::tid();
    if !SEEN.try_with(|s| s.replace(true)).unwrap_or(true) {
        let _ = EXIT.try_with(|e| e.tid.set(tid));
        write_sched(base, tid, b.mono, b.cpu);
        let mut name = [0u8; 16];
        // SAFETY: PR_GET_NAME writes at most 16 bytes into `name`.
        unsafe { libc::prctl(libc::PR_GET_NAME, name.as_mut_ptr()) };
        let mut lo = [0u8; 8];
        let mut hi = [0u8; 8];
        lo.copy_from_slice(&name[..8]);
        hi.copy_from_slice(&name[8..]);
        let n = [u64::from_le_bytes(lo), u64::from_le_bytes(hi)];
        write(
            base,
            [b.mono, b.cpu, b.mono, b.cpu, n[0], n[1]],
            tid,
            Kind::Name,
            0,
            0,
        );
    }
    write(
        base,
        [b.mono, b.cpu, mono, cpu, obj, obj2],
        tid,
        kind,
        flags,
        0,
    );
}

/// The thread's policy, priority (real-time priority or nice) and the
/// affinity mask of CPUs 0..63.
fn sched_of(tid: i32) -> (u8, i16, u64) {
    let (policy, prio) = match heir::sys::sched_getattr(tid) {
        Ok(a) => {
            let p = a.sched_policy as u8;
            if a.sched_policy == heir::sys::SCHED_FIFO || a.sched_policy == heir::sys::SCHED_RR {
                (p, a.sched_priority as i16)
            } else {
                (p, a.sched_nice as i16)
            }
        }
        Err(_) => (0, 0),
    };
    // SAFETY: an all-zero cpu_set_t is an empty set.
    let mut set: libc::cpu_set_t = unsafe { std::mem::zeroed() };
    let mut mask = 0u64;
    // SAFETY: `set` is a local of the size passed.
    if unsafe { libc::sched_getaffinity(tid, std::mem::size_of::<libc::cpu_set_t>(), &mut set) }
        == 0
    {
        for c in 0..64 {
            // SAFETY: `c` is within the set.
            if unsafe { libc::CPU_ISSET(c, &set) } {
                mask |= 1 << c;
            }
        }
    }
    (policy, prio, mask)
}

/// Writes one record; `policy` is byte 53 (a [`Kind::Sched`]'s policy,
/// other kinds' flags).
fn write(base: *mut u8, w: [u64; 6], tid: i32, kind: Kind, policy: u8, prio: i16) {
    // SAFETY: the header's count is an aligned u64 of the mapping.
    let slots = unsafe { &*(base.add(8) as *const AtomicU64) };
    let i = slots.fetch_add(1, Ordering::Relaxed);
    if i >= CAPACITY {
        return;
    }
    // SAFETY: slot `i` < CAPACITY lies within the mapping, 64-byte
    // aligned, and is this thread's alone (the atomic add gave it).
    unsafe {
        let r = base.add(HEADER + RECORD * i as usize);
        for (k, v) in w.iter().enumerate() {
            std::ptr::write_unaligned(r.add(8 * k) as *mut u64, v.to_le());
        }
        std::ptr::write_unaligned(r.add(48) as *mut i32, tid.to_le());
        *r.add(53) = policy;
        std::ptr::write_unaligned(r.add(54) as *mut i16, prio.to_le());
        (*(r.add(52) as *const AtomicU8)).store(kind as u8, Ordering::Release);
    }
}
