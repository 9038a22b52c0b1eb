//! Donating RPC endpoints (NOVA donation: timeslice donation and helping)
//! on a stock kernel: the caller's priority — or deadline — goes to the
//! thread serving its request, *in the kernel*, through a PI futex.
//!
//! # The mechanism
//!
//! Every request has its own PI futex word, its *ticket*. When a server
//! takes the request (or is assigned it), the ticket holds that server's
//! TID; the caller sleeps in `FUTEX_LOCK_PI2` on it. The kernel then treats
//! the server as the owner of a PI futex the caller waits for: it boosts
//! exactly that server to the caller's priority (or lends it the caller's
//! deadline: the deadline class, docs/DEADLINE.md §3), and carries the boost
//! on along the server's own PI chain — a server blocked on a
//! [`crate::PiMutex`] (or any glibc `PTHREAD_PRIO_INHERIT` mutex), or
//! calling another donating endpoint, passes it on. heir-rt makes no
//! `sched_setattr` call for it.
//!
//! # In the engine
//!
//! The wait goes through heir's engine first, like every other wait: the
//! caller blocks on an engine object of the ticket (an endpoint object,
//! whose one target is the server the ticket names), under the engine
//! lock, before it sleeps on the ticket, and leaves it when it wakes. The
//! engine's cycle check runs there: a call that would close a cycle is
//! refused before the kernel sees it, with the cycle named
//! ([`Error::CallCycle`]) and nothing changed. The engine's urgencies then
//! include what callers lend (a server's, and downstream of it a PI mutex
//! owner's); the wait is marked as carried by the kernel, so its boost is
//! not also written with `sched_setattr` onto the server.
//!
//! - **Donation.** A caller that finds a server with no request (sleeping
//!   in [`Endpoint::receive_until`], or between a reply and its next
//!   receive) assigns its request to it: the ticket names that server, the
//!   server is woken if it sleeps, and the caller blocks on the ticket. The
//!   server's [`Endpoint::reply`] stores the reply and releases the ticket
//!   (`FUTEX_UNLOCK_PI`, or a CAS when nobody sleeps on it yet): the kernel
//!   hands the word to the caller, wakes it and ends the boost in one
//!   system call.
//! - **Helping.** A caller that finds every server busy queues its request
//!   on the busy server with the fewest queued requests and blocks on the
//!   ticket of the request that server is serving now: the kernel boosts
//!   the server by the helping caller's priority too, until it replies. The reply
//!   assigns the server its next request (most urgent first, FIFO among
//!   equals) before the ticket is released, and the kernel hands the
//!   released ticket to its waiters one by one, most urgent first (each
//!   passes it on: NOVA's staggered wake-up); each retries — blocks on its
//!   own ticket if its request was assigned, or helps again.
//! - **Aborts.** A call with a deadline sleeps in `FUTEX_LOCK_PI2` with
//!   that absolute `CLOCK_MONOTONIC` timeout: on `ETIMEDOUT` the kernel has
//!   already removed the caller from the ticket's waiters (and recomputed
//!   the server's priority); the call returns [`Error::TimedOut`]. A
//!   request not yet received is withdrawn; one being served is left to
//!   the server, mid-request, and its reply is dropped. Later callers that
//!   find the server busy help it finish. A reply that raced with the
//!   timeout is not lost: the caller takes it. An expired call is never
//!   delivered: a deadline already past queues nothing, and a server
//!   takes a request only before its deadline (checked under the
//!   endpoint's lock, which the caller's abort also takes), so a caller
//!   gets the reply, or `TimedOut` with its request either never run or
//!   taken in time and aborted mid-request.
//! - **Cycles.** The engine refuses a wait that would close a cycle —
//!   servers calling each other (the NOVA paper's Fig. 7) — before the caller
//!   sleeps, naming it ([`Error::CallCycle`]): a *livelock* in the NOVA
//!   paper's terms when one edge of it is helping (NOVA's helping callers would help
//!   each other forever), a *deadlock* when every edge is a donation. A cycle
//!   the engine cannot see (through a glibc mutex outside heir) is still
//!   refused by the kernel (`EDEADLK` from `FUTEX_LOCK_PI`), named from
//!   heir's record of which thread sleeps on which server.
//! - **Passive servers.** [`Endpoint::add_server`] with `passive` switches
//!   the server to `SCHED_IDLE`: it runs on what callers lend it (the
//!   kernel's boost) and otherwise only on CPU time nobody else wants.
//!
//! # What is exact and what is approximated
//!
//! Exact (the kernel's own PI): which thread is boosted (the one serving
//! the request, never another server of the endpoint), by how much
//! (the highest of its callers' and helping callers' kernel priorities, deadline
//! class included), transitively through PI futexes, and when the boost
//! ends (atomically with the wake). Approximated: a passive server is a
//! `SCHED_IDLE` thread, not a thread without a scheduling context — it
//! still runs when its CPU would otherwise idle; a deadline caller's
//! runtime is not charged for the server's work (docs/DEADLINE.md §3); the
//! order of queued requests is by the callers' urgency as heir's engine
//! knows it (its base and user-space boosts, not a kernel PI boost it has
//! at the time of the call).

