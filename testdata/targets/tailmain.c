// main hands its frame to run by a tail call (gcc -O2: jmp run), as
// CPython's main does to Py_BytesMain; run calls work and uses its result,
// an ordinary call.
#include <stdio.h>

__attribute__((noinline)) long work(long n) {
	long s = 0;
	for (long i = 0; i < n; i++)
		s += i * i;
	return s;
}

__attribute__((noinline)) int run(int argc, char **argv) {
	long s = work(argc * 1000L);
	printf("%ld %s\n", s, argv[0]);
	return (int)(s & 1);
}

int main(int argc, char **argv) { return run(argc, argv); }
