//! heir's limits: the largest file, name, count and time a scenario may have.
//!
//! Every count that sizes an allocation somewhere in heir (threads, CPUs,
//! queue slots, PI-CV helper links, the file itself and the names it
//! repeats) has a bound here, and so does every time: the reader refuses a
//! scenario beyond one, naming the limit, so that `heir sim`, `heir run` and
//! `heir analyze` refuse it the same way. Counts that only grow with the
//! size of the file (tasks, phases, events, resources) are bounded by
//! [`MAX_FILE_BYTES`]. `docs/SCENARIO.md` lists them for users.

/// The largest scenario file heir reads: 16 MiB (rt-app's files are a few
/// KiB).
pub const MAX_FILE_BYTES: usize = 16 << 20;

/// The longest name of a task, phase or resource, in bytes. Names are
/// repeated in every path, thread name and internal object name derived
/// from them, so a long name multiplies.
pub const MAX_NAME_BYTES: usize = 256;

/// The most threads a scenario may create — `instance` of one task, and the
/// sum over all tasks — when it is read for real threads (`heir run`), and
/// the limit of [`ThreadLimit::default`]: what [`crate::load`] and
/// [`crate::parse_str`] apply. A face that does not create real threads
/// passes its own [`ThreadLimit`] to [`crate::load_with`].
pub const MAX_THREADS: u32 = 1024;

/// The most threads a model of a scenario (the simulator, the analysis) is
/// ever given, whatever the machine's memory: 2²⁴ (16,777,216). Below it,
/// [`ThreadLimit::from_memory`] bounds them by what the machine can hold.
pub const MAX_MODEL_THREADS: u32 = 1 << 24;

/// The most threads a read accepts (`instance` of one task, and the sum over
/// all tasks), set by the face that reads the scenario: `heir run` creates
/// real threads ([`MAX_THREADS`]); `heir sim` and `heir analyze` hold a
/// model of each thread in memory ([`ThreadLimit::from_memory`]).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ThreadLimit {
    /// Who sets the limit, for messages: `heir` (the default), `heir sim`,
    /// `heir run`, … (`over heir sim's limit of N threads`).
    pub face: String,
    /// The most threads.
    pub max: u32,
    /// When the limit comes from memory: what a thread needs and what the
    /// machine has, for the message.
    pub memory: Option<MemoryBound>,
}

/// The memory a [`ThreadLimit`] was derived from.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct MemoryBound {
    /// Estimated bytes per thread of the face's model.
    pub bytes_per_thread: u64,
    /// Bytes of memory available to it (Linux's `MemAvailable`).
    pub available: u64,
}

impl Default for ThreadLimit {
    /// [`MAX_THREADS`], as `heir` (the real-thread limit; the messages say
    /// `over heir's limit of 1024 threads`).
    fn default() -> Self {
        ThreadLimit {
            face: "heir".to_string(),
            max: MAX_THREADS,
            memory: None,
        }
    }
}

impl ThreadLimit {
    /// A fixed limit of `max` threads set by `face`.
    pub fn fixed(face: &str, max: u32) -> Self {
        ThreadLimit {
            face: face.to_string(),
            max,
            memory: None,
        }
    }

    /// The threads a model of `bytes_per_thread` bytes each can have in
    /// `available` bytes of memory, at most [`MAX_MODEL_THREADS`] (and at
    /// least one).
    pub fn from_memory(face: &str, bytes_per_thread: u64, available: u64) -> Self {
        let fit = available / bytes_per_thread.max(1);
        ThreadLimit {
            face: face.to_string(),
            max: u32::try_from(fit)
                .unwrap_or(u32::MAX)
                .clamp(1, MAX_MODEL_THREADS),
            memory: Some(MemoryBound {
                bytes_per_thread,
                available,
            }),
        }
    }

    /// [`ThreadLimit::from_memory`] with the machine's available memory
    /// ([`available_memory`]): the limit of a face that models each thread
    /// in `bytes_per_thread` bytes (`heir sim`, `heir analyze`, the Python
    /// package).
    pub fn from_available_memory(face: &str, bytes_per_thread: u64) -> Self {
        ThreadLimit::from_memory(face, bytes_per_thread, available_memory())
    }

