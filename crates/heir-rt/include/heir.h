/*
 * heir.h — C API of libheir (heir-rt): priority inheritance beyond mutexes.
 *
 * PI condition variables with helpers (the PI-CV paper's): a thread
 * waiting on a heir_cond_t lends its priority to the condition's helper
 * threads until it is woken, times out, or the helper is removed —
 * transitively through heir PI mutexes and other heir condition variables.
 * Plus kernel PI-futex mutexes, immediate-priority-ceiling mutexes, the
 * PI-CV paper's bounded priority queue (Fig. 5), donating RPC endpoints
 * (NOVA's timeslice donation: the kernel lends a caller's priority or
 * deadline to the thread serving it), and GPM's gang priority management
 * with a barrier on it. See docs/RUNTIME.md. Link with -lheir
 * (pkg-config --cflags --libs heir).
 *
 * CONVENTIONS (as pthreads)
 *
 * Names. Every object type heir_X_t has heir_X_init(heir_X_t *, attributes
 * or arguments) and heir_X_destroy(heir_X_t *); every other call takes the
 * object first. Membership has one verb pair: heir_X_add_ROLE(obj, tid, ...)
 * and heir_X_remove_ROLE(obj, tid) (helper, producer, consumer, server,
 * member). A pid_t tid is a kernel tid (gettid()); tid 0 means the calling
 * thread. A function that acts only on the calling thread says so and takes
 * no tid (heir_rpc_add_server takes one for uniformity: it must name the
 * caller). "Boost" means one thing: a thread running above its own
 * (base) priority because another lends it.
 *
 * Returns. Every function returns 0 or a positive errno, except
 * heir_gettid (the caller's tid, as pthread_self: it cannot fail). The
 * errors shared by many calls:
 *   EINVAL  a NULL pointer where an object or output is needed; an object
 *           never initialised (zeroed) or destroyed; a bad argument
 *   ESRCH   the tid is not a live thread of this process
 *   ELOOP   the wait-for chain the call would make is longer than heir's
 *           limit (1024 links): refused, nothing changed
 *   EDEADLK the call would close a wait-for cycle: refused, nothing changed
 *   ETIMEDOUT the absolute CLOCK_MONOTONIC deadline `abstime` passed
 * A call that registers the calling thread (its first heir call; "R"
 * below) can also return the errno of the sched_getattr that reads its
 * base attributes. Each function's comment lists every error it returns.
 *
 * Storage and initialisers. An object lives in storage the caller owns
 * (a static, global, automatic or heap variable); the struct's fields are
 * private. It must not be moved or copied while initialised. Besides
 * heir_X_init, heir_mutex_t, heir_cond_t and heir_ceiling_mutex_t have
 * static initialisers (HEIR_MUTEX_INITIALIZER, HEIR_COND_INITIALIZER,
 * HEIR_CEILING_MUTEX_INITIALIZER(prio)): such an object is usable at once,
 * with no init call; heir makes its state on its first use (a
 * compare-and-swap: threads racing to use it first all get the same
 * state). heir_X_destroy works on either kind, used or not.
 *
 * Process-shared use is not supported: heir's state lives in one process's
 * heap and its engine knows one process's threads. An attribute with
 * pshared = HEIR_PROCESS_SHARED is refused with ENOTSUP; an object in
 * shared memory used from two processes is undefined behaviour.
 *
 * SAFETY LINE. Each function's comment ends with one:
 *   MT-Safe        callable from any thread concurrently with any call on
 *                  the same object other than its init and destroy
 *   MT-Safe race:obj  no other call on the same object may overlap this
 *                  one (init, destroy: as pthread_mutex_destroy)
 *   AS-Unsafe      not async-signal-safe: do not call from a signal handler
 *                  (heir takes its engine lock, allocates, makes system
 *                  calls). AS-Safe: an atomic operation only.
 *   cancel: no     not a pthread cancellation point: heir waits in raw
 *                  futex system calls, not glibc's cancellable wrappers, so
 *                  a deferred pthread_cancel stays pending until the thread
 *                  reaches a real cancellation point; asynchronous
 *                  cancellation inside a heir call is undefined.
 *   fork: parent   in the child of fork() the object must not be used (the
 *                  child's copy names the parent's threads; as POSIX, the
 *                  child of a multithreaded process may only call
 *                  async-signal-safe functions until it execs). fork: any:
 *                  usable in the child too.
 */
#ifndef HEIR_H
#define HEIR_H

#include <stdint.h>
#include <sys/types.h>
#include <time.h>