use std::collections::{BinaryHeap, HashMap};
use std::sync::atomic::{AtomicU32, Ordering};
use std::sync::Arc;

use heir_core::Urgency;

use crate::lock::Mutex;
use crate::rt::{self, PiFutex, PARKED, UNPARKED};
use crate::sys::{self, FutexWait, SchedAttr, FUTEX_OWNER_DIED};
use crate::Error;

/// A request's PI futex word: the serving thread's TID while it serves (or
/// is assigned) the request; the kernel's owner of it.
#[derive(Debug, Default)]
struct Ticket {
    word: AtomicU32,
}

impl Ticket {
    /// Releases the ticket the calling thread `me` owns (its TID is in the
    /// word): a CAS when nobody sleeps on it, else `FUTEX_UNLOCK_PI`, by
    /// which the kernel hands it to its most urgent waiter.
    fn release(&self, me: i32) {
        if self
            .word
            .compare_exchange(me as u32, 0, Ordering::Release, Ordering::Relaxed)
            .is_err()
        {
            let _ = sys::futex_unlock_pi(&self.word);
        }
    }
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Status {
    /// Queued on server `tid`, which serves another request.
    Queued(i32),
    /// Assigned to server `tid` (received or not yet).
    Serving(i32),
    /// Replied: the reply is in the entry.
    Replied,
    /// The caller gave up while the server had it; the reply is dropped.
    Aborted,
    /// The server `tid` exited.
    ServerGone(i32),
    /// The call's deadline passed before a server took the request: it
    /// was never delivered (and never will be).
    Expired,
}

struct Entry<Req, Resp> {
    ticket: Arc<Ticket>,
    prio: Urgency,
    /// The call's absolute `CLOCK_MONOTONIC` deadline: a server takes the
    /// request only before it ([`Endpoint::receive_until`]).
    deadline_ns: Option<u64>,
    status: Status,
    req: Option<Req>,
    reply: Option<Resp>,
}

/// A queued request, most urgent first, FIFO among equals.
#[derive(PartialEq, Eq)]
struct Pending {
    prio: Urgency,
    id: u64,
}

impl PartialOrd for Pending {
    fn partial_cmp(&self, o: &Self) -> Option<std::cmp::Ordering> {
        Some(self.cmp(o))
    }
}

impl Ord for Pending {
    fn cmp(&self, o: &Self) -> std::cmp::Ordering {
        self.prio.cmp(&o.prio).then(o.id.cmp(&self.id))
    }
}

struct Current {
    id: u64,
    ticket: Arc<Ticket>,
    delivered: bool,
}

struct ServerRec {
    tid: i32,
    passive: bool,
    current: Option<Current>,
    pending: BinaryHeap<Pending>,
    sleeping: bool,
    idle: Arc<AtomicU32>,
}

struct EpState<Req, Resp> {
    servers: Vec<ServerRec>,
    requests: HashMap<u64, Entry<Req, Resp>>,
    next_id: u64,
}

impl<Req, Resp> EpState<Req, Resp> {
    fn server(&mut self, tid: i32) -> Option<&mut ServerRec> {
        self.servers.iter_mut().find(|s| s.tid == tid)
    }

