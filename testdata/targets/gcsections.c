/* A function nothing calls, dropped by the linker under
 * -ffunction-sections -Wl,--gc-sections. Its DWARF stays, with its address
 * relocated to 0; readers must not take it for code at 0. */
volatile long sink;

static inline long twice(long x) { return 2 * x + sink; }

long unused(long n) {
	long s = 0;
	for (long i = 0; i < n; i++)
		s += twice(i);
	return s;
}

__attribute__((noinline)) long used(long n) { return twice(n) + 1; }

int main(int argc, char **argv) {
	(void)argv;
	sink = used(argc);
	return 0;
}
