/* examples/c/producer_consumer.c (heir's queue, the producer declared its
 * helper) in plain pthreads, with no knowledge of heir.
 *
 * A consumer (SCHED_FIFO 30) pops ITEMS items from a bounded queue (a
 * mutex and two condition variables, "not empty" and "not full"); a
 * producer (FIFO 10) works 2 ms of CPU time per item, then pushes it.
 * Both share one CPU, and the consumer waits on an empty queue for every
 * item. Halfway through each item the producer reads its own effective
 * priority (the kernel's, from /proc) and prints it once the item is
 * pushed. On glibc it is 10 every time: nothing tells the kernel whom the
 * consumer waits for. Under `heir exec` (--cond learn) the producer,
 * having signalled "not empty" once, is learned as its helper: from the
 * second item on it runs at the consumer's priority, 30, while the
 * consumer waits — as the heir version, whose producer is declared and
 * runs at 30 from the first item.
 *
 * usage: queue [CPU [ITEMS]]
 * prints "item N producer_priority P" per item, then "consumed N items in
 * order"; exit 0, 1 on failure, 2 without permission for SCHED_FIFO.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <pthread.h>
#include <sched.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

#define CAPACITY 8

static pthread_mutex_t lock = PTHREAD_MUTEX_INITIALIZER;
static pthread_cond_t not_empty = PTHREAD_COND_INITIALIZER;
static pthread_cond_t not_full = PTHREAD_COND_INITIALIZER;
static long items[CAPACITY];
static unsigned head, count;
static pthread_barrier_t ready;
static int cpu, n_items = 5, failed;

static long long cpu_ns(void) {
    struct timespec ts;
    clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
    return ts.tv_sec * 1000000000LL + ts.tv_nsec;
}

/* Busy until this thread has used `us` of CPU time. */
static void burn_us(long us) {
    long long end = cpu_ns() + us * 1000LL;
    while (cpu_ns() < end) {
    }
}

/* The kernel's effective real-time priority of the calling thread, boosts
 * included (/proc's prio field is -1 - rt_priority). */
static int effective_priority(void) {
    char path[64], buf[512];
    snprintf(path, sizeof path, "/proc/self/task/%ld/stat", (long)syscall(SYS_gettid));
    FILE *f = fopen(path, "r");
    if (!f)
        return -1;
    size_t n = fread(buf, 1, sizeof buf - 1, f);
    fclose(f);
    buf[n] = 0;
    char *p = strrchr(buf, ')');
    if (!p)
        return -1;
    /* After "comm)": state is field 3; prio is field 18. */
    int field = 2;
    for (p++; *p && field < 18; p++)
        if (*p == ' ')
            field++;
    return -1 - atoi(p);
}

static void push(long v) {
    pthread_mutex_lock(&lock);
    while (count == CAPACITY)
        pthread_cond_wait(&not_full, &lock);
    items[(head + count++) % CAPACITY] = v;
    pthread_cond_signal(&not_empty);
    pthread_mutex_unlock(&lock);
}

static long pop(void) {
    pthread_mutex_lock(&lock);
    while (count == 0)
        pthread_cond_wait(&not_empty, &lock);
    long v = items[head];
    head = (head + 1) % CAPACITY;
    count--;
    pthread_cond_signal(&not_full);
    pthread_mutex_unlock(&lock);
    return v;
}

static void *producer(void *arg) {
    (void)arg;
    pthread_barrier_wait(&ready); /* the consumer is waiting now */
    for (long i = 0; i < n_items; i++) {
        burn_us(1000);
        int prio = effective_priority();
        burn_us(1000);
        push(i);
        printf("item %ld producer_priority %d\n", i + 1, prio);
        fflush(stdout);
    }
    return NULL;
}

static void *consumer(void *arg) {
    (void)arg;
    int in_order = 1;
    for (long i = 0; i < n_items; i++)
        if (pop() != i)
            in_order = 0;
    if (in_order)
        printf("consumed %d items in order\n", n_items);
    else
        failed = 1;
    return NULL;
}

static int start(pthread_t *t, int prio, void *(*fn)(void *)) {
    pthread_attr_t a;
    struct sched_param p = {.sched_priority = prio};
    cpu_set_t set;
    CPU_ZERO(&set);
    CPU_SET(cpu, &set);
    pthread_attr_init(&a);
    pthread_attr_setinheritsched(&a, PTHREAD_EXPLICIT_SCHED);
    pthread_attr_setschedpolicy(&a, SCHED_FIFO);
    pthread_attr_setschedparam(&a, &p);
    pthread_attr_setaffinity_np(&a, sizeof set, &set);
    int rc = pthread_create(t, &a, fn, NULL);
    pthread_attr_destroy(&a);
    return rc;
}

int main(int argc, char **argv) {
    if (argc > 1) cpu = atoi(argv[1]);
    if (argc > 2) n_items = atoi(argv[2]);
    pthread_t prod, cons;
    pthread_barrier_init(&ready, NULL, 2);
    int rc = start(&prod, 10, producer);
    if (rc == EPERM) {
        fprintf(stderr, "queue: no permission for SCHED_FIFO\n");
        return 2;
    }
    if (rc || (rc = start(&cons, 30, consumer))) {
        fprintf(stderr, "pthread_create: %s\n", strerror(rc));
        return 1;
    }
    /* Give the consumer time to block on the empty queue. */
    struct timespec settle = {0, 20000000};
    nanosleep(&settle, NULL);
    pthread_barrier_wait(&ready);
    pthread_join(prod, NULL);
    pthread_join(cons, NULL);
    return failed;
}
