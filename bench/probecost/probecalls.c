/* Calls one of first.S's functions N times and prints its own CPU time
 * (user + system, µs): the time a uprobe's traps cost it, whatever else
 * the machine runs. Usage: probecalls nop5|push|endbr|test|mov|sub|cet|cpush N */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>

long f_nop5(long), f_push(long), f_test(long), f_endbr(long), f_mov(long), f_sub(long), f_cet(long), c_push(long);

int main(int argc, char **argv) {
	if (argc != 3) {
		fprintf(stderr, "usage: probecalls nop5|push|endbr|test|mov|sub|cet|cpush N\n");
		return 2;
	}
	static const struct { const char *name; long (*f)(long); } fns[] = {
		{"nop5", f_nop5}, {"push", f_push}, {"endbr", f_endbr}, {"test", f_test}, {"mov", f_mov}, {"sub", f_sub}, {"cet", f_cet}, {"cpush", c_push},
	};
	long (*f)(long) = 0;
	for (size_t i = 0; i < sizeof fns / sizeof fns[0]; i++)
		if (!strcmp(argv[1], fns[i].name))
			f = fns[i].f;
	if (!f) {
		fprintf(stderr, "probecalls: no function %s\n", argv[1]);
		return 2;
	}
	long n = atol(argv[2]);
	volatile long s = 0;
	for (long i = 0; i < n; i++)
		s += f(i);
	struct rusage ru;
	getrusage(RUSAGE_SELF, &ru);
	printf("cpu_us %ld\n", (long)(ru.ru_utime.tv_sec * 1000000 + ru.ru_utime.tv_usec + ru.ru_stime.tv_sec * 1000000 + ru.ru_stime.tv_usec));
	return 0;
}
