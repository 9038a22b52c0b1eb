/* What `heir exec --scenario` models beyond locks, waits and signals
 * (heir-cli's test `exec_scenario_models_semaphore_values_timeouts_sleeps_and_the_last_run`):
 * a semaphore's initial value, a thread's CPU time after its last
 * operation, `usleep` (glibc's calls its internal nanosleep), and timed
 * waits that time out (a condition variable, a semaphore). Plain pthreads,
 * no heir call. */
#define _GNU_SOURCE
#include <errno.h>
#include <pthread.h>
#include <semaphore.h>
#include <stdio.h>
#include <time.h>
#include <unistd.h>

static sem_t sem;
static pthread_mutex_t lock = PTHREAD_MUTEX_INITIALIZER;
static pthread_cond_t never = PTHREAD_COND_INITIALIZER;

/* `ms` of the thread's CPU time. */
static void burn(int ms) {
    struct timespec a, b;
    clock_gettime(CLOCK_THREAD_CPUTIME_ID, &a);
    do
        clock_gettime(CLOCK_THREAD_CPUTIME_ID, &b);
    while ((b.tv_sec - a.tv_sec) * 1000000000LL + (b.tv_nsec - a.tv_nsec) < ms * 1000000LL);
}

/* `ms` from now on CLOCK_REALTIME (the clock of timed waits by default). */
static struct timespec in_ms(int ms) {
    struct timespec t;
    clock_gettime(CLOCK_REALTIME, &t);
    t.tv_nsec += ms * 1000000L;
    t.tv_sec += t.tv_nsec / 1000000000L;
    t.tv_nsec %= 1000000000L;
    return t;
}

/* Takes the semaphore's two initial units, then works 5 ms and exits. */
static void *taker(void *arg) {
    (void)arg;
    sem_wait(&sem);
    sem_wait(&sem);
    burn(5);
    return NULL;
}

int main(void) {
    sem_init(&sem, 0, 2);
    pthread_t t;
    pthread_create(&t, NULL, taker, NULL);
    pthread_join(t, NULL);
    usleep(3000);
    pthread_mutex_lock(&lock);
    struct timespec d = in_ms(4);
    int r1 = pthread_cond_timedwait(&never, &lock, &d);
    pthread_mutex_unlock(&lock);
    d = in_ms(2);
    int r2 = sem_timedwait(&sem, &d) == 0 ? 0 : errno;
    burn(7);
    printf("cond_timedwait %d sem_timedwait %d\n", r1, r2);
    return r1 == ETIMEDOUT && r2 == ETIMEDOUT ? 0 : 1;
}
