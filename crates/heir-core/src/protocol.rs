//! The protocol vocabulary, defined once for every face: what a mutex's
//! waiters do to its owner ([`Protocol`]), and the protocol families the
//! analysis compares ([`Family`]). Names, parsing and display live here;
//! the scenario file, `--protocol`, the engine, the simulator, the runtime
//! and the analysis all use these two types.
//!
//! A [`Protocol`] is generic in how its ceiling is given: the engine's is
//! an [`Urgency`] (`Protocol<Urgency>`, the default), a scenario's and the
//! analysis' a real-time priority 1..=99 (`Protocol<i32>`), and a protocol
//! as written on the command line may leave it out ([`Written`]:
//! `ceiling` without `:N`). [`Protocol::map_ceiling`] goes from one to the
//! other; the names do not change.

use core::fmt;

use crate::Urgency;

/// A mutex protocol: what the mutex's waiters do to its owner.
///
/// | name | urgency (the engine's walk) | time (the faces) |
/// |---|---|---|
/// | `none` | waiters lend nothing | — |
/// | `inherit` | the owner inherits its top waiter's urgency | the owner runs on its own time (Linux's `rt_mutex`: a deadline waiter lends its parameters, not its budget) |
/// | `ceiling` | the owner runs at least at the ceiling from the moment it locks (immediate priority ceiling, IPCP); waiters lend nothing | — |
/// | `bwi` | as `inherit` | multiprocessor bandwidth inheritance (M-BWI, Parri, Lelli, Marinoni, Lipari): the owner runs on the waiter's budget and deadline, and a waiter whose owner runs on another CPU busy-waits |
///
/// The engine records `bwi` as its own protocol (a mutex's
/// [`crate::Spec::lends_budget`]) and walks urgency as for `inherit`; the
/// budget is charged by the face that runs time: the simulator's M-BWI
/// servers (`heir-sim`'s `dl.rs`), heir-rt's `bwi` accounting (`bwi.rs`),
/// and the analysis' M-BWI interference (`heir-analysis`'s `dl.rs`). With
/// fixed priorities only, `bwi` behaves as `inherit` on every face. On
/// real threads (`heir run`) a `bwi` mutex is a PI futex like an `inherit`
/// one (the kernel lends the urgency) and its engine mutex is still made
/// as `inherit` there (heir-rt's runner builds it; not changed yet).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Protocol<C = Urgency> {
    /// No inheritance (`PTHREAD_PRIO_NONE`): waiters wait, the owner runs
    /// at its own urgency.
    None,
    /// Priority inheritance (`PTHREAD_PRIO_INHERIT`): the owner inherits
    /// its top waiter's urgency.
    Inherit,
    /// Multiprocessor bandwidth inheritance (M-BWI): as [`Protocol::Inherit`]
    /// for urgency; a blocked waiter also lends its budget.
    Bwi,
    /// Immediate priority ceiling (`PTHREAD_PRIO_PROTECT`; IPCP): the owner
    /// runs at least at the ceiling from the moment it locks. Waiters do
    /// not donate.
    Ceiling(C),
}

/// A protocol as written in a scenario's `"protocol"` or in `--protocol`:
/// `ceiling` may come without its real-time priority (`Ceiling(None)`; the
/// file then gives it as `"ceiling"`, `--protocol` derives it).
pub type Written = Protocol<Option<i32>>;

/// The names of the protocols, in the order messages list them.
pub const PROTOCOL_NAMES: [&str; 4] = ["none", "inherit", "bwi", "ceiling"];

/// What `--protocol NAME=P` accepts as `P`, as messages list it.
pub const PROTOCOL_SPELLINGS: &str = "none, inherit, bwi, ceiling, ceiling:N";

/// The real-time priorities a ceiling may have (`ceiling:1` to
/// `ceiling:99`, `"ceiling": 1` to `99`).
pub const CEILING_PRIORITIES: core::ops::RangeInclusive<i32> = 1..=99;