    /// `over heir sim's limit of N threads`, and when the limit comes from
    /// memory what `threads` threads would need (`: 1025 threads would need
    /// about 4.0 GiB (4096 bytes each), this machine has 3.9 GiB available`).
    pub fn over(&self, threads: u64) -> String {
        let (face, max) = (&self.face, self.max);
        let mut s = format!("over {face}'s limit of {max} threads");
        match self.memory {
            Some(m) if max < MAX_MODEL_THREADS => s.push_str(&format!(
                ": {threads} threads would need about {} ({} bytes each), this machine has {} available",
                bytes_shown(threads.saturating_mul(m.bytes_per_thread)),
                m.bytes_per_thread,
                bytes_shown(m.available)
            )),
            _ => {}
        }
        s
    }
}

/// Linux's `MemAvailable` (bytes): memory that can be allocated without
/// swapping. Unknown (no readable `/proc/meminfo`): `u64::MAX`, no memory
/// bound.
pub fn available_memory() -> u64 {
    let kb = std::fs::read_to_string("/proc/meminfo").ok().and_then(|s| {
        s.lines()
            .find_map(|l| l.strip_prefix("MemAvailable:"))
            .and_then(|v| v.split_whitespace().next())
            .and_then(|v| v.parse::<u64>().ok())
    });
    kb.map_or(u64::MAX, |kb| kb.saturating_mul(1024))
}

/// Bytes as `512 B`, `3.5 KiB`, `1.2 GiB`.
pub fn bytes_shown(bytes: u64) -> String {
    const UNITS: [&str; 6] = ["B", "KiB", "MiB", "GiB", "TiB", "PiB"];
    let mut v = bytes as f64;
    let mut u = 0;
    while v >= 1024.0 && u + 1 < UNITS.len() {
        v /= 1024.0;
        u += 1;
    }
    if u == 0 {
        format!("{bytes} B")
    } else {
        format!("{v:.1} {}", UNITS[u])
    }
}

/// The most CPUs: CPU numbers in `cpus` go from 0 to `MAX_CPUS - 1`, and
/// `heir sim --cpus N` takes at most this many. It is Linux's
/// `CPU_SETSIZE`, the CPUs a `cpu_set_t` can name.
pub const MAX_CPUS: u32 = 1024;

/// The largest `capacity` of a queue (`heir run` keeps up to that many
/// items in memory).
pub const MAX_QUEUE_CAPACITY: u32 = 65_536;

/// The most PI-CV helper links a scenario may need, summed over its
/// condition variables: each thread of each declared helper task of a cond;
/// each pushing and each popping thread of a queue; each (calling thread,
/// serving thread) pair of an endpoint. Each link is registered with the
/// engine before the run starts.
pub const MAX_HELPER_LINKS: u64 = 65_536;

/// The longest time, in seconds: 100 days. Every time in a scenario (a µs
/// value, `global.duration`) and every duration given on the command line
/// must be at most this; in nanoseconds it is below 2⁵³, so every instant
/// heir reports is exact in an `f64`, and adding two never overflows a
/// `u64`.
pub const MAX_TIME_S: u64 = 100 * 24 * 3600;

/// [`MAX_TIME_S`] in µs, the unit of the scenario's times.
pub const MAX_TIME_US: u64 = MAX_TIME_S * 1_000_000;

/// [`MAX_TIME_S`] in ns, the simulator's unit.
pub const MAX_TIME_NS: u64 = MAX_TIME_US * 1_000;

/// A task whose program never takes time (no `run`, `runtime`, `sleep` or
/// `timer` with a non-zero time, and no event that can block) is refused
/// when it loops forever or executes more than this many events in all: it
/// would spin without simulated time passing.
pub const MAX_ZERO_TIME_EVENTS: u64 = 1 << 16;

/// The message for a time beyond [`MAX_TIME_S`] given in seconds, e.g.
/// `duration 1e308 s is beyond heir's time limit of 8640000 s (100 days)`:
/// `global.duration` and `--duration` say the same.
pub fn beyond_time_limit_s(what: &str, shown: &str) -> String {
    format!("{what} {shown} s is beyond heir's time limit of {MAX_TIME_S} s (100 days)")
}

