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
 *   gang     a member inserted by tid (it never calls heir) and a
 *            heir_barrier_join member exit while counted: heir_gang_wait
 *            and heir_barrier_wait return 0, heir_gang_get answers ENOENT.
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
    if (heir_rpc_server_join(&ep, 0))
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
            return heir_rpc_server_leave(&ep) ? (void *)3 : NULL;
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
    return 2;
}
