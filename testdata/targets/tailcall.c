/* tailcall.c: functions that end in calls GCC turns into jumps at -O2, so
 * that their frames are gone while their callees run.
 *
 *   main -> run (loop) -> step -> check (tail) -> work (tail) -> spin
 *
 * step calls check; check's last act is to call work, and work's to call
 * spin: both are jumps, so a stack sampled in spin holds spin, step, run,
 * main, and the return address in step is after its call of check.
 * Usage: tailcall [seconds] (default 2).
 */
#include <stdlib.h>
#include <time.h>

#define noinline __attribute__((noinline))

volatile unsigned long sink;

noinline void spin(unsigned long n)
{
	for (unsigned long i = 0; i < n; i++)
		sink += i * i;
}

noinline void work(unsigned long n)
{
	sink++;
	spin(n * 2);
}

noinline void check(unsigned long n)
{
	if (n & 1)
		sink--;
	work(n + 1);
}

noinline int step(unsigned long n)
{
	check(n);
	return (int)(sink & 1);
}

noinline void run(double seconds)
{
	struct timespec t0, t;
	clock_gettime(CLOCK_MONOTONIC, &t0);
	unsigned long n = 0;
	do {
		n += step(20000 + (n & 7));
		n++;
		clock_gettime(CLOCK_MONOTONIC, &t);
	} while ((double)(t.tv_sec - t0.tv_sec) + (double)(t.tv_nsec - t0.tv_nsec) / 1e9 < seconds);
}

int main(int argc, char **argv)
{
	run(argc > 1 ? atof(argv[1]) : 2);
	return 0;
}
