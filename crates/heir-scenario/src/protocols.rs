//! `--protocol NAME=P` and `--protocol all=P`: a mutex protocol chosen on
//! the command line instead of in the file, so that one scenario can be
//! compared under each protocol without editing it. Every face (`heir sim`,
//! `heir run`, `heir analyze`) applies the same overrides the same way.
//!
//! `P` is `none`, `inherit`, `bwi`, `ceiling:N` (N a real-time priority,
//! 1..=99) or `ceiling`: the file's own ceiling when the mutex has one,
//! else the highest real-time priority among the tasks that lock it (the
//! immediate priority ceiling's definition). The names, their parsing
//! and their spelling are the one vocabulary's ([`heir_core::protocol`]).

use heir_core::protocol::{ParseProtocolError, Written, PROTOCOL_SPELLINGS};

use crate::{EventKind, MutexProtocol, Policy, ResourceKind, Scenario};

/// One `--protocol` override, as parsed.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Override {
    /// The mutex it applies to; `None` for `all`.
    pub mutex: Option<String>,
    /// The protocol it chooses, as written: `ceiling` without a priority
    /// (`Ceiling(None)`) is the file's ceiling, or the highest locker's.
    pub protocol: Written,
}

/// The protocol names `P` of `--protocol NAME=P`, in the order heir lists
/// them; `ceiling:N` (N a real-time priority) is the one other spelling.
/// The Python package's `MutexProtocol` type is tested against this list.
pub use heir_core::protocol::PROTOCOL_NAMES as NAMES;

impl Override {
    /// The override as `NAME=P` / `all=P` (canonical spelling: `ceiling`,
    /// `ceiling:N`, or the protocol's name), for the titles of outputs.
    pub fn shown(&self) -> String {
        format!(
            "{}={}",
            self.mutex.as_deref().unwrap_or("all"),
            self.protocol.spelled()
        )
    }

    /// Parses `NAME=P` / `all=P`, `P` one of
    /// [`heir_core::protocol::PROTOCOL_SPELLINGS`].
    pub fn parse(s: &str) -> Result<Override, String> {
        let expected = format!("expected NAME=P or all=P, P one of {PROTOCOL_SPELLINGS}");
        let Some((name, p)) = s.split_once('=') else {
            return Err(format!("{expected}; found {s:?}"));
        };
        let name = name.trim();
        if name.is_empty() {
            return Err(format!("{expected}; found {s:?} (no mutex name)"));
        }
        let protocol = Written::parse(p).map_err(|e| match e {
            ParseProtocolError::BadCeiling => format!("{e}; found {s:?}"),
            ParseProtocolError::Unknown => format!("{expected}; found {s:?}"),
        })?;
        Ok(Override {
            mutex: (name != "all").then(|| name.to_string()),
            protocol,
        })
    }
}

/// Applies `overrides` to `scenario` in order (a later one wins): `all`
/// first sets every mutex, a name sets that mutex. Nothing is changed when
/// an override names no mutex of the scenario or a `ceiling` cannot be
/// derived; the error says which, and lists the mutexes.
pub fn apply(scenario: &mut Scenario, overrides: &[Override]) -> Result<(), String> {
    let mutexes: Vec<usize> = scenario
        .resources
        .iter()
        .enumerate()
        .filter(|(_, r)| matches!(r.kind, ResourceKind::Mutex { .. }))
        .map(|(i, _)| i)
        .collect();
    let mut chosen: Vec<(usize, MutexProtocol)> = Vec::new();
    for o in overrides {
        let targets: Vec<usize> = match &o.mutex {
            None => mutexes.clone(),
            Some(name) => {
                let found = mutexes
                    .iter()
                    .copied()
                    .find(|&i| scenario.resources[i].name == *name);
                match found {
                    Some(i) => vec![i],
                    None => {
                        let names: Vec<&str> = mutexes
                            .iter()
                            .map(|&i| scenario.resources[i].name.as_str())
                            .collect();
                        return Err(format!(
                            "--protocol {name}=…: the scenario has no mutex {name:?} (its mutexes: {})",
                            if names.is_empty() {
                                "none".to_string()
                            } else {
                                names.join(", ")
                            }
                        ));
                    }
                }
            }
        };
        for i in targets {
            let p = o.protocol.try_map_ceiling(|c| match c {
                Some(c) => Ok(c),
                None => ceiling_of(scenario, i),
            })?;
            chosen.push((i, p));
        }
    }
    for (i, p) in chosen {
        scenario.resources[i].kind = ResourceKind::Mutex { protocol: p };
    }
    Ok(())
}

