//! Scheduling basics on hand-built scenarios: FIFO order, preemption, timers,
//! sleep vs timer, runtime vs run, partitioned and global CPUs, RR, OTHER.

use heir_core::Urgency;
use heir_scenario::{Micros, Policy, Sched, TimerMode};
use heir_sim::SimConfig;

use crate::common::*;

fn sched(policy: Policy, priority: i32) -> Sched {
    Sched {
        policy,
        priority,
        dl: None,
    }
}

#[test]
fn fifo_order_among_equal_priorities() {
    // A, B, C start together at prio 10 on CPU 0; D (same prio) wakes at
    // 0.5 ms: SCHED_FIFO runs them to completion in arrival order, D at the
    // tail, no preemption among equals.
    let mut b = B::new();
    b.task(fifo("A", 10, vec![run_us(1000)]));
    b.task(fifo("B", 10, vec![run_us(1000)]));
    b.task(fifo("C", 10, vec![run_us(1000)]));
    b.task(fifo("D", 10, vec![run_us(1000)]).delay(500));
    let (r, rec) = b.run();
    assert_eq!(
        rec.merged(0),
        rows(&[
            ("A", 0.0, 1.0),
            ("B", 1.0, 2.0),
            ("C", 2.0, 3.0),
            ("D", 3.0, 4.0)
        ])
    );
    assert_eq!(r.duration_us, 4000.0);
    // One pass = one job: D released at 0.5 ms, done at 4 ms.
    assert_eq!(task_report(&r, "D").response_us.max, Some(3500.0));
    assert_eq!(task_report(&r, "C").response_us.max, Some(3000.0));
    assert_eq!(r.mode, "sim");
}

#[test]
fn preempted_thread_goes_back_to_the_head() {
    // L1, L2 at prio 10 (L1 first); H (20) arrives at 1 ms. L1 is preempted
    // and resumes before L2 (head of its level), as in Linux.
    let mut b = B::new();
    b.task(fifo("L1", 10, vec![run_us(2000)]));
    b.task(fifo("L2", 10, vec![run_us(1000)]));
    b.task(fifo("H", 20, vec![run_us(1000)]).delay(1000));
    let (_, rec) = b.run();
    assert_eq!(
        rec.merged(0),
        rows(&[
            ("L1", 0.0, 1.0),
            ("H", 1.0, 2.0),
            ("L1", 2.0, 3.0),
            ("L2", 3.0, 4.0)
        ])
    );
}

/// One thread, period 10 ms: a 4 ms job, a 15 ms job (overrun), two 4 ms
/// jobs; then it exits.
fn overrun_scenario(mode: TimerMode) -> heir_scenario::Scenario {
    let mut b = B::new();
    let tm = b.timer("t", mode);
    let mut t = fifo("T", 10, vec![]);
    t.phases = vec![
        (1, None, None, vec![run_us(4000), timer(tm, 10_000)]),
        (1, None, None, vec![run_us(15_000), timer(tm, 10_000)]),
        (2, None, None, vec![run_us(4000), timer(tm, 10_000)]),
    ];
    b.task(t);
    b.sc
}

/// Runs [`overrun_scenario`] in `mode` and checks T's releases (ms,
/// deadline ms), completions (ms, response ms, missed), `(jobs, misses)`
/// and the run's duration (µs); returns the report.
#[track_caller]
fn check_overrun(
    mode: TimerMode,
    releases: &[(f64, Option<f64>)],
    completions: &[(f64, f64, bool)],
    jobs_misses: (u64, u64),
    duration_us: f64,
) -> heir_sim::Report {
    let (r, rec) = run(&overrun_scenario(mode), &SimConfig::default());
    assert_eq!(rec.releases("T"), releases);
    assert_eq!(rec.completions("T"), completions);
    let t = task_report(&r, "T");
    assert_eq!((t.jobs, t.deadline_misses), jobs_misses);
    assert_eq!(r.duration_us, duration_us);
    r
}

