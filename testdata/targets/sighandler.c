/* Spends its time in a signal handler: main -> interrupted spins until a
 * one-shot SIGALRM (after 10 ms) arrives, and the handler calls in_handler,
 * which spins for the rest of the run (argv[1] iterations, default 1e11).
 * A stop then shows in_handler <- handler <- __restore_rt <- interrupted <-
 * main, exercising signal-frame CFI. */
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <sys/time.h>

volatile unsigned long sink;
static long spins = 100000000000L;

__attribute__((noinline)) void in_handler(long n) {
	for (long i = 0; i < n; i++)
		sink += i ^ (sink >> 3);
}

__attribute__((noinline)) void handler(int sig) {
	in_handler(spins);
	sink += sig;
}

__attribute__((noinline)) void interrupted(void) {
	for (;;)
		sink += sink >> 5;
}

int main(int argc, char **argv) {
	if (argc > 1)
		spins = atol(argv[1]);
	struct sigaction sa;
	memset(&sa, 0, sizeof sa);
	sa.sa_handler = handler;
	sigaction(SIGALRM, &sa, NULL);
	struct itimerval it = {{0, 0}, {0, 10000}};
	setitimer(ITIMER_REAL, &it, NULL);
	interrupted();
	return 0;
}
