/* A shared library whose global struct says where its work is:
 * glob_work(base, rounds, n) sets gstate.round to base + r before round r
 * (1..rounds), each round n iterations of glob_spin. */
struct gstate {
	long base;
	long pad[5];
	long round;
	double acc;
} gstate;

volatile unsigned long glob_sink;

__attribute__((noinline)) static void glob_spin(long n) {
	for (long i = 0; i < n; i++)
		glob_sink += (unsigned long)(i * 7) ^ (unsigned long)gstate.round;
}

void glob_work(long base, long rounds, long n) {
	gstate.base = base;
	for (long r = 1; r <= rounds; r++) {
		gstate.round = base + r;
		glob_spin(n);
	}
}
