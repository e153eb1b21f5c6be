/* A proxy that reconfigures its upstream pool every epoch: opens all
 * connections, serves traffic, lets idle connections expire, and closes the
 * pool (libconn's pool_close_all). A statistics thread runs throughout.
 *
 * The buggy input has a short idle timeout: many connections expire before
 * the pool is closed, and pool_close_all drains each of them to a timeout.
 *
 *   prog normal|buggy
 */
#include <pthread.h>
#include <stdatomic.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "conn.h"

#define noinline __attribute__((noinline))
#define EPOCHS 1500
#define CONNS 48

long g_idle_expire_every = 0; /* 0: none expire */
atomic_int stats_stop;

noinline void expire_idle(struct pool *p, int epoch)
{
	for (int i = 0; i < CONNS; i++)
		if (g_idle_expire_every && (i + epoch) % g_idle_expire_every == 0)
			pool_mark_closed(p, i);
}

noinline uint64_t run_epoch(struct pool *p, int epoch)
{
	pool_open_all(p);
	uint64_t s = pool_traffic(p, 24);
	expire_idle(p, epoch);
	s += (uint64_t)pool_close_all(p);
	return s;
}

noinline uint64_t proxy(void)
{
	struct pool *p = pool_new(CONNS);
	uint64_t s = 0;
	for (int e = 0; e < EPOCHS; e++)
		s += run_epoch(p, e);
	return s;
}

noinline uint64_t stats_summarise(uint64_t *v, int n)
{
	uint64_t s = 0;
	for (int i = 0; i < n; i++)
		s += v[i] * v[(i * 7) % n];
	return s;
}

noinline void *stats_thread(void *arg)
{
	(void)arg;
	uint64_t v[4096], s = 0;
	for (int i = 0; i < 4096; i++)
		v[i] = (uint64_t)i * 2654435761u;
	while (!atomic_load_explicit(&stats_stop, memory_order_relaxed))
		s += stats_summarise(v, 4096);
	return (void *)(uintptr_t)s;
}

int main(int argc, char **argv)
{
	if (argc > 1 && strcmp(argv[1], "buggy") == 0)
		g_idle_expire_every = 3;
	pthread_t th;
	pthread_create(&th, NULL, stats_thread, NULL);
	uint64_t s = proxy();
	atomic_store(&stats_stop, 1);
	pthread_join(th, NULL);
	printf("%llx\n", (unsigned long long)s);
	return 0;
}
