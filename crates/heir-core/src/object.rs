//! Objects of the wait-for graph, and the one description of what an object
//! does to its targets ([`Spec`]).
//!
//! Every object — mutex, condition variable, IPC endpoint, gang, or a kind
//! a test makes up — lives in one arena ([`ObjId`]) and is described by a
//! [`Spec`]: whether its top waiter donates to its targets, how many targets
//! it may have, and the floor it puts under them. The chain walk, the probes
//! and the invariant checker read only the spec, never the kind: a new kind
//! is a new `Spec` value, not new code paths.

use crate::{Protocol, Urgency};

/// An object in the engine's arena, of any kind: `.0` is its slot, `.1`
/// the slot's generation. A removed object's slot is reused by a later
/// object with the next generation, so a stale id is refused
/// ([`crate::EngineError::StaleObject`]), never taken for the new object.
#[derive(Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct ObjId(pub u32, pub u32);

/// A mutex: an object of kind [`ObjKind::Mutex`], by its slot and
/// generation (as [`ObjId`]).
#[derive(Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct MutexId(pub u32, pub u32);

/// A condition variable: an object of kind [`ObjKind::Cond`], by its slot
/// and generation (as [`ObjId`]).
#[derive(Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct CondId(pub u32, pub u32);

impl From<MutexId> for ObjId {
    fn from(m: MutexId) -> ObjId {
        ObjId(m.0, m.1)
    }
}

impl From<CondId> for ObjId {
    fn from(c: CondId) -> ObjId {
        ObjId(c.0, c.1)
    }
}

/// An id as `Name(slot)` for a slot's first generation (what every id was
/// before slots were reused), `Name(slot, gen g)` after.
pub(crate) fn fmt_id(
    f: &mut core::fmt::Formatter<'_>,
    name: &str,
    slot: u32,
    gen: u32,
) -> core::fmt::Result {
    if gen == 0 {
        write!(f, "{name}({slot})")
    } else {
        write!(f, "{name}({slot}, gen {gen})")
    }
}

macro_rules! id_debug {
    ($($t:ident),*) => {$(
        /// `Name(3)` for generation 0, `Name(3, gen 2)` after.
        impl core::fmt::Debug for $t {
            fn fmt(&self, f: &mut core::fmt::Formatter<'_>) -> core::fmt::Result {
                fmt_id(f, stringify!($t), self.0, self.1)
            }
        }
    )*};
}
id_debug!(ObjId, MutexId, CondId);

/// What an object is, for the people reading errors, cycles and traces.
/// The engine's behaviour comes from the rest of the [`Spec`], not from
/// this name.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
#[non_exhaustive]
pub enum ObjKind {
    /// A mutex: its one target is its **owner**.
    Mutex,
    /// A condition variable: its targets are its **helpers** (the PI-CV paper).
    Cond,
    /// An IPC endpoint for one request (NOVA donation): its one target is the
    /// server thread that took the call, and changes per request.
    Endpoint,
    /// A gang (GPM): its targets are the active members that have not
    /// notified yet; its floor is the gang priority while it runs.
    Gang,
    /// A kind defined outside the engine (tests, experiments).
    Other(&'static str),
}

/// What an object does in the wait-for graph: its targets, its contribution
/// to them, and whether its waiters donate. The only description of a kind
/// the engine reads.
///
/// An object's **contribution** to each of its targets is the maximum of
/// its `floor` (if any) and, when it `donates`, its top waiter's effective
/// urgency. The wait-for edges (waiter → object → each target) exist
/// whatever the object contributes, so a deadlock through an object that
/// does not donate is still refused.
///
/// ```
/// use heir_core::{Engine, ObjKind, Spec, Urgency};
///
/// // A latch that lends its waiters' urgency to the one task that will
/// // open it: a new kind is one description.
/// const LATCH: Spec = Spec {
///     kind: ObjKind::Other("latch"),
///     donates: true,
///     max_targets: Some(1),
///     floor: None,
///     lends_budget: false,
/// };
/// let mut e = Engine::new();
/// let opener = e.add_task(Urgency::fixed(10));
/// let waiter = e.add_task(Urgency::fixed(50));
/// let latch = e.add_object(LATCH);
/// e.add_target(latch, opener).unwrap();
/// e.block(waiter, latch).unwrap();
/// assert_eq!(e.effective(opener).unwrap().urgency, Urgency::fixed(50));
/// ```
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Spec {
    /// The kind's name.
    pub kind: ObjKind,
    /// The top waiter's effective urgency flows to every target.
    pub donates: bool,
    /// The most targets the object has at once (`None`: any number).
    pub max_targets: Option<u16>,
    /// A floor under every target while set, whoever waits (a ceiling, or
    /// a running gang's priority).
    pub floor: Option<Urgency>,
    /// Waiters lend their time (their scheduling context) too, not only
    /// their urgency: a [`Protocol::Bwi`] mutex (M-BWI), a condvar to its
    /// helpers (PI-CV under M-BWI), an endpoint to its server (NOVA
    /// donation); not an `inherit` mutex, whose owner runs on its own
    /// context (Linux lends parameters: [`crate::Engine::set_inherited`]).
    /// Only with `donates`. The walk and [`crate::Engine::donors`] treat it
    /// as any donating object; [`crate::Engine::consumer`] follows only
    /// these edges.
    pub lends_budget: bool,
}

impl Spec {
    /// A condition variable: waiters donate to every helper (PI-CV).
    pub const COND: Spec = Spec {
        kind: ObjKind::Cond,
        donates: true,
        max_targets: None,
        floor: None,
        lends_budget: true,
    };

    /// An IPC request endpoint: the caller donates to the one server that
    /// took its call (NOVA donation).
    pub const ENDPOINT: Spec = Spec {
        kind: ObjKind::Endpoint,
        donates: true,
        max_targets: Some(1),
        floor: None,
        lends_budget: true,
    };

    /// A gang: no donation; the floor is set while the gang runs
    /// ([`crate::Engine::set_floor`]) and reaches the members still
    /// targeted (the GPM paper's Invariant 1).
    pub const GANG: Spec = Spec {
        kind: ObjKind::Gang,
        donates: false,
        max_targets: None,
        floor: None,
        lends_budget: false,
    };

    /// A mutex with `protocol`: one target, the owner; `Inherit` and `Bwi`
    /// donate (`Bwi` also lends its budget), `Ceiling(c)` puts the floor
    /// `c` under the owner.
    pub const fn mutex(protocol: Protocol) -> Spec {
        let (donates, lends_budget, floor) = match protocol {
            Protocol::None => (false, false, None),
            Protocol::Inherit => (true, false, None),
            Protocol::Bwi => (true, true, None),
            Protocol::Ceiling(c) => (false, false, Some(c)),
        };
        Spec {
            kind: ObjKind::Mutex,
            donates,
            max_targets: Some(1),
            floor,
            lends_budget,
        }
    }

    /// The protocol of a mutex's spec (`None` for other kinds).
    pub fn protocol(&self) -> Option<Protocol> {
        if self.kind != ObjKind::Mutex {
            return None;
        }
        Some(match (self.donates, self.lends_budget, self.floor) {
            (true, true, _) => Protocol::Bwi,
            (true, false, _) => Protocol::Inherit,
            (false, _, Some(c)) => Protocol::Ceiling(c),
            (false, _, None) => Protocol::None,
        })
    }
}
