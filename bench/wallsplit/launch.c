/* launch OUT CMD [ARGS...]: runs CMD (its stderr to /dev/null) and prints, in
 * ms, the time from fork to the workload's main, in main, from the end of main
 * to CMD's exit as this parent sees it, and the total; the workload writes
 * main's start and end to OUT (see timed.c). */
#include <stdio.h>
#include <stdlib.h>
#include <time.h>
#include <unistd.h>
#include <fcntl.h>
#include <sys/wait.h>

static double now_ms(void) {
	struct timespec t;
	clock_gettime(CLOCK_MONOTONIC, &t);
	return t.tv_sec * 1e3 + t.tv_nsec / 1e6;
}

int main(int argc, char **argv) {
	if (argc < 3) {
		fprintf(stderr, "usage: launch OUT CMD [ARGS...]\n");
		return 2;
	}
	unlink(argv[1]);
	double t0 = now_ms();
	pid_t p = fork();
	if (p == 0) {
		int fd = open("/dev/null", O_WRONLY);
		dup2(fd, 1);
		dup2(fd, 2);
		execvp(argv[2], argv + 2);
		_exit(127);
	}
	int st;
	waitpid(p, &st, 0);
	double t3 = now_ms();
	double t1, t2;
	FILE *f = fopen(argv[1], "r");
	if (!f || fscanf(f, "%lf %lf", &t1, &t2) != 2) {
		fprintf(stderr, "launch: no timing in %s\n", argv[1]);
		return 1;
	}
	fclose(f);
	printf("%.3f %.3f %.3f %.3f\n", t1 - t0, t2 - t1, t3 - t2, t3 - t0);
	return 0;
}
