/*
 * heir.h's static initialisers from C (run by tests/rt/capi.rs): every
 * heir object here is a static made with HEIR_MUTEX_INITIALIZER,
 * HEIR_COND_INITIALIZER or HEIR_CEILING_MUTEX_INITIALIZER; no *_init call
 * is made (the attribute checks at the end call init on purpose, on
 * objects of their own).
 *
 *   exclusion  two threads, unpinned, start together and each take the
 *              same never-used static mutex 200000 times (racing to make
 *              its state), incrementing a plain counter; then hand 1000
 *              tokens to each other through a static condition variable.
 *   boost      a SCHED_FIFO 10 thread holds a static mutex; a SCHED_FIFO
 *              30 thread on the same CPU (argv[1]) blocks on it: the
 *              holder runs at 30 (the kernel's PI boost, and heir's
 *              engine's), at 10 after.
 *   ceiling    a static ceiling mutex (ceiling 20): its holder runs at 20;
 *              trylock and timedlock from another thread are refused;
 *              heir_cond_timedwait_ceiling on a static condition variable.
 *
 * Every wait is bounded; each line printed is checked by the test. Exit
 * status 0 if the program ran, 1 if a call failed, 77 without permission
 * for SCHED_FIFO.
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
#include <unistd.h>

#define ROUNDS 200000
#define TOKENS 1000

static heir_mutex_t xm = HEIR_MUTEX_INITIALIZER;
static heir_cond_t xc = HEIR_COND_INITIALIZER;
static long counter;      /* under xm */
static int turn;          /* under xm: whose token it is (0 or 1) */
static pthread_barrier_t go;

static heir_mutex_t pm = HEIR_MUTEX_INITIALIZER;
static atomic_int held, waiting;

static heir_ceiling_mutex_t cm = HEIR_CEILING_MUTEX_INITIALIZER(20);
static heir_cond_t cc = HEIR_COND_INITIALIZER;
static int ready; /* under cm */

static heir_mutex_t unused = HEIR_MUTEX_INITIALIZER;
static heir_ceiling_mutex_t bad_ceiling = HEIR_CEILING_MUTEX_INITIALIZER(0);

static const char *err(int r)
{
	switch (r) {
	case 0: return "0";
	case EINVAL: return "EINVAL";
	case EBUSY: return "EBUSY";
	case EPERM: return "EPERM";
	case EDEADLK: return "EDEADLK";
	case ETIMEDOUT: return "ETIMEDOUT";
	case ENOTSUP: return "ENOTSUP";
	default: return strerror(r);
	}
}

static struct timespec after_ms(long ms)
{
	struct timespec t;
	clock_gettime(CLOCK_MONOTONIC, &t);
	t.tv_sec += ms / 1000;
	t.tv_nsec += (ms % 1000) * 1000000L;
	if (t.tv_nsec >= 1000000000L) {
		t.tv_sec++;
		t.tv_nsec -= 1000000000L;
	}
	return t;
}

static void sleep_us(long us)
{
	struct timespec ts = {0, us * 1000};
	nanosleep(&ts, NULL);
}

/* The real-time priority the kernel schedules the calling thread at (PI
 * boosts included): field 18 of /proc/self/task/TID/stat is
 * -1 - rt_priority; -1 if it cannot be read. */
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
	p++;
	for (int field = 3; field < 18; field++) {
		p = strchr(p + 1, ' ');
		if (!p)
			return -1;
	}
	return -1 - atoi(p + 1);
}

/* The priority set with sched_setattr (by heir's engine too; not the
 * kernel's PI boost). */
static int set_prio(void)
{
	struct sched_param sp;
	if (sched_getparam(0, &sp))
		return -1;
	return sp.sched_priority;
}

/* A thread: SCHED_FIFO `prio` pinned to `cpu`, or (prio 0) unpinned with
 * the creator's attributes. */
