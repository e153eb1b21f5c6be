/* grow ends with a tail call of realloc (a JMP into the PLT at -O2);
 * keep calls free and goes on, so its frame stays. */
#include <stdio.h>
#include <stdlib.h>

__attribute__((noinline)) void *grow(void *p, size_t n) { return realloc(p, n); }

__attribute__((noinline)) int keep(void *p) {
	free(p);
	return puts("freed") + 1;
}

int main(int argc, char **argv) {
	void *p = grow(NULL, (size_t)argc * 16);
	(void)argv;
	return keep(p) < 0;
}
