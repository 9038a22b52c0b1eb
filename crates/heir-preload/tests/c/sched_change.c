/* A thread that changes its own priority mid-run (heir-cli's test
 * `exec_scenario_writes_a_phase_per_scheduling_change`): SCHED_FIFO 10
 * on CPU argv[1], a critical section and 2 ms of work; then FIFO 20, a
 * critical section and 3 ms of work. Plain pthreads, no heir call. */
#define _GNU_SOURCE
#include <pthread.h>
#include <sched.h>
#include <stdio.h>
#include <stdlib.h>
#include <time.h>

static pthread_mutex_t lock = PTHREAD_MUTEX_INITIALIZER;

static void burn(int ms) {
    struct timespec a, b;
    clock_gettime(CLOCK_THREAD_CPUTIME_ID, &a);
    do
        clock_gettime(CLOCK_THREAD_CPUTIME_ID, &b);
    while ((b.tv_sec - a.tv_sec) * 1000000000LL + (b.tv_nsec - a.tv_nsec) < ms * 1000000LL);
}

static int fifo(int prio) {
    struct sched_param p = {.sched_priority = prio};
    return pthread_setschedparam(pthread_self(), SCHED_FIFO, &p);
}

int main(int argc, char **argv) {
    cpu_set_t set;
    CPU_ZERO(&set);
    CPU_SET(argc > 1 ? atoi(argv[1]) : 0, &set);
    if (pthread_setaffinity_np(pthread_self(), sizeof set, &set) != 0 || fifo(10) != 0) {
        fprintf(stderr, "sched_change: cannot use SCHED_FIFO\n");
        return 2;
    }
    pthread_mutex_lock(&lock);
    pthread_mutex_unlock(&lock);
    burn(2);
    if (fifo(20) != 0)
        return 2;
    pthread_mutex_lock(&lock);
    pthread_mutex_unlock(&lock);
    burn(3);
    return 0;
}
