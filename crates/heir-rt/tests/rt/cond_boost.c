/*
 * heir_cond_init's `lend` attribute from C (run by tests/rt/capi.rs): how a waiter's
 * priority reaches a condition variable's helper.
 *
 * A waiter (SCHED_FIFO 30) waits on a condition whose helper runs at
 * SCHED_FIFO 10, both pinned to the CPU given as argv[1]. While the waiter
 * waits, the helper reads its own priority twice: as the kernel schedules
 * it (field 18 of /proc/self/task/TID/stat, PI boosts included) and as set
 * with sched_setattr (sched_getparam, which never shows a PI boost). Then it
 * signals, and reads both again.
 *
 *   argv[2] = "kernel": { .lend = HEIR_LEND_KERNEL } — the
 *   waiter sleeps in FUTEX_LOCK_PI on a word naming the helper: the kernel
 *   boosts it (kernel 30, set 10), and its signal ends that boost.
 *   argv[2] = "user": HEIR_LEND_USER — heir boosts the helper with
 *   sched_setattr (kernel 30, set 30).
 *
 * Every wait is bounded (5 s); exit status 0 if the program ran, 1 if a
 * call failed, 77 without permission for SCHED_FIFO.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <heir.h>
#include <pthread.h>
#include <sched.h>
#include <stdatomic.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

static heir_mutex_t m;
static heir_cond_t c;
static atomic_int waiting;
static int ready; /* under m */
static atomic_int helper_tid;
static uint64_t limit_ns;

static uint64_t now_ns(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}

static void sleep_us(long us)
{
	struct timespec ts = {0, us * 1000};
	nanosleep(&ts, NULL);
}

/* The real-time priority the kernel schedules the calling thread at: field
 * 18 of /proc/self/task/TID/stat is -1 - rt_priority for a real-time thread
 * (PI boosts included); -1 if it cannot be read. */
static int kernel_prio(void)
{
	char path[64], buf[1024];
	snprintf(path, sizeof path, "/proc/self/task/%d/stat", (int)heir_gettid());
	FILE *f = fopen(path, "r");
	if (!f)
		return -1;
	size_t n = fread(buf, 1, sizeof buf - 1, f);
	fclose(f);
	buf[n] = 0;
	char *p = strrchr(buf, ')');
	if (!p)
		return -1;
	/* After the command: state (field 3) ... priority (field 18). */
	p++;
	for (int field = 3; field < 18; field++) {
		p = strchr(p + 1, ' ');
		if (!p)
			return -1;
	}
	return -1 - atoi(p + 1);
}

/* The priority set with sched_setattr (no PI boost). */
static int set_prio(void)
{
	struct sched_param sp;
	if (sched_getparam(0, &sp))
		return -1;
	return sp.sched_priority;
}

static void *helper(void *arg)
{
	(void)arg;
	atomic_store(&helper_tid, (int)heir_gettid());
	/* Runs only once the waiter (more urgent, same CPU) has blocked. */
	while (!atomic_load(&waiting) && now_ns() < limit_ns)
		sleep_us(100);
	printf("helper while the waiter waits: kernel %d set %d\n", kernel_prio(),
	       set_prio());
	if (heir_mutex_lock(&m))
		return (void *)1;
	ready = 1;
	int r = heir_cond_signal(&c);
	if (heir_mutex_unlock(&m) || r)
		return (void *)1;
	printf("helper after its signal: kernel %d set %d\n", kernel_prio(),
	       set_prio());
	return NULL;
}

static void *waiter(void *arg)
{
	int *result = arg;
	struct timespec until = {(time_t)(limit_ns / 1000000000u),
				 (long)(limit_ns % 1000000000u)};
	if (heir_mutex_lock(&m))
		return (void *)1;
	atomic_store(&waiting, 1);
	int r = 0;
	while (!ready && r == 0)
		r = heir_cond_timedwait(&c, &m, &until);
	*result = r;
	return (void *)(intptr_t)heir_mutex_unlock(&m);
}

/* A SCHED_FIFO `prio` thread pinned to `cpu`. */
static int start(pthread_t *t, int cpu, int prio, void *(*f)(void *), void *arg)
{
	pthread_attr_t a;
	struct sched_param sp = {.sched_priority = prio};
	cpu_set_t set;
	CPU_ZERO(&set);
	CPU_SET(cpu, &set);
	pthread_attr_init(&a);
	pthread_attr_setinheritsched(&a, PTHREAD_EXPLICIT_SCHED);
	pthread_attr_setschedpolicy(&a, SCHED_FIFO);
	pthread_attr_setschedparam(&a, &sp);
	pthread_attr_setaffinity_np(&a, sizeof(set), &set);
	int r = pthread_create(t, &a, f, arg);
	pthread_attr_destroy(&a);
	return r;
}

int main(int argc, char **argv)
{
	if (argc < 3)
		return 1;
	int cpu = atoi(argv[1]);
	int kernel = strcmp(argv[2], "kernel") == 0;
	limit_ns = now_ns() + 5000000000u;

	heir_cond_t bad;
	heir_cond_attr_t attr = { .pshared = HEIR_PROCESS_PRIVATE, .lend = 7 };
	printf("unknown lend %s\n",
	       heir_cond_init(&bad, &attr) == EINVAL ? "EINVAL" : "accepted");
	attr.pshared = HEIR_PROCESS_SHARED;
	attr.lend = HEIR_LEND_USER;
	printf("process-shared %s\n",
	       heir_cond_init(&bad, &attr) == ENOTSUP ? "ENOTSUP" : "accepted");
	attr.pshared = HEIR_PROCESS_PRIVATE;
	attr.lend = kernel ? HEIR_LEND_KERNEL : HEIR_LEND_USER;
	if (heir_mutex_init(&m, NULL) || heir_cond_init(&c, &attr))
		return 1;

	pthread_t h, w;
	int r = start(&h, cpu, 10, helper, NULL);
	if (r == EPERM)
		return 77;
	if (r)
		return 1;
	while (!atomic_load(&helper_tid) && now_ns() < limit_ns)
		sleep_us(100);
	if (heir_cond_add_helper(&c, (pid_t)atomic_load(&helper_tid)))
		return 1;
	int result = -1;
	if (start(&w, cpu, 30, waiter, &result))
		return 1;
	void *hr, *wr;
	pthread_join(w, &wr);
	pthread_join(h, &hr);
	printf("waiter %s\n", result == 0 ? "woken" : strerror(result));
	printf("helper %s, waiter %s\n", hr ? "failed" : "ok", wr ? "failed" : "ok");
	if (heir_cond_destroy(&c) || heir_mutex_destroy(&m))
		return 1;
	return hr || wr ? 1 : 0;
}
