/*
 * mcload: a bounded loopback load for memcached with ASCII authentication
 * (memcached -Y). Each of THREADS client threads opens SESSIONS connections in
 * turn; each session authenticates ("set <key> 0 0 N\r\nuser pass\r\n") and
 * then sends OPS set/get pairs, checking every reply.
 *
 * With -d MS each thread first opens one more session whose authentication
 * arrives as from a client on a slow link: its first byte alone, the rest MS
 * milliseconds later. The reply to it is awaited for one second; a server that
 * does not answer is reported on stderr and the connection is left open while
 * the other sessions run.
 *
 * usage: mcload -p PORT -u USER -k PASS [-t THREADS] [-s SESSIONS] [-n OPS] [-d MS]
 */
#include <arpa/inet.h>
#include <errno.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/time.h>
#include <time.h>
#include <unistd.h>

static int port, threads = 2, sessions = 6, ops = 2000, delay_ms;
static const char *user, *pass;

static void die(const char *what)
{
	fprintf(stderr, "mcload: %s: %s\n", what, errno ? strerror(errno) : "unexpected reply");
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

/* expect reads exactly strlen(want) bytes and compares them. */
static void expect(int fd, const char *want)
{
	char buf[256];
	size_t len = strlen(want), got = 0;
	while (got < len) {
		ssize_t n = read(fd, buf + got, len - got);
		if (n < 0) {
			if (errno == EINTR)
				continue;
			die("read");
		}
		if (n == 0) {
			errno = 0;
			die("connection closed by server");
		}
		got += (size_t)n;
	}
	if (memcmp(buf, want, len) != 0) {
		errno = 0;
		fprintf(stderr, "mcload: want %.*s got %.*s\n", (int)len, want, (int)len, buf);
		exit(1);
	}
}

/* slow_session sends the authentication in two parts and returns the open
 * connection; it returns -1 when the server answered. */
static int slow_session(void)
{
	struct sockaddr_in sa = {.sin_family = AF_INET, .sin_port = htons((unsigned short)port)};
	struct timeval tv = {1, 0};
	int fd = socket(AF_INET, SOCK_STREAM, 0), one = 1;
	char buf[256];
	if (fd < 0)
		die("socket");
	setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof one);
	setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof tv);
	sa.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
	if (connect(fd, (struct sockaddr *)&sa, sizeof sa) < 0)
		die("connect");
	int cred = (int)(strlen(user) + 1 + strlen(pass));
	int n = snprintf(buf, sizeof buf, "set auth 0 0 %d\r\n%s %s\r\n", cred, user, pass);
	struct timespec ts = {delay_ms / 1000, (long)(delay_ms % 1000) * 1000000L};
	send_all(fd, buf, 1);
	nanosleep(&ts, NULL);
	send_all(fd, buf + 1, (size_t)n - 1);
	ssize_t got = read(fd, buf, sizeof buf);
	if (got > 0) {
		close(fd);
		return -1;
	}
	fprintf(stderr, "mcload: no reply to a slowly sent authentication within 1 s\n");
	return fd;
}

static void session(int id, int s)
{
	struct sockaddr_in sa = {.sin_family = AF_INET, .sin_port = htons((unsigned short)port)};
	int fd = socket(AF_INET, SOCK_STREAM, 0), one = 1;
	char buf[256];
	if (fd < 0)
		die("socket");
	setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof one);
	sa.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
	if (connect(fd, (struct sockaddr *)&sa, sizeof sa) < 0)
		die("connect");
	int cred = (int)(strlen(user) + 1 + strlen(pass));
	int n = snprintf(buf, sizeof buf, "set auth 0 0 %d\r\n%s %s\r\n", cred, user, pass);
	send_all(fd, buf, (size_t)n);
	expect(fd, "STORED\r\n");
	for (int i = 0; i < ops; i++) {
		char key[64], reply[128];
		int kl = snprintf(key, sizeof key, "k%d.%d.%d", id, s, i % 100);
		n = snprintf(buf, sizeof buf, "set %s 0 0 5\r\nhello\r\n", key);
		send_all(fd, buf, (size_t)n);
		expect(fd, "STORED\r\n");
		n = snprintf(buf, sizeof buf, "get %s\r\n", key);
		send_all(fd, buf, (size_t)n);
		snprintf(reply, sizeof reply, "VALUE %.*s 0 5\r\nhello\r\nEND\r\n", kl, key);
		expect(fd, reply);
	}
	close(fd);
}

static void *client(void *arg)
{
	int id = (int)(long)arg, slow = -1;
	if (delay_ms > 0)
		slow = slow_session();
	for (int s = 0; s < sessions; s++)
		session(id, s);
	if (slow >= 0)
		close(slow);
	return NULL;
}

int main(int argc, char **argv)
{
	int c;
	while ((c = getopt(argc, argv, "p:u:k:t:s:n:d:")) != -1) {
		switch (c) {
		case 'p': port = atoi(optarg); break;
		case 'u': user = optarg; break;
		case 'k': pass = optarg; break;
		case 't': threads = atoi(optarg); break;
		case 's': sessions = atoi(optarg); break;
		case 'n': ops = atoi(optarg); break;
		case 'd': delay_ms = atoi(optarg); break;
		default: goto usage;
		}
	}
	if (port <= 0 || !user || !pass || threads <= 0 || threads > 64 || sessions <= 0 || ops < 0 || delay_ms < 0)
		goto usage;
	pthread_t tid[64];
	for (long i = 0; i < threads; i++)
		if (pthread_create(&tid[i], NULL, client, (void *)i) != 0)
			die("pthread_create");
	for (int i = 0; i < threads; i++)
		pthread_join(tid[i], NULL);
	return 0;
usage:
	fprintf(stderr, "usage: mcload -p PORT -u USER -k PASS [-t THREADS] [-s SESSIONS] [-n OPS] [-d MS]\n");
	return 2;
}
