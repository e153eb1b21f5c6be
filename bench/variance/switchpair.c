/* Two threads hand a byte back and forth through two pipes, N times, on
 * one CPU (SWITCHPAIR_CPU, default 0): each round is two context switches
 * of threads that block in read(2) and two wake-ups each made by the
 * other thread. Prints its own CPU time per round (getrusage: the
 * threads' time, with what the kernel's hooks and BPF programs cost them)
 * and its wall time per round. A load for the cost per context switch of
 * culprit variance --sched (bench/variance-switchcost.sh). With
 * SWITCHPAIR_FIFO=PRIO both threads run SCHED_FIFO at PRIO: on a busy
 * machine no other task's thread takes their CPU from them then (but for
 * the kernel's RT throttling, 5% of each second), so that its CPU time per
 * round is not inflated by other tasks' turns on it.
 *
 *   switchpair N */
#define _GNU_SOURCE
#include <pthread.h>
#include <sched.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/resource.h>
#include <time.h>
#include <unistd.h>
static int a[2], b[2];
static long n;
__attribute__((noinline)) void handle(void) { __asm__ volatile(""); }
static void *pong(void *arg) {
	char c;
	(void)arg;
	for (long i = 0; i < n; i++) {
		if (read(a[0], &c, 1) != 1) exit(1);
		if (write(b[1], &c, 1) != 1) exit(1);
	}
	return NULL;
}
int main(int argc, char **argv) {
	n = argc > 1 ? atol(argv[1]) : 100000;
	const char *cpu = getenv("SWITCHPAIR_CPU");
	cpu_set_t set;
	CPU_ZERO(&set);
	CPU_SET(cpu ? atoi(cpu) : 0, &set);
	if (sched_setaffinity(0, sizeof set, &set) != 0) return 1;
	const char *fifo = getenv("SWITCHPAIR_FIFO");
	if (fifo && *fifo) {
		struct sched_param sp = {.sched_priority = atoi(fifo)};
		if (sched_setscheduler(0, SCHED_FIFO, &sp) != 0) {
			perror("switchpair: SCHED_FIFO");
			return 1;
		}
	}
	if (pipe(a) || pipe(b)) return 1;
	struct timespec t0, t1;
	pthread_t t;
	pthread_create(&t, NULL, pong, NULL);
	clock_gettime(CLOCK_MONOTONIC, &t0);
	char c = 'x';
	for (long i = 0; i < n; i++) {
		handle();
		if (write(a[1], &c, 1) != 1) exit(1);
		if (read(b[0], &c, 1) != 1) exit(1);
	}
	clock_gettime(CLOCK_MONOTONIC, &t1);
	pthread_join(t, NULL);
	struct rusage ru;
	getrusage(RUSAGE_SELF, &ru);
	double used = ru.ru_utime.tv_sec + ru.ru_utime.tv_usec / 1e6 + ru.ru_stime.tv_sec + ru.ru_stime.tv_usec / 1e6;
	double wall = (t1.tv_sec - t0.tv_sec) + (t1.tv_nsec - t0.tv_nsec) / 1e9;
	fprintf(stderr, "switchpair rounds %ld cpu_ns/round %.0f wall_ns/round %.0f\n", n, used * 1e9 / n, wall * 1e9 / n);
	return 0;
}