#[test]
fn relative_timer_restarts_the_period_after_an_overrun() {
    // t_next = 0 (start). Job 0: run 0-4, timer: t_next = 10, sleep → done
    // at 4 (4 ms). Job 1 released at 10: run 10-25, timer: t_next = 20 ≤ 25:
    // overrun → miss (25 > 20), relative: t_next = 25, job 2 released at 25.
    // Job 2: run 25-29, t_next = 35 → done at 29 (4 ms). Job 3 released at
    // 35: run 35-39, t_next = 45 → 4 ms. Job 4 released at 45, then exit.
    let r = check_overrun(
        TimerMode::Relative,
        &[
            (0.0, Some(10.0)),
            (10.0, Some(20.0)),
            (25.0, Some(35.0)),
            (35.0, Some(45.0)),
            (45.0, Some(55.0)),
        ],
        &[
            (4.0, 4.0, false),
            (25.0, 15.0, true),
            (29.0, 4.0, false),
            (39.0, 4.0, false),
        ],
        (4, 1),
        45_000.0,
    );
    let t = task_report(&r, "T");
    assert_eq!(t.response_us.max, Some(15000.0));
    assert_eq!(t.response_us.mean, Some(6750.0));
}

#[test]
fn absolute_timer_keeps_the_reference_after_an_overrun() {
    // As above until the overrun at 25: absolute keeps t_next = 20, so job 2
    // is released (late) at 20. Job 2: run 25-29, t_next = 30 > 29: sleep,
    // done at 29 → 9 ms, not a miss. Job 3 released at 30: run 30-34,
    // t_next = 40 → 4 ms. Job 4 released at 40, then exit.
    check_overrun(
        TimerMode::Absolute,
        &[
            (0.0, Some(10.0)),
            (10.0, Some(20.0)),
            (20.0, Some(30.0)),
            (30.0, Some(40.0)),
            (40.0, Some(50.0)),
        ],
        &[
            (4.0, 4.0, false),
            (25.0, 15.0, true),
            (29.0, 9.0, false),
            (34.0, 4.0, false),
        ],
        (4, 1),
        40_000.0,
    );
}

#[test]
fn sleep_drifts_timer_does_not() {
    // rt-app tutorial: taskA runs 5 then sleeps 10 (period 15 when alone),
    // taskB runs 5 and uses a 19 ms timer; same priority, one CPU, 100 ms.
    //   0-5 A, 5-10 B (t_next 19), 15-20 A, 20-25 B (t_next 38), 30-35 A,
    //   38-43 B, 45-50 A, 57-62 B, A wakes at 60 behind B: 62-67, sleeps to
    //   77; B 76-81; A wakes at 77 behind B: 81-86, sleeps to 96; B 95-100.
    // A's passes end at 15, 30, 45, 60, 77, 96: its period stretches to 19;
    // B stays on its 19 ms grid.
    let mut b = B::new();
    let tb = b.timer("tb", TimerMode::Relative);
    b.task(fifo("taskA", 10, vec![run_us(5000), sleep_us(10_000)]).loops(None));
    b.task(fifo("taskB", 10, vec![run_us(5000), timer(tb, 19_000)]).loops(None));
    let (r, rec) = run(&b.sc, &config(100));
    assert_eq!(
        rec.responses("taskA"),
        vec![
            (15.0, 15.0),
            (30.0, 15.0),
            (45.0, 15.0),
            (60.0, 15.0),
            (77.0, 17.0),
            (96.0, 19.0)
        ]
    );
    assert_eq!(
        rec.release_times("taskB"),
        vec![0.0, 19.0, 38.0, 57.0, 76.0, 95.0]
    );
    assert_eq!(
        rec.responses("taskB"),
        vec![
            (10.0, 10.0),
            (25.0, 6.0),
            (43.0, 5.0),
            (62.0, 5.0),
            (81.0, 5.0),
            (100.0, 5.0)
        ]
    );
    assert_eq!(task_report(&r, "taskB").deadline_misses, 0);
    assert_eq!(r.duration_us, 100_000.0);
}

