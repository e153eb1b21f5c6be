/* Spends its time in the kernel: one short sleep, so that the thread is
 * switched away at least once while alive (a switch away that blocks,
 * whatever the machine's load), then many small writes to /dev/null.
 *
 * Usage: syscalls [N | SECONDSs]: N writes (2,000,000 when not given), or
 * writes for SECONDS of wall time ("1s", "0.5s"), so that a test needing
 * some number of samples gets them on a machine where a write takes
 * 0.1 µs as on one where it takes 1 µs. */
#include <fcntl.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

__attribute__((noinline)) void write_many(int fd, long n) {
	char buf[64] = {0};
	for (long i = 0; i < n; i++)
		if (write(fd, buf, sizeof buf) < 0) exit(1);
}

static double now(void) {
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return ts.tv_sec + ts.tv_nsec / 1e9;
}

int main(int argc, char **argv) {
	const char *arg = argc > 1 ? argv[1] : "2000000";
	int fd = open("/dev/null", O_WRONLY);
	if (fd < 0) return 1;
	usleep(2000);
	size_t len = strlen(arg);
	if (len > 1 && arg[len - 1] == 's') {
		double end = now() + atof(arg);
		while (now() < end)
			write_many(fd, 1000);
	} else {
		write_many(fd, atol(arg));
	}
	return 0;
}
