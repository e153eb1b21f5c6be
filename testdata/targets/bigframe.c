/* A program built with frame pointers whose time is in a library built
 * without them (bigframelib.c), below a frame of its own holding a buffer
 * larger than a page, as bzip2's compressStream holds its input block:
 * from a sample in the library to main's frame is more than 8 KiB. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

unsigned sort_block(const unsigned char *in, unsigned n);

__attribute__((noinline)) unsigned compress_stream(unsigned rounds)
{
	unsigned char ibuf[6000];
	unsigned h = 0;
	for (unsigned r = 0; r < rounds; r++) {
		for (unsigned i = 0; i < sizeof ibuf; i++)
			ibuf[i] = (unsigned char)(i * 7 + r);
		h ^= sort_block(ibuf, sizeof ibuf);
	}
	return h;
}

int main(int argc, char **argv)
{
	unsigned rounds = argc > 1 ? (unsigned)atoi(argv[1]) : 100;
	printf("%u\n", compress_stream(rounds));
	return 0;
}
