/* ticker HZ -- COMMAND [ARG...]: runs COMMAND while one thread per CPU,
 * pinned there, wakes HZ times a second and goes back to sleep; exits with
 * COMMAND's status. What a machine's CPUs pay for a process that wakes on
 * each of them at a profiler's rate and does nothing else (bench/eventcost.sh's
 * ticker configurations). */
#define _GNU_SOURCE
#include <pthread.h>
#include <sched.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

static long period;

static void *tick(void *arg) {
	cpu_set_t set;
	CPU_ZERO(&set);
	CPU_SET((long)arg, &set);
	sched_setaffinity(0, sizeof set, &set);
	struct timespec t;
	clock_gettime(CLOCK_MONOTONIC, &t);
	for (;;) {
		t.tv_nsec += period;
		while (t.tv_nsec >= 1000000000L) {
			t.tv_nsec -= 1000000000L;
			t.tv_sec++;
		}
		clock_nanosleep(CLOCK_MONOTONIC, TIMER_ABSTIME, &t, NULL);
	}
	return NULL;
}

int main(int argc, char **argv) {
	if (argc < 4 || strcmp(argv[2], "--") != 0 || atol(argv[1]) <= 0) {
		fprintf(stderr, "usage: ticker HZ -- COMMAND [ARG...]\n");
		return 2;
	}
	period = 1000000000L / atol(argv[1]);
	long n = sysconf(_SC_NPROCESSORS_ONLN);
	for (long i = 0; i < n; i++) {
		pthread_t th;
		if (pthread_create(&th, NULL, tick, (void *)i) != 0) {
			perror("ticker: pthread_create");
			return 1;
		}
	}
	pid_t pid = fork();
	if (pid < 0) {
		perror("ticker: fork");
		return 1;
	}
	if (pid == 0) {
		execvp(argv[3], argv + 3);
		perror("ticker: exec");
		_exit(127);
	}
	int st = 0;
	if (waitpid(pid, &st, 0) < 0) {
		perror("ticker: waitpid");
		return 1;
	}
	return WIFEXITED(st) ? WEXITSTATUS(st) : 128 + WTERMSIG(st);
}
