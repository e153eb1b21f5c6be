/* pagecopy: makes a getppid(2) call with its stack pointer 200 bytes below
   the end of a page whose next page it never touched (as a goroutine's
   stack can lie below memory never used), after printing that stack
   pointer and reading a byte from its standard input. */
#include <stdio.h>
#include <sys/mman.h>
#include <unistd.h>

int main(void)
{
	char *m = mmap(NULL, 8192, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	if (m == MAP_FAILED)
		return 1;
	m[0] = 1; /* the first page present, the second never touched */
	char *sp = m + 4096 - 200;
	printf("sp %p\n", (void *)sp);
	fflush(stdout);
	char c;
	if (read(0, &c, 1) != 1)
		return 1;
	long r;
	__asm__ volatile("mov %%rsp, %%r12\n\t"
			 "mov %1, %%rsp\n\t"
			 "syscall\n\t"
			 "mov %%r12, %%rsp"
			 : "=a"(r)
			 : "r"(sp), "a"(110L) /* getppid */
			 : "r12", "rcx", "r11", "memory");
	return r > 0 ? 0 : 1;
}
