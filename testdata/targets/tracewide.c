// tracewide: a wide, shallow call graph for trace's probe budget. main
// calls six functions mid0..mid5 (level 1 from main), each of which calls
// eight leaves (level 2); mid0's first leaf calls hot (level 3) as many
// times as argv[1] says, where nearly all of the run's time goes. Every
// function prints nothing: the calls are counted by the trace.
//
//	tracewide N
#include <stdlib.h>

#define NOINLINE __attribute__((noinline))

static volatile long sink;

NOINLINE long hot(long i) { return i * 3 + sink; }

#define LEAF(m, l) \
	NOINLINE void leaf##m##l(long n) { for (long i = 0; i < n; i++) sink += hot(i); }
#define LEAVES(m) LEAF(m, 0) LEAF(m, 1) LEAF(m, 2) LEAF(m, 3) LEAF(m, 4) LEAF(m, 5) LEAF(m, 6) LEAF(m, 7)
LEAVES(0) LEAVES(1) LEAVES(2) LEAVES(3) LEAVES(4) LEAVES(5)

// Only leaf00 gets the count: the others call hot no times.
#define MID(m) \
	NOINLINE void mid##m(long n) { \
		leaf##m##0(m == 0 ? n : 0); leaf##m##1(0); leaf##m##2(0); leaf##m##3(0); \
		leaf##m##4(0); leaf##m##5(0); leaf##m##6(0); leaf##m##7(0); \
	}
MID(0) MID(1) MID(2) MID(3) MID(4) MID(5)

int main(int argc, char **argv) {
	long n = argc > 1 ? atol(argv[1]) : 0;
	mid0(n); mid1(n); mid2(n); mid3(n); mid4(n); mid5(n);
	return 0;
}
