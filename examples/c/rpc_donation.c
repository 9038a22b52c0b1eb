/*
 * A donating RPC endpoint (NOVA donation: timeslice donation and helping)
 * through the libheir C API.
 *
 * A server (SCHED_FIFO 10) serves a heir_rpc_t; a client (SCHED_FIFO 30)
 * calls it. While the client waits, the kernel runs the server at the
 * client's priority: the client sleeps in FUTEX_LOCK_PI on a word holding
 * the server's TID. The server reads its own effective priority from /proc
 * (sched_getparam shows only its own 10). A second call with a 10 ms
 * timeout aborts (ETIMEDOUT) while the server is still on it; the third
 * call finds the server busy with the aborted request, helps it finish
 * (the server runs at 30 again) and is then served. Both threads are
 * pinned to one CPU.
 *
 * Build:  cc -std=c11 rpc_donation.c $(pkg-config --cflags --libs heir) -lpthread
 * Run:    sudo ./a.out [CPU]     (needs permission for SCHED_FIFO)
 * Exit status: 0 on success, 1 on failure, 77 without SCHED_FIFO permission.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <pthread.h>
#include <sched.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "heir.h"

enum { QUIT = 0, PRIORITY = 1, SLOW = 2, ECHO = 3 };

static heir_rpc_t ep;
static pthread_barrier_t ready;
static int failed;

/* The kernel's effective SCHED_FIFO priority of the calling thread, PI
 * boost included (/proc's prio field is -1 - rt_priority). */
static int kernel_priority(void)
{
	char path[64], buf[1024];
	snprintf(path, sizeof(path), "/proc/self/task/%d/stat", (int)heir_gettid());
	FILE *f = fopen(path, "r");
	if (!f)
		return -1;
	size_t n = fread(buf, 1, sizeof(buf) - 1, f);
	fclose(f);
	buf[n] = 0;
	char *s = strrchr(buf, ')');
	if (!s || s[1] == 0)
		return -1;
	/* After ')': field 3 (state) is the 1st token, field 18 (prio) the 16th. */
	int field = 0;
	long v = 0;
	for (char *tok = strtok(s + 2, " "); tok; tok = strtok(NULL, " ")) {
		if (++field == 16) {
			v = strtol(tok, NULL, 10);
			break;
		}
	}
	return (int)(-v - 1);
}

static void deadline_in(struct timespec *ts, long ms)
{
	clock_gettime(CLOCK_MONOTONIC, ts);
	ts->tv_sec += ms / 1000;
	ts->tv_nsec += (ms % 1000) * 1000000L;
	if (ts->tv_nsec >= 1000000000L) {
		ts->tv_sec++;
		ts->tv_nsec -= 1000000000L;
	}
}

static void *server(void *arg)
{
	(void)arg;
	int rc = heir_rpc_add_server(&ep, 0, 0);
	pthread_barrier_wait(&ready);
	if (rc) {
		fprintf(stderr, "heir_rpc_add_server: %s\n", strerror(rc));
		failed = 1;
		return NULL;
	}
	for (;;) {
		void *req;
		struct timespec limit;
		deadline_in(&limit, 5000);
		if ((rc = heir_rpc_receive(&ep, &req, &limit))) {
			fprintf(stderr, "heir_rpc_receive: %s\n", strerror(rc));
			failed = 1;
			break;
		}
		intptr_t r = (intptr_t)req, resp = 0;
		if (r == PRIORITY || r == SLOW)
			resp = kernel_priority();
		if (r == SLOW) {
			struct timespec nap = { 0, 30000000 };
			nanosleep(&nap, NULL);
			printf("server finished the aborted request at priority %d\n",
			       kernel_priority());
		}
		if (r == ECHO)
			resp = ECHO;
		if ((rc = heir_rpc_reply(&ep, (void *)resp))) {
			fprintf(stderr, "heir_rpc_reply: %s\n", strerror(rc));
			failed = 1;
		}
		if (r == QUIT)
			break;
	}
	if ((rc = heir_rpc_remove_server(&ep, 0))) {
		fprintf(stderr, "heir_rpc_remove_server: %s\n", strerror(rc));
		failed = 1;
	}
	return NULL;
}

static void *client(void *arg)
{
	(void)arg;
	void *resp = NULL;
	struct timespec limit;
	int rc = heir_rpc_call(&ep, (void *)(intptr_t)PRIORITY, &resp, NULL);
	if (rc) {
		fprintf(stderr, "call: %s\n", strerror(rc));
		failed = 1;
		return NULL;
	}
	printf("server priority while serving: %d\n", (int)(intptr_t)resp);
	deadline_in(&limit, 10);
	rc = heir_rpc_call(&ep, (void *)(intptr_t)SLOW, &resp, &limit);
	printf("call with a 10 ms timeout: %s\n", rc == ETIMEDOUT ? "ETIMEDOUT" : strerror(rc));
	if (rc != ETIMEDOUT)
		failed = 1;
	deadline_in(&limit, 5000);
	rc = heir_rpc_call(&ep, (void *)(intptr_t)ECHO, &resp, &limit);
	if (rc || (intptr_t)resp != ECHO) {
		fprintf(stderr, "call after the abort: %s\n", strerror(rc));
		failed = 1;
	} else {
		printf("next call helped the server finish, then got reply %d\n",
		       (int)(intptr_t)resp);
	}
	if ((rc = heir_rpc_call(&ep, (void *)(intptr_t)QUIT, &resp, &limit))) {
		fprintf(stderr, "quit: %s\n", strerror(rc));
		failed = 1;
	}
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

int main(int argc, char **argv)
{
	int cpu = argc > 1 ? atoi(argv[1]) : 0;
	pthread_t srv, cli;
	int rc;

	if ((rc = heir_rpc_init(&ep))) {
		fprintf(stderr, "heir_rpc_init: %s\n", strerror(rc));
		return 1;
	}
	pthread_barrier_init(&ready, NULL, 2);
	rc = start(&srv, 10, cpu, server);
	if (rc == EPERM) {
		printf("SKIP: no permission for SCHED_FIFO\n");
		return 77;
	}
	if (rc) {
		fprintf(stderr, "pthread_create: %s\n", strerror(rc));
		return 1;
	}
	pthread_barrier_wait(&ready); /* the server has joined */
	if ((rc = start(&cli, 30, cpu, client))) {
		fprintf(stderr, "pthread_create: %s\n", strerror(rc));
		return 1;
	}
	pthread_join(cli, NULL);
	pthread_join(srv, NULL);
	rc = heir_rpc_destroy(&ep);
	printf("destroy: %d\n", rc);
	if (rc)
		failed = 1;
	return failed;
}