/// `ceiling` for mutex `i`: its own ceiling, or the highest real-time
/// priority among the tasks that lock it (a `lock`, or the re-lock of a
/// `wait`).
fn ceiling_of(scenario: &Scenario, i: usize) -> Result<i32, String> {
    let r = &scenario.resources[i];
    if let ResourceKind::Mutex {
        protocol: MutexProtocol::Ceiling(c),
    } = r.kind
    {
        return Ok(c);
    }
    let locks = |k: &EventKind| match k {
        EventKind::Lock(m) => m.0 == i,
        EventKind::Wait { mutex, .. } => mutex.0 == i,
        _ => false,
    };
    let top = scenario
        .tasks
        .iter()
        .filter(|t| {
            t.phases
                .iter()
                .flat_map(|p| p.events.iter())
                .any(|e| locks(&e.kind))
        })
        .flat_map(|t| {
            std::iter::once(&t.sched).chain(t.phases.iter().filter_map(|p| p.sched.as_ref()))
        })
        .filter(|s| matches!(s.policy, Policy::Fifo | Policy::Rr))
        .map(|s| s.priority.clamp(1, 99))
        .max();
    match top {
        Some(c) => Ok(c),
        None => Err(format!(
            "--protocol {}=ceiling: no SCHED_FIFO/SCHED_RR task locks it, so it has no ceiling to derive; give one as ceiling:N",
            r.name
        )),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn scenario() -> Scenario {
        crate::parse_str(
            r#"{ "global": { "pi_enabled": true, "duration": 1, "default_policy": "SCHED_FIFO" },
                "resources": { "a": { "type": "mutex", "protocol": "ceiling", "ceiling": 40 } },
                "tasks": {
                  "T1": { "priority": 10, "lock": "a", "run": 10, "unlock": "a", "sleep": 1000 },
                  "T2": { "priority": 20, "lock": "b", "run": 10, "unlock": "b", "sleep": 1000 },
                  "T3": { "policy": "SCHED_OTHER", "lock": "c", "run": 10, "unlock": "c", "sleep": 1000 }
                } }"#,
            "t.json",
        )
        .expect("reads")
    }

    fn protocol_of(s: &Scenario, name: &str) -> MutexProtocol {
        match s.resources.iter().find(|r| r.name == name).map(|r| &r.kind) {
            Some(ResourceKind::Mutex { protocol }) => *protocol,
            other => panic!("{name}: {other:?}"),
        }
    }

    #[test]
    fn names_are_what_parse_accepts_and_shown_spells() {
        for name in NAMES {
            let o = Override::parse(&format!("all={name}")).expect("parses");
            assert_eq!(o.shown(), format!("all={name}"));
        }
        // The message lists exactly these names (and ceiling:N).
        assert_eq!(
            heir_core::protocol::PROTOCOL_SPELLINGS,
            format!("{}, ceiling:N", NAMES.join(", "))
        );
        let refused = Override::parse("all=sideways").expect_err("refused");
        assert!(
            refused.contains(heir_core::protocol::PROTOCOL_SPELLINGS),
            "{refused}"
        );
        for other in ["pi-cv", "inheritance", "ceiling:0", ""] {
            assert!(Override::parse(&format!("all={other}")).is_err(), "{other}");
        }
    }

    #[test]
    fn all_then_names_in_order() {
        let mut s = scenario();
        let o: Vec<Override> = ["all=bwi", "b=none", "a=ceiling"]
            .iter()
            .map(|x| Override::parse(x).expect("parses"))
            .collect();
        apply(&mut s, &o).expect("applies");
        assert_eq!(protocol_of(&s, "a"), MutexProtocol::Ceiling(40));
        assert_eq!(protocol_of(&s, "b"), MutexProtocol::None);
        assert_eq!(protocol_of(&s, "c"), MutexProtocol::Bwi);
    }

    #[test]
    fn ceiling_is_derived_from_the_highest_locker() {
        let mut s = scenario();
        apply(&mut s, &[Override::parse("b=ceiling").expect("parses")]).expect("applies");
        assert_eq!(protocol_of(&s, "b"), MutexProtocol::Ceiling(20));
        apply(&mut s, &[Override::parse("b=ceiling:70").expect("parses")]).expect("applies");
        assert_eq!(protocol_of(&s, "b"), MutexProtocol::Ceiling(70));
    }

    #[test]
    fn errors_name_the_problem_and_change_nothing() {
        let mut s = scenario();
        let before = s.clone();
        let e = apply(
            &mut s,
            &[
                Override::parse("all=none").expect("parses"),
                Override::parse("zz=inherit").expect("parses"),
            ],
        )
        .expect_err("no mutex zz");
        assert!(e.contains("no mutex \"zz\" (its mutexes: a, b, c)"), "{e}");
        let e = apply(&mut s, &[Override::parse("c=ceiling").expect("parses")])
            .expect_err("no real-time locker");
        assert!(e.contains("give one as ceiling:N"), "{e}");
        assert_eq!(s, before);
        for bad in ["bwi", "=bwi", "a=fast", "a=ceiling:0", "a=ceiling:x"] {
            assert!(Override::parse(bad).is_err(), "{bad}");
        }
    }
}
