//! RPC endpoints: `call` from a client, `serve` in a server; requests are
//! served most urgent caller first, and with PI-CV a waiting caller lends its
//! urgency to the servers.
//!
//! Per endpoint: a request queue ordered by the caller's effective urgency at
//! the time of the call (FIFO among equals), one [`PiMutex`] and a "more"
//! [`PiCondvar`] servers wait on. Per caller: a reply condition variable whose
//! helpers are the endpoint's servers when PI-CV is on (the PI-CV paper's §6.2: the
//! client's receive queue has the server as helper).
//!
//! For the NOVA paper's model — the caller's priority or deadline lent to the
//! one thread serving its request, by the kernel, with helping and aborts —
//! see [`crate::donate::Endpoint`].

use std::cmp::Ordering as CmpOrdering;
use std::collections::BinaryHeap;
use std::sync::Arc;

use heir_core::Urgency;

use crate::condvar::{PiCondvar, WaitResult};
use crate::mutex::PiMutex;
use crate::Error;

struct Request<Req> {
    prio: Urgency,
    seq: u64,
    slot: usize,
    req: Req,
}

impl<Req> PartialEq for Request<Req> {
    fn eq(&self, o: &Self) -> bool {
        self.prio == o.prio && self.seq == o.seq
    }
}
impl<Req> Eq for Request<Req> {}
impl<Req> PartialOrd for Request<Req> {
    fn partial_cmp(&self, o: &Self) -> Option<CmpOrdering> {
        Some(self.cmp(o))
    }
}
impl<Req> Ord for Request<Req> {
    fn cmp(&self, o: &Self) -> CmpOrdering {
        self.prio.cmp(&o.prio).then(o.seq.cmp(&self.seq))
    }
}

struct Slot<Resp> {
    reply: Option<Resp>,
    pending: bool,
    cond: Arc<PiCondvar>,
}

struct EpState<Req, Resp> {
    queue: BinaryHeap<Request<Req>>,
    slots: Vec<Slot<Resp>>,
    servers: Vec<i32>,
    seq: u64,
}

/// A caller's handle on an [`Endpoint`] (its reply slot). Not shared
/// between threads that call concurrently.
#[derive(Clone, Debug)]
pub struct Caller {
    slot: usize,
}

/// An RPC endpoint.
pub struct Endpoint<Req, Resp> {
    state: PiMutex<EpState<Req, Resp>>,
    more: PiCondvar,
    pi_cv: bool,
}

impl<Req: Send, Resp: Send> Endpoint<Req, Resp> {
    /// A new endpoint; with `pi_cv` callers lend their urgency to servers.
    pub fn new(pi_cv: bool) -> Self {
        Endpoint {
            state: PiMutex::new(EpState {
                queue: BinaryHeap::new(),
                slots: Vec::new(),
                servers: Vec::new(),
                seq: 0,
            }),
            more: PiCondvar::new(),
            pi_cv,
        }
    }

    /// Declares thread `tid` a server (a helper of every caller's reply
    /// condition when PI-CV is on).
    pub fn add_server(&self, tid: i32) -> Result<(), Error> {
        let mut g = self.state.lock()?;
        if self.pi_cv {
            for s in &g.slots {
                s.cond.add_helper(tid)?;
            }
        }
        g.servers.push(tid);
        Ok(())
    }

    /// Thread `tid` stops being a server: with PI-CV, what it inherited
    /// from waiting callers is revoked. [`Error::NotServing`] if it is not
    /// a server of the endpoint.
    pub fn remove_server(&self, tid: i32) -> Result<(), Error> {
        let mut g = self.state.lock()?;
        let i = g
            .servers
            .iter()
            .position(|&s| s == tid)
            .ok_or(Error::NotServing)?;
        if self.pi_cv {
            for s in &g.slots {
                s.cond.remove_helper(tid)?;
            }
        }
        g.servers.remove(i);
        Ok(())
    }

    /// A new caller slot.
    pub fn caller(&self) -> Result<Caller, Error> {
        let mut g = self.state.lock()?;
        let cond = Arc::new(PiCondvar::new());
        if self.pi_cv {
            for &s in &g.servers {
                cond.add_helper(s)?;
            }
        }
        g.slots.push(Slot {
            reply: None,
            pending: false,
            cond,
        });
        Ok(Caller {
            slot: g.slots.len() - 1,
        })
    }

    /// Calls at the caller's effective urgency and waits for the reply.
    pub fn call(&self, caller: &Caller, req: Req) -> Result<Resp, Error> {
        let prio = crate::thread::current_urgency()?;
        self.call_until(caller, req, prio, None)?
            .ok_or(Error::TimedOut)
    }

    /// Calls at `prio`; waits for the reply until the absolute deadline
    /// (`Ok(None)`: timed out, the request withdrawn if not yet taken).
    pub fn call_until(
        &self,
        caller: &Caller,
        req: Req,
        prio: Urgency,
        deadline_ns: Option<u64>,
    ) -> Result<Option<Resp>, Error> {
        let mut g = self.state.lock()?;
        let slot = caller.slot;
        let cond = match g.slots.get_mut(slot) {
            Some(s) => {
                s.reply = None;
                s.pending = true;
                s.cond.clone()
            }
            None => return Err(Error::Invalid),
        };
        let seq = g.seq;
        g.seq += 1;
        g.queue.push(Request {
            prio,
            seq,
            slot,
            req,
        });
        self.more.signal()?;
        loop {
            if let Some(r) = g.slots[slot].reply.take() {
                g.slots[slot].pending = false;
                return Ok(Some(r));
            }
            if cond.wait_raw(g.raw(), deadline_ns)? == WaitResult::TimedOut {
                if let Some(r) = g.slots[slot].reply.take() {
                    g.slots[slot].pending = false;
                    return Ok(Some(r));
                }
                g.slots[slot].pending = false;
                g.queue.retain(|r| r.slot != slot);
                return Ok(None);
            }
        }
    }

    /// Serves one request: waits for the most urgent one until the absolute
    /// deadline (`Ok(false)`: none came), runs `f` on it outside the lock and
    /// replies.
    pub fn serve_until(
        &self,
        deadline_ns: Option<u64>,
        f: impl FnOnce(Req) -> Resp,
    ) -> Result<bool, Error> {
        let mut g = self.state.lock()?;
        while g.queue.is_empty() {
            if self.more.wait_raw(g.raw(), deadline_ns)? == WaitResult::TimedOut
                && g.queue.is_empty()
            {
                return Ok(false);
            }
        }
        let Some(r) = g.queue.pop() else {
            return Ok(false);
        };
        drop(g);
        let resp = f(r.req);
        let mut g = self.state.lock()?;
        if let Some(s) = g.slots.get_mut(r.slot) {
            if s.pending {
                s.reply = Some(resp);
                let cond = s.cond.clone();
                cond.signal()?;
            }
        }
        Ok(true)
    }
}
