/*
 * heir.h — C API of libheir (heir-rt): priority inheritance beyond mutexes.
 *
 * PI condition variables with helpers (PI-CV): a thread waiting
 * on a heir_cond_t lends its priority to the condition's helper threads
 * until it is woken, times out, or the helper is removed — transitively
 * through heir PI mutexes and other heir condition variables. Plus kernel
 * PI-futex mutexes, immediate-priority-ceiling mutexes, the PI-CV paper's Fig. 5
 * bounded priority queue, and the NOVA paper's donating RPC endpoints (the
 * kernel lends a caller's priority or deadline to the thread serving it),
 * and GPM's gang priority management with a barrier on it.
 *
 * Conventions (as pthreads): every function returns 0 or a positive errno.
 *   EINVAL  null, never initialised or destroyed object; bad argument
 *   ESRCH   the tid is not a live thread of this process
 *   EEXIST  already a helper;  ENOENT  not a helper
 *   EPERM   the caller does not own the mutex
 *   EDEADLK the operation would close a wait-for cycle (state unchanged)
 *   ETIMEDOUT  the absolute CLOCK_MONOTONIC deadline passed
 *   EBUSY   the mutex is held (trylock; destroy, which then changes nothing)
 *   EOWNERDEAD  the caller now holds a mutex (PI or ceiling) whose owner
 *               died (see below)
 *   ENOTRECOVERABLE  the mutex was unlocked inconsistent: unusable
 * Thread ids are kernel tids (gettid()). Objects must not be moved or copied
 * after *_init. Link with -lheir (pkg-config --cflags --libs heir).
 * See docs/RUNTIME.md.
 */
#ifndef HEIR_H
#define HEIR_H

#include <stdint.h>
#include <sys/types.h>
#include <time.h>

