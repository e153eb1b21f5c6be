/* A C++ program whose time goes to one instance of a class template's
 * member, four calls down from main, for keep-hot on C++ names; a wide
 * call graph, as testdata/targets/tracewide.c, so that trimming leaves
 * the lower levels out: main calls six functions svc::stage0..5 (level
 * 1), each of which calls eight svc::stepMK (level 2); svc::step00 calls
 * svc::apply (level 3) N times, which calls geo::Accum<long>::add (it
 * spins), geo::Accum<double>::add (it does not) and svc::note (cold), all
 * three at level 4. A CPU profile names both instances of add alike
 * (geo::Accum::add), so what the samples judge hot keeps both. Prints the
 * calls it made of each. Usage: cxxhot N. */
#include <cstdio>
#include <cstdlib>

#define NOINLINE __attribute__((noinline))

namespace geo {

static volatile long sink;

template <typename T> struct Accum {
	T total{};
	NOINLINE void add(T v, long work) {
		for (long i = 0; i < work; i++) sink += i;
		total += v;
	}
};

} // namespace geo

namespace svc {

static geo::Accum<long> a;
static geo::Accum<double> d;
static volatile long notes;

NOINLINE void note(long i) {
	if (i % 7 == 0) notes = notes + 1;
}

NOINLINE void apply(long i) {
	a.add(i, 20000);
	d.add(i / 2.0, 0);
	note(i);
}

#define STEP(m, k) \
	NOINLINE void step##m##k(long n) { for (long i = 0; i < n; i++) apply(i); }
#define STEPS(m) STEP(m, 0) STEP(m, 1) STEP(m, 2) STEP(m, 3) STEP(m, 4) STEP(m, 5) STEP(m, 6) STEP(m, 7)
STEPS(0) STEPS(1) STEPS(2) STEPS(3) STEPS(4) STEPS(5)

/* Only step00 gets the count: the others call apply no times. */
#define STAGE(m) \
	NOINLINE void stage##m(long n) { \
		step##m##0(m == 0 ? n : 0); step##m##1(0); step##m##2(0); step##m##3(0); \
		step##m##4(0); step##m##5(0); step##m##6(0); step##m##7(0); \
	}
STAGE(0) STAGE(1) STAGE(2) STAGE(3) STAGE(4) STAGE(5)

} // namespace svc

int main(int argc, char **argv) {
	long n = argc > 1 ? atol(argv[1]) : 1000;
	svc::stage0(n); svc::stage1(n); svc::stage2(n); svc::stage3(n); svc::stage4(n); svc::stage5(n);
	printf("count add_long %ld\ncount add_double %ld\ncount note %ld\n", n, n, n);
	return 0;
}
