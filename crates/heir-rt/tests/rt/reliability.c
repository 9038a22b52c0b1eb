/*
 * Issue 21's reliability cases from C (run by tests/rt/capi.rs, one mode
 * per run: argv[1] the CPU to pin to, argv[2] the mode):
 *
 *   queue    heir_queue_destroy while a thread waits in heir_queue_timedpop
 *            or in heir_queue_push (full queue): EBUSY, and the waiter
 *            finishes normally once served; destroy then 0.
 *   rpc      heir_rpc_call with an absolute timeout already past:
 *            ETIMEDOUT, and the waiting server never receives it.
 *   ceiling  a ceiling mutex's owner exits holding it: the next locker
 *            (blocked or not) gets EOWNERDEAD holding it; unlocked without
 *            heir_ceiling_mutex_consistent it is ENOTRECOVERABLE.
 *   gang     a member added by tid (it never calls heir) and a member
 *            that added itself to a barrier exit while counted:
 *            heir_gang_wait and heir_barrier_wait return 0,
 *            heir_gang_has_member says they are members no more.
 *
 * The main thread runs at SCHED_FIFO 1, every other thread above it on the
 * same CPU. Every wait is bounded; each line printed is checked by the
 * test.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <heir.h>
#include <pthread.h>
#include <sched.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

static int cpu;

static const char *err(int e) {
    switch (e) {
    case 0: return "0";
    case EBUSY: return "EBUSY";
    case EINVAL: return "EINVAL";
    case ENOENT: return "ENOENT";
    case EPERM: return "EPERM";
    case ETIMEDOUT: return "ETIMEDOUT";
    case EOWNERDEAD: return "EOWNERDEAD";
    case ENOTRECOVERABLE: return "ENOTRECOVERABLE";
    default: return strerror(e);
    }
}

static struct timespec after_ms(long ms) {
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    t.tv_sec += ms / 1000;
    t.tv_nsec += (ms % 1000) * 1000000L;
    if (t.tv_nsec >= 1000000000L) {
        t.tv_sec++;
        t.tv_nsec -= 1000000000L;
    } else if (t.tv_nsec < 0) {
        t.tv_sec--;
        t.tv_nsec += 1000000000L;
    }
    return t;
}

static void sleep_ms(long ms) {
    struct timespec t = {ms / 1000, (ms % 1000) * 1000000L};
    nanosleep(&t, NULL);
}

/* The calling thread at SCHED_FIFO `prio` (0 on success). */
static int fifo(int prio) {
    struct sched_param p = {.sched_priority = prio};
    return pthread_setschedparam(pthread_self(), SCHED_FIFO, &p);
}

static void pin(void) {
    cpu_set_t s;
    CPU_ZERO(&s);
    CPU_SET(cpu, &s);
    sched_setaffinity(0, sizeof s, &s);
}

/* Starts `fn` on a thread pinned to this CPU at SCHED_FIFO `prio`, above
 * the main thread (FIFO 1): it runs at once and until it blocks, so when
 * this returns it waits where `fn` makes it wait (no /proc polling: a
 * FIFO thread reaping a process whose /proc task entries were looked up
 * can spin in the kernel against a lower-priority thread on its CPU). */
static pthread_t start(void *(*fn)(void *), void *arg, int prio) {
    pthread_attr_t a;
    struct sched_param p = {.sched_priority = prio};
    cpu_set_t s;
    pthread_t t;
    CPU_ZERO(&s);
    CPU_SET(cpu, &s);
    pthread_attr_init(&a);
    pthread_attr_setinheritsched(&a, PTHREAD_EXPLICIT_SCHED);
    pthread_attr_setschedpolicy(&a, SCHED_FIFO);
    pthread_attr_setschedparam(&a, &p);
    pthread_attr_setaffinity_np(&a, sizeof s, &s);
    if (pthread_create(&t, &a, fn, arg)) {
        printf("pthread_create failed\n");
        exit(1);
    }
    pthread_attr_destroy(&a);
    return t;
}

/* ---- queue ---------------------------------------------------------- */

static heir_queue_t q;

static void *timed_popper(void *arg) {
    (void)arg;
    void *item = NULL;
    struct timespec dl = after_ms(10000);
    int r = heir_queue_timedpop(&q, &item, &dl);
    return (void *)(intptr_t)(r == 0 && item == (void *)7 ? 1 : 100 + r);
}

static void *pusher(void *arg) {
    (void)arg;
    int r = heir_queue_push(&q, (void *)9);
    return (void *)(intptr_t)(r == 0 ? 1 : 100 + r);
}

