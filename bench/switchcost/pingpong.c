/* pingpong N: N round trips of one byte over two pipes between this process
   and a child it forks, both pinned to CPU 0, so that every round trip is
   two context switches and four system calls. Prints the CPU time (user +
   system, both processes) per round trip in ns: the figure holds on a busy
   machine better than the wall time, which it also prints. */
#define _GNU_SOURCE
#include <sched.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/resource.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

static double cpu_ns(int who)
{
	struct rusage r;
	getrusage(who, &r);
	return (r.ru_utime.tv_sec + r.ru_stime.tv_sec) * 1e9 + (r.ru_utime.tv_usec + r.ru_stime.tv_usec) * 1e3;
}

int main(int argc, char **argv)
{
	long n = argc > 1 ? atol(argv[1]) : 50000;
	int a[2], b[2];
	char c = 'x';
	cpu_set_t set;
	CPU_ZERO(&set);
	CPU_SET(0, &set);
	if (n <= 0 || sched_setaffinity(0, sizeof set, &set) || pipe(a) || pipe(b)) {
		fprintf(stderr, "usage: pingpong N (N > 0; needs CPU 0)\n");
		return 2;
	}
	struct timespec t0, t1;
	clock_gettime(CLOCK_MONOTONIC, &t0);
	double c0 = cpu_ns(RUSAGE_SELF);
	pid_t p = fork();
	if (p < 0)
		return 1;
	if (p == 0) {
		for (long i = 0; i < n; i++)
			if (read(a[0], &c, 1) != 1 || write(b[1], &c, 1) != 1)
				_exit(1);
		_exit(0);
	}
	for (long i = 0; i < n; i++)
		if (write(a[1], &c, 1) != 1 || read(b[0], &c, 1) != 1)
			return 1;
	int st;
	if (waitpid(p, &st, 0) != p || !WIFEXITED(st) || WEXITSTATUS(st) != 0)
		return 1;
	clock_gettime(CLOCK_MONOTONIC, &t1);
	double cpu = cpu_ns(RUSAGE_SELF) - c0 + cpu_ns(RUSAGE_CHILDREN);
	double wall = (t1.tv_sec - t0.tv_sec) * 1e9 + (t1.tv_nsec - t0.tv_nsec);
	printf("%.0f %.0f\n", cpu / n, wall / n);
	return 0;
}
