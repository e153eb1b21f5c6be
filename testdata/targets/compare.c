/* compare.c: locals a function compares with constants (schema.Compared),
 * and one it compares with another variable. */
#include <stdio.h>
#include <stdlib.h>
#include <unistd.h>

volatile long sink;

/* got is only tested for an error (-1) and for the end (0): its size
 * decides nothing. */
__attribute__((noinline)) long consume(int fd, char *buf, long cap)
{
	long got = read(fd, buf, cap);
	if (got == -1)
		return -1;
	if (got == 0)
		return 0;
	sink += got;
	return got;
}

/* n is compared with a threshold constant. */
__attribute__((noinline)) long small(long n)
{
	if (n < 16)
		return n * 2;
	sink += n;
	return n;
}

/* n is compared with another variable. */
__attribute__((noinline)) long bounded(long n, long limit)
{
	if (n > limit)
		return limit;
	sink += n;
	return n;
}

int main(int argc, char **argv)
{
	char buf[64];
	long limit = argc > 1 ? atol(argv[1]) : 10;
	sink += consume(0, buf, sizeof buf);
	sink += small(argc * 7);
	sink += bounded(argc * 5, limit);
	printf("%ld\n", sink);
	return 0;
}
