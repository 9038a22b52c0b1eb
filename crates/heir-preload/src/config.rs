//! The environment `heir exec` sets (and a user may set by hand).
//!
//! | variable | values | default |
//! |---|---|---|
//! | `HEIR_EXEC_MUTEX` | `inherit` (heir's PI mutexes) / `keep` (glibc's; condition variables stay glibc's too) | `inherit` |
//! | `HEIR_EXEC_COND` | `learn` (helpers learned from signallers) / `off` (heir's condition variables, no helpers) | `learn` |
//! | `HEIR_EXEC_GPM` | `on` (barriers boost the threads that have not arrived) / `off` (glibc's barriers) | `on` |
//! | `HEIR_EXEC_COND_HELPERS` | most helpers learned per condition variable, 1..=8 | 4 |
//! | `HEIR_EXEC_COND_TTL_MS` | a helper is dropped this long after its last signal | 1000 |
//! | `HEIR_EXEC_GPM_GRACE_US` | a barrier's waiters lend to the threads not yet arrived after waiting this long (0: at once) | 10000 |
//! | `HEIR_EXEC_SUMMARY` | where each process appends its summary line: a file path, or `fd:N` | none |
//! | `HEIR_EXEC_TRACE_MARKER` | the `trace_marker` of `heir exec --trace`'s ftrace instance: heir's markers go there ([`crate::record`]) | none |
//! | `HEIR_EXEC_RECORD` | a directory: each process records its synchronisation operations in `PID.rec` there (`heir exec --scenario`, [`crate::record`]) | none |

use std::sync::OnceLock;

/// The interposition's settings, read once per process.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Config {
    /// Mutexes on heir's PI mutexes (else glibc's, and condition
    /// variables too).
    pub mutex_inherit: bool,
    /// Condition variables learn their helpers.
    pub cond_learn: bool,
    /// Barriers are heir's, with boosts.
    pub gpm: bool,
    /// Most learned helpers per condition variable.
    pub helpers: usize,
    /// A helper's time to live after its last signal.
    pub ttl_ns: u64,
    /// How long a barrier's waiter waits before it lends.
    pub gpm_grace_ns: u64,
    /// The summary's destination.
    pub summary: Option<String>,
    /// The ftrace instance's `trace_marker` to mark into.
    pub trace_marker: Option<String>,
    /// The directory of the operation records.
    pub record: Option<String>,
}

impl Config {
    /// From a lookup function (the environment, or a test's map). Unknown
    /// values keep the default (and are named in the summary's `"config"`).
    pub fn from_lookup(get: impl Fn(&str) -> Option<String>) -> Config {
        let flag = |k: &str, on: &str, off: &str, default: bool| match get(k).as_deref() {
            Some(v) if v == on => true,
            Some(v) if v == off => false,
            _ => default,
        };
        let num = |k: &str, default: u64| {
            get(k)
                .and_then(|v| v.trim().parse::<u64>().ok())
                .unwrap_or(default)
        };
        Config {
            mutex_inherit: flag("HEIR_EXEC_MUTEX", "inherit", "keep", true),
            cond_learn: flag("HEIR_EXEC_COND", "learn", "off", true),
            gpm: flag("HEIR_EXEC_GPM", "on", "off", true),
            helpers: num("HEIR_EXEC_COND_HELPERS", 4).clamp(1, crate::learn::MAX_HELPERS as u64)
                as usize,
            ttl_ns: num("HEIR_EXEC_COND_TTL_MS", 1000).saturating_mul(1_000_000),
            gpm_grace_ns: num("HEIR_EXEC_GPM_GRACE_US", 10_000).saturating_mul(1_000),
            summary: get("HEIR_EXEC_SUMMARY").filter(|s| !s.is_empty()),
            trace_marker: get("HEIR_EXEC_TRACE_MARKER").filter(|s| !s.is_empty()),
            record: get("HEIR_EXEC_RECORD").filter(|s| !s.is_empty()),
        }
    }

    /// Condition variables are heir's (they need heir's mutexes).
    pub fn cond_ours(&self) -> bool {
        self.mutex_inherit
    }
}

static CONFIG: OnceLock<Config> = OnceLock::new();

/// The process's settings (read from the environment on first use, which
/// may come before the library's constructor: another library's
/// constructor can lock a mutex first).
pub fn get() -> &'static Config {
    CONFIG.get_or_init(|| Config::from_lookup(|k| std::env::var(k).ok()))
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::collections::HashMap;

    fn cfg(pairs: &[(&str, &str)]) -> Config {
        let m: HashMap<String, String> = pairs
            .iter()
            .map(|(k, v)| (k.to_string(), v.to_string()))
            .collect();
        Config::from_lookup(|k| m.get(k).cloned())
    }

    #[test]
    fn defaults_and_values() {
        let d = cfg(&[]);
        assert!(d.mutex_inherit && d.cond_learn && d.gpm);
        assert_eq!((d.helpers, d.ttl_ns), (4, 1_000_000_000));
        let c = cfg(&[
            ("HEIR_EXEC_MUTEX", "keep"),
            ("HEIR_EXEC_COND", "off"),
            ("HEIR_EXEC_GPM", "off"),
            ("HEIR_EXEC_COND_HELPERS", "99"),
            ("HEIR_EXEC_COND_TTL_MS", "5"),
            ("HEIR_EXEC_SUMMARY", "fd:3"),
        ]);
        assert!(!c.mutex_inherit && !c.cond_learn && !c.gpm && !c.cond_ours());
        assert_eq!((c.helpers, c.ttl_ns), (8, 5_000_000));
        assert_eq!(c.summary.as_deref(), Some("fd:3"));
        assert!(cfg(&[("HEIR_EXEC_MUTEX", "bogus")]).mutex_inherit);
    }
}
