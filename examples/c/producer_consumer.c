/*
 * Producer/consumer with PI-CV helpers (the PI-CV paper's Fig. 5 and 6) through the
 * libheir C API.
 *
 * A consumer (SCHED_FIFO 30) pops 5 items from a heir_queue_t; a producer
 * (SCHED_FIFO 10) is declared the queue's producer, i.e. a helper of the
 * queue's "more" condition: while the consumer waits for an item, the
 * producer runs at priority 30. Both threads are pinned to one CPU.
 *
 * Build:  cc -std=c11 producer_consumer.c $(pkg-config --cflags --libs heir) -lpthread
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

#define ITEMS 5

static heir_queue_t queue;
static pthread_barrier_t ready;
static int failed;

static uint64_t now_ns(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}

/* Busy work with a wall-clock bound (never spin forever at RT priority). */
static void work_ms(unsigned ms)
{
	uint64_t end = now_ns() + (uint64_t)ms * 1000000u;
	while (now_ns() < end)
		;
}

/* The kernel's view (glibc's pthread_getschedparam may answer from a cache). */
static int my_priority(void)
{
	struct sched_param p;
	if (sched_getparam(0, &p))
		return -1;
	return p.sched_priority;
}

static void *producer(void *arg)
{
	pid_t *tid = arg;
	*tid = heir_gettid();
	pthread_barrier_wait(&ready); /* main declares us the producer */
	pthread_barrier_wait(&ready); /* the consumer is waiting now */
	for (intptr_t i = 0; i < ITEMS; i++) {
		work_ms(2);
		if (i == 0)
			printf("producer priority while consumer waits: %d\n", my_priority());
		int rc = heir_queue_push(&queue, (void *)i);
		if (rc) {
			fprintf(stderr, "push: %s\n", strerror(rc));
			failed = 1;
			return NULL;
		}
		if (i == 0)
			printf("producer priority after the push: %d\n", my_priority());
	}
	return NULL;
}

static void *consumer(void *arg)
{
	(void)arg;
	struct timespec rest = { 0, 5000000 };
	int in_order = 1;
	for (intptr_t i = 0; i < ITEMS; i++) {
		void *item;
		struct timespec deadline;
		clock_gettime(CLOCK_MONOTONIC, &deadline);
		deadline.tv_sec += 5;
		int rc = heir_queue_timedpop(&queue, &item, &deadline);
		if (rc) {
			fprintf(stderr, "pop: %s\n", strerror(rc));
			failed = 1;
			return NULL;
		}
		if ((intptr_t)item != i)
			in_order = 0;
		nanosleep(&rest, NULL);
	}
	if (in_order)
		printf("consumed %d items in priority order\n", ITEMS);
	else
		failed = 1;
	return NULL;
}

static int start(pthread_t *t, int prio, int cpu, void *(*fn)(void *), void *arg)
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
	int rc = pthread_create(t, &a, fn, arg);
	pthread_attr_destroy(&a);
	return rc;
}

int main(int argc, char **argv)
{
	int cpu = argc > 1 ? atoi(argv[1]) : 0;
	pthread_t prod, cons;
	pid_t prod_tid = 0;
	int rc;

	if ((rc = heir_queue_init(&queue, 8))) {
		fprintf(stderr, "heir_queue_init: %s\n", strerror(rc));
		return 1;
	}
	pthread_barrier_init(&ready, NULL, 2);
	rc = start(&prod, 10, cpu, producer, &prod_tid);
	if (rc == EPERM) {
		printf("SKIP: no permission for SCHED_FIFO\n");
		return 77;
	}
	if (rc) {
		fprintf(stderr, "pthread_create: %s\n", strerror(rc));
		return 1;
	}
	pthread_barrier_wait(&ready);
	if ((rc = heir_queue_add_producer(&queue, prod_tid))) {
		fprintf(stderr, "heir_queue_add_producer: %s\n", strerror(rc));
		return 1;
	}
	if ((rc = start(&cons, 30, cpu, consumer, NULL))) {
		fprintf(stderr, "pthread_create: %s\n", strerror(rc));
		return 1;
	}
	/* Give the consumer time to block on the empty queue. */
	struct timespec settle = { 0, 20000000 };
	nanosleep(&settle, NULL);
	pthread_barrier_wait(&ready);
	pthread_join(prod, NULL);
	pthread_join(cons, NULL);
	if (heir_check_invariants()) {
		fprintf(stderr, "heir invariants violated\n");
		failed = 1;
	}
	heir_queue_destroy(&queue);
	return failed;
}
