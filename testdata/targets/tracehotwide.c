// tracehotwide: main calls twelve functions that share the run's time
// (each about 8%), for trace's probe budget: the functions kept as hot
// fill the budget by themselves, and main, which has almost no time of
// its own, must still be probed (it times the run).
//
//	tracehotwide N   (each function loops N times)
#include <stdlib.h>

static volatile long sink;

#define SPIN(k) \
	__attribute__((noinline)) void spin##k(long n) { for (long i = 0; i < n; i++) sink += i * (k + 1); }
SPIN(0) SPIN(1) SPIN(2) SPIN(3) SPIN(4) SPIN(5) SPIN(6) SPIN(7) SPIN(8) SPIN(9) SPIN(10) SPIN(11)

int main(int argc, char **argv) {
	long n = argc > 1 ? atol(argv[1]) : 0;
	spin0(n); spin1(n); spin2(n); spin3(n); spin4(n); spin5(n);
	spin6(n); spin7(n); spin8(n); spin9(n); spin10(n); spin11(n);
	return 0;
}