    /// The index of server `tid`; `Err(NotServing)` if it is none.
    fn server_index(&self, tid: i32) -> Result<usize, Error> {
        self.servers
            .iter()
            .position(|s| s.tid == tid)
            .ok_or(Error::NotServing)
    }

    /// Gives server `si`, which has no current request, its most urgent
    /// queued one (the ticket names the server from now on).
    fn advance(&mut self, si: usize) {
        let s = &mut self.servers[si];
        while let Some(p) = s.pending.pop() {
            if let Some(e) = self.requests.get_mut(&p.id) {
                e.ticket.word.store(s.tid as u32, Ordering::Release);
                e.status = Status::Serving(s.tid);
                s.current = Some(Current {
                    id: p.id,
                    ticket: e.ticket.clone(),
                    delivered: false,
                });
                return;
            }
        }
    }

    /// Places request `id` (in `requests`, its ticket free): on a server
    /// with no request (its ticket names it; returns the server's idle
    /// word to wake if it sleeps in `receive`), else queued on the busy
    /// server with the fewest queued requests. `ServerGone(0)` without
    /// servers.
    fn place(&mut self, id: u64) -> Option<Arc<AtomicU32>> {
        let e = self.requests.get_mut(&id)?;
        if let Some(s) = self.servers.iter_mut().find(|s| s.current.is_none()) {
            e.ticket.word.store(s.tid as u32, Ordering::Release);
            e.status = Status::Serving(s.tid);
            s.current = Some(Current {
                id,
                ticket: e.ticket.clone(),
                delivered: false,
            });
            if s.sleeping {
                s.sleeping = false;
                s.idle.store(UNPARKED, Ordering::Release);
                return Some(s.idle.clone());
            }
            return None;
        }
        match self.servers.iter_mut().min_by_key(|s| s.pending.len()) {
            Some(s) => {
                s.pending.push(Pending { prio: e.prio, id });
                e.status = Status::Queued(s.tid);
            }
            None => e.status = Status::ServerGone(0),
        }
        None
    }