static int run_queue(void) {
    pthread_t t;
    void *ret;
    if (heir_queue_init(&q, 1))
        return 1;
    t = start(timed_popper, NULL, 5);
    printf("destroy while a timed pop waits: %s\n", err(heir_queue_destroy(&q)));
    printf("push: %s\n", err(heir_queue_push(&q, (void *)7)));
    pthread_join(t, &ret);
    printf("popper got the item: %d\n", (int)(intptr_t)ret);

    /* Full queue: a second push waits for room. */
    if (heir_queue_push(&q, (void *)8))
        return 1;
    t = start(pusher, NULL, 5);
    printf("destroy while a push waits: %s\n", err(heir_queue_destroy(&q)));
    void *a = NULL, *b = NULL;
    int r1 = heir_queue_pop(&q, &a);
    pthread_join(t, &ret);
    printf("pusher done: %d\n", (int)(intptr_t)ret);
    int r2 = heir_queue_pop(&q, &b);
    printf("popped %s %s: %d %d\n", err(r1), err(r2), (int)(intptr_t)a, (int)(intptr_t)b);
    printf("destroy when idle: %s\n", err(heir_queue_destroy(&q)));
    printf("use after destroy: %s\n", err(heir_queue_push(&q, (void *)1)));
    return 0;
}

/* ---- rpc ------------------------------------------------------------ */

static heir_rpc_t ep;
static volatile int served_expired;
static volatile int server_ready;

#define STOP ((void *)1)

static void *server(void *arg) {
    (void)arg;
    if (heir_rpc_add_server(&ep, 0, 0))
        return (void *)2;
    server_ready = 1;
    for (;;) {
        void *req = NULL;
        struct timespec dl = after_ms(10000);
        int r = heir_rpc_receive(&ep, &req, &dl);
        if (r)
            return (void *)(intptr_t)(100 + r);
        if (req != STOP)
            served_expired++;
        heir_rpc_reply(&ep, req);
        if (req == STOP)
            return heir_rpc_remove_server(&ep, 0) ? (void *)3 : NULL;
    }
}

static int run_rpc(void) {
    pthread_t t;
    void *ret;
    if (heir_rpc_init(&ep))
        return 1;
    /* Above the caller: woken by a call, it runs at once. */
    t = start(server, NULL, 20);
    printf("server waits: %d\n", server_ready);
    int timedout = 0, replied = 0;
    for (int i = 0; i < 50; i++) {
        struct timespec past = after_ms(-1);
        void *resp = NULL;
        int r = heir_rpc_call(&ep, (void *)(intptr_t)(100 + i), &resp, &past);
        timedout += r == ETIMEDOUT;
        replied += r == 0;
        /* A delivered request would be run by now (the server, above
         * this thread on its CPU, ran as soon as it was woken). */
        sleep_ms(1);
    }
    printf("expired calls: %d ETIMEDOUT, %d replied\n", timedout, replied);
    void *resp = NULL;
    int r = heir_rpc_call(&ep, STOP, &resp, NULL);
    pthread_join(t, &ret);
    printf("stop call: %s, server: %d\n", err(r), (int)(intptr_t)ret);
    printf("server ran %d expired requests\n", served_expired);
    printf("destroy: %s\n", err(heir_rpc_destroy(&ep)));
    return 0;
}

/* ---- ceiling -------------------------------------------------------- */

static heir_ceiling_mutex_t cm;
static volatile int owner_locked;

/* Locks the ceiling mutex and exits holding it (after `arg` ms). */
static void *dying_owner(void *arg) {
    int r = heir_ceiling_mutex_lock(&cm);
    owner_locked = 1;
    sleep_ms((long)(intptr_t)arg);
    pthread_exit((void *)(intptr_t)r);
}

static volatile int waiter_rc = -1;

/* Blocks on the mutex the owner holds; unlocks it without making it
 * consistent. */
static void *waiter(void *arg) {
    (void)arg;
    int r = heir_ceiling_mutex_lock(&cm);
    struct sched_param p = {0};
    sched_getparam(0, &p); /* the kernel's (glibc caches its own) */
    printf("waiter: %s at priority %d\n", err(r), p.sched_priority);
    if (r == EOWNERDEAD || r == 0)
        printf("waiter unlocks: %s\n", err(heir_ceiling_mutex_unlock(&cm)));
    return NULL;
}

static int run_ceiling(void) {
    pthread_t t, w;
    void *ret;
    if (heir_ceiling_mutex_init(&cm, 30))
        return 1;
    /* 1. Nobody waits: the next locker gets EOWNERDEAD holding it. */
    t = start(dying_owner, (void *)0, 5);
    pthread_join(t, &ret);
    printf("owner locked: %s\n", err((int)(intptr_t)ret));
    printf("consistent by a non-owner: %s\n", err(heir_ceiling_mutex_consistent(&cm)));
    printf("next lock: %s\n", err(heir_ceiling_mutex_lock(&cm)));
    printf("consistent: %s\n", err(heir_ceiling_mutex_consistent(&cm)));
    printf("consistent again: %s\n", err(heir_ceiling_mutex_consistent(&cm)));
    printf("unlock: %s\n", err(heir_ceiling_mutex_unlock(&cm)));
    printf("lock after recovery: %s\n", err(heir_ceiling_mutex_lock(&cm)));
    printf("unlock: %s\n", err(heir_ceiling_mutex_unlock(&cm)));

    /* 2. A waiter is blocked when the owner dies: it is handed the
     * mutex with EOWNERDEAD and unlocks it without repair. */
    owner_locked = 0;
    t = start(dying_owner, (void *)200, 5);
    w = start(waiter, NULL, 5);
    printf("owner locked, waiter started: %d\n", owner_locked);
    pthread_join(t, &ret);
    pthread_join(w, NULL);
    printf("lock after an unrepaired unlock: %s\n", err(heir_ceiling_mutex_lock(&cm)));
    printf("destroy: %s\n", err(heir_ceiling_mutex_destroy(&cm)));
    return 0;
}