/// The message for a time beyond [`MAX_TIME_US`] given in µs, e.g.
/// `delay 18446744073709551615 µs is beyond heir's time limit of
/// 8640000000000 µs (100 days)`.
pub fn beyond_time_limit_us(what: &str, shown: &str) -> String {
    format!("{what} {shown} µs is beyond heir's time limit of {MAX_TIME_US} µs (100 days)")
}

/// A duration in seconds as whole µs (rounded), when it is within heir's
/// time limit: finite, `≥ 0` and at most [`MAX_TIME_S`].
pub fn seconds_to_us(secs: f64) -> Option<u64> {
    if secs.is_finite() && (0.0..=MAX_TIME_S as f64).contains(&secs) {
        // In range: at most 8.64e12, exact in a u64.
        Some((secs * 1e6).round() as u64)
    } else {
        None
    }
}

/// Why a duration in seconds ([`duration_us`]) cannot be used.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum DurationError {
    /// Not a positive number of at least 1 µs (zero, negative, NaN).
    NotPositive,
    /// Positive but beyond [`MAX_TIME_S`] (or infinite).
    BeyondLimit,
}

/// A run's duration given in seconds — `heir sim --duration S` and the
/// Python package's `Scenario.with_duration(s)`, which replace
/// `global.duration` — as whole µs: at least 1 µs, at most [`MAX_TIME_S`].
pub fn duration_us(secs: f64) -> Result<u64, DurationError> {
    match seconds_to_us(secs) {
        Some(us) if us >= 1 => Ok(us),
        None if secs > 0.0 => Err(DurationError::BeyondLimit),
        _ => Err(DurationError::NotPositive),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    // Exact in an f64 (below 2^53), and far from u64 overflow.
    const _: () = assert!(MAX_TIME_NS < 1 << 53);
    const _: () = assert!(MAX_TIME_NS < u64::MAX / 1000);

    #[test]
    fn thread_limits_from_memory() {
        let l = ThreadLimit::from_memory("heir sim", 4096, 8 << 30);
        assert_eq!(l.max, 2 * 1024 * 1024);
        assert_eq!(
            l.over(3_000_000),
            "over heir sim's limit of 2097152 threads: 3000000 threads would need about 11.4 GiB \
             (4096 bytes each), this machine has 8.0 GiB available"
        );
        let big = ThreadLimit::from_memory("heir sim", 1, u64::MAX);
        assert_eq!(big.max, MAX_MODEL_THREADS);
        assert_eq!(
            big.over(1 << 25),
            "over heir sim's limit of 16777216 threads"
        );
        assert_eq!(ThreadLimit::from_memory("x", 4096, 0).max, 1);
        assert_eq!(
            ThreadLimit::default().over(1025),
            "over heir's limit of 1024 threads"
        );
        assert_eq!(bytes_shown(512), "512 B");
        assert_eq!(bytes_shown(3584), "3.5 KiB");
    }

    #[test]
    fn the_time_limit_is_100_days() {
        assert_eq!(MAX_TIME_NS, 8_640_000_000_000_000);
    }

    #[test]
    fn durations_are_positive_and_within_the_limit() {
        assert_eq!(duration_us(1.5), Ok(1_500_000));
        assert_eq!(duration_us(1e-6), Ok(1));
        for bad in [0.0, 1e-7, -1.0, f64::NAN] {
            assert_eq!(duration_us(bad), Err(DurationError::NotPositive), "{bad}");
        }
        for bad in [8_640_000.5, f64::INFINITY] {
            assert_eq!(duration_us(bad), Err(DurationError::BeyondLimit), "{bad}");
        }
    }

    #[test]
    fn seconds_within_the_limit() {
        assert_eq!(seconds_to_us(0.0), Some(0));
        assert_eq!(seconds_to_us(1.5), Some(1_500_000));
        assert_eq!(seconds_to_us(8_640_000.0), Some(MAX_TIME_US));
        for bad in [8_640_000.5, 1e11, 1e308, f64::INFINITY, f64::NAN, -1.0] {
            assert_eq!(seconds_to_us(bad), None, "{bad}");
        }
    }
}
