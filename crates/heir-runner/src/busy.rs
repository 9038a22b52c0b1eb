//! `run`'s busy loop, its calibration per CPU, and how close each job's
//! `run` came to its nominal CPU time.
//!
//! A `run` of `us` µs is the simulator's: busy until the thread has used
//! `us` of CPU time (`CLOCK_THREAD_CPUTIME_ID`). [`run_cpu_ns`] loops in
//! chunks and reads the thread's CPU clock after each: a chunk is at most
//! [`RUN_CHUNK_NS`] of work and at most 3/4 of what is left, so the last
//! chunks approach the target from below and the run ends within about
//! one clock read of it, whatever the estimate of ns per loop (it only
//! sizes the chunks: loops up to a third slower than the estimate
//! overshoot nothing; chunks sized to all that was left overshot by up to
//! 10–30 % at p99 when the other vCPU slowed this one's loops). The
//! calibration ([`calibrate`], per CPU the run uses, rt-app's way) seeds
//! that estimate; each thread corrects it with what its chunks measure.
//!
//! `global.calibration` (an integer, ns per loop) replaces the calibration:
//! with it the chunks are sized by the file's figure at first, and `run`
//! still ends on the thread's CPU clock (rt-app's `run` is a fixed number of
//! loops sized by its calibration instead: see docs/PERFORMANCE.md, "heir
//! run vs rt-app").

use heir::sys;

/// The most CPU time [`run_cpu_ns`] spends between two reads of the
/// thread's CPU clock (1 ms).
pub const RUN_CHUNK_NS: u64 = 1_000_000;

/// A `run` ends when less than this CPU time is left (0.5 µs: about half
/// the cost of a read of the thread's CPU clock on a virtual machine, so
/// the run ends as near its target from below as from above).
pub const RUN_SLACK_NS: u64 = 500;

/// Busy-loop work unit: a few dependent integer operations.
#[inline(never)]
pub fn waste(loops: u64) {
    let mut x: u64 = 0x9e37_79b9_7f4a_7c15;
    for i in 0..loops {
        x = std::hint::black_box(x.rotate_left(7) ^ i.wrapping_mul(0x2545_f491_4f6c_dd1d));
    }
    std::hint::black_box(x);
}

/// Loops per calibration sample: long enough (about 1 ms) that a sample
/// pays the timer interrupts and virtualisation exits a `run` of
/// milliseconds pays, short enough to stay far from RT throttling.
const CALIBRATION_LOOPS: u64 = 1_000_000;

/// Samples a calibration takes at least (after a warm-up) and at most.
const CALIBRATION_SAMPLES: (usize, usize) = (5, 41);

/// A calibration is stable when a sample is within this fraction of the
/// running average of the samples before it (rt-app's 2 %).
const CALIBRATION_STABLE: f64 = 0.02;

/// One CPU's calibration.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct CpuCalibration {
    /// The CPU (this machine's number).
    pub cpu: u32,
    /// ns per [`waste`] loop.
    pub ns_per_loop: f64,
    /// Samples it took (0: given by the file or the configuration).
    pub samples: usize,
}

/// Measures ns per [`waste`] loop on `cpu`, the way rt-app's calibration
/// does: a pinned, short-lived `SCHED_FIFO` thread (when allowed) times
/// samples of `CALIBRATION_LOOPS` loops after a warm-up, by two clocks —
/// its own CPU time (`CLOCK_THREAD_CPUTIME_ID`) and `CLOCK_MONOTONIC` —
/// until a sample is within 2 % of the running average of the samples
/// before it by both clocks (at least 5, at most 41 samples), and takes the
/// lower of the two averages. The CPU clock is almost always the lower: a
/// more urgent thread of another program that preempts the calibration
/// does not inflate it (a wall-clock calibration under such load made
/// every `run` too short — the cause of a missed deadlock, issue 7).
pub fn calibrate(cpu: u32) -> CpuCalibration {
    calibrate_within(cpu, CALIBRATION_WAIT_NS).unwrap_or(CpuCalibration {
        cpu,
        ns_per_loop: 1.0,
        samples: 0,
    })
}

/// How long [`Calibration::of`] waits for one CPU's calibration (3 s): a
/// CPU that another program's real-time thread holds (a `SCHED_FIFO` 50
/// busy loop) never runs the calibrating `SCHED_FIFO` 1 thread, and a run
/// must not wait for that program to end.
pub const CALIBRATION_WAIT_NS: u64 = 3_000_000_000;

