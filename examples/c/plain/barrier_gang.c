/* A gang at a barrier, in plain pthreads, with no knowledge of heir.
 *
 * A high-priority thread (SCHED_FIFO 30) and a low-priority one (FIFO 10)
 * meet at a pthread barrier every round; before each barrier the low one
 * works WORK_MS of CPU time, the high one none. A medium thread (FIFO 20)
 * busy-runs MEDIUM_MS at the start of each round. All three share one
 * CPU. On glibc the high thread waits at the barrier for the medium
 * thread's work too (MEDIUM_MS + WORK_MS). Under `heir exec --gpm on` the
 * waiting high thread lends its priority to the low one (which arrived in
 * the previous round) after the grace: it waits about WORK_MS + grace,
 * from the second round on.
 *
 * usage: barrier_gang [CPU [ROUNDS [WORK_MS [MEDIUM_MS]]]]
 * prints "round N wait_us W" per round; exit 2 without SCHED_FIFO.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <pthread.h>
#include <sched.h>
#include <semaphore.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

static pthread_barrier_t start, meet;
static sem_t medium_go, medium_done;
static int cpu, rounds = 5, work_ms = 20, medium_ms = 100, stop;

static long long now_ns(clockid_t c) {
    struct timespec ts;
    clock_gettime(c, &ts);
    return ts.tv_sec * 1000000000LL + ts.tv_nsec;
}

static void burn(int ms) {
    long long end = now_ns(CLOCK_THREAD_CPUTIME_ID) + ms * 1000000LL;
    while (now_ns(CLOCK_THREAD_CPUTIME_ID) < end) {
    }
}

static int set_fifo(int prio) {
    struct sched_param p = {.sched_priority = prio};
    cpu_set_t set;
    CPU_ZERO(&set);
    CPU_SET(cpu, &set);
    if (pthread_setaffinity_np(pthread_self(), sizeof set, &set) != 0)
        return -1;
    return pthread_setschedparam(pthread_self(), SCHED_FIFO, &p);
}

static void *low(void *arg) {
    (void)arg;
    if (set_fifo(10) != 0)
        return NULL;
    for (int i = 0; i < rounds; i++) {
        pthread_barrier_wait(&start);
        burn(work_ms);
        pthread_barrier_wait(&meet);
    }
    return NULL;
}

static void *medium(void *arg) {
    (void)arg;
    if (set_fifo(20) != 0)
        return NULL;
    for (;;) {
        sem_wait(&medium_go);
        if (stop)
            break;
        burn(medium_ms);
        sem_post(&medium_done);
    }
    return NULL;
}

int main(int argc, char **argv) {
    if (argc > 1) cpu = atoi(argv[1]);
    if (argc > 2) rounds = atoi(argv[2]);
    if (argc > 3) work_ms = atoi(argv[3]);
    if (argc > 4) medium_ms = atoi(argv[4]);
    sem_init(&medium_go, 0, 0);
    sem_init(&medium_done, 0, 0);
    pthread_barrier_init(&start, NULL, 2);
    pthread_barrier_init(&meet, NULL, 2);
    if (set_fifo(30) != 0) {
        fprintf(stderr, "barrier_gang: cannot use SCHED_FIFO on CPU %d: %s\n", cpu, strerror(errno));
        return 2;
    }
    pthread_t l, m;
    pthread_create(&l, NULL, low, NULL);
    pthread_create(&m, NULL, medium, NULL);
    struct timespec gap = {0, 50 * 1000000L};
    for (int i = 1; i <= rounds; i++) {
        nanosleep(&gap, NULL);
        pthread_barrier_wait(&start); /* the low thread starts its work */
        sem_post(&medium_go);         /* the medium thread its */
        long long t0 = now_ns(CLOCK_MONOTONIC);
        pthread_barrier_wait(&meet);
        printf("round %d wait_us %lld\n", i, (now_ns(CLOCK_MONOTONIC) - t0) / 1000);
        fflush(stdout);
        sem_wait(&medium_done);
    }
    stop = 1;
    sem_post(&medium_go);
    pthread_join(l, NULL);
    pthread_join(m, NULL);
    return 0;
}