#ifdef __cplusplus
extern "C" {
#endif

#if defined(__GNUC__) || defined(__clang__)
#define HEIR_DEPRECATED(msg) __attribute__((deprecated(msg)))
#else
#define HEIR_DEPRECATED(msg)
#endif

/* The handles. Their fields are private: an atomic pointer to heir's state
 * (NULL until first use for a statically initialised object) and a magic
 * number telling a live object from a zeroed or destroyed one. */
typedef struct heir_mutex { void *p; unsigned int magic; } heir_mutex_t;
typedef struct heir_cond { void *p; unsigned int magic; } heir_cond_t;
typedef struct heir_ceiling_mutex { void *p; unsigned int magic; int prio; } heir_ceiling_mutex_t;
typedef struct heir_queue { void *p; unsigned int magic; } heir_queue_t;
typedef struct heir_rpc { void *p; unsigned int magic; } heir_rpc_t;
typedef struct heir_gang { void *p; unsigned int magic; } heir_gang_t;
typedef struct heir_barrier { void *p; unsigned int magic; } heir_barrier_t;

/** A PI mutex usable without heir_mutex_init (default attributes). */
#define HEIR_MUTEX_INITIALIZER { 0, 0x68656d78u }
/** A PI condition variable usable without heir_cond_init (default
 * attributes: HEIR_LEND_USER, no helpers). */
#define HEIR_COND_INITIALIZER { 0, 0x68656376u }
/** A ceiling mutex with ceiling `prio` (SCHED_FIFO 1..99) usable without
 * heir_ceiling_mutex_init; a `prio` out of range makes every call on it
 * return EINVAL. */
#define HEIR_CEILING_MUTEX_INITIALIZER(prio) { 0, 0x68656365u, (prio) }

/** Attribute values: `pshared`. */
#define HEIR_PROCESS_PRIVATE 0
#define HEIR_PROCESS_SHARED 1 /* refused: ENOTSUP */

/* ------------------------------------------------------------ threads */

/** Registers the calling thread: saves its scheduling attributes
 * (sched_getattr) as its base, what heir restores when a boost ends. Not
 * needed: a thread's first heir call registers it (and naming a thread by
 * tid registers it on its behalf); call it to fix the base before first
 * use. Returns 0 (also if registered already), or sched_getattr's errno.
 * MT-Safe; AS-Unsafe; cancel: no; fork: parent. */
int heir_thread_register(void);

/** The calling thread leaves heir's registry: what heir records it owning
 * is released, it is removed from every helper set and gang, and it gets
 * its base attributes back. Exiting does the same. Returns 0 (also if it
 * was not registered). MT-Safe; AS-Unsafe; cancel: no; fork: parent. */
int heir_thread_unregister(void);

/** Returns the calling thread's kernel tid (gettid()): the one function
 * returning a value instead of an errno (as pthread_self); it cannot fail.
 * MT-Safe; AS-Safe; cancel: no; fork: any (the child's own tid). */
pid_t heir_gettid(void);

/** Recomputes the engine's state from scratch and compares it, and every
 * registered thread's kernel attributes, with what heir keeps. Returns 0 if
 * they agree, EFAULT if not (a bug in heir: please report it).
 * MT-Safe; AS-Unsafe; cancel: no; fork: parent. */
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
                                        a HEIR_LEND_USER condition variable (the
                                        kernel lends deadlines only along PI
                                        futexes; those are not counted) */
    pid_t    last_unexpressible_tid; /* the last one's thread (0: none) */
    int32_t  last_engine_errno;      /* errno of the last engine error (0: none) */
    uint64_t vanished;               /* threads found gone and dropped */
    uint64_t engine_errors;          /* engine errors while cleaning up after a
                                        thread that left or a destroyed object */
} heir_apply_stats_t;

/** Fills *out with the counts above. Returns 0, or EINVAL (out NULL).
 * MT-Safe; AS-Unsafe; cancel: no; fork: parent. */
int heir_apply_stats(heir_apply_stats_t *out);

/* ------------------------------------------------------- PI mutexes
 *
 * The kernel's PI futex (as PTHREAD_PRIO_INHERIT), its contention also
 * known to heir, so a boost goes on past the owner into condition
 * variable helpers. Robust, as PTHREAD_MUTEX_ROBUST: when a thread exits
 * holding one, the kernel marks it (the thread's robust futex list, shared
 * with glibc's robust mutexes), and the next lock — heir_mutex_lock,
 * _trylock, _timedlock, or a heir_cond_wait re-acquiring it — returns
 * EOWNERDEAD with the mutex HELD by the caller. Repair what it protects,
 * then heir_mutex_consistent(); unlocking it without that makes it
 * unusable (ENOTRECOVERABLE for every later lock; it can still be
 * destroyed). A blocked waiter is handed the mutex the same way.
 * Robustness needs glibc on 64-bit Linux (the thread's robust list);
 * elsewhere a dead owner leaves ESRCH to later lockers. Not recursive:
 * locking it again from its owner returns EDEADLK. */

typedef struct heir_mutex_attr {
    int pshared; /* HEIR_PROCESS_PRIVATE (0) */
} heir_mutex_attr_t;

/** Initialises *m unlocked. attr NULL: the defaults (all zero). Returns 0,
 * EINVAL (m NULL, unknown pshared), ENOTSUP (HEIR_PROCESS_SHARED).
 * MT-Safe race:obj; AS-Unsafe; cancel: no; fork: parent. */
int heir_mutex_init(heir_mutex_t *m, const heir_mutex_attr_t *attr);

/** Locks *m, blocking while another thread holds it; the holder inherits
 * the caller's priority (kernel) and heir's engine follows it on. Returns
 * 0, EINVAL, EDEADLK (the caller holds it, or a cycle), ELOOP,
 * EOWNERDEAD (held now; see above), ENOTRECOVERABLE, ESRCH (its owner
 * died without robust-list support), R.
 * MT-Safe; AS-Unsafe; cancel: no; fork: parent. */
int heir_mutex_lock(heir_mutex_t *m);

/** Locks *m if no thread holds it. Returns 0, EBUSY (held, the caller
 * included), EINVAL, EOWNERDEAD, ENOTRECOVERABLE, R.
 * MT-Safe; AS-Unsafe; cancel: no; fork: parent. */
int heir_mutex_trylock(heir_mutex_t *m);

