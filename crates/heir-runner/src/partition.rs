//! `heir run --partition`: for the length of a run, each set of CPUs the
//! file pins deadline threads to becomes a root domain of its own — the
//! kernel admits a `SCHED_DEADLINE` thread only with an affinity covering
//! its whole root domain (docs/DEADLINE.md §1) — and everything is put back
//! afterwards.
//!
//! - **cgroup v1** (a `cpuset` hierarchy mounted on its own): a child
//!   cpuset per set (`cpuset.cpus`, `cpuset.mems`, `cpuset.cpu_exclusive`
//!   = 1) and `cpuset.sched_load_balance` = 0 in the top cpuset: the
//!   kernel then builds one root domain per load-balanced child, and the
//!   CPUs of no child share another (no load balancing between domains
//!   while it lasts). Threads need not move: the top cpuset allows every
//!   CPU, and each run thread pins itself.
//! - **cgroup v2** (the `cpuset` controller on the unified hierarchy): a
//!   child of the root cgroup (`+cpuset` in the root's
//!   `cgroup.subtree_control` if it was not), `cpuset.cpus`,
//!   `cpuset.mems`, then `cpuset.cpus.partition` = `root`: its CPUs leave
//!   the root partition (they must be exclusive among its siblings). The
//!   rest of the system no longer runs there, so the whole process moves
//!   into it (`cgroup.procs`; a domain cgroup's threads cannot be split
//!   between domain cgroups — "no internal processes", and threaded
//!   subtrees cannot hold partition roots of their own): v2 makes **one**
//!   partition per run, and the run's threads must all be inside it.
//!
//! Every change is recorded as it is made, in a process-wide list, and
//! undone in reverse order by [`restore`]: when the [`Partition`] is
//! dropped (the end of the run, an error, a panic) and from a signal
//! handler's thread (`heir run` restores on SIGINT, SIGTERM and SIGHUP
//! before it exits). A process killed by SIGKILL leaves it in place: the
//! changes are printed as they are made so that they can be undone by
//! hand.
//!
//! Refused, with the reason: not root, no cpuset controller, a top cpuset
//! already not load-balancing (someone else's split), overlapping sets, and
//! sets that would leave the rest of the system no CPU.

use std::path::{Path, PathBuf};
use std::sync::Mutex;

/// One change, and how to undo it.
#[derive(Debug)]
enum Undo {
    /// `path` held `old` before (written back).
    Write { path: PathBuf, old: String },
    /// `path` was made (removed).
    Rmdir(PathBuf),
    /// The process was moved out of the cgroup `from` (moved back, by
    /// writing its pid to `from`'s `cgroup.procs`).
    Moved { from: PathBuf },
}

/// The changes not yet undone, in the order made.
static UNDO: Mutex<Vec<Undo>> = Mutex::new(Vec::new());

fn undo_list() -> std::sync::MutexGuard<'static, Vec<Undo>> {
    UNDO.lock().unwrap_or_else(|p| p.into_inner())
}

/// The cpuset hierarchy found on this machine.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Hierarchy {
    /// cgroup v1: the cpuset hierarchy's mount point.
    V1(PathBuf),
    /// cgroup v2: the unified hierarchy's mount point (its root has the
    /// `cpuset` controller).
    V2(PathBuf),
}