static int start(pthread_t *t, int cpu, int prio, void *(*f)(void *), void *arg)
{
	pthread_attr_t a;
	pthread_attr_init(&a);
	if (prio) {
		struct sched_param sp = {.sched_priority = prio};
		cpu_set_t set;
		CPU_ZERO(&set);
		CPU_SET(cpu, &set);
		pthread_attr_setinheritsched(&a, PTHREAD_EXPLICIT_SCHED);
		pthread_attr_setschedpolicy(&a, SCHED_FIFO);
		pthread_attr_setschedparam(&a, &sp);
		pthread_attr_setaffinity_np(&a, sizeof(set), &set);
	}
	int r = pthread_create(t, &a, f, arg);
	pthread_attr_destroy(&a);
	return r;
}

/* ------------------------------------------------------------ exclusion */

static void *worker(void *arg)
{
	int me = (int)(intptr_t)arg;
	pthread_barrier_wait(&go);
	for (int i = 0; i < ROUNDS; i++) {
		if (heir_mutex_lock(&xm))
			return (void *)1;
		long v = counter;
		/* A window for the other thread to interleave, were it not
		 * excluded. */
		if (i % 1024 == 0)
			sched_yield();
		counter = v + 1;
		if (heir_mutex_unlock(&xm))
			return (void *)1;
	}
	struct timespec until = after_ms(10000);
	for (int i = 0; i < TOKENS; i++) {
		if (heir_mutex_lock(&xm))
			return (void *)1;
		int r = 0;
		while (turn != me && r == 0)
			r = heir_cond_timedwait(&xc, &xm, &until);
		if (r) {
			heir_mutex_unlock(&xm);
			return (void *)2;
		}
		turn = 1 - me;
		r = heir_cond_broadcast(&xc);
		if (heir_mutex_unlock(&xm) || r)
			return (void *)1;
	}
	return NULL;
}

static int run_exclusion(void)
{
	pthread_t a, b;
	void *ra, *rb;
	pthread_barrier_init(&go, NULL, 2);
	if (start(&a, 0, 0, worker, (void *)0) || start(&b, 0, 0, worker, (void *)1))
		return 1;
	pthread_join(a, &ra);
	pthread_join(b, &rb);
	pthread_barrier_destroy(&go);
	printf("exclusion: threads %d %d, counter %ld of %d\n", (int)(intptr_t)ra,
	       (int)(intptr_t)rb, counter, 2 * ROUNDS);
	printf("tokens passed: %s\n", ra == NULL && rb == NULL ? "all" : "not all");
	return 0;
}

/* ---------------------------------------------------------------- boost */

static void *holder(void *arg)
{
	(void)arg;
	if (heir_mutex_lock(&pm))
		return (void *)1;
	atomic_store(&held, 1);
	/* Runs again only once the FIFO 30 contender on this CPU blocked. */
	struct timespec limit = after_ms(5000);
	while (!atomic_load(&waiting)) {
		struct timespec now;
		clock_gettime(CLOCK_MONOTONIC, &now);
		if (now.tv_sec > limit.tv_sec)
			break;
		sleep_us(100);
	}
	sleep_us(2000);
	printf("holder while contended: kernel %d set %d\n", kernel_prio(), set_prio());
	if (heir_mutex_unlock(&pm))
		return (void *)1;
	printf("holder after unlock: kernel %d set %d\n", kernel_prio(), set_prio());
	return NULL;
}

static void *contender(void *arg)
{
	(void)arg;
	atomic_store(&waiting, 1);
	int r = heir_mutex_lock(&pm);
	printf("contender lock: %s\n", err(r));
	printf("contender relock: %s\n", err(heir_mutex_trylock(&pm)));
	return (void *)(intptr_t)(r || heir_mutex_unlock(&pm));
}

static int run_boost(int cpu)
{
	pthread_t h, c;
	void *rh, *rc;
	int r = start(&h, cpu, 10, holder, NULL);
	if (r == EPERM)
		return 77;
	if (r)
		return 1;
	while (!atomic_load(&held))
		sleep_us(100);
	if (start(&c, cpu, 30, contender, NULL))
		return 1;
	pthread_join(c, &rc);
	pthread_join(h, &rh);
	printf("boost threads: %d %d\n", (int)(intptr_t)rh, (int)(intptr_t)rc);
	return 0;
}

