/* lazybind [N]: sets ready once in main with its loop's calls bound,
 * waits until its variable go is set (a tracer writes it), then makes its first calls of C library functions, through PLT entries
 * the dynamic loader has not bound yet (built with -z lazy, run without
 * LD_BIND_NOW): each goes through the loader's lazy-binding resolver,
 * which keeps no frame pointer, realigns rsp for the CPU's extended state
 * and keeps its CFA in rbx. A tracer with a breakpoint in the resolver
 * stops the process there, its caller first_calls, main beyond. */
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
volatile int ready, go;
__attribute__((noinline)) long first_calls(const char *s) {
	char *end;
	long n = strtol(s, &end, 10);
	return n + (long)strspn(s, "0123456789") + (long)getpid();
}
int main(int argc, char **argv) {
	usleep(1);
	ready = 1;
	while (!go)
		usleep(1000);
	return first_calls(argc > 1 ? argv[1] : "42") == 0;
}
