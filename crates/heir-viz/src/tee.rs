//! Fan-out of one event stream to several observers.

use heir_report::{Observer, TraceEvent, TraceInfo};

/// An [`Observer`] that forwards every call to each of its observers, in the
/// order they were added.
///
/// ```
/// use heir_viz::{ChromeTrace, SvgGantt, Tee};
///
/// let mut trace = ChromeTrace::new(Vec::new());
/// let mut svg = SvgGantt::default();
/// let mut tee = Tee::new();
/// tee.push(&mut trace);
/// tee.push(&mut svg);
/// assert_eq!(tee.len(), 2);
/// // heir_report::simulate(&scenario, &config, &mut tee) …
/// ```
#[derive(Default)]
pub struct Tee<'a> {
    observers: Vec<&'a mut dyn Observer>,
}

impl<'a> Tee<'a> {
    /// A tee with no observers (it ignores everything until one is pushed).
    pub fn new() -> Self {
        Tee {
            observers: Vec::new(),
        }
    }

    /// Adds an observer; it receives calls after those added before it.
    pub fn push(&mut self, obs: &'a mut dyn Observer) {
        self.observers.push(obs);
    }

    /// Adds an observer, builder style.
    pub fn with(mut self, obs: &'a mut dyn Observer) -> Self {
        self.push(obs);
        self
    }

    /// Number of observers.
    pub fn len(&self) -> usize {
        self.observers.len()
    }

    /// True when there is no observer.
    pub fn is_empty(&self) -> bool {
        self.observers.is_empty()
    }
}

impl Observer for Tee<'_> {
    fn start(&mut self, info: &TraceInfo) {
        for o in &mut self.observers {
            o.start(info);
        }
    }

    fn event(&mut self, ev: &TraceEvent) {
        for o in &mut self.observers {
            o.event(ev);
        }
    }

    fn finish(&mut self, end_ns: u64) {
        for o in &mut self.observers {
            o.finish(end_ns);
        }
    }

    /// Only if one of its observers does: a tee of none (`heir sim` without
    /// `--trace` or `--svg`) lets the simulator skip building events.
    fn wants_events(&self) -> bool {
        self.observers.iter().any(|o| o.wants_events())
    }

    fn cancelled(&self) -> bool {
        self.observers.iter().any(|o| o.cancelled())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use heir_report::NullObserver;

    /// Counts the events it is given; wants them (the trait's default).
    #[derive(Default)]
    struct Count(usize);

    impl Observer for Count {
        fn event(&mut self, _: &TraceEvent) {
            self.0 += 1;
        }
    }

    #[test]
    fn wants_events_only_if_an_observer_does() {
        // `heir sim` without --trace or --svg: an empty tee, so the
        // simulator may skip building events.
        assert!(!Tee::new().wants_events());
        let mut null = NullObserver;
        assert!(!Tee::new().with(&mut null).wants_events());
        let mut null = NullObserver;
        let mut count = Count::default();
        let mut tee = Tee::new().with(&mut null).with(&mut count);
        assert!(tee.wants_events());
        assert!(!tee.cancelled());
        tee.event(&TraceEvent::Instant {
            thread: 0,
            at_ns: 1,
            kind: heir_report::InstantKind::Lock,
            resource: None,
        });
        drop(tee);
        assert_eq!(count.0, 1);
    }
}
