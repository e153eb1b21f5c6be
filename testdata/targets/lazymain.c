/* lazymain [N]: calls each of lazylib's 1000 functions once, through PLT
 * entries the dynamic loader binds lazily (built with -z lazy, run
 * without LD_BIND_NOW): its time is the loader's lazy-binding resolver,
 * under call_all. Then again execs it with N-1, N times in all. */
#include <stdio.h>
#include <stdlib.h>
#include <unistd.h>
#define F(n) int lz_##n(int);
#define F10(n) F(n##0) F(n##1) F(n##2) F(n##3) F(n##4) F(n##5) F(n##6) F(n##7) F(n##8) F(n##9)
#define F100(n) F10(n##0) F10(n##1) F10(n##2) F10(n##3) F10(n##4) F10(n##5) F10(n##6) F10(n##7) F10(n##8) F10(n##9)
F100(10) F100(11) F100(12) F100(13) F100(14) F100(15) F100(16) F100(17) F100(18) F100(19)
#undef F
#define F(n) s = lz_##n(s);
__attribute__((noinline)) int call_all(void) {
	int s = 0;
	F100(10) F100(11) F100(12) F100(13) F100(14) F100(15) F100(16) F100(17) F100(18) F100(19)
	return s;
}
__attribute__((noinline)) int again(int argc, char **argv, int s) {
	int n = argc > 1 ? atoi(argv[1]) : 1;
	if (n > 1) {
		char next[16];
		snprintf(next, sizeof next, "%d", n - 1);
		execl("/proc/self/exe", argv[0], next, (char *)0);
		perror("execl");
		return 1;
	}
	return s == 1;
}
/* main calls nothing through the PLT itself: the resolver's callers are
 * call_all and again. */
int main(int argc, char **argv) { return again(argc, argv, call_all()); }
