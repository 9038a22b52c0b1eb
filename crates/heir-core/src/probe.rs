//! Checks made before an edge is added: would it close a cycle, would it make
//! a chain longer than [`MAX_CHAIN_DEPTH`]. Read-only on the graph (only the
//! scratch memo changes), so a refusal leaves the engine unchanged.
//!
//! Both probes are iterative depth-first searches with per-node memoisation
//! (the graph is a DAG: without memo a diamond-rich graph would be walked
//! exponentially often).

use crate::{Engine, EngineError, Node, ObjId, TaskId, MAX_CHAIN_DEPTH};

/// The graph as it will be once a waiter has given its mutex up, for the
/// probes of a wait that releases a mutex atomically
/// ([`Engine::cond_wait_unlock`], [`Engine::cond_wait_release`]).
///
/// The probes read the current graph through this cut: `mutex` has no
/// target (its owner, the waiter, gives it up), the waiter no longer counts
/// it among what it owns (up probes), and with a direct hand-off the task
/// that will own it, `unblocked`, is no longer blocked. Reachability is then
/// that of the graph after the release: a path that reached the waiter
/// through `mutex` ends at `mutex` (released: no owner) or at `unblocked`
/// (handed off: a runnable owner).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) struct Cut {
    /// The mutex given up.
    pub mutex: ObjId,
    /// Its next owner with a direct hand-off, runnable after the operation.
    pub unblocked: Option<TaskId>,
}

/// A depth-first frame: the node, the index of its next child, and the best
/// value folded in from the children seen so far.
#[derive(Clone, Copy, Debug)]
pub(crate) struct Frame {
    node: Node,
    next: usize,
    best: usize,
}

/// Which way a probe walks the wait-for graph.
#[derive(Clone, Copy, PartialEq, Eq)]
enum Dir {
    /// Along the edges: task → its object → the object's targets.
    Down,
    /// Against them: task → objects it is a target of → their waiters.
    Up,
}

impl Engine {
    /// The `i`-th child of `n` in direction `dir`, with the weight of the
    /// edge to it (1 for an edge between a blocked task and its object, i.e.
    /// one blocked task of chain length; 0 for object ↔ target edges).
    fn child(&self, n: Node, i: usize, dir: Dir) -> Option<(Node, usize)> {
        match (n, dir) {
            (Node::Task(t), Dir::Down) => match self.probe_blocked(t) {
                Some(o) if i == 0 => Some((Node::Object(o), 1)),
                _ => None,
            },
            (Node::Task(t), Dir::Up) => {
                let ts = &self.tasks[t.0 as usize];
                // A mutex given up is no longer the task's: skip it.
                let skip = self
                    .scratch
                    .cut
                    .and_then(|cut| ts.targeted.iter().position(|o| *o == cut.mutex));
                let i = match skip {
                    Some(k) if i >= k => i + 1,
                    _ => i,
                };
                ts.targeted.get(i).map(|o| (Node::Object(*o), 0))
            }
            (Node::Object(o), Dir::Down) => self.probe_target(o, i).map(|u| (Node::Task(u), 0)),
            (Node::Object(o), Dir::Up) => self.objs[o.0 as usize]
                .queue
                .waiters
                .get(i)
                .map(|w| (Node::Task(w.task), 1)),
        }
    }

    /// What `t` is blocked on, as the probes see it (through the cut).
    #[inline]
    fn probe_blocked(&self, t: TaskId) -> Option<ObjId> {
        match self.scratch.cut {
            Some(cut) if cut.unblocked == Some(t) => None,
            _ => self.tasks[t.0 as usize].blocked,
        }
    }

    /// The `i`-th target of `o`, as the probes see it (through the cut).
    #[inline]
    fn probe_target(&self, o: ObjId, i: usize) -> Option<TaskId> {
        match self.scratch.cut {
            Some(cut) if cut.mutex == o => None,
            _ => self.objs[o.0 as usize].targets.get(i).copied(),
        }
    }

    fn memo_slot(&mut self, n: Node) -> &mut (u32, u32) {
        match n {
            Node::Task(t) => &mut self.scratch.memo_task[t.0 as usize],
            Node::Object(o) => &mut self.scratch.memo_obj[o.0 as usize],
        }
    }

