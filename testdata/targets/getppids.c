/* getppids: waits for a byte on its standard input, then makes N
   getppid(2) calls (N its argument, 2000 by default) and ends with
   exit_group(2): after the read, N+1 system calls and no other. */
#include <stdlib.h>
#include <sys/syscall.h>
#include <unistd.h>

int main(int argc, char **argv)
{
	long n = argc > 1 ? atol(argv[1]) : 2000;
	char c;
	if (read(0, &c, 1) != 1)
		return 1;
	for (long i = 0; i < n; i++)
		syscall(SYS_getppid);
	syscall(SYS_exit_group, 0);
	return 0;
}