#ifdef __cplusplus
extern "C" {
#endif

/** A PI mutex (kernel PI futex; contention is also known to heir). */
typedef struct heir_mutex { void *p; unsigned int magic; } heir_mutex_t;
/** A PI condition variable with helpers. */
typedef struct heir_cond { void *p; unsigned int magic; } heir_cond_t;
/** An immediate-priority-ceiling mutex. */
typedef struct heir_ceiling_mutex { void *p; unsigned int magic; } heir_ceiling_mutex_t;
/** A bounded priority queue of void * items (the PI-CV paper's Fig. 5). */
typedef struct heir_queue { void *p; unsigned int magic; } heir_queue_t;
/** A donating RPC endpoint (NOVA donation): a caller's priority or deadline
 * goes to the thread serving its request, in the kernel. */
typedef struct heir_rpc { void *p; unsigned int magic; } heir_rpc_t;

/* Threads. A thread joins automatically on first use; joining saves its
 * scheduling attributes (sched_getattr) as its base. */
int heir_thread_join(void);
int heir_thread_leave(void);
pid_t heir_gettid(void);
int heir_check_invariants(void);

/** What heir applied to the kernel, and what it could not, since the
 * process started. A boost is applied by whichever thread caused it, for
 * another thread, so a failure has no caller to return it to: it is
 * counted here (the thread keeps the attributes it had). */
typedef struct heir_apply_stats {
    uint64_t setattr_calls;          /* sched_setattr calls made */
    uint64_t setattr_errors;         /* of which failed (the thread still existed) */
    int32_t  last_errno;             /* the last failure's errno (0: none) */
    pid_t    last_error_tid;         /* its thread (0: none) */
    uint64_t unexpressible;          /* boosts not applied: a deadline lent through
                                        a HEIR_BOOST_USER condition variable (the
                                        kernel lends deadlines only along PI
                                        futexes; those are not counted) */
    pid_t    last_unexpressible_tid; /* the last one's thread (0: none) */
    int32_t  last_engine_errno;      /* errno of the last engine error (0: none) */
    uint64_t vanished;               /* threads found gone and dropped */
    uint64_t engine_errors;          /* engine errors while cleaning up after a
                                        thread that left or a destroyed object */
} heir_apply_stats_t;

/* Fills *out (EINVAL if out is NULL). */
int heir_apply_stats(heir_apply_stats_t *out);

/* PI mutexes. They are robust, as PTHREAD_MUTEX_ROBUST pthread mutexes:
 * when a thread exits holding one, the kernel marks it (the thread's robust
 * futex list, which heir shares with glibc's robust mutexes), and the next
 * lock — heir_mutex_lock, _trylock, _timedlock, or a heir_cond_wait
 * re-acquiring it — returns EOWNERDEAD with the mutex HELD by the caller.
 * Repair what it protects, then heir_mutex_consistent(); unlocking it
 * without that makes it unusable (ENOTRECOVERABLE for every later lock; it
 * can still be destroyed). A blocked waiter is handed the mutex the same
 * way. Robustness needs glibc on 64-bit Linux (the thread's robust list);
 * elsewhere a dead owner leaves ESRCH to later lockers.
 * heir_mutex_destroy: EBUSY while a thread holds it. */
int heir_mutex_init(heir_mutex_t *m);
int heir_mutex_lock(heir_mutex_t *m);
int heir_mutex_trylock(heir_mutex_t *m);
int heir_mutex_timedlock(heir_mutex_t *m, const struct timespec *abstime);
int heir_mutex_unlock(heir_mutex_t *m);
int heir_mutex_consistent(heir_mutex_t *m);
int heir_mutex_destroy(heir_mutex_t *m);

/* PI condition variables (abstime: CLOCK_MONOTONIC). */
int heir_cond_init(heir_cond_t *c);
/* How waiters boost helpers: HEIR_BOOST_USER (sched_setattr on each helper,
 * as heir_cond_init) or HEIR_BOOST_KERNEL (the waiter sleeps in
 * FUTEX_LOCK_PI on a word naming one helper: the kernel boosts it, priority
 * or deadline, on along its PI futex chain; a signal by another thread ends
 * the wait with SIGRTMAX - 2, whose no-op handler heir installs: EBUSY if
 * the program has its own). EINVAL for another value. */
#define HEIR_BOOST_USER 0
#define HEIR_BOOST_KERNEL 1
int heir_cond_init_boost(heir_cond_t *c, int boost);
int heir_cond_wait(heir_cond_t *c, heir_mutex_t *m);
int heir_cond_timedwait(heir_cond_t *c, heir_mutex_t *m, const struct timespec *abstime);
int heir_cond_signal(heir_cond_t *c);
int heir_cond_broadcast(heir_cond_t *c);
int heir_cond_helpers_add(heir_cond_t *c, pid_t helper);
int heir_cond_helpers_del(heir_cond_t *c, pid_t helper);
int heir_cond_destroy(heir_cond_t *c);

/* Immediate priority ceiling (prio: SCHED_FIFO 1..99). Destroy returns
 * EBUSY while a thread holds or waits for the mutex; the holder stays at
 * the ceiling until it unlocks. Robust as the PI mutexes: when a thread
 * exits (or calls heir_thread_leave) holding one, the mutex is handed to
 * its top waiter, or left to the next locker, which gets EOWNERDEAD with
 * the mutex HELD (at the ceiling). Repair what it protects, then
 * heir_ceiling_mutex_consistent(); unlocking it without that makes it
 * unusable (ENOTRECOVERABLE for every later lock and every waiter; it can
 * still be destroyed). heir_ceiling_mutex_consistent: EPERM if the caller
 * does not hold it, EINVAL if it is not inconsistent. */
int heir_ceiling_mutex_init(heir_ceiling_mutex_t *m, int prio);
int heir_ceiling_mutex_lock(heir_ceiling_mutex_t *m);
int heir_ceiling_mutex_unlock(heir_ceiling_mutex_t *m);
int heir_ceiling_mutex_consistent(heir_ceiling_mutex_t *m);
int heir_ceiling_mutex_destroy(heir_ceiling_mutex_t *m);

/* Priority queue: push at the caller's effective priority, pop the most
 * urgent item (FIFO among equals). heir_queue_destroy: EBUSY (nothing
 * changed) while a thread is inside a call on the queue — a push waiting
 * for room, a pop or timed pop waiting for an item. */
int heir_queue_init(heir_queue_t *q, unsigned int capacity);
int heir_queue_push(heir_queue_t *q, void *item);
int heir_queue_pop(heir_queue_t *q, void **item);
int heir_queue_timedpop(heir_queue_t *q, void **item, const struct timespec *abstime);
int heir_queue_add_producer(heir_queue_t *q, pid_t tid);
int heir_queue_add_consumer(heir_queue_t *q, pid_t tid);
int heir_queue_destroy(heir_queue_t *q);

/* Donating RPC endpoint (the NOVA paper's timeslice donation and helping; see
 * docs/RUNTIME.md "Donating RPC endpoints").
 *
 * A caller sleeps in FUTEX_LOCK_PI on its request's own PI futex word,
 * which holds the TID of the thread serving (or assigned) the request: the
 * kernel boosts exactly that thread to the caller's priority, or lends it
 * the caller's SCHED_DEADLINE parameters, and on along that thread's PI
 * chain (a heir or glibc PI mutex it blocks on, a call it makes on another
 * endpoint). A caller that finds every server busy queues on one and
 * blocks on the word of the request it serves now (helping: the kernel
 * boosts that server until it replies), then retries. No sched_setattr.
 *
 * Requests and replies are opaque void * values. `abstime` is an absolute
 * CLOCK_MONOTONIC deadline, or NULL for none. */

/** Initialises an endpoint without servers. */
int heir_rpc_init(heir_rpc_t *ep);

/** Destroys it: EBUSY (nothing changed) while a call is in flight or a
 * server waits in heir_rpc_receive. No thread may be inside a heir_rpc_*
 * call on it. */
int heir_rpc_destroy(heir_rpc_t *ep);

/** Makes the calling thread a server of `ep`. With `passive` non-zero it
 * first switches itself to SCHED_IDLE (its base from now on): it runs on
 * what callers lend it and otherwise only when its CPU would idle.
 * EBUSY if it already serves `ep`; EPERM if the policy change is refused. */
int heir_rpc_server_join(heir_rpc_t *ep, int passive);

/** The calling thread stops serving `ep`: EBUSY while it has a request,
 * EPERM if it is not a server. */
int heir_rpc_server_leave(heir_rpc_t *ep);

/** Calls: sends `req` and waits for the reply, stored in `*resp`.
 *   0          replied
 *   ETIMEDOUT  `abstime` passed: the call is aborted. An `abstime`
 *              already past queues nothing. A request is received only
 *              before `abstime` (a server never takes an expired one,
 *              even before its caller ran to withdraw it), so one not
 *              yet received is never run; one received in time and still
 *              being served stays with its server (its reply is dropped)
 *              and later callers help the server finish it. The abort takes effect when the caller
 *              runs again: a server boosted to the caller's own FIFO
 *              priority keeps the CPU until it blocks or yields.
 *   EDEADLK    the kernel refused the wait: it would close a cycle (a
 *              server calling, directly or not, an endpoint whose server
 *              waits for it; the livelock of the NOVA paper's Fig. 7). Aborted as above.
 *   ESRCH      the endpoint has no server, or the thread serving the
 *              request exited (requests not yet received go to another
 *              server instead)
 *   EINVAL     null or destroyed endpoint, null `resp`, bad `abstime` */
int heir_rpc_call(heir_rpc_t *ep, void *req, void **resp, const struct timespec *abstime);

/** A server waits for a request (ETIMEDOUT at `abstime` if none came) and
 * gets it in `*req`; it runs it boosted by its caller and answers with
 * heir_rpc_reply. EPERM if the caller is not a server of `ep`, EBUSY if it
 * has not replied to the request it received. */
int heir_rpc_receive(heir_rpc_t *ep, void **req, const struct timespec *abstime);

/** Answers the request the calling server received: its caller gets `resp`
 * (dropped if the caller gave up), the server its next queued request, and
 * the kernel wakes the caller and ends the boost. EPERM without a received
 * request. */
int heir_rpc_reply(heir_rpc_t *ep, void *resp);

/* Gang priority management (the GPM paper's L-GPM; docs/RUNTIME.md "Gangs").
 *
 * A gang has passive members, each with a 32-bit control word; a member is
 * ACTIVE for a run while its word shares a bit with the run's mask.
 * heir_gang_run boosts every active member to the gang priority — the
 * highest user priority among all members, passive and active, deadline
 * members aside — until the member calls heir_gang_notify; heir_gang_wait
 * returns when every active member has notified, or at its timeout.
 * Boosts go through heir's engine (sched_setattr), so a member holding a
 * heir PI mutex runs at max(gang priority, lock-inherited) while boosted
 * and at max(user, lock-inherited) after its notify (Invariant 1). A
 * SCHED_DEADLINE member is counted but never boosted, and never lifts the
 * others into the deadline class.
 *
 * A member's exit is its removal (its notify if counted). A thread that
 * called heir itself (heir_barrier_join included) is removed by its exit;
 * one inserted by tid that never called heir is watched through a pidfd
 * (PIDFD_THREAD, Linux >= 6.9; else tgkill(pid, tid, 0)) that
 * heir_gang_run, heir_gang_wait, heir_barrier_wait and heir_gang_get poll:
 * a wait for such a member re-checks every 10 ms, so it returns within
 * 10 ms of that member's exit; heir_gang_get of it then answers ENOENT.
 * heir_gang_fd does not see such an exit until one of these calls.
 *
 * Control word: bits 0..27 membership mask (the member changes them with
 * heir_gang_set_active / heir_gang_set_passive: one atomic operation, no
 * system call); bit 28 reserved; bit 29 HEIR_GANG_MEMBER; bit 30
 * HEIR_GANG_BOOSTED (the gang priority lifts it now); bit 31 HEIR_GANG_RUN
 * (counted by the run in progress, must notify). A thread that withdraws
 * (set_passive) and finds HEIR_GANG_RUN in the returned word must still
 * call heir_gang_notify.
 *
 * Return codes: 0, or EINVAL (null / destroyed handle, null or misaligned
 * control word, mask 0 or outside HEIR_GANG_MASK), ESRCH (not a thread of
 * this process), EEXIST (already in a gang: at most one; or the word is
 * another member's), ENOENT (in no gang), EBUSY (heir_gang_run before every
 * member of the previous run notified: nothing changed; a barrier already
 * active), ETIMEDOUT. */
typedef struct heir_gang { void *p; unsigned int magic; } heir_gang_t;
typedef struct heir_gang_attr {
    int boost; /* nonzero: boost active members (GPM); 0: count only (no-GPM baseline) */
} heir_gang_attr_t;

#define HEIR_GANG_MASK    0x0FFFFFFFu
#define HEIR_GANG_MEMBER  (1u << 29)
#define HEIR_GANG_BOOSTED (1u << 30)
#define HEIR_GANG_RUN     (1u << 31)

/** attr NULL: { .boost = 1 }. */
int heir_gang_create(heir_gang_t *g, const heir_gang_attr_t *attr);
/** The handle becomes invalid; the gang goes once its last member left. */
int heir_gang_close(heir_gang_t *g);
/** *cw must stay in place until the thread leaves the gang. */
int heir_gang_insert(heir_gang_t *g, pid_t tid, uint32_t *cw);
/** Counts as the thread's notify if the run in progress counted it. */
int heir_gang_remove(pid_t tid);
/** The id of tid's gang (ENOENT: none); heir_gang_id gives a handle's. */
int heir_gang_get(pid_t tid, uint32_t *id);
int heir_gang_id(heir_gang_t *g, uint32_t *id);
/** *active (may be NULL): members counted. */
int heir_gang_run(heir_gang_t *g, uint32_t mask, uint32_t *active);
/** abstime: CLOCK_MONOTONIC, NULL for none. */
int heir_gang_wait(heir_gang_t *g, const struct timespec *abstime);
/** Always 0; *counted (may be NULL) 1 if the caller was counted. */
int heir_gang_notify(int *counted);
/** An eventfd readable (POLLIN) exactly when heir_gang_wait would return
 * at once. Poll it; do not read or close it. */
int heir_gang_fd(heir_gang_t *g, int *fd);
/** Return the control word as it was before (not an errno). */
uint32_t heir_gang_set_active(uint32_t *cw, uint32_t bits);
uint32_t heir_gang_set_passive(uint32_t *cw, uint32_t bits);

/* A barrier on a gang (the GPM paper's §3). The initiator calls heir_barrier_start
 * (sets the barrier-active flag, runs the gang over the joined members),
 * heir_barrier_wait (completion: every counted member reached its barrier
 * point) and heir_barrier_release. A member calls heir_barrier_point at
 * each of its barrier points: with a barrier active it notifies (its boost
 * ends) and blocks until released (*released = 1); else it goes on. */
typedef struct heir_barrier { void *p; unsigned int magic; } heir_barrier_t;
/** boost: nonzero GPM, 0 the same barrier without boosts. */
int heir_barrier_init(heir_barrier_t *b, int boost);
/** EBUSY while a barrier is active. */
int heir_barrier_destroy(heir_barrier_t *b);
/** active nonzero: counted by every barrier; 0: passive, counts only for
 * the gang priority (e.g. a high-priority initiator). */
int heir_barrier_join(heir_barrier_t *b, int active);
int heir_barrier_leave(heir_barrier_t *b);
int heir_barrier_start(heir_barrier_t *b, uint32_t *active);
int heir_barrier_wait(heir_barrier_t *b, const struct timespec *abstime);
int heir_barrier_release(heir_barrier_t *b);
int heir_barrier_point(heir_barrier_t *b, const struct timespec *abstime, int *released);
int heir_barrier_fd(heir_barrier_t *b, int *fd);

#ifdef __cplusplus
}
#endif

#endif /* HEIR_H */
