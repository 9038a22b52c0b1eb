/* heir exec's overhead per pthread operation, against glibc: run it as is
 * and under LD_PRELOAD=libheir_preload.so (scripts/bench-exec-overhead.sh
 * prints both). Not a test: nothing is asserted.
 *
 *   uncontended lock+unlock pair (one thread), ns
 *   the same pair on a PTHREAD_PRIO_INHERIT + PTHREAD_MUTEX_ROBUST mutex
 *   (glibc's nearest to what heir makes of every mutex), ns
 *   pthread_cond_signal with no waiter, ns
 *   wait/signal round trip between two threads on two condition
 *   variables (each waits for the other's signal), us
 */
#define _GNU_SOURCE
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <time.h>

static long long now(void) {
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return t.tv_sec * 1000000000LL + t.tv_nsec;
}

static pthread_mutex_t m = PTHREAD_MUTEX_INITIALIZER;
static pthread_cond_t ping = PTHREAD_COND_INITIALIZER, pong = PTHREAD_COND_INITIALIZER;
static int turn, rounds;

static void *ponger(void *arg) {
    (void)arg;
    pthread_mutex_lock(&m);
    for (int i = 0; i < rounds; i++) {
        while (turn != 1)
            pthread_cond_wait(&ping, &m);
        turn = 0;
        pthread_cond_signal(&pong);
    }
    pthread_mutex_unlock(&m);
    return NULL;
}

int main(int argc, char **argv) {
    long n = argc > 1 ? atol(argv[1]) : 10000000L;
    rounds = argc > 2 ? atoi(argv[2]) : 20000;
    for (long i = 0; i < n / 10; i++) { /* warm up */
        pthread_mutex_lock(&m);
        pthread_mutex_unlock(&m);
    }
    long long t0 = now();
    for (long i = 0; i < n; i++) {
        pthread_mutex_lock(&m);
        pthread_mutex_unlock(&m);
    }
    double pair = (double)(now() - t0) / n;
    pthread_mutexattr_t a;
    pthread_mutex_t pr;
    pthread_mutexattr_init(&a);
    pthread_mutexattr_setprotocol(&a, PTHREAD_PRIO_INHERIT);
    pthread_mutexattr_setrobust(&a, PTHREAD_MUTEX_ROBUST);
    pthread_mutex_init(&pr, &a);
    for (long i = 0; i < n / 10; i++) {
        pthread_mutex_lock(&pr);
        pthread_mutex_unlock(&pr);
    }
    t0 = now();
    for (long i = 0; i < n; i++) {
        pthread_mutex_lock(&pr);
        pthread_mutex_unlock(&pr);
    }
    double pair_pi = (double)(now() - t0) / n;
    pthread_mutex_destroy(&pr);
    pthread_mutexattr_destroy(&a);
    long s = n / 10;
    t0 = now();
    for (long i = 0; i < s; i++)
        pthread_cond_signal(&ping);
    double sig = (double)(now() - t0) / s;
    pthread_t t;
    pthread_create(&t, NULL, ponger, NULL);
    t0 = now();
    pthread_mutex_lock(&m);
    for (int i = 0; i < rounds; i++) {
        turn = 1;
        pthread_cond_signal(&ping);
        while (turn != 0)
            pthread_cond_wait(&pong, &m);
    }
    pthread_mutex_unlock(&m);
    double rt = (double)(now() - t0) / rounds / 1000.0;
    pthread_join(t, NULL);
    printf("lock+unlock %.1f ns  (PI+robust %.1f ns)  signal(no waiter) %.1f ns  wait/signal round trip %.2f us\n",
           pair, pair_pi, sig, rt);
    return 0;
}