#[test]
fn runtime_ends_on_the_wall_clock_run_needs_cpu() {
    // T2 (10) does 4 ms then 1 ms; T1 (20) preempts it from 2 to 5 ms.
    // `runtime 4000` ends at wall time 4 (while preempted): T2 resumes at 5
    // with the 1 ms run → 5-6. `run 4000` still needs 2 ms at 5 → 5-7, 7-8.
    let build = |first| {
        let mut b = B::new();
        b.task(fifo("T2", 10, vec![first, run_us(1000)]));
        b.task(fifo("T1", 20, vec![run_us(3000)]).delay(2000));
        b.sc
    };
    let (r, rec) = run(&build(runtime_us(4000)), &SimConfig::default());
    assert_eq!(
        rec.merged(0),
        rows(&[("T2", 0.0, 2.0), ("T1", 2.0, 5.0), ("T2", 5.0, 6.0)])
    );
    assert_eq!(task_report(&r, "T2").response_us.max, Some(6000.0));
    let (r, rec) = run(&build(run_us(4000)), &SimConfig::default());
    assert_eq!(
        rec.merged(0),
        rows(&[("T2", 0.0, 2.0), ("T1", 2.0, 5.0), ("T2", 5.0, 8.0)])
    );
    assert_eq!(task_report(&r, "T2").response_us.max, Some(8000.0));
}

#[test]
fn partitioned_cpus_are_independent() {
    // A (10) and C (20, at 1 ms) share CPU 0; B (5) alone on CPU 1 is not
    // disturbed by anything on CPU 0.
    let mut b = B::new();
    b.task(fifo("A", 10, vec![run_us(3000)]));
    b.task(fifo("B", 5, vec![run_us(2000)]).cpus(Some(vec![1])));
    b.task(fifo("C", 20, vec![run_us(1000)]).delay(1000));
    let (r, rec) = b.run();
    assert_eq!(rec.info.as_ref().unwrap().cpus, 2);
    assert_eq!(
        rec.merged(0),
        rows(&[("A", 0.0, 1.0), ("C", 1.0, 2.0), ("A", 2.0, 4.0)])
    );
    assert_eq!(rec.merged(1), rows(&[("B", 0.0, 2.0)]));
    assert_eq!(r.duration_us, 4000.0);
}

#[test]
fn global_thread_preempts_the_least_urgent_cpu_and_migrates() {
    // Two CPUs, three threads allowed on both. G1 (10) takes CPU 0, G2 (20)
    // the idle CPU 1. G3 (30) at 1 ms preempts the least urgent (G1 on CPU
    // 0). CPU 1 frees at 2 ms and picks G1, which finishes there (3 ms left).
    let mut b = B::new();
    b.task(fifo("G1", 10, vec![run_us(4000)]).cpus(Some(vec![0, 1])));
    b.task(fifo("G2", 20, vec![run_us(2000)]).cpus(Some(vec![0, 1])));
    b.task(fifo("G3", 30, vec![run_us(2000)]).cpus(None).delay(1000));
    let (r, rec) = b.run();
    assert_eq!(rec.merged(0), rows(&[("G1", 0.0, 1.0), ("G3", 1.0, 3.0)]));
    assert_eq!(rec.merged(1), rows(&[("G2", 0.0, 2.0), ("G1", 2.0, 5.0)]));
    assert_eq!(r.duration_us, 5000.0);
}

#[test]
fn sched_other_runs_below_every_rt_thread() {
    // O (SCHED_OTHER) runs 10 ms; R (SCHED_FIFO 1) arrives at 2 ms and
    // preempts it at once.
    let mut b = B::new();
    b.task(fifo("O", 0, vec![run_us(10_000)]).policy(Policy::Other));
    b.task(fifo("R", 1, vec![run_us(3000)]).delay(2000));
    let (_, rec) = b.run();
    assert_eq!(
        rec.merged(0),
        rows(&[("O", 0.0, 2.0), ("R", 2.0, 5.0), ("O", 5.0, 13.0)])
    );
    assert_eq!(rec.slices()[0].3, Urgency::other(0));
}

#[test]
fn sched_other_round_robin_with_4ms_slices() {
    // Two nice-0 threads of 10 ms each: 4 ms slices alternate.
    let mut b = B::new();
    b.task(fifo("O1", 0, vec![run_us(10_000)]).policy(Policy::Other));
    b.task(fifo("O2", 0, vec![run_us(10_000)]).policy(Policy::Other));
    let (_, rec) = b.run();
    assert_eq!(
        rec.merged(0),
        rows(&[
            ("O1", 0.0, 4.0),
            ("O2", 4.0, 8.0),
            ("O1", 8.0, 12.0),
            ("O2", 12.0, 16.0),
            ("O1", 16.0, 18.0),
            ("O2", 18.0, 20.0)
        ])
    );
}