    /// Longest chain (in blocked tasks) from `start` in direction `dir`;
    /// going down, `Err(path)` if `goal` is reachable, with `path` the nodes
    /// from `start` to `goal` inclusive.
    fn probe(&mut self, start: Node, goal: Option<Node>, dir: Dir) -> Result<usize, Vec<Node>> {
        let epoch = self.scratch.next_epoch();
        let mut stack = core::mem::take(&mut self.scratch.stack);
        stack.clear();
        stack.push(Frame {
            node: start,
            next: 0,
            best: 0,
        });
        let result = loop {
            let Some(top) = stack.last_mut() else {
                // Unreachable: the loop returns when the start frame pops.
                break Ok(0);
            };
            match self.child(top.node, top.next, dir) {
                Some((child, weight)) => {
                    top.next += 1;
                    if Some(child) == goal {
                        let mut path: Vec<Node> = stack.iter().map(|f| f.node).collect();
                        path.push(child);
                        break Err(path);
                    }
                    let (stamp, val) = *self.memo_slot(child);
                    if stamp == epoch {
                        top.best = top.best.max(val as usize + weight);
                    } else {
                        stack.push(Frame {
                            node: child,
                            next: 0,
                            best: 0,
                        });
                    }
                }
                None => {
                    let done = *top;
                    stack.pop();
                    *self.memo_slot(done.node) = (epoch, done.best.min(u32::MAX as usize) as u32);
                    match stack.last_mut() {
                        Some(parent) => {
                            // The weight of parent → done, looked up again.
                            let w = self.edge_weight(parent.node, dir);
                            parent.best = parent.best.max(done.best + w);
                        }
                        None => break Ok(done.best),
                    }
                }
            }
        };
        self.scratch.stack = stack;
        result
    }

    /// The weight of every edge leaving `parent` in direction `dir` (all
    /// edges leaving a node have the same weight).
    fn edge_weight(&self, parent: Node, dir: Dir) -> usize {
        match (parent, dir) {
            (Node::Task(_), Dir::Down) | (Node::Object(_), Dir::Up) => 1,
            (Node::Task(_), Dir::Up) | (Node::Object(_), Dir::Down) => 0,
        }
    }

    /// The down probe for the common shape, a plain chain (every object on
    /// the way has at most one target): follows it from `o`, counting
    /// blocked tasks, and reports the path if it reaches `t`. `None` as soon
    /// as an object fans out (a condvar with several helpers): the caller
    /// then runs the general probe.
    fn probe_linear(&self, o: ObjId, t: TaskId) -> Option<Result<usize, Vec<Node>>> {
        let mut depth = 0;
        let mut obj = o;
        loop {
            if self.probe_target(obj, 1).is_some() {
                return None;
            }
            let Some(u) = self.probe_target(obj, 0) else {
                return Some(Ok(depth));
            };
            if u == t {
                // Walk again, this time writing the path down.
                let mut path = Vec::with_capacity(2 * depth + 2);
                let mut obj = o;
                loop {
                    path.push(Node::Object(obj));
                    match self.probe_target(obj, 0) {
                        Some(v) if v != t => {
                            path.push(Node::Task(v));
                            match self.probe_blocked(v) {
                                Some(next) => obj = next,
                                None => return None,
                            }
                        }
                        _ => break,
                    }
                }
                path.push(Node::Task(t));
                return Some(Err(path));
            }
            match self.probe_blocked(u) {
                Some(next) => {
                    depth += 1;
                    obj = next;
                }
                None => return Some(Ok(depth)),
            }
        }
    }

    /// Checks the edge `t → o` (t blocks on o): no cycle (is `t` downstream
    /// of `o`?), and the longest chain through the edge, `up(t) + 1 +
    /// down(o)`, within [`MAX_CHAIN_DEPTH`].
    #[inline]
    pub(crate) fn check_block(&mut self, t: TaskId, o: ObjId) -> Result<(), EngineError> {
        // Fast path, the common case: every target of `o` is runnable and is
        // not `t`. Then nothing is below `o` (down = 0) and no cycle closes;
        // with `up(t) <= blocked_count` (see below) the chain bound holds.
        //
        // Second fast path: `t` is not a target of `o`, and nothing waits
        // upstream of `t` (no object that targets it has a waiter: a
        // client that serves nobody, the usual caller). A path down from
        // `o` enters every object after `o` through one of its waiters, so
        // it cannot reach `t` (no cycle), and `up(t) = 0`; `down(o) <=
        // blocked_count` as `t` is not blocked yet. So a block at the head
        // of a chain of any length is checked in O(1).
        if self.blocked_count < MAX_CHAIN_DEPTH
            && (self.shallow(t, o) || self.nothing_upstream(t, o))
        {
            return Ok(());
        }
        let shallow = self.shallow(t, o);
        self.check_block_probing(t, o, shallow)
    }