    /// Server `tid` exited. What it had not received goes to the other
    /// servers (returns the idle words to wake); a request it was serving
    /// fails with its tid.
    fn server_gone(&mut self, tid: i32) -> Vec<Arc<AtomicU32>> {
        let Some(si) = self.servers.iter().position(|s| s.tid == tid) else {
            return Vec::new();
        };
        let s = self.servers.remove(si);
        let mut again = Vec::new();
        if let Some(c) = &s.current {
            if let Some(e) = self.requests.get_mut(&c.id) {
                if e.status == Status::Aborted {
                    self.requests.remove(&c.id);
                } else if c.delivered {
                    e.status = Status::ServerGone(tid);
                } else {
                    again.push(c.id);
                }
            }
        }
        again.extend(s.pending.iter().map(|p| p.id));
        let mut wake = Vec::new();
        for id in again {
            if let Some(e) = self.requests.get_mut(&id) {
                // A fresh word: the old one may still be in the kernel's
                // hands (handed over by the dead server's exit).
                e.ticket = Arc::new(Ticket::default());
                wake.extend(self.place(id));
            }
        }
        wake
    }
}

/// How a blocked caller reaches a server: the edges heir names a cycle
/// with.
#[derive(Clone, Copy, Debug)]
struct Edge {
    /// The server whose TID the word holds.
    owner: i32,
    /// Helping (blocked on another request's ticket), not donation.
    helping: bool,
}

/// Which thread sleeps in a donating call on which server, process-wide
/// (read only to name a cycle the kernel refused).
static BLOCKED: Mutex<PiFutex, Option<HashMap<i32, Edge>>> = Mutex::from_raw(PiFutex::new(), None);

fn blocked_set(me: i32, edge: Option<Edge>) {
    let Ok(mut g) = BLOCKED.lock() else {
        return;
    };
    let map = g.get_or_insert_with(HashMap::new);
    match edge {
        Some(e) => {
            map.insert(me, e);
        }
        None => {
            map.remove(&me);
        }
    }
}

/// The cycle the kernel found when `me` tried to block on `first`: the
/// threads from `me` back to `me`, and whether an edge of it is helping.
/// `None` if heir's record does not close it (the cycle goes through a
/// PI mutex, which heir does not follow here).
fn name_cycle(me: i32, first: Edge) -> Option<(Vec<i32>, bool)> {
    let g = BLOCKED.lock().ok()?;
    let map = g.as_ref()?;
    let mut tids = vec![me];
    let mut helping = first.helping;
    let mut at = first.owner;
    for _ in 0..=map.len() {
        tids.push(at);
        if at == me {
            return Some((tids, helping));
        }
        let e = map.get(&at)?;
        helping |= e.helping;
        at = e.owner;
    }
    None
}

/// Whether a thread of a cycle the engine named sleeps on a helping edge.
fn helping_among(tids: &[i32]) -> bool {
    let Ok(g) = BLOCKED.lock() else {
        return false;
    };
    g.as_ref()
        .is_some_and(|map| tids.iter().any(|t| map.get(t).is_some_and(|e| e.helping)))
}

/// A donating RPC endpoint: callers lend their priority or deadline to the
/// thread serving their request, through the kernel (see the module docs).
/// Requests of type `Req`, replies of type `Resp`.
pub struct Endpoint<Req, Resp> {
    state: Mutex<PiFutex, EpState<Req, Resp>>,
}

impl<Req: Send, Resp: Send> Default for Endpoint<Req, Resp> {
    fn default() -> Self {
        Self::new()
    }
}

/// The attributes of a passive server: `SCHED_IDLE`.
pub fn passive_attr() -> SchedAttr {
    SchedAttr {
        sched_policy: sys::SCHED_IDLE,
        ..SchedAttr::default()
    }
}

impl<Req: Send, Resp: Send> Endpoint<Req, Resp> {
    /// A new endpoint without servers.
    pub fn new() -> Self {
        Endpoint {
            state: Mutex::from_raw(
                PiFutex::new(),
                EpState {
                    servers: Vec::new(),
                    requests: HashMap::new(),
                    next_id: 0,
                },
            ),
        }
    }

    /// Makes the calling thread a server of the endpoint (only the caller:
    /// a server receives in its own thread). With `passive` it first
    /// switches itself to `SCHED_IDLE` (its base from now on, through
    /// [`crate::thread::set_sched`]): it then runs on what callers lend it.
    /// `Err(Busy)` if it already serves this endpoint.
    pub fn add_server(&self, passive: bool) -> Result<(), Error> {
        let me = rt::tid();
        if passive {
            crate::thread::set_sched(&passive_attr())?;
        }
        let mut g = self.state.lock()?;
        if g.server(me).is_some() {
            return Err(Error::Busy);
        }
        g.servers.push(ServerRec {
            tid: me,
            passive,
            current: None,
            pending: BinaryHeap::new(),
            sleeping: false,
            idle: Arc::new(AtomicU32::new(UNPARKED)),
        });
        Ok(())
    }

    /// The calling thread stops serving the endpoint. `Err(Busy)` while it
    /// has a request (or queued ones); `Err(NotServing)` if it is not a
    /// server. A passive server keeps `SCHED_IDLE`.
    pub fn remove_server(&self) -> Result<(), Error> {
        let me = rt::tid();
        let mut g = self.state.lock()?;
        let si = g.server_index(me)?;
        if g.servers[si].current.is_some() || !g.servers[si].pending.is_empty() {
            return Err(Error::Busy);
        }
        g.servers.remove(si);
        Ok(())
    }

    /// The previous release's name of [`Endpoint::add_server`].
    #[deprecated(note = "renamed `add_server`")]
    pub fn join_server(&self, passive: bool) -> Result<(), Error> {
        self.add_server(passive)
    }

