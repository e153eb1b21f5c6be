/* A thread whose time is in the C library, below a frame of its own
 * holding a 16 KiB array of which it uses one element, as memcached's
 * transmit holds IOV_MAX iovecs: the array's pages in the middle were
 * never written, so they are not in memory, and a copy of the stack
 * from a sample up to the thread's outer frames runs through them.
 * Like transmit, it ends with a system call from that frame: writev of
 * its one iovec, to /dev/null.
 * Built without frame pointers, as Debian builds memcached. */
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <fcntl.h>
#include <sys/uio.h>

static volatile unsigned long sink;
static int out = -1;

__attribute__((noinline)) unsigned long transmit(unsigned rounds)
{
	struct iovec iov[1024];
	unsigned long h = 0;
	iov[0].iov_base = "123456789012345";
	iov[0].iov_len = 15;
	/* The array stays in the frame, unwritten but for its first element. */
	__asm__ volatile("" : : "r"(iov) : "memory");
	for (unsigned r = 0; r < rounds; r++)
		h += strtoul(iov[0].iov_base, NULL, 10) + iov[0].iov_len + r;
	if (writev(out, iov, 1) < 0)
		h++;
	return h;
}

__attribute__((noinline)) void *worker(void *arg)
{
	unsigned rounds = (unsigned)(unsigned long)arg;
	for (unsigned i = 0; i < rounds; i++)
		sink += transmit(10000);
	return NULL;
}

int main(int argc, char **argv)
{
	unsigned long rounds = argc > 1 ? strtoul(argv[1], NULL, 10) : 100;
	pthread_t t;
	if ((out = open("/dev/null", O_WRONLY)) < 0)
		return 1;
	if (pthread_create(&t, NULL, worker, (void *)rounds) != 0)
		return 1;
	pthread_join(t, NULL);
	printf("%lu\n", sink);
	return 0;
}
