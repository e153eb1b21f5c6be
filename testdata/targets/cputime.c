/* cputime [ROUNDS]: each round, outer() calls nap() (sleeps 20 ms) and
   work() (spins for about 20 ms of CPU time), and each says, in ns, what
   its thread did inside it; main prints "outer CPU", the thread's CPU time
   around each call of outer().

   nap prints "nap CPU WALL": the CPU time its thread used inside it
   (CLOCK_THREAD_CPUTIME_ID) and its wall time.

   work prints "work CPU WALL SCHED OUTSIDE SWITCHES": CPU and WALL as nap's;
   SCHED, the time the scheduler had the thread on a CPU during the spin
   (its wall time less what the thread waited on a run queue, from
   /proc/thread-self/schedstat), which unlike CPU includes time the
   hypervisor took the virtual CPU away; OUTSIDE, the thread's CPU time in
   work() before and after the spin; SWITCHES, the thread's context
   switches inside work() (getrusage). */
#define _GNU_SOURCE
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <time.h>
#include <unistd.h>

static volatile unsigned long sink;

static long clk(clockid_t c) {
	struct timespec ts;
	clock_gettime(c, &ts);
	return ts.tv_sec * 1000000000L + ts.tv_nsec;
}

static void say(const char *line) {
	ssize_t n = write(1, line, strlen(line));
	(void)n;
}

/* instant reads, as at one instant, the monotonic clock and how long the
   thread has waited on run queues (schedstat's second field): it retries
   while more than 50 us pass around the read (the thread was preempted in
   it, so the two would not agree). */
static void instant(long *mono, long *delay) {
	for (int try = 0;; try++) {
		char buf[128];
		long a = clk(CLOCK_MONOTONIC);
		int fd = open("/proc/thread-self/schedstat", O_RDONLY);
		ssize_t n = fd < 0 ? -1 : read(fd, buf, sizeof buf - 1);
		long b = clk(CLOCK_MONOTONIC);
		if (fd >= 0) close(fd);
		if (n <= 0) {
			say("cputime: cannot read /proc/thread-self/schedstat\n");
			exit(1);
		}
		buf[n] = 0;
		unsigned long run, wait;
		if (sscanf(buf, "%lu %lu", &run, &wait) != 2) {
			say("cputime: bad /proc/thread-self/schedstat\n");
			exit(1);
		}
		if (b - a <= 50000 || try >= 1000) {
			*mono = a;
			*delay = (long)wait;
			return;
		}
	}
}

static long switches(void) {
	struct rusage r;
	getrusage(RUSAGE_THREAD, &r);
	return r.ru_nvcsw + r.ru_nivcsw;
}

__attribute__((noinline)) void nap(void) {
	long c0 = clk(CLOCK_THREAD_CPUTIME_ID), w0 = clk(CLOCK_MONOTONIC);
	struct timespec ts = {0, 20000000};
	nanosleep(&ts, 0);
	char line[128];
	snprintf(line, sizeof line, "nap %ld %ld\n", clk(CLOCK_THREAD_CPUTIME_ID) - c0, clk(CLOCK_MONOTONIC) - w0);
	say(line);
}

__attribute__((noinline)) void work(void) {
	long c0 = clk(CLOCK_THREAD_CPUTIME_ID), w0 = clk(CLOCK_MONOTONIC);
	long sw0 = switches(), m0, d0, m1, d1;
	instant(&m0, &d0);
	long s0 = clk(CLOCK_THREAD_CPUTIME_ID);
	while (clk(CLOCK_THREAD_CPUTIME_ID) - c0 < 20000000)
		for (int i = 0; i < 1000; i++) sink += i;
	long s1 = clk(CLOCK_THREAD_CPUTIME_ID);
	instant(&m1, &d1);
	long sw1 = switches();
	char line[160];
	long c1 = clk(CLOCK_THREAD_CPUTIME_ID), w1 = clk(CLOCK_MONOTONIC);
	snprintf(line, sizeof line, "work %ld %ld %ld %ld %ld\n", c1 - c0, w1 - w0, (m1 - m0) - (d1 - d0),
	         (c1 - c0) - (s1 - s0), sw1 - sw0);
	say(line);
}

__attribute__((noinline)) void outer(void) {
	nap();
	work();
}

int main(int argc, char **argv) {
	int rounds = argc > 1 ? atoi(argv[1]) : 5;
	for (int r = 0; r < rounds; r++) {
		long c0 = clk(CLOCK_THREAD_CPUTIME_ID);
		outer();
		char line[64];
		snprintf(line, sizeof line, "outer %ld\n", clk(CLOCK_THREAD_CPUTIME_ID) - c0);
		say(line);
	}
	return 0;
}
