//! What took a real run's CPUs, in `heir run`'s text and `--json`, the
//! report page and `heir demo` ([`heir_runner::run::disturb`]).

use heir_runner::run::RealRun;

/// Disturbers named per thread in the text report (three times as many
/// in the list of disturbers); `--json` has them all.
const SHOWN_DISTURBERS: usize = 3;

/// ns → ms with three decimals.
fn ns_ms(ns: u64) -> String {
    format!("{:.3}", ns as f64 / 1e6)
}

/// The text report's lines on what took the run's CPUs
/// ([`heir_runner::run::disturb`]): a verdict, each disturbed thread with its
/// jobs and who, each disturber, the fair server's setting.
pub fn disturbance_lines(real: &RealRun) -> Vec<String> {
    use heir_runner::run::disturb::{FairServer, FAIR_SERVER_HOWTO};
    let d = &real.disturbance;
    let mut out = Vec::new();
    if let Some(why) = &d.not_measured {
        out.push(format!("disturbance: not measured ({why})"));
        return out;
    }
    let jobs: u64 = d.threads.iter().map(|t| t.of_jobs).sum();
    if d.lost_ns == 0 {
        out.push(format!(
            "undisturbed: no other thread held CPUs {:?} while the run's threads were runnable (the kernel's sched_switch records)",
            d.cpus
        ));
    } else {
        out.push(format!(
            "disturbed: {} of {jobs} jobs lost time to other threads on CPUs {:?}: {} ms summed over the run's threads (the kernel's sched_switch records: time a thread was runnable while another held its CPU)",
            d.jobs,
            d.cpus,
            ns_ms(d.lost_ns)
        ));
        for t in d.threads.iter().filter(|t| t.lost_ns > 0) {
            let mut who: Vec<String> =
                t.by.iter()
                    .take(SHOWN_DISTURBERS)
                    .filter_map(|&(k, ns)| d.by.get(k).map(|b| format!("{b} {} ms", ns_ms(ns))))
                    .collect();
            if t.by.len() > SHOWN_DISTURBERS {
                let rest: u64 = t.by[SHOWN_DISTURBERS..].iter().map(|&(_, ns)| ns).sum();
                who.push(format!(
                    "{} others {} ms",
                    t.by.len() - SHOWN_DISTURBERS,
                    ns_ms(rest)
                ));
            }
            out.push(format!(
                "  {}: {} of {} jobs lost {} ms (at most {} ms in one job) to {}",
                t.thread,
                t.jobs,
                t.of_jobs,
                ns_ms(t.lost_ns),
                ns_ms(t.max_job_lost_ns),
                who.join(", ")
            ));
        }
        for b in d.by.iter().take(SHOWN_DISTURBERS * 3) {
            out.push(format!(
                "  by {b} on CPU{} {}: {} ms, {} jobs",
                if b.cpus.len() > 1 { "s" } else { "" },
                b.cpus
                    .iter()
                    .map(u32::to_string)
                    .collect::<Vec<_>>()
                    .join(", "),
                ns_ms(b.lost_ns),
                b.jobs
            ));
        }
        if d.by.len() > SHOWN_DISTURBERS * 3 {
            let rest = &d.by[SHOWN_DISTURBERS * 3..];
            out.push(format!(
                "  by {} other threads: {} ms (all of them in --json)",
                rest.len(),
                ns_ms(rest.iter().map(|b| b.lost_ns).sum())
            ));
        }
    }
    if d.wakeup_latency.0 > 0 {
        out.push(format!(
            "  wake-ups behind a less urgent thread (the kernel's preemption latency, not counted as lost): {}, at most {} ms",
            d.wakeup_latency.0,
            ns_ms(d.wakeup_latency.1)
        ));
    }
    if d.deadline_behind_fair.0 > 0 {
        out.push(format!(
            "  SCHED_DEADLINE threads kept off their CPU by ordinary tasks (throttled, or behind the fair server: not counted as lost): {} times, {} ms",
            d.deadline_behind_fair.0,
            ns_ms(d.deadline_behind_fair.1)
        ));
    }
    if d.idle_behind_fair.0 > 0 {
        out.push(format!(
            "  SCHED_IDLE threads (passive servers between donations) behind ordinary tasks (what the class means: not counted as lost): {} times, {} ms",
            d.idle_behind_fair.0,
            ns_ms(d.idle_behind_fair.1)
        ));
    }
    if d.dropped > 0 {
        out.push(format!(
            "  the kernel dropped {} scheduler records while watching: the loss is a lower bound",
            d.dropped
        ));
    }
    let mut settings: Vec<(String, Vec<u32>)> = Vec::new();
    for (cpu, f) in &d.fair_server {
        let text = f.to_string();
        match settings.iter_mut().find(|(t, _)| *t == text) {
            Some((_, cpus)) => cpus.push(*cpu),
            None => settings.push((text, vec![*cpu])),
        }
    }
    let fair_present = d
        .fair_server
        .iter()
        .any(|(_, f)| !matches!(f, FairServer::Absent));
    for (text, cpus) in settings {
        out.push(format!(
            "fair server on CPU{} {}: {text}",
            if cpus.len() > 1 { "s" } else { "" },
            cpus.iter()
                .map(u32::to_string)
                .collect::<Vec<_>>()
                .join(", ")
        ));
    }
    if fair_present {
        out.push(format!(
            "  (ordinary SCHED_OTHER tasks may run ahead of the run's real-time threads that long; {FAIR_SERVER_HOWTO})"
        ));
    }
    out
}

