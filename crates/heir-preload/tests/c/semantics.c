/* The pthread semantics heir exec must keep, checked on whatever
 * implementation the program runs with: glibc's (argument "glibc": the
 * checks whose outcome differs are skipped), or heir's (LD_PRELOAD of
 * libheir_preload.so). Prints "ok NAME" per check; exits 1 at the first
 * failure. "child" as argv[1]: the exec'd child of the fork check. */
#define _GNU_SOURCE
#include <dlfcn.h>
#include <errno.h>
#include <pthread.h>
#include <sched.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

/* The old (GLIBC_2.2.5) condition-variable ABI, as a 2003 binary links it. */
extern int old_cond_signal(pthread_cond_t *c);
__asm__(".symver old_cond_signal, pthread_cond_signal@GLIBC_2.2.5");

static int heir;
#define CHECK(name, cond)                                                         \
    do {                                                                          \
        if (!(cond)) {                                                            \
            fprintf(stderr, "FAIL %s (line %d): %s\n", name, __LINE__, #cond);    \
            exit(1);                                                              \
        }                                                                         \
        printf("ok %s\n", name);                                                  \
    } while (0)

static long long ns(clockid_t c) {
    struct timespec t;
    clock_gettime(c, &t);
    return t.tv_sec * 1000000000LL + t.tv_nsec;
}
static struct timespec at(clockid_t c, long long from_now_ns) {
    long long v = ns(c) + from_now_ns;
    struct timespec t = {v / 1000000000LL, v % 1000000000LL};
    return t;
}

static pthread_mutex_t normal = PTHREAD_MUTEX_INITIALIZER;
static pthread_mutex_t recursive = PTHREAD_RECURSIVE_MUTEX_INITIALIZER_NP;
static pthread_mutex_t errorcheck = PTHREAD_ERRORCHECK_MUTEX_INITIALIZER_NP;
static pthread_cond_t cond = PTHREAD_COND_INITIALIZER;
static int flag;

static void *try_it(void *m) { return (void *)(long)pthread_mutex_trylock(m); }
static void *unlock_it(void *m) { return (void *)(long)pthread_mutex_unlock(m); }
static void *timed_it(void *m) {
    struct timespec t = at(CLOCK_REALTIME, 50000000LL);
    long long t0 = ns(CLOCK_MONOTONIC);
    int r = pthread_mutex_timedlock(m, &t);
    long long el = ns(CLOCK_MONOTONIC) - t0;
    return (void *)(long)(r == ETIMEDOUT && el >= 45000000LL ? 0 : r ? r : -1);
}
static void *clock_it(void *m) {
    struct timespec t = at(CLOCK_MONOTONIC, 20000000LL);
    return (void *)(long)pthread_mutex_clocklock(m, CLOCK_MONOTONIC, &t);
}
static void *bad_time(void *m) {
    struct timespec t = {0, 2000000000L};
    return (void *)(long)pthread_mutex_timedlock(m, &t);
}
static long in_thread(void *(*f)(void *), void *arg) {
    pthread_t t;
    void *r;
    pthread_create(&t, NULL, f, arg);
    pthread_join(t, &r);
    return (long)r;
}
static void *die_holding(void *m) {
    pthread_mutex_lock(m);
    return NULL;
}
static void *signal_later(void *arg) {
    int old = arg != NULL;
    struct timespec d = {0, 20000000L};
    nanosleep(&d, NULL);
    pthread_mutex_lock(&normal);
    flag = 1;
    if (old)
        old_cond_signal(&cond);
    else
        pthread_cond_signal(&cond);
    pthread_mutex_unlock(&normal);
    return NULL;
}

static pthread_barrier_t barrier;
static int serials;
static pthread_mutex_t count_lock = PTHREAD_MUTEX_INITIALIZER;
static void *barrier_rounds(void *arg) {
    (void)arg;
    for (int i = 0; i < 200; i++) {
        int r = pthread_barrier_wait(&barrier);
        if (r == PTHREAD_BARRIER_SERIAL_THREAD) {
            pthread_mutex_lock(&count_lock);
            serials++;
            pthread_mutex_unlock(&count_lock);
        } else if (r != 0) {
            return (void *)1;
        }
    }
    return NULL;
}

int main(int argc, char **argv) {
    if (argc > 1 && strcmp(argv[1], "child") == 0) {
        pthread_mutex_lock(&normal);
        pthread_mutex_unlock(&normal);
        printf("child interposed %d\n", dlsym(RTLD_DEFAULT, "heir_gettid") != NULL);
        return 0;
    }
    int glibc = argc > 1 && strcmp(argv[1], "glibc") == 0;
    heir = dlsym(RTLD_DEFAULT, "heir_gettid") != NULL;
    CHECK("interposed as expected", heir == !glibc);

    /* Normal, static initialiser. */
    CHECK("normal lock", pthread_mutex_lock(&normal) == 0);
    CHECK("normal trylock by another thread: EBUSY", in_thread(try_it, &normal) == EBUSY);
    if (heir)
        CHECK("normal relock: EDEADLK (heir; glibc would block for ever)",
              pthread_mutex_lock(&normal) == EDEADLK);
    CHECK("normal timedlock by another thread times out", in_thread(timed_it, &normal) == 0);
    CHECK("normal clocklock MONOTONIC times out", in_thread(clock_it, &normal) == ETIMEDOUT);
    struct timespec bad = {0, 2000000000L};
    if (heir)
        CHECK("timedlock by the owner: EDEADLK", pthread_mutex_timedlock(&normal, &bad) == EDEADLK);
    CHECK("normal unlock", pthread_mutex_unlock(&normal) == 0);
    pthread_mutex_lock(&errorcheck);
    CHECK("timedlock with a bad time on a held mutex: EINVAL", in_thread(bad_time, &errorcheck) == EINVAL);
    pthread_mutex_unlock(&errorcheck);
    CHECK("normal trylock", pthread_mutex_trylock(&normal) == 0);
    CHECK("normal unlock again", pthread_mutex_unlock(&normal) == 0);

    /* Recursive. */
    CHECK("recursive lock x3", pthread_mutex_lock(&recursive) == 0 && pthread_mutex_lock(&recursive) == 0 &&
                                   pthread_mutex_lock(&recursive) == 0);
    CHECK("recursive trylock by the owner", pthread_mutex_trylock(&recursive) == 0);
    CHECK("recursive held for another thread", in_thread(try_it, &recursive) == EBUSY);
    CHECK("recursive unlock by another thread while counted: EPERM", in_thread(unlock_it, &recursive) == EPERM);
    CHECK("recursive unlock x4", pthread_mutex_unlock(&recursive) == 0 && pthread_mutex_unlock(&recursive) == 0 &&
                                     pthread_mutex_unlock(&recursive) == 0 &&
                                     pthread_mutex_unlock(&recursive) == 0);
    CHECK("recursive free for another thread", in_thread(try_it, &recursive) == 0);
    /* That thread exited holding it: glibc's stays held for ever, heir's
     * (on the robust list like every heir mutex) is handed over. */
    if (heir)
        CHECK("a non-robust mutex whose owner exited is taken over (heir)",
              pthread_mutex_lock(&recursive) == 0 && pthread_mutex_unlock(&recursive) == 0);

    /* Errorcheck. */
    CHECK("errorcheck lock", pthread_mutex_lock(&errorcheck) == 0);
    CHECK("errorcheck relock: EDEADLK", pthread_mutex_lock(&errorcheck) == EDEADLK);
    CHECK("errorcheck trylock by the owner: EBUSY", pthread_mutex_trylock(&errorcheck) == EBUSY);
    CHECK("errorcheck unlock by another thread: EPERM", in_thread(unlock_it, &errorcheck) == EPERM);
    CHECK("errorcheck unlock", pthread_mutex_unlock(&errorcheck) == 0);
    CHECK("errorcheck unlock when unlocked: EPERM", pthread_mutex_unlock(&errorcheck) == EPERM);

    /* Initialised with attributes: recursive + robust. */
    pthread_mutexattr_t ma;
    pthread_mutexattr_init(&ma);
    pthread_mutexattr_setrobust(&ma, PTHREAD_MUTEX_ROBUST);
    pthread_mutex_t robust;
    CHECK("robust init", pthread_mutex_init(&robust, &ma) == 0);
    in_thread(die_holding, &robust);
    CHECK("robust: owner died -> EOWNERDEAD", pthread_mutex_lock(&robust) == EOWNERDEAD);
    CHECK("robust consistent", pthread_mutex_consistent(&robust) == 0);
    CHECK("robust unlock", pthread_mutex_unlock(&robust) == 0);
    CHECK("robust lock again", pthread_mutex_lock(&robust) == 0 && pthread_mutex_unlock(&robust) == 0);
    in_thread(die_holding, &robust);
    CHECK("robust: owner died again", pthread_mutex_lock(&robust) == EOWNERDEAD);
    CHECK("robust: unlocked inconsistent", pthread_mutex_unlock(&robust) == 0);
    CHECK("robust: not recoverable", pthread_mutex_lock(&robust) == ENOTRECOVERABLE);
    CHECK("robust destroy", pthread_mutex_destroy(&robust) == 0);

    /* Process-shared and priority-protect: glibc's. */
    pthread_mutexattr_t sa;
    pthread_mutexattr_init(&sa);
    pthread_mutexattr_setpshared(&sa, PTHREAD_PROCESS_SHARED);
    pthread_mutex_t shared;
    CHECK("pshared init", pthread_mutex_init(&shared, &sa) == 0);
    CHECK("pshared lock/unlock", pthread_mutex_lock(&shared) == 0 && pthread_mutex_unlock(&shared) == 0);
    CHECK("pshared destroy", pthread_mutex_destroy(&shared) == 0);
    /* Condition variables. */
    int r;
    pthread_t t;
    pthread_mutex_lock(&normal);
    pthread_create(&t, NULL, signal_later, NULL);
    r = 0;
    while (!flag && r == 0)
        r = pthread_cond_wait(&cond, &normal);
    CHECK("cond wait woken by signal", r == 0 && flag == 1);
    pthread_mutex_unlock(&normal);
    pthread_join(t, NULL);
    pthread_mutex_lock(&normal);
    struct timespec w = at(CLOCK_REALTIME, 30000000LL);
    long long t0 = ns(CLOCK_MONOTONIC);
    r = pthread_cond_timedwait(&cond, &normal, &w);
    CHECK("cond timedwait REALTIME times out, mutex held again",
          r == ETIMEDOUT && ns(CLOCK_MONOTONIC) - t0 >= 25000000LL && pthread_mutex_trylock(&normal) != 0);
    pthread_condattr_t ca;
    pthread_condattr_init(&ca);
    pthread_condattr_setclock(&ca, CLOCK_MONOTONIC);
    pthread_cond_t mono;
    pthread_cond_init(&mono, &ca);
    w = at(CLOCK_MONOTONIC, 20000000LL);
    CHECK("cond timedwait MONOTONIC times out", pthread_cond_timedwait(&mono, &normal, &w) == ETIMEDOUT);
    CHECK("cond destroy", pthread_cond_destroy(&mono) == 0);
    pthread_mutex_unlock(&normal);
    CHECK("cond wait without the mutex is refused or errorcheck-like",
          !heir || pthread_cond_wait(&cond, &errorcheck) == EPERM);
    if (heir) {
        pthread_mutex_lock(&recursive);
        pthread_mutex_lock(&recursive);
        w = at(CLOCK_REALTIME, 10000000LL);
        CHECK("cond wait on a recursive mutex locked twice keeps its count",
              pthread_cond_timedwait(&cond, &recursive, &w) == ETIMEDOUT &&
                  pthread_mutex_unlock(&recursive) == 0 && pthread_mutex_unlock(&recursive) == 0);
    }
    if (heir) {
        flag = 0;
        pthread_mutex_lock(&normal);
        pthread_create(&t, NULL, signal_later, (void *)1);
        r = 0;
        while (!flag && r == 0)
            r = pthread_cond_wait(&cond, &normal);
        CHECK("old-ABI pthread_cond_signal@GLIBC_2.2.5 wakes a waiter (both versions are heir's)", r == 0);
        pthread_mutex_unlock(&normal);
        pthread_join(t, NULL);
    }

    /* The calling thread (heir knows it now: it waited) changes its own
     * policy: glibc's answer, and heir's saved base follows. */
    struct sched_param sp0 = {0};
    int pol = -1;
    CHECK("setschedparam self to SCHED_BATCH",
          pthread_setschedparam(pthread_self(), SCHED_BATCH, &sp0) == 0 &&
              pthread_getschedparam(pthread_self(), &pol, &sp0) == 0 && pol == SCHED_BATCH);
    CHECK("setschedparam self back to SCHED_OTHER",
          pthread_setschedparam(pthread_self(), SCHED_OTHER, &sp0) == 0 && pthread_setschedprio(pthread_self(), 0) == 0);

    /* Barriers. */
    CHECK("barrier init", pthread_barrier_init(&barrier, NULL, 3) == 0);
    pthread_t b[3];
    for (int i = 0; i < 3; i++)
        pthread_create(&b[i], NULL, barrier_rounds, NULL);
    long bad_rounds = 0;
    for (int i = 0; i < 3; i++) {
        void *rv;
        pthread_join(b[i], &rv);
        bad_rounds += (long)rv;
    }
    CHECK("barrier: one serial thread per round", bad_rounds == 0 && serials == 200);
    CHECK("barrier destroy", pthread_barrier_destroy(&barrier) == 0);

    /* fork, then fork + exec. */
    fflush(stdout);
    pid_t p = fork();
    if (p == 0) {
        int ok = pthread_mutex_lock(&normal) == 0 && pthread_mutex_unlock(&normal) == 0;
        exit(ok ? 0 : 1);
    }
    int st;
    waitpid(p, &st, 0);
    CHECK("fork child locks and unlocks", WIFEXITED(st) && WEXITSTATUS(st) == 0);
    p = fork();
    if (p == 0) {
        execl("/proc/self/exe", argv[0], "child", (char *)NULL);
        _exit(127);
    }
    waitpid(p, &st, 0);
    CHECK("fork + exec child ran", WIFEXITED(st) && WEXITSTATUS(st) == 0);
    /* Last: glibc keeps per-thread priority-protect state after it. */
    pthread_mutexattr_t pa;
    pthread_mutexattr_init(&pa);
    pthread_mutexattr_setprotocol(&pa, PTHREAD_PRIO_PROTECT);
    pthread_mutexattr_setprioceiling(&pa, sched_get_priority_min(SCHED_FIFO));
    pthread_mutex_t protect;
    CHECK("protect init", pthread_mutex_init(&protect, &pa) == 0);
    r = pthread_mutex_lock(&protect);
    /* glibc's own answer (0, or EINVAL/EPERM for a SCHED_OTHER caller):
     * the point is that it is glibc's mutex, not what it says. */
    CHECK("protect lock is glibc's", r == 0 || r == EINVAL || r == EPERM);
    if (r == 0)
        pthread_mutex_unlock(&protect);

    printf("all ok\n");
    return 0;
}
