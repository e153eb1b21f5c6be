/* vforker N: N times, spawn() starts a child with vfork(2) that exits at
 * once, and waits for it. glibc's vfork keeps its return address in rdi
 * across the system call (the child runs on the parent's stack), where
 * the parent and the child spend their samples of the call: a profiler
 * that unwinds vfork from the stack or the frame-pointer chain skips
 * spawn. */
#include <stdlib.h>
#include <sys/wait.h>
#include <unistd.h>

__attribute__((noinline)) void spawn(void) {
	pid_t p = vfork();
	if (p == 0) _exit(0);
	if (p > 0) waitpid(p, 0, 0);
}

int main(int argc, char **argv) {
	int n = argc > 1 ? atoi(argv[1]) : 20000;
	for (int i = 0; i < n; i++)
		spawn();
	return 0;
}
