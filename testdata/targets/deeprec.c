/* deeprec [N]: N rounds, then DEEP rounds, then N rounds again, with a
   100 ms sleep between the phases. Each round() calls descend(8), a
   recursion 8 calls deep; the middle phase's 10 rounds recurse 80 calls
   deep, deeper than a tracer's shadow stack of 64 frames holds. */
#include <stdlib.h>
#include <time.h>

static volatile unsigned long sink;

__attribute__((noipa, optimize("no-optimize-sibling-calls"))) void descend(int d) {
	for (int i = 0; i < 200; i++) sink += i;
	if (d > 1)
		descend(d - 1);
	sink++;
}

__attribute__((noipa)) void round_(int depth) { descend(depth); }

static void pause100(void) {
	struct timespec ts = {0, 100000000};
	nanosleep(&ts, 0);
}

int main(int argc, char **argv) {
	int n = argc > 1 ? atoi(argv[1]) : 150;
	for (int k = 0; k < n; k++) round_(8);
	pause100();
	for (int k = 0; k < 10; k++) round_(80);
	pause100();
	for (int k = 0; k < n; k++) round_(8);
	return 0;
}
