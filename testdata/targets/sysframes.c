/* sysframes [SECONDS]: system calls and sleeps below frames larger than
 * the 1 KiB of stack an event copies at first, in a program built without
 * frame pointers (-O2 -fomit-frame-pointer): copy_block reads into and
 * writes from a 4 KiB buffer of its own, pause_briefly sleeps below a
 * 2 KiB one, and loop keeps a 2 KiB table of its own above both, so that
 * every system call and every switch lies 3 to 7 KiB below main's frame,
 * which only the stack copy reaches (rbp holds data). */
#include <fcntl.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

__attribute__((noinline)) static int copy_block(int in, int out, int i) {
	char buf[4096];
	ssize_t n = read(in, buf, sizeof buf);
	if (n <= 0) exit(1);
	buf[i % sizeof buf] ^= (char)i;
	if (write(out, buf, n) != n) exit(1);
	return buf[(i * 7) % sizeof buf];
}

__attribute__((noinline)) static int pause_briefly(int i) {
	volatile char pad[2048];
	pad[i % sizeof pad] = (char)i;
	struct timespec ts = {0, 200000};
	nanosleep(&ts, NULL);
	return pad[(i * 3) % sizeof pad];
}

static double now(void) {
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return ts.tv_sec + ts.tv_nsec / 1e9;
}

__attribute__((noinline)) static int loop(int in, int out, double seconds) {
	volatile char table[2048];
	memset((char *)table, 1, sizeof table);
	double end = now() + seconds;
	int sum = 0;
	for (int i = 0; now() < end; i++) {
		sum += copy_block(in, out, i) + table[i % sizeof table];
		if (i % 16 == 0) sum += pause_briefly(i);
	}
	return sum;
}

int main(int argc, char **argv) {
	double seconds = argc > 1 ? atof(argv[1]) : 2;
	int in = open("/dev/zero", O_RDONLY), out = open("/dev/null", O_WRONLY);
	if (in < 0 || out < 0) return 1;
	return loop(in, out, seconds) == 42;
}