/* -------------------------------------------------------------- ceiling */

static atomic_int locked;

static void *ceiling_owner(void *arg)
{
	(void)arg;
	int r = heir_ceiling_mutex_lock(&cm);
	printf("ceiling lock: %s at %d\n", err(r), set_prio());
	printf("ceiling relock by its owner: %s\n", err(heir_ceiling_mutex_lock(&cm)));
	atomic_store(&locked, 1);
	while (atomic_load(&locked) == 1)
		sleep_us(100);
	r = heir_ceiling_mutex_unlock(&cm);
	printf("ceiling unlock: %s, back at %d\n", err(r), set_prio());
	return NULL;
}

static void *ceiling_waiter(void *arg)
{
	(void)arg;
	struct timespec until = after_ms(5000);
	if (heir_ceiling_mutex_lock(&cm))
		return (void *)1;
	atomic_store(&waiting, 2);
	int r = 0;
	while (!ready && r == 0)
		r = heir_cond_timedwait_ceiling(&cc, &cm, &until);
	printf("wait_ceiling: %s ready %d at %d\n", err(r), ready, set_prio());
	return (void *)(intptr_t)(heir_ceiling_mutex_unlock(&cm) || r);
}

static int run_ceiling(int cpu)
{
	pthread_t o, w;
	void *ro, *rw;
	if (start(&o, cpu, 5, ceiling_owner, NULL))
		return 1;
	while (!atomic_load(&locked))
		sleep_us(100);
	/* The main thread contends (unpinned, SCHED_OTHER). */
	printf("ceiling trylock while held: %s\n", err(heir_ceiling_mutex_trylock(&cm)));
	struct timespec soon = after_ms(20);
	printf("ceiling timedlock while held: %s\n",
	       err(heir_ceiling_mutex_timedlock(&cm, &soon)));
	atomic_store(&locked, 2);
	pthread_join(o, &ro);

	atomic_store(&waiting, 0);
	if (start(&w, cpu, 5, ceiling_waiter, NULL))
		return 1;
	while (atomic_load(&waiting) != 2)
		sleep_us(100);
	struct timespec later = after_ms(5000);
	int r = heir_ceiling_mutex_timedlock(&cm, &later);
	if (r)
		return 1;
	ready = 1;
	r = heir_cond_signal(&cc);
	if (heir_ceiling_mutex_unlock(&cm) || r)
		return 1;
	pthread_join(w, &rw);
	printf("ceiling threads: %d %d\n", (int)(intptr_t)ro, (int)(intptr_t)rw);
	return 0;
}

int main(int argc, char **argv)
{
	if (argc < 2)
		return 1;
	int cpu = atoi(argv[1]);
	/* A hang is a failure: SIGALRM ends the program. */
	alarm(60);

	if (run_exclusion())
		return 1;
	int r = run_boost(cpu);
	if (r)
		return r;
	if (run_ceiling(cpu))
		return 1;

	heir_mutex_t zeroed;
	memset(&zeroed, 0, sizeof zeroed);
	printf("zeroed mutex: %s\n", err(heir_mutex_lock(&zeroed)));
	printf("bad static ceiling: %s\n", err(heir_ceiling_mutex_lock(&bad_ceiling)));
	printf("destroy unused static: %s\n", err(heir_mutex_destroy(&unused)));
	printf("lock after destroy: %s\n", err(heir_mutex_lock(&unused)));
	printf("destroy used static: %s %s %s\n", err(heir_mutex_destroy(&xm)),
	       err(heir_cond_destroy(&xc)), err(heir_ceiling_mutex_destroy(&cm)));

	heir_mutex_t shared;
	heir_mutex_attr_t ma = {.pshared = HEIR_PROCESS_SHARED};
	printf("process-shared mutex: %s\n", err(heir_mutex_init(&shared, &ma)));
	return 0;
}