    /// Whether `t` is not a target of `o` and no object that targets `t`
    /// has a waiter: then no path down from `o` reaches `t` (nor through a
    /// cut, which only removes edges).
    #[inline]
    fn nothing_upstream(&self, t: TaskId, o: ObjId) -> bool {
        self.tasks[t.0 as usize]
            .targeted
            .iter()
            .all(|&x| x != o && self.objs[x.0 as usize].queue.is_empty())
    }

    /// Whether every target of `o` is runnable and is not `t`.
    #[inline]
    fn shallow(&self, t: TaskId, o: ObjId) -> bool {
        let runnable = |u: TaskId| u != t && self.probe_blocked(u).is_none();
        match self.scratch.cut {
            Some(cut) if cut.mutex == o => true,
            _ => self.objs[o.0 as usize].targets.iter().all(|&u| runnable(u)),
        }
    }

    /// [`Engine::check_block`] past its fast path (`shallow`: what
    /// [`Engine::shallow`] said).
    #[inline(never)]
    fn check_block_probing(
        &mut self,
        t: TaskId,
        o: ObjId,
        shallow: bool,
    ) -> Result<(), EngineError> {
        let down = if shallow {
            Ok(0)
        } else {
            match self.probe_linear(o, t) {
                Some(r) => r,
                None => self.probe(Node::Object(o), Some(Node::Task(t)), Dir::Down),
            }
        };
        let down = match down {
            Ok(d) => d,
            Err(path) => {
                let mut cycle = Vec::with_capacity(path.len() + 1);
                cycle.push(Node::Task(t));
                cycle.extend(path);
                return Err(EngineError::Cycle { cycle });
            }
        };
        // The up probe is skipped when it cannot matter: a chain counts
        // distinct blocked tasks (the graph is acyclic) and `t` is not
        // blocked yet, so `up(t) <= blocked_count`; if even that bound keeps
        // the chain within the limit, the check passes whatever `up` is.
        let ts = &self.tasks[t.0 as usize];
        let up = if ts.targeted.is_empty() || self.blocked_count + 1 + down <= MAX_CHAIN_DEPTH {
            0
        } else {
            self.probe(Node::Task(t), None, Dir::Up).unwrap_or(0)
        };
        if up + 1 + down > MAX_CHAIN_DEPTH {
            return Err(EngineError::ChainTooLong {
                limit: MAX_CHAIN_DEPTH,
            });
        }
        Ok(())
    }

    /// [`Engine::check_block`] for a block that gives `cut.mutex` up at the
    /// same time (a condvar wait releasing its mutex): the probes see the
    /// graph after the release. Read-only, like every probe.
    pub(crate) fn check_block_releasing(
        &mut self,
        t: TaskId,
        o: ObjId,
        cut: Cut,
    ) -> Result<(), EngineError> {
        self.scratch.cut = Some(cut);
        let r = self.check_block(t, o);
        self.scratch.cut = None;
        r
    }

    /// Checks the edge `o → t` (t becomes a target of o while o has
    /// waiters): no cycle (is `o` downstream of `t`?), and the longest chain
    /// through the edge, `up(o) + down(t)`, within [`MAX_CHAIN_DEPTH`].
    pub(crate) fn check_target_edge(&mut self, o: ObjId, t: TaskId) -> Result<(), EngineError> {
        let down = match self.probe(Node::Task(t), Some(Node::Object(o)), Dir::Down) {
            Ok(d) => d,
            Err(mut path) => {
                path.push(Node::Task(t));
                return Err(EngineError::Cycle { cycle: path });
            }
        };
        // As in `check_block`: `up(o) <= blocked_count`, so the up probe
        // only runs when that bound alone could exceed the limit.
        let up = if self.blocked_count + down <= MAX_CHAIN_DEPTH {
            0
        } else {
            self.probe(Node::Object(o), None, Dir::Up).unwrap_or(0)
        };
        if up + down > MAX_CHAIN_DEPTH {
            return Err(EngineError::ChainTooLong {
                limit: MAX_CHAIN_DEPTH,
            });
        }
        Ok(())
    }
}
