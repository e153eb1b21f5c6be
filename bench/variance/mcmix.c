/*
 * mcmix: a bounded loopback load for memcached (ASCII protocol, no
 * authentication) with a mix of value sizes. It stores a small value (100
 * bytes) and a large one (-b bytes, default 512 KiB), then each of THREADS
 * client threads, on its own connection, sends OPS gets one after another,
 * one in -r (default 10) for the large value, chosen by a fixed
 * pseudo-random sequence; every reply is checked. The time a get takes is
 * thereby set by the size of what it returns: the workload is the
 * variance source, and the server's copying and sending of the large value
 * is where it goes.
 *
 * With -d SECONDS each client sends gets for that long instead of OPS.
 *
 * It prints "ops N seconds S ops_per_s X" on stdout.
 *
 * usage: mcmix -p PORT [-t THREADS] [-n OPS | -d SECONDS] [-b BYTES] [-r RATIO]
 */
#include <arpa/inet.h>
#include <errno.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

static int port, threads = 2, ops = 10000, big = 512 * 1024, ratio = 10;
static double duration; /* -d: seconds each client runs (0: OPS gets) */
static long done_ops[64];

static double now_s(void)
{
	struct timespec t;
	clock_gettime(CLOCK_MONOTONIC, &t);
	return t.tv_sec + t.tv_nsec / 1e9;
}

static void die(const char *what)
{
	fprintf(stderr, "mcmix: %s: %s\n", what, errno ? strerror(errno) : "unexpected reply");
	exit(1);
}

static void send_all(int fd, const char *buf, size_t len)
{
	while (len > 0) {
		ssize_t n = write(fd, buf, len);
		if (n < 0) {
			if (errno == EINTR)
				continue;
			die("write");
		}
		buf += n;
		len -= (size_t)n;
	}
}

static void read_n(int fd, char *buf, size_t len)
{
	size_t got = 0;
	while (got < len) {
		ssize_t n = read(fd, buf + got, len - got);
		if (n < 0 && errno == EINTR)
			continue;
		if (n <= 0)
			die("read");
		got += (size_t)n;
	}
}

static int dial(void)
{
	int fd = socket(AF_INET, SOCK_STREAM, 0);
	if (fd < 0)
		die("socket");
	struct sockaddr_in a = {.sin_family = AF_INET, .sin_port = htons(port)};
	a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
	if (connect(fd, (struct sockaddr *)&a, sizeof a) < 0)
		die("connect");
	int one = 1;
	setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof one);
	return fd;
}

static void store(int fd, const char *key, int n)
{
	char hdr[128];
	char *v = malloc(n + 2);
	memset(v, 'v', n);
	memcpy(v + n, "\r\n", 2);
	int h = snprintf(hdr, sizeof hdr, "set %s 0 0 %d\r\n", key, n);
	send_all(fd, hdr, h);
	send_all(fd, v, n + 2);
	char r[8];
	read_n(fd, r, 8);
	if (memcmp(r, "STORED\r\n", 8))
		die("set");
	free(v);
}

/* get reads the reply to "get KEY" whose value has n bytes. */
static void get(int fd, const char *key, int n, char *buf)
{
	char req[64], hdr[64];
	int q = snprintf(req, sizeof req, "get %s\r\n", key);
	send_all(fd, req, q);
	int h = snprintf(hdr, sizeof hdr, "VALUE %s 0 %d\r\n", key, n);
	read_n(fd, buf, h + n + 2 + 5);
	if (memcmp(buf, hdr, h) || memcmp(buf + h + n, "\r\nEND\r\n", 7))
		die("get");
}

static void *client(void *arg)
{
	uint64_t x = 0x9E3779B97F4A7C15ull * (uint64_t)(intptr_t)arg + 1;
	char *buf = malloc(big + 256);
	int fd = dial();
	double end = now_s() + duration;
	long i;
	for (i = 0; duration > 0 ? (i % 64 != 0 || now_s() < end) : i < ops; i++) {
		x ^= x << 13;
		x ^= x >> 7;
		x ^= x << 17;
		if (x % ratio == 0)
			get(fd, "mcmix_big", big, buf);
		else
			get(fd, "mcmix_small", 100, buf);
	}
	done_ops[(intptr_t)arg] = i;
	close(fd);
	free(buf);
	return NULL;
}

int main(int argc, char **argv)
{
	int c;
	while ((c = getopt(argc, argv, "p:t:n:d:b:r:")) != -1) {
		switch (c) {
		case 'p': port = atoi(optarg); break;
		case 't': threads = atoi(optarg); break;
		case 'n': ops = atoi(optarg); break;
		case 'd': duration = atof(optarg); break;
		case 'b': big = atoi(optarg); break;
		case 'r': ratio = atoi(optarg); break;
		default:
			fprintf(stderr, "usage: mcmix -p PORT [-t THREADS] [-n OPS | -d SECONDS] [-b BYTES] [-r RATIO]\n");
			return 2;
		}
	}
	if (port <= 0 || threads < 1 || threads > 64 || ops < 1 || duration < 0 || big < 1 || big > 1000000 || ratio < 1) {
		fprintf(stderr, "mcmix: need -p PORT; THREADS 1-64, OPS >= 1, SECONDS >= 0, BYTES 1-1000000, RATIO >= 1\n");
		return 2;
	}
	int fd = dial();
	store(fd, "mcmix_small", 100);
	store(fd, "mcmix_big", big);
	close(fd);
	struct timespec t0, t1;
	clock_gettime(CLOCK_MONOTONIC, &t0);
	pthread_t th[64];
	for (int i = 0; i < threads; i++)
		pthread_create(&th[i], NULL, client, (void *)(intptr_t)i);
	for (int i = 0; i < threads; i++)
		pthread_join(th[i], NULL);
	clock_gettime(CLOCK_MONOTONIC, &t1);
	double s = (t1.tv_sec - t0.tv_sec) + (t1.tv_nsec - t0.tv_nsec) / 1e9;
	long total = 0;
	for (int i = 0; i < threads; i++)
		total += done_ops[i];
	printf("ops %ld seconds %.3f ops_per_s %.0f\n", total, s, total / s);
	return 0;
}
