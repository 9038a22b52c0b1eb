/*
 * The GPM paper's Fig. 1 through the libheir C API: a barrier on a gang, without
 * and with gang priority management (GPM).
 *
 * All threads are SCHED_FIFO on one CPU. T_L (priority 10) is an active
 * member of the barrier and has 20 ms of work before its barrier point;
 * T_M (priority 20, no member) busy-loops from 2 ms to 102 ms; T_H
 * (priority 30, a passive member: it makes the gang priority 30) starts
 * the barrier at 4 ms and waits for its completion. Without GPM, T_M keeps
 * T_L from its barrier point until T_M stops (priority inversion); with
 * GPM, heir_barrier_start boosts T_L to 30 and the barrier completes
 * about 80 ms earlier.
 *
 * Build:  cc -std=c11 gang_barrier.c $(pkg-config --cflags --libs heir) -lpthread
 * Run:    sudo ./a.out [CPU]     (needs permission for SCHED_FIFO)
 * Exit status: 0 on success, 1 on failure, 77 without SCHED_FIFO permission.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <poll.h>
#include <pthread.h>
#include <sched.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "heir.h"

#define MS 1000000ull

static heir_barrier_t barrier;
static pthread_barrier_t ready;
static uint64_t t0, limit;
static volatile pid_t l_tid;
static uint64_t l_arrives, m_ends, h_completes;
static int l_prio_boosted, l_prio_after, fd_during, fd_after, second_start;
static int failed;

static uint64_t clock_ns(clockid_t c)
{
	struct timespec ts;
	clock_gettime(c, &ts);
	return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}

static uint64_t now_ns(void) { return clock_ns(CLOCK_MONOTONIC); }

static struct timespec at(uint64_t ns)
{
	struct timespec ts = { (time_t)(ns / 1000000000u), (long)(ns % 1000000000u) };
	return ts;
}

static void sleep_until(uint64_t ns)
{
	struct timespec ts = at(ns);
	while (clock_nanosleep(CLOCK_MONOTONIC, TIMER_ABSTIME, &ts, NULL) == EINTR)
		;
}

/* The priority set for `tid` (heir sets a gang boost with sched_setattr). */
static int priority_of(pid_t tid)
{
	struct sched_param p;
	if (sched_getparam(tid, &p))
		return -1;
	return p.sched_priority;
}

static int readable(int fd)
{
	struct pollfd p = { .fd = fd, .events = POLLIN };
	return poll(&p, 1, 0) == 1 && (p.revents & POLLIN);
}

static void check(int rc, const char *what)
{
	if (rc) {
		fprintf(stderr, "%s: %s\n", what, strerror(rc));
		failed = 1;
	}
}

static void *t_l(void *arg)
{
	(void)arg;
	check(heir_barrier_add_member(&barrier, 0, 1), "T_L join");
	l_tid = heir_gettid();
	pthread_barrier_wait(&ready);
	sleep_until(t0);
	/* 20 ms of CPU time, bounded by the wall clock. */
	uint64_t start = clock_ns(CLOCK_THREAD_CPUTIME_ID);
	while (clock_ns(CLOCK_THREAD_CPUTIME_ID) - start < 20 * MS && now_ns() < limit)
		;
	l_arrives = now_ns() - t0;
	struct timespec deadline = at(limit);
	int released = 0;
	check(heir_barrier_point(&barrier, &deadline, &released), "T_L barrier point");
	if (!released)
		failed = 1;
	l_prio_after = priority_of(0);
	check(heir_barrier_remove_member(&barrier, 0), "T_L leave");
	return NULL;
}

static void *t_m(void *arg)
{
	(void)arg;
	pthread_barrier_wait(&ready);
	sleep_until(t0 + 2 * MS);
	while (now_ns() < t0 + 102 * MS)
		;
	m_ends = now_ns() - t0;
	return NULL;
}