impl<C> Protocol<C> {
    /// The protocol's name: `"none"`, `"inherit"`, `"bwi"`, `"ceiling"`.
    pub fn name(&self) -> &'static str {
        match self {
            Protocol::None => "none",
            Protocol::Inherit => "inherit",
            Protocol::Bwi => "bwi",
            Protocol::Ceiling(_) => "ceiling",
        }
    }

    /// Whether waiters lend their urgency to the owner (`inherit`, `bwi`).
    pub fn inherits(&self) -> bool {
        matches!(self, Protocol::Inherit | Protocol::Bwi)
    }

    /// The ceiling, for a ceiling protocol.
    pub fn ceiling(&self) -> Option<&C> {
        match self {
            Protocol::Ceiling(c) => Some(c),
            _ => None,
        }
    }

    /// The same protocol with its ceiling converted by `f`.
    pub fn map_ceiling<D>(self, f: impl FnOnce(C) -> D) -> Protocol<D> {
        match self {
            Protocol::None => Protocol::None,
            Protocol::Inherit => Protocol::Inherit,
            Protocol::Bwi => Protocol::Bwi,
            Protocol::Ceiling(c) => Protocol::Ceiling(f(c)),
        }
    }

    /// The same protocol with its ceiling converted by `f`, which may fail.
    pub fn try_map_ceiling<D, E>(
        self,
        f: impl FnOnce(C) -> Result<D, E>,
    ) -> Result<Protocol<D>, E> {
        Ok(match self {
            Protocol::None => Protocol::None,
            Protocol::Inherit => Protocol::Inherit,
            Protocol::Bwi => Protocol::Bwi,
            Protocol::Ceiling(c) => Protocol::Ceiling(f(c)?),
        })
    }
}

impl Protocol<()> {
    /// The protocol named `name` (one of [`PROTOCOL_NAMES`]), its ceiling
    /// still to be given.
    pub fn from_name(name: &str) -> Option<Protocol<()>> {
        match name {
            "none" => Some(Protocol::None),
            "inherit" => Some(Protocol::Inherit),
            "bwi" => Some(Protocol::Bwi),
            "ceiling" => Some(Protocol::Ceiling(())),
            _ => None,
        }
    }
}

impl Protocol<i32> {
    /// The engine's protocol: a ceiling priority (clamped to 1..=99) is
    /// the fixed urgency of that priority.
    pub fn to_engine(self) -> Protocol {
        self.map_ceiling(|c| {
            let p = c.clamp(*CEILING_PRIORITIES.start(), *CEILING_PRIORITIES.end());
            Urgency::fixed(u8::try_from(p).unwrap_or(u8::MAX))
        })
    }
}

/// Why [`Written::parse`] refused a protocol.
#[derive(Clone, Copy, Debug, PartialEq, Eq, thiserror::Error)]
pub enum ParseProtocolError {
    /// Not one of [`PROTOCOL_SPELLINGS`].
    #[error("expected one of {PROTOCOL_SPELLINGS}")]
    Unknown,
    /// `ceiling:N` with N not a real-time priority (1..=99).
    #[error("a ceiling is a real-time priority, ceiling:1 to ceiling:99")]
    BadCeiling,
}

impl Protocol<Option<i32>> {
    /// Parses one of [`PROTOCOL_SPELLINGS`] (surrounding blanks ignored):
    /// a name, or `ceiling:N` with N in [`CEILING_PRIORITIES`].
    pub fn parse(s: &str) -> Result<Written, ParseProtocolError> {
        let s = s.trim();
        if let Some(p) = Protocol::from_name(s) {
            return Ok(p.map_ceiling(|()| None));
        }
        match s.strip_prefix("ceiling:").map(str::parse::<i32>) {
            Some(Ok(n)) if CEILING_PRIORITIES.contains(&n) => Ok(Protocol::Ceiling(Some(n))),
            Some(_) => Err(ParseProtocolError::BadCeiling),
            None => Err(ParseProtocolError::Unknown),
        }
    }

    /// The canonical spelling, which [`Written::parse`] reads back:
    /// `ceiling` or `ceiling:N`, else the name.
    pub fn spelled(&self) -> String {
        match self {
            Protocol::Ceiling(Some(c)) => format!("ceiling:{c}"),
            p => p.name().to_string(),
        }
    }
}

/// `none`, `inherit`, `bwi`, `ceiling:C`.
impl<C: fmt::Display> fmt::Display for Protocol<C> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Protocol::Ceiling(c) => write!(f, "ceiling:{c}"),
            p => f.write_str(p.name()),
        }
    }
}