/** heir_mutex_lock, giving up at abstime (CLOCK_MONOTONIC). Returns as
 * heir_mutex_lock, and ETIMEDOUT; EINVAL also for a NULL or malformed
 * abstime. MT-Safe; AS-Unsafe; cancel: no; fork: parent. */
int heir_mutex_timedlock(heir_mutex_t *m, const struct timespec *abstime);

/** Unlocks *m, handing it to its most urgent waiter; the caller's boost
 * through it ends. Returns 0, EPERM (the caller does not hold it), EINVAL.
 * MT-Safe; AS-Unsafe; cancel: no; fork: parent. */
int heir_mutex_unlock(heir_mutex_t *m);

/** Marks *m consistent again after EOWNERDEAD, by its new owner. Returns
 * 0, EPERM (the caller does not hold it), EINVAL (not inconsistent, or a
 * bad object). MT-Safe; AS-Unsafe; cancel: no; fork: parent. */
int heir_mutex_consistent(heir_mutex_t *m);

/** Destroys *m (either kind, used or not); later calls on it return
 * EINVAL until it is initialised again. Returns 0, EBUSY (a thread holds
 * it: nothing changed), EINVAL.
 * MT-Safe race:obj; AS-Unsafe; cancel: no; fork: parent. */
int heir_mutex_destroy(heir_mutex_t *m);

/* ----------------------------------------- PI condition variables
 *
 * A waiter lends its priority to the condition's helpers — the threads
 * that will make its predicate true — until it is woken, times out or the
 * helper is removed. Waiters are woken most urgent first (FIFO among
 * equals). abstime: CLOCK_MONOTONIC. */

typedef struct heir_cond_attr {
    int pshared; /* HEIR_PROCESS_PRIVATE (0) */
    int lend;    /* how a waiter's priority reaches a helper: HEIR_LEND_USER (0) or HEIR_LEND_KERNEL */
} heir_cond_attr_t;

/** heir sets each helper's attributes (sched_setattr) while it lends. */
#define HEIR_LEND_USER 0
/** The waiter sleeps in FUTEX_LOCK_PI on a word naming one helper: the
 * kernel boosts it (priority or deadline) and on along its PI futex chain;
 * a signal by another thread ends the wait with SIGRTMAX - 2, whose no-op
 * handler heir installs. */
#define HEIR_LEND_KERNEL 1

/** Initialises *c without helpers. attr NULL: the defaults (all zero).
 * Returns 0, EINVAL (c NULL, unknown lend or pshared), ENOTSUP
 * (HEIR_PROCESS_SHARED), EBUSY (HEIR_LEND_KERNEL and the program has its
 * own handler on SIGRTMAX - 2), or sigaction's errno.
 * MT-Safe race:obj; AS-Unsafe; cancel: no; fork: parent. */
int heir_cond_init(heir_cond_t *c, const heir_cond_attr_t *attr);

/** Releases *m (held by the caller) and waits on *c, lending the caller's
 * priority to the helpers, until a signal or broadcast wakes it; holds *m
 * again on return (a spurious return is possible: re-check the predicate).
 * Returns 0, EPERM (the caller does not hold *m), EINVAL, EDEADLK, ELOOP,
 * EOWNERDEAD (re-acquired a mutex whose owner died: held), ENOTRECOVERABLE,
 * R. MT-Safe; AS-Unsafe; cancel: no; fork: parent. */
int heir_cond_wait(heir_cond_t *c, heir_mutex_t *m);

/** heir_cond_wait until abstime. Returns as heir_cond_wait, and ETIMEDOUT
 * (*m held again); EINVAL also for a NULL or malformed abstime.
 * MT-Safe; AS-Unsafe; cancel: no; fork: parent. */
int heir_cond_timedwait(heir_cond_t *c, heir_mutex_t *m, const struct timespec *abstime);

/** heir_cond_wait with a ceiling mutex held by the caller (released while
 * waiting: the caller leaves its ceiling; held again, at the ceiling, on
 * return). Returns as heir_cond_wait.
 * MT-Safe; AS-Unsafe; cancel: no; fork: parent. */
int heir_cond_wait_ceiling(heir_cond_t *c, heir_ceiling_mutex_t *m);

/** heir_cond_timedwait with a ceiling mutex. Returns as
 * heir_cond_timedwait. MT-Safe; AS-Unsafe; cancel: no; fork: parent. */
int heir_cond_timedwait_ceiling(heir_cond_t *c, heir_ceiling_mutex_t *m,
                                const struct timespec *abstime);

/** Wakes the most urgent waiter of *c (none: nothing). Returns 0, EINVAL,
 * R. MT-Safe; AS-Unsafe; cancel: no; fork: parent. */
int heir_cond_signal(heir_cond_t *c);

/** Wakes every waiter of *c, most urgent first. Returns 0, EINVAL, R.
 * MT-Safe; AS-Unsafe; cancel: no; fork: parent. */
int heir_cond_broadcast(heir_cond_t *c);

/** Makes thread tid (0: the caller) a helper of *c: the waiters lend it
 * their priority from now on. Returns 0, EEXIST (a helper already), ESRCH,
 * EDEADLK (it waits, through its chain, for a waiter of *c), ELOOP,
 * EINVAL, R. MT-Safe; AS-Unsafe; cancel: no; fork: parent. */
int heir_cond_add_helper(heir_cond_t *c, pid_t tid);

