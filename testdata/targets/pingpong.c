/* Two threads hand a byte back and forth through two pipes, N times: each
 * round is four system calls and, on one CPU (taskset -c 0), two context
 * switches inside read(2). A load for the cost of switch events.
 *
 *   pingpong N */
#include <pthread.h>
#include <stdlib.h>
#include <unistd.h>
static int a[2], b[2];
static long n;
__attribute__((noinline)) static void pong_loop(void) {
	char c;
	for (long i = 0; i < n; i++) {
		if (read(a[0], &c, 1) != 1) exit(1);
		if (write(b[1], &c, 1) != 1) exit(1);
	}
}
static void *pong(void *arg) { (void)arg; pong_loop(); return NULL; }
__attribute__((noinline)) static void ping_loop(void) {
	char c = 'x';
	for (long i = 0; i < n; i++) {
		if (write(a[1], &c, 1) != 1) exit(1);
		if (read(b[0], &c, 1) != 1) exit(1);
	}
}
int main(int argc, char **argv) {
	n = argc > 1 ? atol(argv[1]) : 100000;
	if (pipe(a) || pipe(b)) return 1;
	pthread_t t;
	pthread_create(&t, NULL, pong, NULL);
	ping_loop();
	pthread_join(t, NULL);
	return 0;
}
