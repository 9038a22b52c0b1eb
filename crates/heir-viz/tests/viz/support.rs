//! Hand-built event streams and recording observers shared by the tests.

use heir_core::Urgency;
use heir_report::{InstantKind, Observer, ThreadInfo, TraceEvent, TraceInfo};

pub const MS: u64 = 1_000_000;

/// Thread indices of [`classic_pi`], in scenario order (L, M, H): the
/// writers must put H on top.
pub const L: usize = 0;
pub const M: usize = 1;
pub const H: usize = 2;
/// Resource `m`.
pub const MUTEX: usize = 0;

pub fn info() -> TraceInfo {
    TraceInfo {
        cpus: 1,
        threads: vec![
            ThreadInfo {
                name: "L".into(),
                base: Urgency::fixed(50),
            },
            ThreadInfo {
                name: "M".into(),
                base: Urgency::fixed(70),
            },
            ThreadInfo {
                name: "H".into(),
                base: Urgency::fixed(90),
            },
        ],
        resources: vec!["m".into()],
    }
}

fn exec(thread: usize, start: u64, end: u64, prio: u8, donor: Option<usize>) -> TraceEvent {
    TraceEvent::Exec {
        cpu: 0,
        thread,
        start_ns: start,
        end_ns: end,
        urgency: Urgency::fixed(prio),
        donor,
    }
}

fn instant(thread: usize, at: u64, kind: InstantKind) -> TraceEvent {
    TraceEvent::Instant {
        thread,
        at_ns: at,
        kind,
        resource: Some(MUTEX),
    }
}

/// Classic priority inheritance on one CPU, as the simulator would report
/// it (slices are reported when they end):
///
/// ```text
/// 0      1      2      3      4      5      6      7      8  ms
/// L=============|             |======|                    |======|   L locks m at 1
///               H======|      |      H======|                        H blocks on m at 3
///                      ^ boost L (donor H)  ^ L unlocks at 4, unboost
///                                           M=============|          M released at 2.5
/// ```
/// H's job (released at 2, deadline 12) completes at 5; L's job (released
/// at 0, deadline 6) completes at 8: a miss.
pub fn classic_pi() -> Vec<TraceEvent> {
    vec![
        TraceEvent::Release {
            thread: L,
            at_ns: 0,
            deadline_ns: Some(6 * MS),
        },
        instant(L, MS, InstantKind::Lock),
        TraceEvent::Release {
            thread: H,
            at_ns: 2 * MS,
            deadline_ns: Some(12 * MS),
        },
        exec(L, 0, 2 * MS, 50, None),
        TraceEvent::Release {
            thread: M,
            at_ns: 2 * MS + MS / 2,
            deadline_ns: None,
        },
        instant(H, 3 * MS, InstantKind::LockBlocked),
        exec(H, 2 * MS, 3 * MS, 90, None),
        TraceEvent::Boost {
            at_ns: 3 * MS,
            to: L,
            donor: Some(H),
            urgency: Urgency::fixed(90),
        },
        instant(L, 4 * MS, InstantKind::Unlock),
        TraceEvent::Boost {
            at_ns: 4 * MS,
            to: L,
            donor: None,
            urgency: Urgency::fixed(50),
        },
        exec(L, 3 * MS, 4 * MS, 90, Some(H)),
        instant(H, 4 * MS, InstantKind::Lock),
        TraceEvent::Complete {
            thread: H,
            at_ns: 5 * MS,
            response_ns: 3 * MS,
            missed: false,
        },
        exec(H, 4 * MS, 5 * MS, 90, None),
        TraceEvent::Complete {
            thread: M,
            at_ns: 7 * MS,
            response_ns: 4 * MS + MS / 2,
            missed: false,
        },
        exec(M, 5 * MS, 7 * MS, 70, None),
        TraceEvent::Complete {
            thread: L,
            at_ns: 8 * MS,
            response_ns: 8 * MS,
            missed: true,
        },
        exec(L, 7 * MS, 8 * MS, 50, None),
    ]
}

/// The same run without inheritance: no boost, no donor anywhere.
pub fn no_boost() -> Vec<TraceEvent> {
    classic_pi()
        .into_iter()
        .filter(|e| !matches!(e, TraceEvent::Boost { .. }))
        .map(|e| match e {
            TraceEvent::Exec {
                cpu,
                thread,
                start_ns,
                end_ns,
                donor: Some(_),
                ..
            } => TraceEvent::Exec {
                cpu,
                thread,
                start_ns,
                end_ns,
                urgency: Urgency::fixed(50),
                donor: None,
            },
            e => e,
        })
        .collect()
}

/// Feeds `events` to `obs` between `start` and `finish(end_ns)`.
pub fn play(obs: &mut dyn Observer, info: &TraceInfo, events: &[TraceEvent], end_ns: u64) {
    obs.start(info);
    for e in events {
        obs.event(e);
    }
    obs.finish(end_ns);
}

/// One observer call, as recorded.
#[derive(Clone, Debug, PartialEq)]
pub enum Call {
    Start(TraceInfo),
    Event(TraceEvent),
    Finish(u64),
}

/// Records every call.
#[derive(Default)]
pub struct Recorder {
    pub calls: Vec<Call>,
}

impl Observer for Recorder {
    fn start(&mut self, info: &TraceInfo) {
        self.calls.push(Call::Start(info.clone()));
    }
    fn event(&mut self, ev: &TraceEvent) {
        self.calls.push(Call::Event(ev.clone()));
    }
    fn finish(&mut self, end_ns: u64) {
        self.calls.push(Call::Finish(end_ns));
    }
}

/// Counts occurrences of `needle` in `hay`.
pub fn count(hay: &str, needle: &str) -> usize {
    hay.matches(needle).count()
}

/// L runs on CPU 0, then CPU 1, then CPU 1 again, then CPU 0: two moves.
pub fn migrating() -> Vec<TraceEvent> {
    let exec = |cpu, start, end| TraceEvent::Exec {
        cpu,
        thread: L,
        start_ns: start * MS,
        end_ns: end * MS,
        urgency: Urgency::fixed(50),
        donor: None,
    };
    vec![exec(0, 0, 1), exec(1, 2, 3), exec(1, 3, 4), exec(0, 5, 6)]
}