/** Thread tid (0: the caller) stops being a helper of *c: what it
 * inherited through *c is revoked. Returns 0, ENOENT (not a helper),
 * ESRCH, EINVAL, R. MT-Safe; AS-Unsafe; cancel: no; fork: parent. */
int heir_cond_remove_helper(heir_cond_t *c, pid_t tid);

/** Destroys *c (either kind, used or not). Returns 0, EBUSY (threads wait
 * on it: nothing changed), EINVAL.
 * MT-Safe race:obj; AS-Unsafe; cancel: no; fork: parent. */
int heir_cond_destroy(heir_cond_t *c);

/* ------------------------------------- immediate priority ceiling
 *
 * The holder runs at the ceiling (SCHED_FIFO prio 1..99) from lock to
 * unlock; nested ones stack. Robust as the PI mutexes: when a thread exits
 * (or calls heir_thread_unregister) holding one, the mutex is handed to
 * its top waiter, or left to the next locker, which gets EOWNERDEAD with
 * the mutex HELD (at the ceiling); unlocking it without
 * heir_ceiling_mutex_consistent makes it unusable (ENOTRECOVERABLE for
 * every later lock and every waiter; it can still be destroyed). */

/** Initialises *m unlocked with ceiling prio (1..99). Returns 0, EINVAL
 * (m NULL, prio out of range).
 * MT-Safe race:obj; AS-Unsafe; cancel: no; fork: parent. */
int heir_ceiling_mutex_init(heir_ceiling_mutex_t *m, int prio);

/** Raises the caller to the ceiling and locks *m, blocking while another
 * thread holds it. Returns 0, EINVAL (also: a static initialiser's prio
 * out of range), EDEADLK (the caller holds it, or a cycle), ELOOP,
 * EOWNERDEAD (held now), ENOTRECOVERABLE, R.
 * MT-Safe; AS-Unsafe; cancel: no; fork: parent. */
int heir_ceiling_mutex_lock(heir_ceiling_mutex_t *m);

/** Locks *m if no thread holds it. Returns 0, EBUSY (held, the caller
 * included), EINVAL, EOWNERDEAD, ENOTRECOVERABLE, R.
 * MT-Safe; AS-Unsafe; cancel: no; fork: parent. */
int heir_ceiling_mutex_trylock(heir_ceiling_mutex_t *m);

/** heir_ceiling_mutex_lock, giving up at abstime (CLOCK_MONOTONIC).
 * Returns as heir_ceiling_mutex_lock, and ETIMEDOUT; EINVAL also for a
 * NULL or malformed abstime. MT-Safe; AS-Unsafe; cancel: no; fork: parent. */
int heir_ceiling_mutex_timedlock(heir_ceiling_mutex_t *m, const struct timespec *abstime);

/** Unlocks *m, hands it to its most urgent waiter, and puts the caller
 * back at its next outer ceiling or its base. Returns 0, EPERM (the caller
 * does not hold it), EINVAL. MT-Safe; AS-Unsafe; cancel: no; fork: parent. */
int heir_ceiling_mutex_unlock(heir_ceiling_mutex_t *m);

/** Marks *m consistent again after EOWNERDEAD, by its new owner. Returns
 * 0, EPERM (the caller does not hold it), EINVAL (not inconsistent, or a
 * bad object). MT-Safe; AS-Unsafe; cancel: no; fork: parent. */
int heir_ceiling_mutex_consistent(heir_ceiling_mutex_t *m);

/** Destroys *m (either kind, used or not). Returns 0, EBUSY (a thread
 * holds or waits for it: nothing changed; the holder stays at the ceiling
 * until it unlocks), EINVAL.
 * MT-Safe race:obj; AS-Unsafe; cancel: no; fork: parent. */
int heir_ceiling_mutex_destroy(heir_ceiling_mutex_t *m);

/* --------------------------------------------------- priority queue
 *
 * The PI-CV paper's bounded queue (Fig. 5) of void * items: a push is
 * queued at the pusher's effective priority, a pop takes the most urgent
 * item (FIFO among equals). A consumer waiting for an item lends its
 * priority to the producers; a producer waiting for room, to the
 * consumers. */

/** Initialises *q empty, for at most capacity items. Returns 0, EINVAL (q
 * NULL, capacity 0). MT-Safe race:obj; AS-Unsafe; cancel: no; fork: parent. */
int heir_queue_init(heir_queue_t *q, unsigned int capacity);

/** Queues item, blocking while *q is full. Returns 0, EINVAL, EDEADLK,
 * ELOOP, R. MT-Safe; AS-Unsafe; cancel: no; fork: parent. */
int heir_queue_push(heir_queue_t *q, void *item);

/** heir_queue_push, giving up at abstime. Returns as heir_queue_push, and
 * ETIMEDOUT (nothing queued); EINVAL also for a NULL or malformed abstime.
 * MT-Safe; AS-Unsafe; cancel: no; fork: parent. */
int heir_queue_timedpush(heir_queue_t *q, void *item, const struct timespec *abstime);

/** Takes the most urgent item into *item, blocking while *q is empty.
 * Returns 0, EINVAL (also: item NULL), EDEADLK, ELOOP, R.
 * MT-Safe; AS-Unsafe; cancel: no; fork: parent. */
int heir_queue_pop(heir_queue_t *q, void **item);

/** heir_queue_pop, giving up at abstime. Returns as heir_queue_pop, and
 * ETIMEDOUT; EINVAL also for a NULL or malformed abstime.
 * MT-Safe; AS-Unsafe; cancel: no; fork: parent. */