impl Hierarchy {
    /// The cpuset hierarchy of this machine, from `/proc/self/mounts`:
    /// a v1 mount with the `cpuset` option first (a controller bound to
    /// v1 is not available in v2), else a cgroup2 mount whose
    /// `cgroup.controllers` lists `cpuset`.
    pub fn find() -> Result<Hierarchy, String> {
        let mounts = std::fs::read_to_string("/proc/self/mounts")
            .map_err(|e| format!("reading /proc/self/mounts: {e}"))?;
        let mut v2 = Vec::new();
        for line in mounts.lines() {
            let f: Vec<&str> = line.split_whitespace().collect();
            if f.len() < 4 {
                continue;
            }
            match f[2] {
                "cgroup" if f[3].split(',').any(|o| o == "cpuset") => {
                    return Ok(Hierarchy::V1(PathBuf::from(f[1])))
                }
                "cgroup2" => v2.push(PathBuf::from(f[1])),
                _ => {}
            }
        }
        for m in &v2 {
            let c = std::fs::read_to_string(m.join("cgroup.controllers")).unwrap_or_default();
            if c.split_whitespace().any(|w| w == "cpuset") {
                return Ok(Hierarchy::V2(m.clone()));
            }
        }
        Err(if v2.is_empty() {
            "no cgroup hierarchy with the cpuset controller is mounted".to_string()
        } else {
            format!(
                "no cpuset controller: not in a cgroup v1 mount, nor in cgroup.controllers of the cgroup v2 mount{} {:?}",
                if v2.len() > 1 { "s" } else { "" },
                v2
            )
        })
    }
}

/// A CPU list as cpusets write it (`1`, `0,2-3`).
pub fn cpu_list(cpus: &[u32]) -> String {
    let mut v = cpus.to_vec();
    v.sort_unstable();
    v.dedup();
    let mut out: Vec<String> = Vec::new();
    let mut i = 0;
    while i < v.len() {
        let mut j = i;
        while j + 1 < v.len() && v[j + 1] == v[j] + 1 {
            j += 1;
        }
        out.push(if j > i {
            format!("{}-{}", v[i], v[j])
        } else {
            v[i].to_string()
        });
        i = j + 1;
    }
    out.join(",")
}

/// Parses a CPU list (`0-1,3`).
pub fn parse_cpu_list(s: &str) -> Vec<u32> {
    let mut v = Vec::new();
    for part in s.trim().split(',').filter(|p| !p.is_empty()) {
        match part.split_once('-') {
            Some((a, b)) => {
                if let (Ok(a), Ok(b)) = (a.trim().parse::<u32>(), b.trim().parse::<u32>()) {
                    v.extend(a..=b);
                }
            }
            None => v.extend(part.trim().parse::<u32>().ok()),
        }
    }
    v
}

fn read(p: &Path) -> Result<String, String> {
    std::fs::read_to_string(p)
        .map(|s| s.trim().to_string())
        .map_err(|e| format!("reading {}: {e}", p.display()))
}

/// Writes `v` to `p`, recording the old value to write back.
fn write_undo(p: &Path, v: &str, done: &mut Vec<String>) -> Result<(), String> {
    let old = read(p)?;
    std::fs::write(p, v).map_err(|e| format!("writing {v:?} to {}: {e}", p.display()))?;
    done.push(format!("{} {old} -> {v}", p.display()));
    undo_list().push(Undo::Write {
        path: p.to_path_buf(),
        old,
    });
    Ok(())
}

fn write_plain(p: &Path, v: &str) -> Result<(), String> {
    std::fs::write(p, v).map_err(|e| format!("writing {v:?} to {}: {e}", p.display()))
}

fn mkdir_undo(p: &Path, done: &mut Vec<String>) -> Result<(), String> {
    std::fs::create_dir(p).map_err(|e| format!("creating {}: {e}", p.display()))?;
    done.push(format!("made {}", p.display()));
    undo_list().push(Undo::Rmdir(p.to_path_buf()));
    Ok(())
}