    /// The previous release's name of [`Endpoint::remove_server`].
    #[deprecated(note = "renamed `remove_server`")]
    pub fn leave_server(&self) -> Result<(), Error> {
        self.remove_server()
    }

    /// The servers' tids and whether each is passive.
    pub fn servers(&self) -> Vec<(i32, bool)> {
        self.state
            .lock()
            .map(|g| g.servers.iter().map(|s| (s.tid, s.passive)).collect())
            .unwrap_or_default()
    }

    /// True if no request is in flight and no server waits in
    /// [`Self::receive_until`] (what the C API's destroy checks).
    pub fn is_quiet(&self) -> bool {
        self.state
            .lock()
            .map(|g| g.requests.is_empty() && g.servers.iter().all(|s| !s.sleeping))
            .unwrap_or(false)
    }

    /// Calls and waits for the reply as long as it takes.
    pub fn call(&self, req: Req) -> Result<Resp, Error> {
        self.call_until(req, None)
    }

    /// Calls: the request goes to a server with no request, or queues on a
    /// busy one (helping it); the caller sleeps in `FUTEX_LOCK_PI2` on a word
    /// naming the server until the reply or the absolute `CLOCK_MONOTONIC`
    /// deadline. Errors: [`Error::TimedOut`] (aborted: a received request
    /// stays with its server, its reply dropped), [`Error::CallCycle`] (the
    /// kernel refused a cycle), [`Error::NoServer`], [`Error::NoSuchThread`]
    /// (the server exited).
    pub fn call_until(&self, req: Req, deadline_ns: Option<u64>) -> Result<Resp, Error> {
        let me = rt::tid();
        let prio = crate::thread::current_urgency()?;
        let (id, wake) = {
            let mut g = self.state.lock()?;
            let st = &mut *g;
            if st.servers.is_empty() {
                return Err(Error::NoServer);
            }
            // An expired call is never delivered: nothing is queued.
            if deadline_ns.is_some_and(|d| sys::now_ns() >= d) {
                return Err(Error::TimedOut);
            }
            let id = st.next_id;
            st.next_id += 1;
            st.requests.insert(
                id,
                Entry {
                    ticket: Arc::new(Ticket::default()),
                    prio,
                    deadline_ns,
                    status: Status::ServerGone(0),
                    req: Some(req),
                    reply: None,
                },
            );
            let wake = st.place(id);
            (id, wake)
        };
        if let Some(w) = wake {
            sys::futex_wake(&w, 1);
        }
        self.wait_reply(id, me, deadline_ns)
    }