/// `"disturbance"` in `heir run --json`: `{"measured":…,"cpus":[…],
/// "lost_ms":…,"jobs":…,"by":[{"pid":…,"tid":…,"comm":…,"class":…,
/// "what":…,"cpus":[…],"lost_ms":…,"jobs":…}],"fair_server":{CPU:{…}},
/// "dropped":…}` (with `"why"` instead when not measured).
pub fn disturbance_json(real: &RealRun) -> serde_json::Value {
    use heir_runner::run::disturb::FairServer;
    let d = &real.disturbance;
    if let Some(why) = &d.not_measured {
        return serde_json::json!({"measured": false, "why": why});
    }
    let by: Vec<serde_json::Value> =
        d.by.iter()
            .map(|b| {
                serde_json::json!({
                    "pid": b.pid,
                    "tid": b.tid,
                    "comm": b.comm,
                    "class": b.class.key(),
                    "what": b.class.to_string(),
                    "cpus": b.cpus,
                    "lost_ms": b.lost_ns as f64 / 1e6,
                    "jobs": b.jobs,
                })
            })
            .collect();
    let fair: serde_json::Map<String, serde_json::Value> = d
        .fair_server
        .iter()
        .map(|(c, f)| {
            let v = match f {
                FairServer::Set {
                    runtime_ns,
                    period_ns,
                } => serde_json::json!({"runtime_ms": *runtime_ns as f64 / 1e6, "period_ms": *period_ns as f64 / 1e6}),
                FairServer::Absent => serde_json::json!({"absent": true}),
                FairServer::Unreadable(why) => serde_json::json!({"unknown": why}),
            };
            (c.to_string(), v)
        })
        .collect();
    serde_json::json!({
        "measured": true,
        "cpus": d.cpus,
        "lost_ms": d.lost_ns as f64 / 1e6,
        "jobs": d.jobs,
        "by": by,
        "fair_server": fair,
        "dropped": d.dropped,
        "wakeup_latency": {"count": d.wakeup_latency.0, "max_ms": d.wakeup_latency.1 as f64 / 1e6},
        "deadline_behind_fair": {"count": d.deadline_behind_fair.0, "ms": d.deadline_behind_fair.1 as f64 / 1e6},
        "idle_behind_fair": {"count": d.idle_behind_fair.0, "ms": d.idle_behind_fair.1 as f64 / 1e6},
    })
}

/// Per thread, `"disturbance"` in `heir run --json`'s task object:
/// `{"jobs":…,"lost_ms":…,"max_job_lost_ms":…,"by":[{"tid":…,"lost_ms":…}]}`
/// (threads that lost nothing have none).
pub fn task_disturbance_json(
    real: &RealRun,
    t: &heir_runner::run::disturb::ThreadLoss,
) -> serde_json::Value {
    let by: Vec<serde_json::Value> =
        t.by.iter()
            .filter_map(|&(k, ns)| {
                real.disturbance.by.get(k).map(
                |b| serde_json::json!({"tid": b.tid, "comm": b.comm, "lost_ms": ns as f64 / 1e6}),
            )
            })
            .collect();
    serde_json::json!({
        "jobs": t.jobs,
        "lost_ms": t.lost_ns as f64 / 1e6,
        "max_job_lost_ms": t.max_job_lost_ns as f64 / 1e6,
        "by": by,
    })
}