int heir_queue_timedpop(heir_queue_t *q, void **item, const struct timespec *abstime);

/** Makes thread tid (0: the caller) a producer of *q: consumers waiting
 * for an item lend it their priority. Returns 0, EEXIST (one already),
 * ESRCH, EDEADLK, ELOOP, EINVAL, R.
 * MT-Safe; AS-Unsafe; cancel: no; fork: parent. */
int heir_queue_add_producer(heir_queue_t *q, pid_t tid);

/** Thread tid (0: the caller) stops being a producer of *q. Returns 0,
 * ENOENT (not one), ESRCH, EINVAL, R.
 * MT-Safe; AS-Unsafe; cancel: no; fork: parent. */
int heir_queue_remove_producer(heir_queue_t *q, pid_t tid);

/** Makes thread tid (0: the caller) a consumer of *q: producers waiting
 * for room lend it their priority. Returns as heir_queue_add_producer.
 * MT-Safe; AS-Unsafe; cancel: no; fork: parent. */
int heir_queue_add_consumer(heir_queue_t *q, pid_t tid);

/** Thread tid (0: the caller) stops being a consumer of *q. Returns as
 * heir_queue_remove_producer. MT-Safe; AS-Unsafe; cancel: no; fork: parent. */
int heir_queue_remove_consumer(heir_queue_t *q, pid_t tid);

/** Destroys *q (the items are the caller's). Returns 0, EBUSY (a thread is
 * inside a call on it — a push waiting for room, a pop waiting for an
 * item: nothing changed), EINVAL.
 * MT-Safe race:obj; AS-Unsafe; cancel: no; fork: parent. */
int heir_queue_destroy(heir_queue_t *q);

/* --------------------------------------------- donating RPC endpoints
 *
 * NOVA's timeslice donation and helping (docs/RUNTIME.md "Donating RPC
 * endpoints"). A caller sleeps in FUTEX_LOCK_PI on its request's own PI
 * futex word, which holds the tid of the thread serving (or assigned) the
 * request: the kernel boosts exactly that thread to the caller's priority,
 * or lends it the caller's SCHED_DEADLINE parameters, and on along that
 * thread's PI chain (a heir or glibc PI mutex it blocks on, a call it makes
 * on another endpoint). A caller that finds every server busy queues on
 * one and blocks on the word of the request it serves now (helping: the
 * kernel boosts that server until it replies), then retries. No
 * sched_setattr. Requests and replies are opaque void * values. abstime:
 * CLOCK_MONOTONIC, or NULL for none. */

/** Initialises *ep without servers. Returns 0, EINVAL (ep NULL).
 * MT-Safe race:obj; AS-Unsafe; cancel: no; fork: parent. */
int heir_rpc_init(heir_rpc_t *ep);

/** Destroys *ep. Returns 0, EBUSY (a call is in flight or a server waits
 * in heir_rpc_receive: nothing changed), EINVAL.
 * MT-Safe race:obj; AS-Unsafe; cancel: no; fork: parent. */
int heir_rpc_destroy(heir_rpc_t *ep);

/** Makes the calling thread a server of *ep (a server runs its own
 * receive loop: tid must be 0 or the caller's tid). With passive nonzero
 * it first switches itself to SCHED_IDLE (its base from now on): it runs
 * on what callers lend it and otherwise only when its CPU would idle.
 * Returns 0, EBUSY (it serves *ep already), EINVAL (also: tid names
 * another thread), EPERM (the policy change is refused), R.
 * MT-Safe; AS-Unsafe; cancel: no; fork: parent. */
int heir_rpc_add_server(heir_rpc_t *ep, pid_t tid, int passive);

/** The calling thread (tid 0 or its own) stops serving *ep (a passive
 * server stays SCHED_IDLE). Returns 0, EBUSY (it has a request),
 * EPERM (not a server), EINVAL (also: tid names another thread).
 * MT-Safe; AS-Unsafe; cancel: no; fork: parent. */
int heir_rpc_remove_server(heir_rpc_t *ep, pid_t tid);

/** Sends req and waits for the reply, stored in *resp.
 *   0          replied
 *   ETIMEDOUT  abstime passed: the call is aborted. An abstime already
 *              past queues nothing. A request is received only before
 *              abstime (a server never takes an expired one), so one not
 *              yet received is never run; one received in time and still
 *              being served stays with its server (its reply is dropped)
 *              and later callers help the server finish it. The abort
 *              takes effect when the caller runs again: a server boosted
 *              to the caller's own FIFO priority keeps the CPU until it
 *              blocks or yields.
 *   EDEADLK    the kernel refused the wait: it would close a cycle (a
 *              server calling, directly or not, an endpoint whose server
 *              waits for it; NOVA Fig. 7's livelock). Aborted as above.
 *   ESRCH      the endpoint has no server, or the thread serving the
 *              request exited (requests not yet received go to another
 *              server instead)
 *   EINVAL     NULL or destroyed endpoint, NULL resp, malformed abstime
 * MT-Safe; AS-Unsafe; cancel: no; fork: parent. */
int heir_rpc_call(heir_rpc_t *ep, void *req, void **resp, const struct timespec *abstime);

/** A server waits for a request (until abstime; NULL: no limit) and gets
 * it in *req; it runs it boosted by its caller and answers with
 * heir_rpc_reply. Returns 0, ETIMEDOUT, EPERM (the caller is not a server
 * of *ep), EBUSY (it has not replied to the request it received), EINVAL
 * (also: req NULL, malformed abstime).
 * MT-Safe; AS-Unsafe; cancel: no; fork: parent. */