/// The CPU sets of a run to split off: each distinct set of `sets` that
/// is not all of `all`; refuses overlapping sets and a split that leaves
/// no CPU to the rest of the system.
pub fn sets_to_split(sets: &[Vec<u32>], all: &[u32]) -> Result<Vec<Vec<u32>>, String> {
    let mut out: Vec<Vec<u32>> = Vec::new();
    for s in sets {
        let mut s = s.clone();
        s.sort_unstable();
        s.dedup();
        if s.is_empty() || all.iter().all(|c| s.contains(c)) || out.contains(&s) {
            continue;
        }
        if let Some(o) = out.iter().find(|o| o.iter().any(|c| s.contains(c))) {
            return Err(format!(
                "deadline threads are pinned to CPUs {o:?} and to CPUs {s:?}, which overlap: no split into root domains gives both"
            ));
        }
        out.push(s);
    }
    for s in sets.iter().filter(|s| !s.is_empty()) {
        let mut s = s.clone();
        s.sort_unstable();
        s.dedup();
        if let Some(o) = out
            .iter()
            .find(|o| **o != s && o.iter().any(|c| s.contains(c)))
        {
            return Err(format!(
                "deadline threads are pinned to CPUs {o:?} and to CPUs {s:?}, which overlap: no split into root domains gives both"
            ));
        }
    }
    let taken: Vec<u32> = out.iter().flatten().copied().collect();
    if !out.is_empty() && all.iter().all(|c| taken.contains(c)) {
        return Err(format!(
            "making CPUs {} root domains of their own would leave the rest of the system with no CPU (this machine has CPUs {all:?})",
            out.iter()
                .map(|s| format!("{s:?}"))
                .collect::<Vec<_>>()
                .join(", ")
        ));
    }
    Ok(out)
}

/// The root domains made for a run: undone when dropped ([`restore`]).
#[derive(Debug)]
pub struct Partition {
    /// What was changed, one line each (for the user).
    pub changes: Vec<String>,
}

impl Partition {
    /// Makes each of `sets` (this machine's CPUs) a root domain of its own
    /// (module docs); `all` is every CPU of the machine, `run_cpus` the
    /// CPUs the run's threads use, `tag` a name for the cgroups made. An
    /// empty `sets` changes nothing. On error, what was already changed is
    /// undone.
    pub fn make(
        sets: &[Vec<u32>],
        all: &[u32],
        run_cpus: &[u32],
        tag: &str,
    ) -> Result<Partition, String> {
        let split = sets_to_split(sets, all)?;
        if split.is_empty() {
            return Ok(Partition {
                changes: Vec::new(),
            });
        }
        // SAFETY: geteuid has no preconditions.
        if unsafe { libc::geteuid() } != 0 {
            return Err("--partition changes the machine's cpusets: it needs root".to_string());
        }
        let h = Hierarchy::find()?;
        let mut changes = Vec::new();
        let made = match &h {
            Hierarchy::V1(root) => make_v1(root, &split, tag, &mut changes),
            Hierarchy::V2(root) => make_v2(root, &split, run_cpus, tag, &mut changes),
        };
        match made {
            Ok(()) => Ok(Partition { changes }),
            Err(e) => {
                restore();
                Err(e)
            }
        }
    }
}

impl Drop for Partition {
    fn drop(&mut self) {
        if !self.changes.is_empty() {
            restore();
        }
    }
}

fn make_v1(
    root: &Path,
    split: &[Vec<u32>],
    tag: &str,
    changes: &mut Vec<String>,
) -> Result<(), String> {
    let balance = root.join("cpuset.sched_load_balance");
    let now = read(&balance)?;
    if now != "1" {
        return Err(format!(
            "{} is {now}: the root domains are already split by someone else",
            balance.display()
        ));
    }
    let mems = read(&root.join("cpuset.mems"))?;
    // A load-balanced sibling sharing a CPU would keep it in its domain.
    if let Ok(rd) = std::fs::read_dir(root) {
        for e in rd.flatten() {
            let p = e.path();
            if !p.is_dir() {
                continue;
            }
            let cpus = parse_cpu_list(&read(&p.join("cpuset.cpus")).unwrap_or_default());
            let lb = read(&p.join("cpuset.sched_load_balance")).unwrap_or_default();
            if let Some(s) = split.iter().find(|s| s.iter().any(|c| cpus.contains(c))) {
                if lb == "1" {
                    return Err(format!(
                        "the cpuset {} (CPUs {}) load-balances CPUs {s:?} too: they cannot be a root domain of their own while it does",
                        p.display(),
                        cpu_list(&cpus)
                    ));
                }
            }
        }
    }
    for s in split {
        let child = root.join(format!("{tag}-cpus{}", cpu_list(s).replace(',', "_")));
        mkdir_undo(&child, changes)?;
        write_plain(&child.join("cpuset.cpus"), &cpu_list(s))?;
        write_plain(&child.join("cpuset.mems"), &mems)?;
        write_plain(&child.join("cpuset.cpu_exclusive"), "1")?;
        changes.push(format!(
            "{}: cpuset.cpus {}, cpuset.mems {mems}, cpuset.cpu_exclusive 1",
            child.display(),
            cpu_list(s)
        ));
    }
    write_undo(&balance, "0", changes)
}

