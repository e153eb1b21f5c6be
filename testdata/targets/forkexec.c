/* The parent spins in parent_spin, forks a child that spins in child_spin and
 * then execs argv[1] (with the remaining arguments); the parent waits and
 * exits with the child's exit code. */
#include <stdlib.h>
#include <sys/wait.h>
#include <unistd.h>

volatile unsigned long sink;

__attribute__((noinline)) void parent_spin(long n) { for (long i = 0; i < n; i++) sink += i; }
__attribute__((noinline)) void child_spin(long n) { for (long i = 0; i < n; i++) sink ^= i; }

int main(int argc, char **argv) {
	parent_spin(100000000);
	pid_t pid = fork();
	if (pid == 0) {
		child_spin(100000000);
		if (argc > 1) {
			execv(argv[1], argv + 1);
			_exit(127);
		}
		_exit(0);
	}
	int st = 0;
	waitpid(pid, &st, 0);
	return WIFEXITED(st) ? WEXITSTATUS(st) : 1;
}