int heir_rpc_receive(heir_rpc_t *ep, void **req, const struct timespec *abstime);

/** Answers the request the calling server received: its caller gets resp
 * (dropped if the caller gave up), the server its next queued request, and
 * the kernel wakes the caller and ends the boost. Returns 0, EPERM (no
 * received request), EINVAL.
 * MT-Safe; AS-Unsafe; cancel: no; fork: parent. */
int heir_rpc_reply(heir_rpc_t *ep, void *resp);

/* ---------------------------------------------------------- gangs
 *
 * GPM's gang priority management, L-GPM (docs/RUNTIME.md "Gangs"). A gang
 * has passive members, each with a 32-bit control word; a member is ACTIVE
 * for a run while its word shares a bit with the run's mask. heir_gang_run
 * boosts every active member to the gang priority — the highest user
 * priority among all members, passive and active, deadline members aside —
 * until the member calls heir_gang_notify; heir_gang_wait returns when
 * every active member has notified, or at its timeout. Boosts go through
 * heir's engine (sched_setattr), so a member holding a heir PI mutex runs
 * at max(gang priority, lock-inherited) while boosted and at max(user,
 * lock-inherited) after its notify. A SCHED_DEADLINE member is counted but
 * never boosted, and never lifts the others into the deadline class.
 *
 * A member's exit is its removal (its notify if counted). A thread that
 * called heir itself is removed by its exit; one added by tid that never
 * called heir is watched through a pidfd (PIDFD_THREAD, Linux >= 6.9; else
 * tgkill(pid, tid, 0)) that heir_gang_run, heir_gang_wait,
 * heir_barrier_wait and heir_gang_has_member poll: a wait for such a
 * member re-checks every 10 ms, so it returns within 10 ms of that
 * member's exit. heir_gang_fd does not see such an exit until one of these
 * calls.
 *
 * Control word: bits 0..27 membership mask (changed with
 * heir_gang_activate / heir_gang_deactivate: one atomic operation, no
 * system call); bit 28 reserved; bit 29 HEIR_GANG_MEMBER; bit 30
 * HEIR_GANG_BOOSTED (the gang priority lifts it now); bit 31 HEIR_GANG_RUN
 * (counted by the run in progress, must notify). A thread that deactivates
 * and finds HEIR_GANG_RUN in the word before must still call
 * heir_gang_notify. */

typedef struct heir_gang_attr {
    union {
        int gpm; /* nonzero: heir_gang_run boosts the active members (GPM);
                    0: counts only (the no-GPM baseline) */
        int boost HEIR_DEPRECATED("use gpm"); /* the same field's old name */
    };
} heir_gang_attr_t;

#define HEIR_GANG_MASK    0x0FFFFFFFu
#define HEIR_GANG_MEMBER  (1u << 29)
#define HEIR_GANG_BOOSTED (1u << 30)
#define HEIR_GANG_RUN     (1u << 31)

/** Initialises *g without members. attr NULL: { .gpm = 1 }. Returns 0,
 * EINVAL (g NULL), or eventfd's errno (EMFILE, ENFILE, ENOMEM).
 * MT-Safe race:obj; AS-Unsafe; cancel: no; fork: parent. */
int heir_gang_init(heir_gang_t *g, const heir_gang_attr_t *attr);

/** Destroys the handle *g: the gang itself goes once its last member has
 * left (members stay boosted until they notify). Returns 0, EINVAL.
 * MT-Safe race:obj; AS-Unsafe; cancel: no; fork: parent. */
int heir_gang_destroy(heir_gang_t *g);

/** Makes thread tid (0: the caller) a passive member of *g with control
 * word *cw, which must stay in place, changed only atomically, until the
 * thread leaves the gang. Returns 0, EEXIST (the thread is in a gang
 * already — at most one — or the word is another member's), ESRCH, EINVAL
 * (also: cw NULL or misaligned), EDEADLK, ELOOP, R.
 * MT-Safe; AS-Unsafe; cancel: no; fork: parent. */
int heir_gang_add_member(heir_gang_t *g, pid_t tid, uint32_t *cw);

/** Thread tid (0: the caller) leaves *g; if the run in progress counted it
 * and it had not notified, this is its notify. Returns 0, ENOENT (not a
 * member of *g), EINVAL. MT-Safe; AS-Unsafe; cancel: no; fork: parent. */
int heir_gang_remove_member(heir_gang_t *g, pid_t tid);

/** *member = 1 if thread tid (0: the caller) is a member of *g, else 0 (a
 * member found exited has left). Returns 0, EINVAL (also: member NULL).
 * MT-Safe; AS-Unsafe; cancel: no; fork: parent. */
int heir_gang_has_member(heir_gang_t *g, pid_t tid, int *member);

/** The gang's id (never 0, unique while it lives) into *id. Returns 0,
 * EINVAL (also: id NULL). MT-Safe; AS-Unsafe; cancel: no; fork: parent. */
int heir_gang_id(heir_gang_t *g, uint32_t *id);

/** Starts a run: counts the members whose control word shares a bit with
 * mask and boosts them to the gang priority until each notifies; the
 * number counted into *active (may be NULL). Returns 0, EBUSY (members of
 * the previous run have not all notified: nothing changed), EINVAL (also:
 * mask 0 or outside HEIR_GANG_MASK), EDEADLK, ELOOP, R.
 * MT-Safe; AS-Unsafe; cancel: no; fork: parent. */
