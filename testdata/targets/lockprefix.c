/* A function whose first instruction carries a lock prefix, which uprobes
 * refuse to probe, beside ordinary functions.
 *
 *   lockprefix N    calls bump and locked_inc N times each */
#include <stdio.h>
#include <stdlib.h>

void locked_inc(int *p);
__asm__(".text\n"
	".globl locked_inc\n"
	".type locked_inc, @function\n"
	"locked_inc:\n"
	"	lock addl $1, (%rdi)\n"
	"	ret\n"
	".size locked_inc, .-locked_inc\n");

__attribute__((noinline)) void bump(int *p)
{
	*p += 2;
	__asm__ volatile("" ::: "memory");
}

int main(int argc, char **argv)
{
	int n = argc > 1 ? atoi(argv[1]) : 100, v = 0;
	for (int i = 0; i < n; i++) {
		bump(&v);
		locked_inc(&v);
	}
	printf("%d\n", v);
	return 0;
}
