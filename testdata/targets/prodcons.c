// prodcons: a producer thread hands items to a consumer thread over a
// queue guarded by a mutex and a condition variable. The consumer blocks on
// the condition variable whenever the queue is empty, so every one of its
// waits is ended by the producer. The producer works (spins) before each
// item and queues it only once the consumer waits for it (a flag the
// consumer sets under the mutex before it waits), so the consumer waits for
// every item however the threads are scheduled. Prints the threads' TIDs
// so that tests can check the waker.
#define _GNU_SOURCE
#include <pthread.h>
#include <sched.h>
#include <stdio.h>
#include <stdlib.h>
#include <unistd.h>
#include <sys/syscall.h>

#define QSIZE 4

static pthread_mutex_t mu = PTHREAD_MUTEX_INITIALIZER;
static pthread_cond_t nonempty = PTHREAD_COND_INITIALIZER;
static int queue[QSIZE];
static int head, tail, count, done, waiting;
static volatile unsigned long sink;

__attribute__((noinline)) static void produce_work(int n) {
	for (long i = 0; i < 200000L * n; i++)
		sink += i;
}

__attribute__((noinline)) static void consume_item(int v) {
	for (long i = 0; i < 20000L; i++)
		sink += v ^ i;
}

static void *producer(void *arg) {
	int items = *(int *)arg;
	printf("producer %ld\n", (long)syscall(SYS_gettid));
	fflush(stdout);
	for (int i = 0; i < items; i++) {
		produce_work(1 + i % 3);
		pthread_mutex_lock(&mu);
		while (!waiting) { // until the consumer waits in pthread_cond_wait
			pthread_mutex_unlock(&mu);
			sched_yield();
			pthread_mutex_lock(&mu);
		}
		waiting = 0;
		queue[tail] = i;
		tail = (tail + 1) % QSIZE;
		count++;
		pthread_cond_signal(&nonempty);
		pthread_mutex_unlock(&mu);
	}
	pthread_mutex_lock(&mu);
	done = 1;
	pthread_cond_signal(&nonempty);
	pthread_mutex_unlock(&mu);
	return NULL;
}

static void *consumer(void *arg) {
	(void)arg;
	printf("consumer %ld\n", (long)syscall(SYS_gettid));
	fflush(stdout);
	for (;;) {
		pthread_mutex_lock(&mu);
		while (count == 0 && !done) {
			waiting = 1;
			pthread_cond_wait(&nonempty, &mu);
		}
		if (count == 0 && done) {
			pthread_mutex_unlock(&mu);
			return NULL;
		}
		int v = queue[head];
		head = (head + 1) % QSIZE;
		count--;
		pthread_mutex_unlock(&mu);
		consume_item(v);
	}
}

int main(int argc, char **argv) {
	int items = argc > 1 ? atoi(argv[1]) : 200;
	pthread_t p, c;
	pthread_create(&c, NULL, consumer, NULL);
	pthread_create(&p, NULL, producer, &items);
	pthread_join(p, NULL);
	pthread_join(c, NULL);
	return 0;
}
