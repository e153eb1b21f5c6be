/* Calls libglob's glob_work, linked at build time, or, with a library path
 * as its third argument, from that library loaded with dlopen.
 * usage: libglobmain BASE ROUNDS [LIBRARY] — prints "BASE ROUNDS". */
#include <dlfcn.h>
#include <stdio.h>
#include <stdlib.h>

#ifdef LINKED
void glob_work(long base, long rounds, long n);
#endif

int main(int argc, char **argv) {
	if (argc < 3) {
		fprintf(stderr, "usage: libglobmain BASE ROUNDS [LIBRARY]\n");
		return 2;
	}
	long base = atol(argv[1]), rounds = atol(argv[2]);
	void (*work)(long, long, long);
#ifdef LINKED
	work = glob_work;
#else
	if (argc < 4) {
		fprintf(stderr, "usage: libglobmain BASE ROUNDS LIBRARY\n");
		return 2;
	}
	void *h = dlopen(argv[3], RTLD_NOW);
	if (!h) {
		fprintf(stderr, "dlopen: %s\n", dlerror());
		return 1;
	}
	work = (void (*)(long, long, long))dlsym(h, "glob_work");
	if (!work) {
		fprintf(stderr, "dlsym: %s\n", dlerror());
		return 1;
	}
#endif
	work(base, rounds, 200000000);
	printf("%ld %ld\n", base, rounds);
	return 0;
}