    fn wait_reply(&self, id: u64, me: i32, deadline_ns: Option<u64>) -> Result<Resp, Error> {
        loop {
            let (ticket, edge) = {
                let mut g = self.state.lock()?;
                let st = &mut *g;
                let status = st.requests.get(&id).ok_or(Error::Invalid)?.status;
                match status {
                    Status::Replied => {
                        let e = st.requests.remove(&id).ok_or(Error::Invalid)?;
                        return e.reply.ok_or(Error::Invalid);
                    }
                    Status::ServerGone(0) => {
                        st.requests.remove(&id);
                        return Err(Error::NoServer);
                    }
                    Status::ServerGone(tid) => {
                        st.requests.remove(&id);
                        return Err(Error::NoSuchThread(tid));
                    }
                    Status::Aborted => return Err(Error::Invalid),
                    Status::Expired => {
                        st.requests.remove(&id);
                        return Err(Error::TimedOut);
                    }
                    Status::Serving(s) => {
                        let t = st.requests.get(&id).map(|e| e.ticket.clone());
                        (
                            t.ok_or(Error::Invalid)?,
                            Edge {
                                owner: s,
                                helping: false,
                            },
                        )
                    }
                    Status::Queued(s) => {
                        let cur = st
                            .server(s)
                            .and_then(|r| r.current.as_ref().map(|c| c.ticket.clone()));
                        match cur {
                            Some(t) => (
                                t,
                                Edge {
                                    owner: s,
                                    helping: true,
                                },
                            ),
                            None => {
                                // Not busy after all (cannot happen: a
                                // server with queued requests has a current
                                // one, and a gone server's are placed
                                // again): place it again rather than spin.
                                if let Some(r) = st.server(s) {
                                    r.pending.retain(|p| p.id != id);
                                }
                                let wake = st.place(id);
                                drop(g);
                                if let Some(w) = wake {
                                    sys::futex_wake(&w, 1);
                                }
                                continue;
                            }
                        }
                    }
                }
            };
            // The wait goes through the engine first, like every other
            // wait: a cycle is refused there, named, before the kernel
            // sees it (and nothing is left blocked).
            let key = Arc::as_ptr(&ticket) as usize;
            let blocked = rt::state().donate_block(key, edge.owner);
            if let Err(Error::NoSuchThread(_)) = blocked {
                // The server exited (as `ESRCH` from the kernel below):
                // its requests go elsewhere, and this one is placed again.
                self.gone(edge.owner)?;
                continue;
            }
            if let Err(err) = blocked {
                let err = match err {
                    Error::Deadlock { cycle } => {
                        let tids = rt::state().cycle_tids(&cycle);
                        let livelock = edge.helping || helping_among(&tids);
                        Error::CallCycle { tids, livelock }
                    }
                    e => e,
                };
                return self.abort(id, err);
            }
            blocked_set(me, Some(edge));
            let mut r = sys::futex_lock_pi(&ticket.word, deadline_ns);
            while r == libc::EINTR {
                r = sys::futex_lock_pi(&ticket.word, deadline_ns);
            }
            blocked_set(me, None);
            rt::state().donate_unblock(key);
            match r {
                0 => {
                    let died = ticket.word.load(Ordering::Acquire) & FUTEX_OWNER_DIED != 0;
                    ticket.release(me);
                    if died {
                        self.gone(edge.owner)?;
                    }
                }
                libc::ESRCH => self.gone(edge.owner)?,
                // The owner is exiting: let it finish (never a loop at
                // real-time priority without a sleep).
                libc::EAGAIN => sys::sleep_until(sys::now_ns() + 50_000),
                libc::ETIMEDOUT => return self.abort(id, Error::TimedOut),
                libc::EDEADLK => {
                    let err = match name_cycle(me, edge) {
                        Some((tids, livelock)) => Error::CallCycle { tids, livelock },
                        None => Error::CallCycle {
                            tids: Vec::new(),
                            livelock: edge.helping,
                        },
                    };
                    return self.abort(id, err);
                }
                errno => {
                    return self.abort(
                        id,
                        Error::Os {
                            op: "futex_lock_pi",
                            errno,
                        },
                    )
                }
            }
            if deadline_ns.is_some_and(|d| sys::now_ns() >= d) {
                return self.abort(id, Error::TimedOut);
            }
        }
    }

    /// Server `tid` was found gone: its undelivered requests go elsewhere.
    fn gone(&self, tid: i32) -> Result<(), Error> {
        let wake = self.state.lock()?.server_gone(tid);
        for w in wake {
            sys::futex_wake(&w, 1);
        }
        Ok(())
    }

    /// Ends request `id`'s call with `err`, unless it was replied meanwhile.
    fn abort(&self, id: u64, err: Error) -> Result<Resp, Error> {
        let mut g = self.state.lock()?;
        let st = &mut *g;
        let Some(e) = st.requests.get_mut(&id) else {
            return Err(err);
        };
        match e.status {
            Status::Replied => {
                let e = st.requests.remove(&id).ok_or(Error::Invalid)?;
                return e.reply.ok_or(Error::Invalid);
            }
            Status::Queued(s) => {
                st.requests.remove(&id);
                if let Some(r) = st.server(s) {
                    r.pending.retain(|p| p.id != id);
                }
            }
            Status::Serving(_) => e.status = Status::Aborted,
            Status::Expired => {
                st.requests.remove(&id);
                return Err(Error::TimedOut);
            }
            Status::Aborted | Status::ServerGone(_) => {
                st.requests.remove(&id);
            }
        }
        Err(err)
    }

