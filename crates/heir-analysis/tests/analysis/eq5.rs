//! The PI-CV paper's Eq. 4-5 (a maximum over subsets of Q_i ∪ P_i) against heir's
//! polynomial computation (a maximum-weight bipartite matching), on random
//! small instances.

use heir_analysis::model::{Call, Server, Task, TaskSet};
use heir_analysis::rng::Rng;
use heir_analysis::Analyzer;

use crate::{h_m_l_calling_s, US};

/// Eq. 2-5 literally: enumerate every subset A of Q_i ∪ P_i in which no two
/// calls share a task (Lemma 1) or a server (Lemma 2); weigh (j, k) by
/// max{D_{j,h} | r_{j,h} = k}. Lower = strictly lower priority; higher =
/// higher or equal (heir's convention, see docs/ANALYSIS.md).
fn eq5_brute_force(set: &TaskSet, i: usize) -> u64 {
    let p = |t: usize| set.tasks[t].priority().unwrap();
    let k_of = |t: usize| -> Vec<usize> {
        let mut v: Vec<usize> = set.tasks[t].calls.iter().map(|c| c.server).collect();
        v.sort_unstable();
        v.dedup();
        v
    };
    let n = set.tasks.len();
    let mut pairs: Vec<(usize, usize)> = Vec::new();
    for j in (0..n).filter(|&j| j != i && p(j) < p(i)) {
        for k in k_of(j) {
            let in_q = k_of(i).contains(&k);
            let in_p = (0..n).any(|h| h != i && p(h) >= p(i) && k_of(h).contains(&k));
            if in_q || in_p {
                pairs.push((j, k));
            }
        }
    }
    let weight = |(j, k): (usize, usize)| {
        set.tasks[j]
            .calls
            .iter()
            .filter(|c| c.server == k)
            .map(|c| c.wcet)
            .max()
            .unwrap_or(0)
    };
    let mut best = 0;
    for mask in 0u32..(1 << pairs.len()) {
        let chosen: Vec<(usize, usize)> = (0..pairs.len())
            .filter(|b| mask & (1 << b) != 0)
            .map(|b| pairs[b])
            .collect();
        let ok = chosen
            .iter()
            .enumerate()
            .all(|(x, a)| chosen.iter().skip(x + 1).all(|b| a.0 != b.0 && a.1 != b.1));
        if ok {
            best = best.max(chosen.iter().map(|&c| weight(c)).sum());
        }
    }
    best
}

fn random_instance(rng: &mut Rng) -> TaskSet {
    let n = rng.range_u64(2, 7) as usize;
    let m = rng.range_u64(1, 4) as usize;
    let mut prios: Vec<i32> = (0..n as i32).map(|x| 90 - 3 * x).collect();
    rng.shuffle(&mut prios);
    let tasks = (0..n)
        .map(|t| {
            let mut calls = Vec::new();
            for k in 0..m {
                // 0, 1 or 2 calls to each server (Eq. 5's inner max).
                for _ in 0..rng.range_u64(0, 2) {
                    if rng.chance(0.5) {
                        calls.push(Call {
                            server: k,
                            wcet: rng.range_u64(1, 50) * US,
                        });
                    }
                }
            }
            Task::fixed(
                format!("C{t}"),
                0,
                prios[t],
                1_000_000 * US,
                10 * US,
                vec![],
                calls,
            )
        })
        .collect();
    let servers = (0..m)
        .map(|k| Server {
            name: format!("S{k}"),
            cpu: 0,
            priority: 1 + k as i32,
            inherits: true,
        })
        .collect();
    TaskSet {
        tasks,
        servers,
        mutexes: vec![],
        pi_cv: true,
    }
}

#[test]
fn matching_equals_the_papers_subset_maximum() {
    let mut rng = Rng::new(2024);
    let mut an = Analyzer::new();
    let mut nonzero = 0;
    for _ in 0..3000 {
        let set = random_instance(&mut rng);
        set.validate().unwrap();
        let full = an.analyze(&set);
        for (i, result) in full.iter().enumerate() {
            let expected = eq5_brute_force(&set, i);
            assert_eq!(an.rpc_interference(&set, i), expected, "I_{i} of {set:#?}");
            // With servers below every client, no mutex and PI-CV, heir's
            // general blocking term is exactly the paper's I_i.
            assert_eq!(result.blocking, Some(expected), "B_{i} of {set:#?}");
            if expected > 0 {
                nonzero += 1;
            }
        }
    }
    assert!(
        nonzero > 1000,
        "the instances must exercise I_i ({nonzero} non-zero)"
    );
}

#[test]
fn p_set_counts_servers_only_higher_tasks_call() {
    //   H (90) ──call──▶ S (10) ◀──call── L (50)        M (70) calls nobody
    // M is in neither Q nor P of its own calls, but S serves L's pending
    // request at H's priority when H calls: I_M = D_{L,S} = 7 µs.
    let set = h_m_l_calling_s(vec![], vec![], vec![]);
    let mut an = Analyzer::new();
    assert_eq!(an.rpc_interference(&set, 0), 7 * US); // Q_H
    assert_eq!(an.rpc_interference(&set, 1), 7 * US); // P_M
    assert_eq!(an.rpc_interference(&set, 2), 0);
    let r = an.analyze(&set);
    // M: E_M + I_M + E_H = 10 + 7 + 13.
    assert_eq!(r[1].wcrt, Some(30 * US));
}
