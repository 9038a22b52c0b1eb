/* examples/c/rpc_donation.c's calls (a client lends the server its
 * priority while it waits for the reply) in plain pthreads, with no
 * knowledge of heir: a request/reply pair of condition variables.
 *
 * A client (SCHED_FIFO 30) makes CALLS calls to a server (FIFO 10): it
 * posts a request, signals "request", and waits on "reply"; the server
 * works 2 ms of CPU time per call, reading its own effective priority
 * (the kernel's, from /proc) halfway, then replies with it. Both share
 * one CPU. On glibc the server serves at 10: nothing tells the kernel
 * whom the client waits for. Under `heir exec` (--cond learn) the server,
 * having signalled "reply" once, is learned as its helper: from the second
 * call on it serves at the client's priority, 30 — as the heir version's
 * server, which the kernel runs at the client's priority from the first
 * call (its timeouts and helping have no pthread counterpart and are not
 * reproduced here).
 *
 * usage: rpc [CPU [CALLS]]
 * prints "call N server_priority P" per call; exit 0, 1 on failure, 2
 * without permission for SCHED_FIFO.
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

static pthread_mutex_t lock = PTHREAD_MUTEX_INITIALIZER;
static pthread_cond_t request_cv = PTHREAD_COND_INITIALIZER;
static pthread_cond_t reply_cv = PTHREAD_COND_INITIALIZER;
static int requested, replied, reply_value, quit;
static int cpu, calls = 5;

static long long cpu_ns(void) {
    struct timespec ts;
    clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
    return ts.tv_sec * 1000000000LL + ts.tv_nsec;
}

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
    int field = 2;
    for (p++; *p && field < 18; p++)
        if (*p == ' ')
            field++;
    return -1 - atoi(p);
}

static void *server(void *arg) {
    (void)arg;
    pthread_mutex_lock(&lock);
    for (;;) {
        while (requested == replied && !quit)
            pthread_cond_wait(&request_cv, &lock);
        if (quit)
            break;
        pthread_mutex_unlock(&lock);
        burn_us(1000);
        int prio = effective_priority();
        burn_us(1000);
        pthread_mutex_lock(&lock);
        reply_value = prio;
        replied++;
        pthread_cond_signal(&reply_cv);
    }
    pthread_mutex_unlock(&lock);
    return NULL;
}

static int call(void) {
    pthread_mutex_lock(&lock);
    requested++;
    pthread_cond_signal(&request_cv);
    while (replied < requested)
        pthread_cond_wait(&reply_cv, &lock);
    int v = reply_value;
    pthread_mutex_unlock(&lock);
    return v;
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

static void *server_main(void *arg) {
    if (set_fifo(10) != 0)
        return NULL;
    return server(arg);
}

int main(int argc, char **argv) {
    if (argc > 1) cpu = atoi(argv[1]);
    if (argc > 2) calls = atoi(argv[2]);
    if (set_fifo(30) != 0) {
        fprintf(stderr, "rpc: cannot use SCHED_FIFO on CPU %d: %s\n", cpu, strerror(errno));
        return 2;
    }
    pthread_t s;
    if (pthread_create(&s, NULL, server_main, NULL) != 0)
        return 1;
    struct timespec gap = {0, 10000000};
    nanosleep(&gap, NULL);
    for (int i = 1; i <= calls; i++) {
        printf("call %d server_priority %d\n", i, call());
        fflush(stdout);
        nanosleep(&gap, NULL);
    }
    pthread_mutex_lock(&lock);
    quit = 1;
    pthread_cond_broadcast(&request_cv);
    pthread_mutex_unlock(&lock);
    pthread_join(s, NULL);
    return 0;
}
