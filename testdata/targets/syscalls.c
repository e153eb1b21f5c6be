/* Spends its time in the kernel: one short sleep, so that the thread is
 * switched away at least once while alive (a switch away that blocks,
 * whatever the machine's load), then many small writes to /dev/null. */
#include <fcntl.h>
#include <stdlib.h>
#include <unistd.h>

__attribute__((noinline)) void write_many(int fd, long n) {
	char buf[64] = {0};
	for (long i = 0; i < n; i++)
		if (write(fd, buf, sizeof buf) < 0) exit(1);
}

int main(int argc, char **argv) {
	long n = argc > 1 ? atol(argv[1]) : 2000000;
	int fd = open("/dev/null", O_WRONLY);
	if (fd < 0) return 1;
	usleep(2000);
	write_many(fd, n);
	return 0;
}
