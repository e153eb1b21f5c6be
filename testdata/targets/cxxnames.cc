/* C++ names for the symbolizer: a namespace, a class template whose member
 * is inlined into another member, and a function GCC splits into a .cold
 * part. Built with plain gcc (no libstdc++ needed). */
#include <stdlib.h>

volatile long cxx_sink;

namespace geo {

template <typename T> struct Accum {
	T total;
	inline T step(T i) { return (i * i) ^ cxx_sink; }
	__attribute__((noinline)) T run(long n) {
		for (long i = 0; i < n; i++)
			total += step(i);
		return total;
	}
};

__attribute__((noinline, cold)) void complain(long n) { cxx_sink = n; abort(); }

__attribute__((noinline)) long checked(long n) {
	if (__builtin_expect(n < 0, 0))
		complain(n);
	long s = 0;
	for (long i = 0; i < n; i++)
		s += i ^ cxx_sink;
	return s;
}

} // namespace geo

int main(int argc, char **argv) {
	long n = argc > 1 ? atol(argv[1]) : 100000000;
	geo::Accum<long> a{0};
	cxx_sink = a.run(n);
	cxx_sink += geo::checked(n);
	return 0;
}