/// [`calibrate`], waiting at most `wait_ns` for it: `None` when the CPU did
/// not run the calibrating thread in time. That thread is then told to
/// stop and set to `SCHED_OTHER` from here (a `SCHED_FIFO` thread that the
/// CPU never runs could not even die: the process would linger until the
/// other program's thread yields); the fair server runs it, and it ends
/// after at most one more sample.
pub fn calibrate_within(cpu: u32, wait_ns: u64) -> Option<CpuCalibration> {
    let abandoned = std::sync::Arc::new(std::sync::atomic::AtomicBool::new(false));
    let gone = abandoned.clone();
    let (tx, rx) = std::sync::mpsc::channel();
    let (tid_tx, tid_rx) = std::sync::mpsc::channel();
    std::thread::spawn(move || {
        let _ = sys::set_affinity(0, &[cpu]);
        let me = sys::gettid();
        let _ = tid_tx.send(me);
        let saved = sys::sched_getattr(me).ok();
        let _ = sys::sched_setattr(me, &heir::sched::fifo(1));
        waste(CALIBRATION_LOOPS);
        let (min, max) = CALIBRATION_SAMPLES;
        let (mut sum_cpu, mut sum_wall, mut n) = (0.0, 0.0, 0usize);
        while n < max && !gone.load(std::sync::atomic::Ordering::Relaxed) {
            let (c0, w0) = (sys::thread_cpu_ns(), sys::now_ns());
            waste(CALIBRATION_LOOPS);
            let (c1, w1) = (sys::thread_cpu_ns(), sys::now_ns());
            let cpu_s = c1.saturating_sub(c0) as f64 / CALIBRATION_LOOPS as f64;
            let wall_s = w1.saturating_sub(w0) as f64 / CALIBRATION_LOOPS as f64;
            let near = |sum: f64, s: f64| {
                n > 0 && (s - sum / n as f64).abs() <= CALIBRATION_STABLE * sum / n as f64
            };
            let stable = n >= min && near(sum_cpu, cpu_s) && near(sum_wall, wall_s);
            sum_cpu += cpu_s;
            sum_wall += wall_s;
            n += 1;
            if stable {
                break;
            }
            sys::sleep_until(sys::now_ns() + 100_000);
        }
        if let Some(s) = saved {
            let _ = sys::sched_setattr(me, &s);
        }
        if n > 0 {
            let _ = tx.send(((sum_cpu / n as f64).min(sum_wall / n as f64), n));
        }
    });
    let got = rx.recv_timeout(std::time::Duration::from_nanos(wait_ns));
    if got.is_err() {
        abandoned.store(true, std::sync::atomic::Ordering::Relaxed);
        if let Ok(tid) = tid_rx.try_recv() {
            // Not a deadline thread: changing its policy from outside
            // leaks nothing.
            let _ = sys::sched_setattr(tid, &heir::sched::other(0));
        }
    }
    let (ns_per_loop, samples) = got.ok()?;
    Some(CpuCalibration {
        cpu,
        ns_per_loop: ns_per_loop.max(0.01),
        samples,
    })
}

/// The calibration of a run: ns per loop on each CPU it uses.
#[derive(Clone, Debug, PartialEq)]
pub struct Calibration {
    /// Measured by [`calibrate`] (`false`: the file's `global.calibration`
    /// or [`crate::run::RunConfig::calibration_ns_per_loop`], the same on
    /// every CPU).
    pub measured: bool,
    /// Per CPU (this machine's numbers), in the run's CPU order.
    pub cpus: Vec<CpuCalibration>,
}

impl Calibration {
    /// Calibrates each of `cpus`, or gives each `given` ns per loop.
    ///
    /// A CPU whose calibration did not run within [`CALIBRATION_WAIT_NS`]
    /// (another program's real-time thread holds it) takes the figure of
    /// the first CPU that calibrated (1.0 if none did), with 0 samples.
    pub fn of(cpus: &[u32], given: Option<u64>) -> Calibration {
        let measured: Vec<(u32, Option<CpuCalibration>)> = cpus
            .iter()
            .map(|&cpu| match given {
                Some(v) => (
                    cpu,
                    Some(CpuCalibration {
                        cpu,
                        ns_per_loop: v.max(1) as f64,
                        samples: 0,
                    }),
                ),
                None => (cpu, calibrate_within(cpu, CALIBRATION_WAIT_NS)),
            })
            .collect();
        let fallback = measured
            .iter()
            .find_map(|(_, c)| c.map(|c| c.ns_per_loop))
            .unwrap_or(1.0);
        Calibration {
            measured: given.is_none(),
            cpus: measured
                .into_iter()
                .map(|(cpu, c)| {
                    c.unwrap_or(CpuCalibration {
                        cpu,
                        ns_per_loop: fallback,
                        samples: 0,
                    })
                })
                .collect(),
        }
    }

    /// ns per loop on `cpu`, else on the first calibrated CPU (1.0 when
    /// none).
    pub fn ns_per_loop(&self, cpu: Option<u32>) -> f64 {
        cpu.and_then(|c| self.cpus.iter().find(|x| x.cpu == c))
            .or(self.cpus.first())
            .map_or(1.0, |c| c.ns_per_loop)
    }
}

