/* The PI-CV paper's Fig. 6 in plain pthreads, with no knowledge of heir.
 *
 * A high-priority consumer (SCHED_FIFO 30) asks a low-priority producer
 * (FIFO 10) for an item and waits on a condition variable; the producer
 * works WORK_MS of CPU time, then signals. Meanwhile a medium thread
 * (FIFO 20) busy-runs MEDIUM_MS. All three share one CPU. On glibc the
 * medium thread delays the producer, so the consumer waits about
 * MEDIUM_MS + WORK_MS (an unbounded inversion: its length is the medium
 * thread's). Under `heir exec` (--cond learn) the producer, having
 * signalled once, is learned as the condition variable's helper: from the
 * second request on the consumer lends it its priority and waits about
 * WORK_MS.
 *
 * usage: producer_consumer [CPU [REQUESTS [WORK_MS [MEDIUM_MS]]]]
 * prints one line per request: "request N latency_us L"; exit 2 without
 * permission for SCHED_FIFO.
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

static pthread_mutex_t lock = PTHREAD_MUTEX_INITIALIZER;
static pthread_cond_t item_cv = PTHREAD_COND_INITIALIZER;
static pthread_cond_t request_cv = PTHREAD_COND_INITIALIZER;
static unsigned requested, produced;
static int stop;
static sem_t medium_go, medium_done;
static int cpu, requests = 5, work_ms = 20, medium_ms = 100;

static long long now_ns(clockid_t c) {
    struct timespec ts;
    clock_gettime(c, &ts);
    return ts.tv_sec * 1000000000LL + ts.tv_nsec;
}

/* Busy until this thread has used `ms` of CPU time. */
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

static void *producer(void *arg) {
    (void)arg;
    if (set_fifo(10) != 0)
        return NULL;
    pthread_mutex_lock(&lock);
    for (;;) {
        while (requested == produced && !stop)
            pthread_cond_wait(&request_cv, &lock);
        if (stop)
            break;
        pthread_mutex_unlock(&lock);
        burn(work_ms);
        pthread_mutex_lock(&lock);
        produced++;
        pthread_cond_signal(&item_cv);
    }
    pthread_mutex_unlock(&lock);
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
    if (argc > 2) requests = atoi(argv[2]);
    if (argc > 3) work_ms = atoi(argv[3]);
    if (argc > 4) medium_ms = atoi(argv[4]);
    sem_init(&medium_go, 0, 0);
    sem_init(&medium_done, 0, 0);
    if (set_fifo(30) != 0) {
        fprintf(stderr, "producer_consumer: cannot use SCHED_FIFO on CPU %d: %s\n", cpu,
                strerror(errno));
        return 2;
    }
    pthread_t p, m;
    pthread_create(&p, NULL, producer, NULL);
    pthread_create(&m, NULL, medium, NULL);
    struct timespec gap = {0, 50 * 1000000L};
    nanosleep(&gap, NULL);
    for (int i = 1; i <= requests; i++) {
        long long t0 = now_ns(CLOCK_MONOTONIC);
        pthread_mutex_lock(&lock);
        requested++;
        pthread_cond_signal(&request_cv);
        pthread_mutex_unlock(&lock);
        sem_post(&medium_go);
        pthread_mutex_lock(&lock);
        while (produced < requested)
            pthread_cond_wait(&item_cv, &lock);
        pthread_mutex_unlock(&lock);
        long long lat = now_ns(CLOCK_MONOTONIC) - t0;
        printf("request %d latency_us %lld\n", i, lat / 1000);
        fflush(stdout);
        sem_wait(&medium_done); /* the medium thread is done: a quiet start */
        nanosleep(&gap, NULL);
    }
    pthread_mutex_lock(&lock);
    stop = 1;
    pthread_cond_broadcast(&request_cv);
    pthread_mutex_unlock(&lock);
    sem_post(&medium_go);
    pthread_join(p, NULL);
    pthread_join(m, NULL);
    return 0;
}
