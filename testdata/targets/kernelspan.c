/* Long stretches of a thread's CPU time that a ptrace stop cannot split.
 *
 *   kernelspan kernel [rounds]   each round maps 64 MiB with MAP_POPULATE
 *                                (milliseconds of CPU time in one system
 *                                call, zeroing pages), unmaps it, and spins
 *                                in user code for a while
 *   kernelspan blocked [rounds]  each round spins in user code with SIGURG
 *                                blocked, then unblocks it and spins again
 *
 * Exit code 0. */
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <time.h>

#define noinline __attribute__((noinline))

static volatile unsigned long sink;

static double cpu_ms(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
	return ts.tv_sec * 1e3 + ts.tv_nsec / 1e6;
}

/* spin uses ms of CPU time in user code. */
static noinline void spin(double ms)
{
	double end = cpu_ms() + ms;
	while (cpu_ms() < end)
		for (int i = 0; i < 1000; i++)
			sink += i;
}

static noinline void populate(void)
{
	size_t len = 64 << 20;
	void *p = mmap(NULL, len, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS | MAP_POPULATE, -1, 0);
	if (p == MAP_FAILED) {
		perror("mmap");
		exit(1);
	}
	munmap(p, len);
}

static noinline void blocked(void)
{
	sigset_t s;
	sigemptyset(&s);
	sigaddset(&s, SIGURG);
	sigprocmask(SIG_BLOCK, &s, NULL);
	spin(10);
	sigprocmask(SIG_UNBLOCK, &s, NULL);
}

int main(int argc, char **argv)
{
	if (argc < 2 || (strcmp(argv[1], "kernel") != 0 && strcmp(argv[1], "blocked") != 0)) {
		fprintf(stderr, "usage: kernelspan kernel|blocked [rounds]\n");
		return 2;
	}
	int rounds = argc > 2 ? atoi(argv[2]) : 10;
	for (int i = 0; i < rounds; i++) {
		if (argv[1][0] == 'k')
			populate();
		else
			blocked();
		spin(5);
	}
	return 0;
}