    /// Waits for a request until the absolute `CLOCK_MONOTONIC` deadline
    /// (`Ok(None)`: none came) and returns it; the caller (a server, see
    /// [`Self::add_server`]) runs it boosted by its caller and answers with
    /// [`Self::reply`]. A request whose caller gave up before it was
    /// received is skipped, and so is one whose call's deadline has passed
    /// (decided under the endpoint's lock, with the clock read there: the
    /// caller's abort takes the same lock, so a request is either taken
    /// before its deadline or never run — its caller gets `TimedOut`).
    /// `Err(NotServing)` if the caller is not a server, `Err(Busy)` if it
    /// has not replied to the request it received.
    pub fn receive_until(&self, deadline_ns: Option<u64>) -> Result<Option<Req>, Error> {
        let me = rt::tid();
        loop {
            let mut skipped = None;
            let idle = {
                let mut g = self.state.lock()?;
                let st = &mut *g;
                let si = st.server_index(me)?;
                match st.servers[si].current.as_mut() {
                    Some(c) if c.delivered => return Err(Error::Busy),
                    Some(c) => {
                        let e = st.requests.get_mut(&c.id).ok_or(Error::Invalid)?;
                        let expired = e.deadline_ns.is_some_and(|d| sys::now_ns() >= d);
                        if e.status == Status::Aborted || expired {
                            let id = c.id;
                            if e.status == Status::Aborted {
                                st.requests.remove(&id);
                            } else {
                                // Its caller may still sleep on the ticket:
                                // released below, it wakes and reads this.
                                e.status = Status::Expired;
                            }
                            skipped = st.servers[si].current.take().map(|c| c.ticket);
                            st.advance(si);
                            None
                        } else {
                            c.delivered = true;
                            return Ok(e.req.take());
                        }
                    }
                    None => {
                        let s = &mut st.servers[si];
                        s.sleeping = true;
                        s.idle.store(PARKED, Ordering::Release);
                        Some(s.idle.clone())
                    }
                }
            };
            if let Some(t) = skipped {
                t.release(me);
                continue;
            }
            let Some(idle) = idle else { continue };
            while idle.load(Ordering::Acquire) == PARKED {
                if sys::futex_wait(&idle, PARKED, deadline_ns) == FutexWait::TimedOut {
                    let mut g = self.state.lock()?;
                    let s = g.server(me).ok_or(Error::NotServing)?;
                    if s.current.is_none() {
                        s.sleeping = false;
                        s.idle.store(UNPARKED, Ordering::Relaxed);
                        return Ok(None);
                    }
                    break;
                }
            }
        }
    }

    /// Answers the request the calling server received: the caller gets
    /// `resp` (dropped if it gave up), the server its next queued request,
    /// and the ticket is released — the kernel wakes the caller and ends
    /// the boost. `Err(NotServing)` without a received request.
    pub fn reply(&self, resp: Resp) -> Result<(), Error> {
        let me = rt::tid();
        let ticket = {
            let mut g = self.state.lock()?;
            let st = &mut *g;
            let si = st.server_index(me)?;
            match &st.servers[si].current {
                Some(c) if c.delivered => {}
                _ => return Err(Error::NotServing),
            }
            let cur = st.servers[si].current.take().ok_or(Error::NotServing)?;
            match st.requests.get_mut(&cur.id) {
                Some(e) if e.status == Status::Aborted => {
                    st.requests.remove(&cur.id);
                }
                Some(e) => {
                    e.status = Status::Replied;
                    e.reply = Some(resp);
                }
                None => {}
            }
            st.advance(si);
            cur.ticket
        };
        ticket.release(me);
        Ok(())
    }

    /// Serves one request: [`Self::receive_until`], `f`, [`Self::reply`].
    /// `Ok(false)` if none came before the deadline.
    pub fn serve_until(
        &self,
        deadline_ns: Option<u64>,
        f: impl FnOnce(Req) -> Resp,
    ) -> Result<bool, Error> {
        match self.receive_until(deadline_ns)? {
            Some(req) => {
                self.reply(f(req))?;
                Ok(true)
            }
            None => Ok(false),
        }
    }
}
