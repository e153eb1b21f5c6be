/* A library tracecalls loads with dlopen: plugin_work is traced in it. */
__attribute__((noipa)) long plugin_work(long n) {
	long s = 0;
	for (long i = 0; i <= n % 50; i++)
		s += i * n;
	return s;
}
