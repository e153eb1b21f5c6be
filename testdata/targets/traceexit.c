/* traceexit: loads a library with dlopen, calls its outer N times
 * (outer calls inner, both in the library) and exits at once, so that a
 * tracer reads the calls after the process and its /proc maps are gone.
 *
 *	traceexit LIB N
 */
#include <dlfcn.h>
#include <stdio.h>
#include <stdlib.h>

int main(int argc, char **argv) {
	if (argc != 3) {
		fprintf(stderr, "usage: traceexit LIB N\n");
		return 2;
	}
	void *h = dlopen(argv[1], RTLD_NOW);
	if (!h) {
		fprintf(stderr, "%s\n", dlerror());
		return 1;
	}
	long (*outer)(long) = (long (*)(long))dlsym(h, "outer");
	if (!outer) {
		fprintf(stderr, "no outer in %s\n", argv[1]);
		return 1;
	}
	long n = atol(argv[2]), s = 0;
	for (long i = 0; i < n; i++)
		s += outer(i);
	return s == 42;
}