/// Runs [`waste`] until the calling thread's CPU clock has advanced by
/// `ns` from `start` (its value when the `run` began), in chunks sized by
/// `*est` ns per loop, which each chunk of 10,000 loops or more corrects
/// (half the old estimate, half the measure). `body(loops)` executes the
/// loops (the caller checks its own stop conditions between them). Returns
/// the CPU time used, ns.
pub fn run_cpu_ns<E>(
    start: u64,
    ns: u64,
    est: &std::cell::Cell<f64>,
    mut body: impl FnMut(u64) -> Result<(), E>,
) -> Result<u64, E> {
    let target = start + ns;
    let mut now = sys::thread_cpu_ns();
    while now + RUN_SLACK_NS < target {
        let left = target - now;
        let chunk = (left - left / 4).min(RUN_CHUNK_NS);
        let e = est.get();
        let loops = ((chunk as f64 / e) as u64).max(1);
        body(loops)?;
        let after = sys::thread_cpu_ns();
        if loops >= 10_000 {
            let measured = after.saturating_sub(now) as f64 / loops as f64;
            est.set((0.5 * e + 0.5 * measured).max(0.01));
        }
        now = after;
    }
    Ok(now - start)
}

/// Per-job `run` accuracy of one thread: each job's `run` events' CPU time
/// (and wall-clock time) against their nominal sum, in parts per million.
#[derive(Clone, Debug, Default)]
pub struct RunAccuracy {
    /// Nominal, CPU and wall-clock ns of the current job's `run` events.
    job: (u64, u64, u64),
    /// Per job: (CPU − nominal) / nominal, ppm (the first [`ACCURACY_JOBS`]).
    cpu_ppm: Vec<i32>,
    /// Per job: (wall − nominal) / nominal, ppm.
    wall_ppm: Vec<i32>,
}

/// Jobs per thread whose accuracy is kept (the first ones).
pub const ACCURACY_JOBS: usize = 200_000;

fn ppm(x: u64, nominal: u64) -> i32 {
    ((x as f64 - nominal as f64) / nominal as f64 * 1e6).clamp(-2e9, 2e9) as i32
}

impl RunAccuracy {
    /// Adds one `run` event to the current job.
    pub fn add(&mut self, nominal_ns: u64, cpu_ns: u64, wall_ns: u64) {
        self.job.0 += nominal_ns;
        self.job.1 += cpu_ns;
        self.job.2 += wall_ns;
    }

    /// Ends the current job (nothing kept for a job without `run`).
    pub fn end_job(&mut self) {
        let (n, c, w) = std::mem::take(&mut self.job);
        if n > 0 && self.cpu_ppm.len() < ACCURACY_JOBS {
            self.cpu_ppm.push(ppm(c, n));
            self.wall_ppm.push(ppm(w, n));
        }
    }

    /// Merges another thread's jobs into these.
    pub fn merge(&mut self, other: &RunAccuracy) {
        self.cpu_ppm.extend_from_slice(&other.cpu_ppm);
        self.wall_ppm.extend_from_slice(&other.wall_ppm);
    }

    /// Jobs with `run` events counted.
    pub fn jobs(&self) -> usize {
        self.cpu_ppm.len()
    }

    /// The `q` quantile (0..=1, nearest rank) of the per-job CPU-time
    /// error, %; `None` without jobs.
    pub fn cpu_error_pct(&self, q: f64) -> Option<f64> {
        quantile(&self.cpu_ppm, q)
    }

    /// The same for the wall-clock time of the `run` events (includes the
    /// time other threads held the CPU: rt-app's `run` column's meaning).
    pub fn wall_error_pct(&self, q: f64) -> Option<f64> {
        quantile(&self.wall_ppm, q)
    }
}

fn quantile(v: &[i32], q: f64) -> Option<f64> {
    if v.is_empty() {
        return None;
    }
    let mut s = v.to_vec();
    s.sort_unstable();
    let i = ((q * s.len() as f64).ceil() as usize).clamp(1, s.len()) - 1;
    Some(f64::from(s[i]) / 1e4)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn accuracy_quantiles_are_nearest_rank_in_percent() {
        let mut a = RunAccuracy::default();
        for (n, c) in [(1000, 1010), (1000, 1000), (2000, 1990), (1000, 1020)] {
            a.add(n, c, c);
            a.end_job();
        }
        // A job without `run` is not counted.
        a.end_job();
        assert_eq!(a.jobs(), 4);
        assert_eq!(a.cpu_error_pct(0.5), Some(0.0));
        assert_eq!(a.cpu_error_pct(0.99), Some(2.0));
        assert_eq!(a.cpu_error_pct(0.0), Some(-0.5));
        assert_eq!(RunAccuracy::default().cpu_error_pct(0.5), None);
    }

    #[test]
    fn a_job_sums_its_run_events() {
        let mut a = RunAccuracy::default();
        a.add(1000, 1100, 1200);
        a.add(1000, 900, 1000);
        a.end_job();
        assert_eq!(a.cpu_error_pct(0.5), Some(0.0));
        assert_eq!(a.wall_error_pct(0.5), Some(10.0));
    }

    #[test]
    fn run_uses_at_least_its_cpu_time_whatever_the_estimate() {
        // A wildly wrong estimate only sizes the chunks.
        for guess in [0.05, 1.0, 50.0] {
            let est = std::cell::Cell::new(guess);
            let start = sys::thread_cpu_ns();
            let used = run_cpu_ns::<()>(start, 2_000_000, &est, |n| {
                waste(n);
                Ok(())
            })
            .unwrap_or(0);
            assert!(used + RUN_SLACK_NS >= 2_000_000, "{guess}: {used}");
        }
    }
}