fn make_v2(
    root: &Path,
    split: &[Vec<u32>],
    run_cpus: &[u32],
    tag: &str,
    changes: &mut Vec<String>,
) -> Result<(), String> {
    let [s] = split else {
        return Err(format!(
            "cgroup v2 moves whole processes between cgroups: --partition makes one root domain per run there, and this run pins deadline threads to {} CPU sets ({split:?})",
            split.len()
        ));
    };
    if let Some(c) = run_cpus.iter().find(|c| !s.contains(c)) {
        return Err(format!(
            "cgroup v2: the whole process moves into the partition of CPUs {s:?}, but the run also uses CPU {c}"
        ));
    }
    let sub = root.join("cgroup.subtree_control");
    let enabled = read(&sub)?;
    if !enabled.split_whitespace().any(|w| w == "cpuset") {
        std::fs::write(&sub, "+cpuset")
            .map_err(|e| format!("writing \"+cpuset\" to {}: {e}", sub.display()))?;
        changes.push(format!("{}: +cpuset", sub.display()));
        undo_list().push(Undo::Write {
            path: sub.clone(),
            old: "-cpuset".into(),
        });
    }
    let mems = read(&root.join("cpuset.mems.effective"))?;
    let child = root.join(format!("{tag}-cpus{}", cpu_list(s).replace(',', "_")));
    mkdir_undo(&child, changes)?;
    write_plain(&child.join("cpuset.cpus"), &cpu_list(s))?;
    write_plain(&child.join("cpuset.mems"), &mems)?;
    write_undo(&child.join("cpuset.cpus.partition"), "root", changes)?;
    let state = read(&child.join("cpuset.cpus.partition"))?;
    if state != "root" {
        return Err(format!(
            "{}: the kernel made it {state:?}, not a valid partition root (its CPUs must be exclusive among its siblings, and the root partition must keep a CPU)",
            child.join("cpuset.cpus.partition").display()
        ));
    }
    // The process's cgroup now (`0::/path`), to move it back.
    let own = read(Path::new("/proc/self/cgroup"))?;
    let from = own
        .lines()
        .find_map(|l| l.strip_prefix("0::"))
        .map(|p| root.join(p.trim_start_matches('/')))
        .ok_or("no cgroup v2 entry in /proc/self/cgroup")?;
    let pid = std::process::id().to_string();
    write_plain(&child.join("cgroup.procs"), &pid)?;
    changes.push(format!(
        "moved this process (pid {pid}) from {} to {}",
        from.display(),
        child.display()
    ));
    undo_list().push(Undo::Moved { from });
    Ok(())
}

/// Undoes every change recorded, newest first; returns what it could not
/// undo (one line each). Safe to call from any thread, any number of
/// times.
pub fn restore() -> Vec<String> {
    let mut list = undo_list();
    let mut failed = Vec::new();
    while let Some(u) = list.pop() {
        let r = match &u {
            Undo::Write { path, old } => std::fs::write(path, old)
                .map_err(|e| format!("writing {old:?} back to {}: {e}", path.display())),
            Undo::Rmdir(p) => remove_dir_retrying(p),
            Undo::Moved { from } => {
                std::fs::write(from.join("cgroup.procs"), std::process::id().to_string())
                    .map_err(|e| format!("moving this process back to {}: {e}", from.display()))
            }
        };
        if let Err(e) = r {
            failed.push(e);
        }
    }
    failed
}

