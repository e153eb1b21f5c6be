/* A plug-in loaded with dlopen by dlmain.c. */
volatile unsigned long plugin_sink;

__attribute__((noinline)) static void plugin_inner(long n) {
	for (long i = 0; i < n; i++)
		plugin_sink += i * 7;
}

void plugin_work(long n) { plugin_inner(n); plugin_sink++; }