#[test]
fn sched_other_slice_scales_with_nice_weight() {
    // nice -5 has weight 3121: slice 4 ms × 3121 / 1024 = 12_191_406 ns
    // (integer ns); nice 0 gets 4 ms.
    let mut b = B::new();
    b.task(fifo("Hi", -5, vec![run_us(20_000)]).policy(Policy::Other));
    b.task(fifo("Lo", 0, vec![run_us(20_000)]).policy(Policy::Other));
    let (_, rec) = b.run();
    let m = rec.merged(0);
    assert_eq!(m[0], (s("Hi"), 0.0, 12_191_406.0 / 1e6));
    assert_eq!(m[1], (s("Lo"), 12_191_406.0 / 1e6, 16_191_406.0 / 1e6));
}

#[test]
fn sched_rr_round_robin_with_100ms_slices() {
    let mut b = B::new();
    b.task(fifo("A", 10, vec![run_us(250_000)]).policy(Policy::Rr));
    b.task(fifo("B", 10, vec![run_us(250_000)]).policy(Policy::Rr));
    let (_, rec) = b.run();
    assert_eq!(
        rec.merged(0),
        rows(&[
            ("A", 0.0, 100.0),
            ("B", 100.0, 200.0),
            ("A", 200.0, 300.0),
            ("B", 300.0, 400.0),
            ("A", 400.0, 450.0),
            ("B", 450.0, 500.0)
        ])
    );
}

#[test]
fn yield_goes_to_the_tail_of_its_level() {
    let mut b = B::new();
    let ev = || vec![run_us(1000), heir_scenario::EventKind::Yield, run_us(1000)];
    b.task(fifo("A", 10, ev()));
    b.task(fifo("B", 10, ev()));
    let (_, rec) = b.run();
    assert_eq!(
        rec.merged(0),
        rows(&[
            ("A", 0.0, 1.0),
            ("B", 1.0, 2.0),
            ("A", 2.0, 3.0),
            ("B", 3.0, 4.0)
        ])
    );
}

#[test]
fn phase_sched_change_applies_at_phase_start() {
    // T runs a phase at 30 then a phase at 10; M (20) arrives at 1 ms: it
    // waits for T's first phase, then preempts T when T drops to 10.
    let mut b = B::new();
    let mut t = fifo("T", 30, vec![]);
    t.phases = vec![
        (1, None, None, vec![run_us(2000)]),
        (1, None, Some(sched(Policy::Fifo, 10)), vec![run_us(2000)]),
    ];
    b.task(t);
    b.task(fifo("M", 20, vec![run_us(2000)]).delay(1000));
    let (r, rec) = b.run();
    let sl = rec.slices();
    assert_eq!(
        sl,
        vec![
            (s("T"), 0.0, 2.0, Urgency::fixed(30), None),
            (s("M"), 2.0, 4.0, Urgency::fixed(20), None),
            (s("T"), 4.0, 6.0, Urgency::fixed(10), None)
        ]
    );
    assert_eq!(rec.boosts(), vec![(2.0, s("T"), None, Urgency::fixed(10))]);
    // T's two passes are two jobs: 0-2 and 2-6.
    assert_eq!(task_report(&r, "T").jobs, 2);
    assert_eq!(task_report(&r, "T").response_us.max, Some(4000.0));
}

#[test]
fn phase_affinity_change_migrates() {
    // T runs 2 ms on CPU 0, then its second phase moves it to CPU 1, where
    // X (20) runs until 3 ms.
    let mut b = B::new();
    let mut t = fifo("T", 10, vec![]);
    t.phases = vec![
        (1, None, None, vec![run_us(2000)]),
        (1, Some(vec![1]), None, vec![run_us(2000)]),
    ];
    b.task(t);
    b.task(fifo("X", 20, vec![run_us(3000)]).cpus(Some(vec![1])));
    let (_, rec) = b.run();
    assert_eq!(rec.merged(0), rows(&[("T", 0.0, 2.0)]));
    assert_eq!(rec.merged(1), rows(&[("X", 0.0, 3.0), ("T", 3.0, 5.0)]));
}

