/* A library built without frame pointers whose work runs in a large
 * frame, as a compression library's sort does: its callers are found only
 * through the stack copy, since rbp is one of its registers and holds its
 * data (as -O2 code under register pressure has it: libbz2's sort), so
 * the frame-pointer chain sampled there leads nowhere. */
#include <string.h>

__attribute__((noinline)) unsigned sort_block(const unsigned char *in, unsigned n)
{
	unsigned counts[768]; /* 3 KiB */
	unsigned h = 0;
	memset(counts, 0, sizeof counts);
	for (unsigned r = 0; r < 200; r++)
		for (unsigned i = 0; i < n; i++) {
			unsigned k = (in[i] + r + h) % 768;
			counts[k] += i;
			h = h * 31 + counts[(k * 7) % 768];
			/* rbp holds data here, as a register allocator puts it */
			__asm__ volatile("mov %0, %%rbp" : : "r"((unsigned long)h * 2654435761u) : "rbp");
		}
	return h;
}
