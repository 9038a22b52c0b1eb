/*
 * heir_apply_stats from C (run by tests/rt/apply_errors.rs): a boost the
 * kernel refuses is counted with its errno and thread. The main thread
 * (SCHED_OTHER, nice 0) drops CAP_SYS_NICE and waits on a condition whose
 * helper runs at nice 10: heir lends the helper nice 0, which the kernel
 * refuses (EPERM) — the wait itself goes on and times out as asked.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <heir.h>
#include <linux/capability.h>
#include <pthread.h>
#include <sched.h>
#include <stddef.h>
#include <stdio.h>
#include <sys/resource.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

_Static_assert(sizeof(heir_apply_stats_t) == 56, "heir_apply_stats_t layout");

static pthread_mutex_t lk = PTHREAD_MUTEX_INITIALIZER;
static pthread_cond_t changed = PTHREAD_COND_INITIALIZER;
static pid_t helper_tid;
static int done;

/* SCHED_OTHER at `nice` for the calling thread (a test harness may have
 * started the process at SCHED_FIFO). */
static int other(int nice) {
    struct sched_param p = {0};
    if (pthread_setschedparam(pthread_self(), SCHED_OTHER, &p))
        return -1;
    return setpriority(PRIO_PROCESS, (id_t)heir_gettid(), nice);
}

static void *helper(void *arg) {
    (void)arg;
    if (other(10) || heir_thread_register())
        return (void *)1;
    pthread_mutex_lock(&lk);
    helper_tid = heir_gettid();
    pthread_cond_broadcast(&changed);
    while (!done)
        pthread_cond_wait(&changed, &lk);
    pthread_mutex_unlock(&lk);
    return NULL;
}

/* Capabilities are per thread: only this one loses CAP_SYS_NICE. */
static int drop_sys_nice(void) {
    struct __user_cap_header_struct h = {_LINUX_CAPABILITY_VERSION_3, 0};
    struct __user_cap_data_struct d[2];
    if (syscall(SYS_capget, &h, d))
        return -1;
    d[0].effective &= ~(1u << CAP_SYS_NICE);
    return (int)syscall(SYS_capset, &h, d);
}

int main(void) {
    printf("layout %zu %zu %zu\n", sizeof(heir_apply_stats_t),
           offsetof(heir_apply_stats_t, last_engine_errno),
           offsetof(heir_apply_stats_t, engine_errors));
    printf("null %d\n", heir_apply_stats(NULL) == EINVAL);
    if (other(0)) {
        perror("SCHED_OTHER nice 0");
        return 1;
    }
    pthread_t t;
    if (pthread_create(&t, NULL, helper, NULL))
        return 1;
    pthread_mutex_lock(&lk);
    while (!helper_tid)
        pthread_cond_wait(&changed, &lk);
    pthread_mutex_unlock(&lk);
    if (drop_sys_nice()) {
        perror("capset");
        return 1;
    }

    heir_apply_stats_t before, after;
    heir_cond_t c;
    heir_mutex_t m;
    if (heir_apply_stats(&before) || heir_cond_init(&c, NULL) || heir_mutex_init(&m, NULL) ||
        heir_cond_add_helper(&c, helper_tid) || heir_mutex_lock(&m))
        return 1;
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    ts.tv_nsec += 20 * 1000 * 1000;
    if (ts.tv_nsec >= 1000000000L) {
        ts.tv_sec += 1;
        ts.tv_nsec -= 1000000000L;
    }
    int r = heir_cond_timedwait(&c, &m, &ts);
    heir_mutex_unlock(&m);
    if (heir_apply_stats(&after))
        return 1;
    printf("timedwait %s\n", r == ETIMEDOUT ? "ETIMEDOUT" : "other");
    printf("failed %llu errno %d on-helper %d\n",
           (unsigned long long)(after.setattr_errors - before.setattr_errors),
           after.last_errno, after.last_error_tid == helper_tid);

    pthread_mutex_lock(&lk);
    done = 1;
    pthread_cond_broadcast(&changed);
    pthread_mutex_unlock(&lk);
    pthread_join(t, NULL);
    heir_cond_destroy(&c);
    heir_mutex_destroy(&m);
    return 0;
}
