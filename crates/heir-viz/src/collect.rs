//! Observers that keep what the report page draws: each thread's response
//! times (for the CDFs) and who lent to whom for how long (the boosts).

use std::collections::BTreeMap;

use heir_report::{Observer, TraceEvent, TraceInfo};

/// Keeps every job's response time per thread (at most
/// [`ResponseSamples::MAX_PER_THREAD`] each; past it the first ones are
/// kept and [`ResponseSamples::truncated`] says so).
#[derive(Clone, Debug, Default, PartialEq)]
pub struct ResponseSamples {
    /// Thread names, by index.
    pub names: Vec<String>,
    /// Response times (ns) per thread, in completion order.
    pub samples: Vec<Vec<u64>>,
    /// Some thread had more jobs than were kept.
    pub truncated: bool,
}

impl ResponseSamples {
    /// The most samples kept per thread.
    pub const MAX_PER_THREAD: usize = 1 << 20;

    /// Thread `name`'s samples, sorted ascending.
    pub fn sorted(&self, name: &str) -> Vec<u64> {
        let mut v = self
            .names
            .iter()
            .position(|n| n == name)
            .and_then(|i| self.samples.get(i))
            .cloned()
            .unwrap_or_default();
        v.sort_unstable();
        v
    }
}

impl Observer for ResponseSamples {
    fn start(&mut self, info: &TraceInfo) {
        self.names = info.threads.iter().map(|t| t.name.clone()).collect();
        self.samples = vec![Vec::new(); info.threads.len()];
    }

    fn event(&mut self, ev: &TraceEvent) {
        if let TraceEvent::Complete {
            thread,
            response_ns,
            ..
        } = *ev
        {
            if let Some(s) = self.samples.get_mut(thread) {
                if s.len() < Self::MAX_PER_THREAD {
                    s.push(response_ns);
                } else {
                    self.truncated = true;
                }
            }
        }
    }
}

/// Boosts from one thread to another over a run.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct BoostRow {
    /// The donor (its name).
    pub donor: String,
    /// The boosted thread (its name).
    pub to: String,
    /// How many boosts lasted some time.
    pub count: u64,
    /// Time boosted in total (ns).
    pub total_ns: u64,
    /// The longest boost (ns).
    pub max_ns: u64,
    /// How many lasted no time: lent and taken back at the same instant
    /// (not in `count`, nor in the mean).
    pub momentary: u64,
}

/// Who lent to whom, and for how long, from the trace stream's `Boost`
/// events: a boost of `to` by `donor` lasts until `to`'s next `Boost`
/// with another donor (or none), or the end of the run.
#[derive(Clone, Debug, Default)]
pub struct BoostSummary {
    names: Vec<String>,
    /// Per thread: its current boost (donor, since).
    open: Vec<Option<(usize, u64)>>,
    /// (donor, to) → (count, total, max, momentary).
    pairs: BTreeMap<(usize, usize), (u64, u64, u64, u64)>,
}

impl BoostSummary {
    fn close(&mut self, to: usize, at: u64) {
        if let Some((d, since)) = self.open.get_mut(to).and_then(Option::take) {
            let e = self.pairs.entry((d, to)).or_insert((0, 0, 0, 0));
            let len = at.saturating_sub(since);
            if len == 0 {
                e.3 += 1;
            } else {
                e.0 += 1;
                e.1 += len;
                e.2 = e.2.max(len);
            }
        }
    }

    /// The pairs, most time first (then most momentary boosts).
    pub fn rows(&self) -> Vec<BoostRow> {
        let name = |i: usize| {
            self.names
                .get(i)
                .cloned()
                .unwrap_or_else(|| format!("#{i}"))
        };
        let mut rows: Vec<BoostRow> = self
            .pairs
            .iter()
            .map(
                |(&(d, t), &(count, total_ns, max_ns, momentary))| BoostRow {
                    donor: name(d),
                    to: name(t),
                    count,
                    total_ns,
                    max_ns,
                    momentary,
                },
            )
            .collect();
        rows.sort_by(|a, b| {
            (b.total_ns.cmp(&a.total_ns))
                .then(b.momentary.cmp(&a.momentary))
                .then(a.to.cmp(&b.to))
        });
        rows
    }
}

impl Observer for BoostSummary {
    fn start(&mut self, info: &TraceInfo) {
        self.names = info.threads.iter().map(|t| t.name.clone()).collect();
        self.open = vec![None; info.threads.len()];
    }

    fn event(&mut self, ev: &TraceEvent) {
        if let TraceEvent::Boost {
            at_ns, to, donor, ..
        } = *ev
        {
            let same = self
                .open
                .get(to)
                .copied()
                .flatten()
                .map(|(d, _)| Some(d) == donor);
            if same == Some(true) {
                return;
            }
            self.close(to, at_ns);
            if let (Some(d), Some(slot)) = (donor.filter(|&d| d != to), self.open.get_mut(to)) {
                *slot = Some((d, at_ns));
            }
        }
    }

    fn finish(&mut self, end_ns: u64) {
        for t in 0..self.open.len() {
            self.close(t, end_ns);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use heir_core::Urgency;
    use heir_report::ThreadInfo;

    fn info() -> TraceInfo {
        TraceInfo {
            cpus: 1,
            threads: ["C", "P"]
                .iter()
                .map(|n| ThreadInfo {
                    name: n.to_string(),
                    base: Urgency::fixed(1),
                })
                .collect(),
            resources: vec![],
        }
    }

    #[test]
    fn boosts_last_until_the_next_change_of_donor() {
        let mut b = BoostSummary::default();
        b.start(&info());
        let boost = |at_ns, donor| TraceEvent::Boost {
            at_ns,
            to: 1,
            donor,
            urgency: Urgency::fixed(3),
        };
        for e in [
            boost(10, Some(0)),
            boost(15, Some(0)), // same donor: the same boost
            boost(30, None),
            boost(35, Some(0)), // taken back at once: momentary
            boost(35, None),
            boost(40, Some(0)),
        ] {
            b.event(&e);
        }
        b.finish(45);
        assert_eq!(
            b.rows(),
            vec![BoostRow {
                donor: "C".into(),
                to: "P".into(),
                count: 2,
                total_ns: 25,
                max_ns: 20,
                momentary: 1,
            }]
        );
    }

    #[test]
    fn samples_per_thread() {
        let mut s = ResponseSamples::default();
        s.start(&info());
        for (thread, r) in [(1, 30), (0, 5), (1, 10)] {
            s.event(&TraceEvent::Complete {
                thread,
                at_ns: 0,
                response_ns: r,
                missed: false,
            });
        }
        assert_eq!(s.sorted("P"), vec![10, 30]);
        assert_eq!(s.sorted("C"), vec![5]);
        assert!(s.sorted("X").is_empty());
    }
}