/* ---- gang ----------------------------------------------------------- */

static pthread_mutex_t gate_lk = PTHREAD_MUTEX_INITIALIZER;
static pthread_cond_t gate_cv = PTHREAD_COND_INITIALIZER;
static int gate_open;
static heir_barrier_t bar;

/* Waits (glibc only, no heir call) until the gate opens, 5 s at most. */
static void gate_wait(void) {
    struct timespec dl;
    clock_gettime(CLOCK_REALTIME, &dl);
    dl.tv_sec += 5;
    pthread_mutex_lock(&gate_lk);
    while (!gate_open)
        if (pthread_cond_timedwait(&gate_cv, &gate_lk, &dl))
            break;
    pthread_mutex_unlock(&gate_lk);
}

static void gate(int open) {
    pthread_mutex_lock(&gate_lk);
    gate_open = open;
    pthread_cond_broadcast(&gate_cv);
    pthread_mutex_unlock(&gate_lk);
}

/* A member that never calls heir: its tid out, then it exits at the gate. */
static void *bystander(void *arg) {
    *(volatile pid_t *)arg = (pid_t)syscall(SYS_gettid);
    gate_wait();
    return NULL;
}

/* Joins the barrier as an active member, then exits at the gate without
 * reaching a barrier point. */
static void *barrier_member(void *arg) {
    *(volatile int *)arg = heir_barrier_add_member(&bar, 0, 1);
    gate_wait();
    return NULL;
}

static double secs_since(const struct timespec *t0) {
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return (double)(t.tv_sec - t0->tv_sec) + (double)(t.tv_nsec - t0->tv_nsec) / 1e9;
}

static int run_gang(void) {
    heir_gang_t g;
    uint32_t cw_n = 1, cw_m = 0, active = 0;
    volatile pid_t n_tid = 0, m_tid = 0;
    struct timespec t0, dl;
    if (heir_gang_init(&g, NULL))
        return 1;
    gate(0);
    pthread_t n = start(bystander, (void *)&n_tid, 5);
    pthread_t m = start(bystander, (void *)&m_tid, 5);
    printf("insert by tid: %s %s\n", err(heir_gang_add_member(&g, n_tid, &cw_n)),
           err(heir_gang_add_member(&g, m_tid, &cw_m)));
    int rr = heir_gang_run(&g, 1, &active);
    printf("run: %s, active %u\n", err(rr), active);
    gate(1);
    pthread_join(n, NULL);
    pthread_join(m, NULL);
    clock_gettime(CLOCK_MONOTONIC, &t0);
    dl = after_ms(3000);
    int r = heir_gang_wait(&g, &dl);
    printf("gang wait after the counted member exited: %s within 1 s: %d\n", err(r),
           secs_since(&t0) < 1.0);
    int member = -1;
    r = heir_gang_has_member(&g, n_tid, &member);
    printf("has_member of the exited counted member: %s, member %d\n", err(r), member);
    member = -1;
    r = heir_gang_has_member(&g, m_tid, &member);
    printf("has_member of the exited passive member: %s, member %d\n", err(r), member);
    printf("close: %s\n", err(heir_gang_destroy(&g)));

    volatile int joined = -1;
    if (heir_barrier_init(&bar, 1))
        return 1;
    gate(0);
    pthread_t b = start(barrier_member, (void *)&joined, 5);
    printf("barrier join: %s\n", err(joined));
    active = 0;
    rr = heir_barrier_start(&bar, &active);
    printf("barrier start: %s, active %u\n", err(rr), active);
    gate(1);
    pthread_join(b, NULL);
    clock_gettime(CLOCK_MONOTONIC, &t0);
    dl = after_ms(3000);
    r = heir_barrier_wait(&bar, &dl);
    printf("barrier wait after the member exited: %s within 1 s: %d\n", err(r),
           secs_since(&t0) < 1.0);
    printf("release: %s\n", err(heir_barrier_release(&bar)));
    printf("barrier destroy: %s\n", err(heir_barrier_destroy(&bar)));
    return 0;
}

int main(int argc, char **argv) {
    if (argc < 3)
        return 2;
    cpu = atoi(argv[1]);
    pin();
    if (fifo(1)) {
        printf("SCHED_FIFO refused\n");
        return 1;
    }
    setvbuf(stdout, NULL, _IONBF, 0);
    if (!strcmp(argv[2], "queue"))
        return run_queue();
    if (!strcmp(argv[2], "rpc"))
        return run_rpc();
    if (!strcmp(argv[2], "ceiling"))
        return run_ceiling();
    if (!strcmp(argv[2], "gang"))
        return run_gang();
    return 2;
}