int heir_gang_run(heir_gang_t *g, uint32_t mask, uint32_t *active);

/** Waits until every member counted by the run in progress has notified
 * (at once if none runs), or abstime (CLOCK_MONOTONIC; NULL: no limit).
 * Returns 0, ETIMEDOUT, EINVAL (also: malformed abstime).
 * MT-Safe; AS-Unsafe; cancel: no; fork: parent. */
int heir_gang_wait(heir_gang_t *g, const struct timespec *abstime);

/** The calling thread, a member of *g, notifies: its gang boost ends (back
 * to max(user, lock-inherited)) and the run stops counting it, waking the
 * waiters if it was the last. *counted (may be NULL): 1 if the run
 * counted it and it had not notified, else 0 (harmless). Returns 0,
 * ENOENT (the caller is not a member of *g), EINVAL.
 * MT-Safe; AS-Unsafe; cancel: no; fork: parent. */
int heir_gang_notify(heir_gang_t *g, int *counted);

/** An eventfd readable (POLLIN) exactly when heir_gang_wait would return
 * at once, into *fd. Poll it; do not read or close it. Returns 0, EINVAL
 * (also: fd NULL). MT-Safe; AS-Unsafe; cancel: no; fork: parent. */
int heir_gang_fd(heir_gang_t *g, int *fd);

/** Sets membership bits (bits & HEIR_GANG_MASK) in control word *cw with
 * one atomic operation, no system call; the word before into *before (may
 * be NULL). Returns 0, EINVAL (cw NULL or misaligned).
 * MT-Safe; AS-Safe; cancel: no; fork: parent. */
int heir_gang_activate(uint32_t *cw, uint32_t bits, uint32_t *before);

/** Clears membership bits of *cw as heir_gang_activate sets them. If
 * *before has HEIR_GANG_RUN, a run counted the thread: it must still call
 * heir_gang_notify. Returns 0, EINVAL (cw NULL or misaligned).
 * MT-Safe; AS-Safe; cancel: no; fork: parent. */
int heir_gang_deactivate(uint32_t *cw, uint32_t bits, uint32_t *before);

/* ------------------------------------------------- barriers on a gang
 *
 * GPM §3's barrier. The initiator calls heir_barrier_start (sets the
 * barrier-active flag, runs the gang over the active members),
 * heir_barrier_wait (completion: every counted member reached its barrier
 * point) and heir_barrier_release. A member calls heir_barrier_point at
 * each of its barrier points: with a barrier active it notifies (its boost
 * ends) and blocks until released; else it goes on. */

/** Initialises *b on a new gang of its own: gpm nonzero boosts (GPM), 0
 * the same barrier without boosts. Returns 0, EINVAL (b NULL), or
 * eventfd's errno. MT-Safe race:obj; AS-Unsafe; cancel: no; fork: parent. */
int heir_barrier_init(heir_barrier_t *b, int gpm);

/** Destroys *b; its members leave its gang when they exit or are removed.
 * Returns 0, EBUSY (a barrier is active: started, not released), EINVAL.
 * MT-Safe race:obj; AS-Unsafe; cancel: no; fork: parent. */
int heir_barrier_destroy(heir_barrier_t *b);

/** Thread tid (0: the caller) joins *b: active nonzero, counted by every
 * barrier; 0, a passive member that only counts for the gang priority
 * (e.g. a high-priority initiator). Returns 0, EEXIST (in a gang already),
 * ESRCH, EINVAL, EDEADLK, ELOOP, R.
 * MT-Safe; AS-Unsafe; cancel: no; fork: parent. */
int heir_barrier_add_member(heir_barrier_t *b, pid_t tid, int active);

/** Thread tid (0: the caller) leaves *b (its notify if a barrier counts
 * it). Returns 0, ENOENT (not a member of *b), EINVAL.
 * MT-Safe; AS-Unsafe; cancel: no; fork: parent. */
int heir_barrier_remove_member(heir_barrier_t *b, pid_t tid);

/** The initiator starts a barrier: sets the active flag and runs the gang;
 * members counted into *active (may be NULL). Returns 0, EBUSY (a barrier
 * is active), EINVAL, EDEADLK, ELOOP, R.
 * MT-Safe; AS-Unsafe; cancel: no; fork: parent. */
int heir_barrier_start(heir_barrier_t *b, uint32_t *active);

/** The initiator waits until every counted member reached its barrier
 * point, or abstime (NULL: no limit). Returns 0, ETIMEDOUT, EINVAL (also:
 * malformed abstime). MT-Safe; AS-Unsafe; cancel: no; fork: parent. */
int heir_barrier_wait(heir_barrier_t *b, const struct timespec *abstime);

/** The initiator releases the members blocked at their barrier points and
 * clears the active flag. Returns 0, EINVAL.
 * MT-Safe; AS-Unsafe; cancel: no; fork: parent. */
int heir_barrier_release(heir_barrier_t *b);

/** A member's barrier point: with a barrier active, notify and block until
 * released (*released = 1) or abstime; else go on (*released = 0).
 * released and abstime may be NULL. Returns 0, ETIMEDOUT, EINVAL (also:
 * malformed abstime). MT-Safe; AS-Unsafe; cancel: no; fork: parent. */
int heir_barrier_point(heir_barrier_t *b, const struct timespec *abstime, int *released);