#[test]
fn instances_are_threads_named_like_rt_app() {
    let mut b = B::new();
    b.task(fifo("W", 10, vec![run_us(1000)]).instances(2));
    let (r, rec) = b.run();
    let names: Vec<&str> = r.tasks.iter().map(|t| t.name.as_str()).collect();
    assert_eq!(names, vec!["W-0", "W-1"]);
    assert_eq!(rec.merged(0), rows(&[("W-0", 0.0, 1.0), ("W-1", 1.0, 2.0)]));
}

#[test]
fn loops_and_delay() {
    // Two task loops of a 1 ms run, starting at 3 ms: two jobs, end at 5 ms.
    let mut b = B::new();
    b.task(fifo("T", 10, vec![run_us(1000)]).delay(3000).loops(Some(2)));
    let (r, rec) = b.run();
    assert_eq!(rec.merged(0), rows(&[("T", 3.0, 5.0)]));
    let t = task_report(&r, "T");
    assert_eq!((t.jobs, t.response_us.max), (2, Some(1000.0)));
    assert_eq!(rec.end, Some(5_000_000));
}

#[test]
fn uniform_durations_are_drawn_in_range() {
    let mut b = B::new();
    b.task(
        fifo(
            "U",
            10,
            vec![heir_scenario::EventKind::Run(Micros::Uniform {
                min: 1000,
                max: 2000,
            })],
        )
        .loops(Some(50)),
    );
    let (r, _) = b.run();
    let t = task_report(&r, "U");
    assert_eq!(t.jobs, 50);
    assert!(t.response_us.min.unwrap() >= 1000.0);
    assert!(t.response_us.max.unwrap() <= 2000.0);
    assert!(t.response_us.min.unwrap() < t.response_us.max.unwrap());
}

#[test]
fn a_program_opening_with_its_timer_is_released_by_it() {
    // [timer 10 ms, run 2 ms] looping: no empty job at the start; jobs are
    // released at 10, 20, 30 and complete when the thread reaches its timer
    // again, right after its 2 ms run.
    let mut b = B::new();
    let tm = b.timer("t", TimerMode::Absolute);
    b.task(fifo("T", 10, vec![timer(tm, 10_000), run_us(2000)]).loops(None));
    let (r, rec) = run(&b.sc, &config(35));
    assert_eq!(rec.release_times("T"), vec![10.0, 20.0, 30.0]);
    assert_eq!(
        rec.responses("T"),
        vec![(12.0, 2.0), (22.0, 2.0), (32.0, 2.0)]
    );
    assert_eq!(task_report(&r, "T").deadline_misses, 0);
}

/// Issue 21 (A): a periodic thread (1 ms every 10 ms, FIFO 10) starved
/// from 100 ms by a FIFO 50 hog running to 500 ms. Its job released at
/// 100 ms (deadline 110 ms) never completes: a miss once the run ends at
/// or after its deadline, not before; the completed jobs are unchanged.
#[test]
fn unfinished_job_past_its_deadline_is_a_miss() {
    let mut b = B::new();
    let tm = b.timer("t", TimerMode::Absolute);
    b.task(fifo("T", 10, vec![run_us(1000), timer(tm, 10_000)]).loops(None));
    b.task(fifo("Hog", 50, vec![run_us(400_000)]).delay(100_000));
    let counts = |ms: u64| {
        let (r, _) = run(&b.sc, &config(ms));
        let t = task_report(&r, "T");
        let hog = task_report(&r, "Hog");
        assert_eq!((hog.deadline_misses, hog.unfinished_misses), (0, 0));
        (t.jobs, t.deadline_misses, t.unfinished_misses)
    };
    assert_eq!(counts(500), (10, 1, 1));
    assert_eq!(counts(110), (10, 1, 1));
    assert_eq!(counts(109), (10, 0, 0));
    // Not starved: every job up to the end completes in time; the one
    // released at 100 ms is still open (deadline 110 ms) when the run
    // ends at 100 ms, not a miss.
    let mut calm = B::new();
    let tm = calm.timer("t", TimerMode::Absolute);
    calm.task(fifo("T", 10, vec![run_us(1000), timer(tm, 10_000)]).loops(None));
    let (r, _) = run(&calm.sc, &config(100));
    let t = task_report(&r, "T");
    assert_eq!((t.jobs, t.deadline_misses, t.unfinished_misses), (10, 0, 0));
}
