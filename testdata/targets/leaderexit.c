/* leaderexit: the main thread starts a worker and ends with pthread_exit,
 * so the process lives on in its worker alone. The worker spins for
 * argv[1] seconds of its own CPU time and prints that time.
 */
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <time.h>

static double thread_cpu(void)
{
	struct timespec t;
	clock_gettime(CLOCK_THREAD_CPUTIME_ID, &t);
	return t.tv_sec + t.tv_nsec / 1e9;
}

volatile unsigned long spins;

__attribute__((noinline)) void spin(double seconds)
{
	double start = thread_cpu();
	while (thread_cpu() - start < seconds)
		spins++;
}

static void *worker(void *arg)
{
	double start = thread_cpu();
	spin(*(double *)arg);
	printf("worker cpu %.6f\n", thread_cpu() - start);
	fflush(stdout);
	return NULL;
}

int main(int argc, char **argv)
{
	static double seconds;
	pthread_t t;

	seconds = argc > 1 ? atof(argv[1]) : 0.3;
	if (pthread_create(&t, NULL, worker, &seconds) != 0)
		return 1;
	pthread_exit(NULL);
}