/** The barrier's gang's eventfd into *fd (as heir_gang_fd: readable when
 * the barrier is complete or none runs). Returns 0, EINVAL (also: fd
 * NULL). MT-Safe; AS-Unsafe; cancel: no; fork: parent. */
int heir_barrier_fd(heir_barrier_t *b, int *fd);

/* ------------------------------------- deprecated names (one release)
 *
 * The previous release's names, kept for one release; each is its
 * replacement under the old name. heir_mutex_init, heir_cond_init and
 * heir_gang_notify changed their arguments (an attribute pointer, NULL for
 * the defaults; the gang): old calls no longer compile. */

#define HEIR_BOOST_USER HEIR_LEND_USER
#define HEIR_BOOST_KERNEL HEIR_LEND_KERNEL

/** Deprecated: heir_thread_register; returns as it.
 * MT-Safe; AS-Unsafe; cancel: no; fork: parent. */
HEIR_DEPRECATED("use heir_thread_register") int heir_thread_join(void);
/** Deprecated: heir_thread_unregister; returns as it.
 * MT-Safe; AS-Unsafe; cancel: no; fork: parent. */
HEIR_DEPRECATED("use heir_thread_unregister") int heir_thread_leave(void);
/** Deprecated: heir_cond_init with { .lend = boost }; returns as it.
 * MT-Safe race:obj; AS-Unsafe; cancel: no; fork: parent. */
HEIR_DEPRECATED("use heir_cond_init with heir_cond_attr_t.lend")
int heir_cond_init_boost(heir_cond_t *c, int boost);
/** Deprecated: heir_cond_add_helper; returns as it.
 * MT-Safe; AS-Unsafe; cancel: no; fork: parent. */
HEIR_DEPRECATED("use heir_cond_add_helper") int heir_cond_helpers_add(heir_cond_t *c, pid_t helper);
/** Deprecated: heir_cond_remove_helper; returns as it.
 * MT-Safe; AS-Unsafe; cancel: no; fork: parent. */
HEIR_DEPRECATED("use heir_cond_remove_helper") int heir_cond_helpers_del(heir_cond_t *c, pid_t helper);
/** Deprecated: heir_rpc_add_server(ep, 0, passive); returns as it.
 * MT-Safe; AS-Unsafe; cancel: no; fork: parent. */
HEIR_DEPRECATED("use heir_rpc_add_server") int heir_rpc_server_join(heir_rpc_t *ep, int passive);
/** Deprecated: heir_rpc_remove_server(ep, 0); returns as it.
 * MT-Safe; AS-Unsafe; cancel: no; fork: parent. */
HEIR_DEPRECATED("use heir_rpc_remove_server") int heir_rpc_server_leave(heir_rpc_t *ep);
/** Deprecated: heir_gang_init; returns as it.
 * MT-Safe race:obj; AS-Unsafe; cancel: no; fork: parent. */
HEIR_DEPRECATED("use heir_gang_init") int heir_gang_create(heir_gang_t *g, const heir_gang_attr_t *attr);
/** Deprecated: heir_gang_destroy; returns as it.
 * MT-Safe race:obj; AS-Unsafe; cancel: no; fork: parent. */
HEIR_DEPRECATED("use heir_gang_destroy") int heir_gang_close(heir_gang_t *g);
/** Deprecated: heir_gang_add_member; returns as it.
 * MT-Safe; AS-Unsafe; cancel: no; fork: parent. */
HEIR_DEPRECATED("use heir_gang_add_member") int heir_gang_insert(heir_gang_t *g, pid_t tid, uint32_t *cw);
/** Deprecated (no handle): thread tid leaves whichever gang it is in.
 * Returns 0, ENOENT (in none). MT-Safe; AS-Unsafe; cancel: no; fork: parent. */
HEIR_DEPRECATED("use heir_gang_remove_member") int heir_gang_remove(pid_t tid);
/** Deprecated (no handle): the id of thread tid's gang into *id. Returns 0,
 * ENOENT (in none), EINVAL (id NULL).
 * MT-Safe; AS-Unsafe; cancel: no; fork: parent. */
HEIR_DEPRECATED("use heir_gang_has_member") int heir_gang_get(pid_t tid, uint32_t *id);
/** Deprecated: heir_gang_activate. Returns the word before (0 for a NULL
 * cw), not an errno. MT-Safe; AS-Safe; cancel: no; fork: parent. */
HEIR_DEPRECATED("use heir_gang_activate") uint32_t heir_gang_set_active(uint32_t *cw, uint32_t bits);
/** Deprecated: heir_gang_deactivate. Returns the word before (0 for a
 * NULL cw), not an errno. MT-Safe; AS-Safe; cancel: no; fork: parent. */
HEIR_DEPRECATED("use heir_gang_deactivate") uint32_t heir_gang_set_passive(uint32_t *cw, uint32_t bits);
/** Deprecated: heir_barrier_add_member(b, 0, active); returns as it.
 * MT-Safe; AS-Unsafe; cancel: no; fork: parent. */
HEIR_DEPRECATED("use heir_barrier_add_member") int heir_barrier_join(heir_barrier_t *b, int active);
/** Deprecated: heir_barrier_remove_member(b, 0); returns as it.
 * MT-Safe; AS-Unsafe; cancel: no; fork: parent. */
HEIR_DEPRECATED("use heir_barrier_remove_member") int heir_barrier_leave(heir_barrier_t *b);

#ifdef __cplusplus
}
#endif

#endif /* HEIR_H */
