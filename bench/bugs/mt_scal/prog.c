/* A thread pool: worker threads take tasks from a shared queue under a
 * mutex. A task is pinned to a worker class; find_task scans the queue for
 * the first task of the caller's class.
 *
 * The bug (scalability): the queue is a list scanned from its head, and
 * with a deep queue (the buggy configuration's g_queue_depth) tasks of a
 * class are far from the head: every take walks hundreds of entries,
 * calling task_matches on each, under the queue lock.
 *
 *   prog normal|buggy
 */
#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define noinline __attribute__((noinline))
#define TASKS 240000

long g_threads = 2;
long g_queue_depth = 16;
long g_classes = 4;

struct task {
	int cls;
	uint64_t seed;
	struct task *next;
};

struct queue {
	pthread_mutex_t mu;
	struct task *head;
	long len;
	long produced;
};

static struct queue q = {.mu = PTHREAD_MUTEX_INITIALIZER};

noinline int task_matches(const struct task *t, int cls) { return t->cls == cls; }

/* find_task is the root cause: a linear scan of the queue. */
noinline struct task *find_task(struct queue *qu, int cls)
{
	struct task **pp = &qu->head;
	long scanned = 0;
	for (; *pp; pp = &(*pp)->next, scanned++)
		if (task_matches(*pp, cls)) {
			struct task *t = *pp;
			*pp = t->next;
			qu->len--;
			return t;
		}
	return NULL;
}

static uint64_t rng_next(uint64_t *s)
{
	*s ^= *s << 13;
	*s ^= *s >> 7;
	*s ^= *s << 17;
	return *s;
}

/* refill keeps the queue at g_queue_depth tasks: classes skewed so that a
 * class's tasks are spread through the list. */
noinline void refill(struct queue *qu, uint64_t *rs)
{
	while (qu->len < g_queue_depth && qu->produced < TASKS) {
		struct task *t = malloc(sizeof *t);
		uint64_t r = rng_next(rs);
		t->cls = (int)(r % 16 == 0 ? r % g_classes : 0);
		t->seed = r;
		t->next = qu->head;
		qu->head = t;
		qu->len++;
		qu->produced++;
	}
}

noinline uint64_t do_task(struct task *t)
{
	uint64_t x = t->seed;
	for (int i = 0; i < 2500; i++)
		x = x * 6364136223846793005ull + 1442695040888963407ull;
	return x;
}

noinline void *worker(void *arg)
{
	int cls = (int)(uintptr_t)arg;
	uint64_t rs = 0x12345678ull + (uint64_t)cls, sum = 0;
	for (;;) {
		pthread_mutex_lock(&q.mu);
		refill(&q, &rs);
		struct task *t = find_task(&q, cls);
		if (!t)
			t = find_task(&q, 0);
		int done = !t && q.produced >= TASKS;
		pthread_mutex_unlock(&q.mu);
		if (done)
			break;
		if (t) {
			sum += do_task(t);
			free(t);
		}
	}
	return (void *)(uintptr_t)sum;
}

int main(int argc, char **argv)
{
	if (argc > 1 && strcmp(argv[1], "buggy") == 0) {
		g_queue_depth = 2000;
		g_threads = 3;
	}
	pthread_t th[8];
	for (long i = 0; i < g_threads; i++)
		pthread_create(&th[i], NULL, worker, (void *)(uintptr_t)(1 + i % (g_classes - 1)));
	uint64_t s = 0;
	for (long i = 0; i < g_threads; i++) {
		void *r;
		pthread_join(th[i], &r);
		s += (uintptr_t)r;
	}
	printf("%llx\n", (unsigned long long)s);
	return 0;
}