static void *t_h(void *arg)
{
	(void)arg;
	int fd = -1;
	uint32_t active = 0;
	check(heir_barrier_add_member(&barrier, 0, 0), "T_H join");
	check(heir_barrier_fd(&barrier, &fd), "heir_barrier_fd");
	pthread_barrier_wait(&ready);
	sleep_until(t0 + 4 * MS);
	check(heir_barrier_start(&barrier, &active), "heir_barrier_start");
	if (active != 1)
		failed = 1;
	l_prio_boosted = priority_of(l_tid);
	fd_during = readable(fd);
	second_start = heir_barrier_start(&barrier, NULL);
	struct timespec deadline = at(limit);
	check(heir_barrier_wait(&barrier, &deadline), "heir_barrier_wait");
	h_completes = now_ns() - t0;
	fd_after = readable(fd);
	check(heir_barrier_release(&barrier), "heir_barrier_release");
	check(heir_barrier_remove_member(&barrier, 0), "T_H leave");
	return NULL;
}

static int start(pthread_t *t, int prio, int cpu, void *(*fn)(void *))
{
	pthread_attr_t a;
	struct sched_param p = { .sched_priority = prio };
	cpu_set_t set;
	CPU_ZERO(&set);
	CPU_SET(cpu, &set);
	pthread_attr_init(&a);
	pthread_attr_setinheritsched(&a, PTHREAD_EXPLICIT_SCHED);
	pthread_attr_setschedpolicy(&a, SCHED_FIFO);
	pthread_attr_setschedparam(&a, &p);
	pthread_attr_setaffinity_np(&a, sizeof(set), &set);
	int rc = pthread_create(t, &a, fn, NULL);
	pthread_attr_destroy(&a);
	return rc;
}

/* One run of Fig. 1; returns 0, 1 on failure, 77 without SCHED_FIFO. */
static int fig1(int cpu, int gpm)
{
	const char *name = gpm ? "gpm on" : "gpm off";
	pthread_t l, m, h;
	int rc;
	if ((rc = heir_barrier_init(&barrier, gpm))) {
		fprintf(stderr, "heir_barrier_init: %s\n", strerror(rc));
		return 1;
	}
	pthread_barrier_init(&ready, NULL, 4);
	t0 = now_ns() + 50 * MS;
	limit = t0 + 3000 * MS;
	rc = start(&l, 10, cpu, t_l);
	if (rc == EPERM) {
		printf("SKIP: no permission for SCHED_FIFO\n");
		return 77;
	}
	if (rc || start(&m, 20, cpu, t_m) || start(&h, 30, cpu, t_h)) {
		fprintf(stderr, "pthread_create failed\n");
		return 1;
	}
	pthread_barrier_wait(&ready);
	pthread_join(l, NULL);
	pthread_join(m, NULL);
	pthread_join(h, NULL);
	pthread_barrier_destroy(&ready);
	check(heir_barrier_destroy(&barrier), "heir_barrier_destroy");
	printf("%s: T_L at its point %.1f ms, T_M done %.1f ms, barrier complete %.1f ms\n", name,
	       l_arrives / 1e6, m_ends / 1e6, h_completes / 1e6);
	printf("%s: T_L priority while the barrier runs: %d\n", name, l_prio_boosted);
	printf("%s: T_L reached its point %s T_M stopped\n", name,
	       l_arrives < m_ends ? "before" : "after");
	printf("%s: barrier complete %s T_M stopped\n", name,
	       h_completes < m_ends ? "before" : "after");
	printf("%s: T_L priority after release: %d\n", name, l_prio_after);
	printf("%s: fd readable while running %d, after completion %d\n", name, fd_during,
	       fd_after);
	printf("%s: second start while active: %s\n", name,
	       second_start == EBUSY ? "EBUSY" : strerror(second_start));
	return 0;
}

int main(int argc, char **argv)
{
	int cpu = argc > 1 ? atoi(argv[1]) : 0;
	for (int gpm = 0; gpm <= 1; gpm++) {
		int rc = fig1(cpu, gpm);
		if (rc)
			return rc;
	}
	if (heir_check_invariants()) {
		fprintf(stderr, "heir invariants violated\n");
		failed = 1;
	}
	return failed;
}