/// A cpuset whose last threads just exited may still count them for a
/// moment: `rmdir` retried for up to 100 ms on `EBUSY`.
fn remove_dir_retrying(p: &Path) -> Result<(), String> {
    for _ in 0..100 {
        match std::fs::remove_dir(p) {
            Err(e) if e.raw_os_error() == Some(libc::EBUSY) => {
                std::thread::sleep(std::time::Duration::from_millis(1));
            }
            r => return r.map_err(|e| format!("removing {}: {e}", p.display())),
        }
    }
    std::fs::remove_dir(p).map_err(|e| format!("removing {}: {e}", p.display()))
}

/// Restores the changes when the process gets SIGINT, SIGTERM or SIGHUP,
/// then exits with 128 + the signal: blocks the three signals in the
/// calling thread (so in every thread it starts afterwards) and waits for
/// them on a thread of its own; `report(signal, what could not be
/// undone)` runs after the restore, before the exit. Call it from the main
/// thread before starting any other.
pub fn restore_on_signals(report: fn(i32, &[String])) -> Result<(), String> {
    // SAFETY: an all-zero sigset_t is valid storage for sigemptyset, and
    // the set is only passed to the signal calls by pointer while live.
    let mut set: libc::sigset_t = unsafe { std::mem::zeroed() };
    // SAFETY: `set` is a live sigset_t.
    unsafe {
        libc::sigemptyset(&mut set);
        for s in [libc::SIGINT, libc::SIGTERM, libc::SIGHUP] {
            libc::sigaddset(&mut set, s);
        }
    }
    // SAFETY: `set` is initialised; the old mask is not asked for.
    let r = unsafe { libc::pthread_sigmask(libc::SIG_BLOCK, &set, std::ptr::null_mut()) };
    if r != 0 {
        return Err(format!("pthread_sigmask: {}", heir::sys::errno_name(r)));
    }
    std::thread::Builder::new()
        .name("heir-signals".into())
        .spawn(move || loop {
            let mut sig: libc::c_int = 0;
            // SAFETY: `set` is an initialised sigset_t (moved here) and
            // `sig` a live int.
            if unsafe { libc::sigwait(&set, &mut sig) } == 0 {
                let failed = restore();
                report(sig, &failed);
                std::process::exit(128 + sig);
            }
        })
        .map(|_| ())
        .map_err(|e| format!("starting the signal thread: {e}"))
}

/// Whether changes are in place (not yet restored).
pub fn active() -> bool {
    !undo_list().is_empty()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn cpu_lists_round_trip() {
        assert_eq!(cpu_list(&[3, 0, 1, 2, 5]), "0-3,5");
        assert_eq!(parse_cpu_list("0-3,5\n"), vec![0, 1, 2, 3, 5]);
    }

    #[test]
    fn sets_to_split_keep_a_cpu_for_the_rest() {
        let all = [0, 1];
        assert_eq!(sets_to_split(&[vec![1]], &all), Ok(vec![vec![1]]));
        assert!(sets_to_split(&[vec![0, 1], vec![1]], &all).is_err());
        assert_eq!(sets_to_split(&[vec![0, 1]], &all), Ok(vec![]));
        let e = sets_to_split(&[vec![0], vec![1]], &all).unwrap_err();
        assert!(e.contains("rest of the system with no CPU"), "{e}");
        let e = sets_to_split(&[vec![0, 1], vec![1, 2]], &[0, 1, 2, 3]).unwrap_err();
        assert!(e.contains("overlap"), "{e}");
    }
}