/// A protocol family: what `heir sweep` and `heir analyze --protocol`
/// compare. Each fixes every mutex's [`Protocol`] and how an RPC server
/// runs.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum Family {
    /// `none` mutexes; servers run at their own priority.
    None,
    /// `inherit` mutexes; servers run at their own priority (no PI-CV: a
    /// waiting client lends nothing to the server).
    Inherit,
    /// `ceiling` mutexes (ceiling = highest priority of their users); each
    /// server runs at the highest priority of its callers (the
    /// "alternative approach" of the PI-CV paper, §6.2).
    Ceiling,
    /// `inherit` mutexes and PI-CV: a waiting client lends its priority to
    /// the server (the PI-CV paper: Cucinotta, Abeni, Lelli, Lipari).
    PiCv,
}

impl Family {
    /// All four, in the order heir reports them.
    pub const ALL: [Family; 4] = [Family::None, Family::Inherit, Family::Ceiling, Family::PiCv];

    /// The names, as messages list them.
    pub const SPELLINGS: &'static str = "none, inherit, ceiling, pi-cv";

    /// The names as a choice, for messages: "... or pi-cv".
    pub const CHOICES: &'static str = "none, inherit, ceiling or pi-cv";

    /// The mutex protocol every mutex gets (a ceiling's priority is
    /// derived from the mutex's users).
    pub fn mutexes(self) -> Protocol<()> {
        match self {
            Family::None => Protocol::None,
            Family::Inherit | Family::PiCv => Protocol::Inherit,
            Family::Ceiling => Protocol::Ceiling(()),
        }
    }

    /// The name used in files and on the command line: the mutex
    /// protocol's name, or `pi-cv`.
    pub fn name(self) -> &'static str {
        match self {
            Family::PiCv => "pi-cv",
            f => f.mutexes().name(),
        }
    }

    /// Parses [`Family::name`] (also `picv` and `pi_cv`).
    pub fn parse(s: &str) -> Option<Family> {
        match s {
            "pi-cv" | "picv" | "pi_cv" => Some(Family::PiCv),
            _ => Family::ALL[..3]
                .iter()
                .copied()
                .find(|f| f.mutexes().name() == s),
        }
    }
}

impl fmt::Display for Family {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_spelling_reads_back() {
        for name in PROTOCOL_NAMES {
            let p = Written::parse(name).expect("a name parses");
            assert_eq!(p.name(), name);
            assert_eq!(p.spelled(), name);
        }
        let p = Written::parse(" ceiling:40 ").expect("parses");
        assert_eq!(p, Protocol::Ceiling(Some(40)));
        assert_eq!(Written::parse(&p.spelled()), Ok(p));
        for bad in ["ceiling:0", "ceiling:100", "ceiling:x", "ceiling:"] {
            assert_eq!(
                Written::parse(bad),
                Err(ParseProtocolError::BadCeiling),
                "{bad}"
            );
        }
        for bad in ["", "pi", "Inherit", "ceiling40"] {
            assert_eq!(
                Written::parse(bad),
                Err(ParseProtocolError::Unknown),
                "{bad}"
            );
        }
        let listed: Vec<&str> = PROTOCOL_SPELLINGS.split(", ").collect();
        assert_eq!(&listed[..4], &PROTOCOL_NAMES[..]);
    }

    #[test]
    fn display_and_conversions() {
        assert_eq!(Protocol::<i32>::Ceiling(40).to_string(), "ceiling:40");
        assert_eq!(Protocol::<i32>::Bwi.to_string(), "bwi");
        assert_eq!(
            Protocol::Ceiling(300).to_engine(),
            Protocol::Ceiling(Urgency::fixed(99))
        );
        assert_eq!(Protocol::<i32>::Bwi.to_engine(), Protocol::Bwi);
        assert!(Protocol::<i32>::Bwi.inherits() && Protocol::<i32>::Inherit.inherits());
        assert!(!Protocol::Ceiling(1).inherits() && !Protocol::<i32>::None.inherits());
    }

    #[test]
    fn families_share_the_mutex_names() {
        for f in Family::ALL {
            assert_eq!(Family::parse(f.name()), Some(f));
        }
        assert_eq!(Family::parse("picv"), Some(Family::PiCv));
        assert_eq!(Family::parse("bwi"), None);
        let listed: Vec<&str> = Family::SPELLINGS.split(", ").collect();
        let names: Vec<&str> = Family::ALL.iter().map(|f| f.name()).collect();
        assert_eq!(listed, names);
        assert_eq!(
            Family::CHOICES,
            format!("{} or {}", names[..3].join(", "), names[3])
        );
    }
}
