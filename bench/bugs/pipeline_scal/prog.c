/* A small key-value server in the manner of Redis, single-threaded: an
 * event loop (event_loop) serves its clients in turn; for a readable
 * client it reads what has arrived into the client's query buffer
 * (read_query_from_client) and runs every complete command in it
 * (process_input_buffer → process_inline_command → call_command →
 * set_command / get_command / incr_command on a chained hash table),
 * appending the replies to the client's output buffer, which is written
 * out after each read (write_to_client). The clients are simulated: each
 * read delivers the next cfg_pipeline commands of the client's script.
 *
 * The bug (scalability): process_input_buffer removes each command from
 * the front of the query buffer as soon as it has run it, moving the rest
 * of the buffer to the front (memmove), so a read holding n pipelined
 * commands costs O(n^2) bytes moved. With one or two commands per read the
 * move is a few bytes; a client that pipelines a thousand commands makes
 * it dominate. The fix keeps a read position in the buffer (qb_pos) and
 * trims the consumed part once, after the loop.
 *
 *   prog normal|buggy
 */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define noinline __attribute__((noinline))
#define CLIENTS 8
#define BUCKETS (1 << 16)
#define MAXARGS 4

struct entry {
	struct entry *next;
	uint64_t hash;
	char key[24];
	char val[32];
};

struct client {
	int id;
	char *qbuf;        /* query buffer */
	size_t qlen, qcap;
	char *reply;       /* output buffer */
	size_t rlen, rcap;
	long sent;         /* commands of its script sent so far */
	uint64_t seed;
	uint64_t out_bytes;
};

long cfg_pipeline = 1;        /* commands per read */
long cfg_commands = 200000;   /* per client */
static struct entry *table[BUCKETS];
static long nkeys;
static uint64_t server_bytes_out;

static uint64_t hash_key(const char *s, size_t n)
{
	uint64_t h = 1469598103934665603ULL;
	for (size_t i = 0; i < n; i++)
		h = (h ^ (unsigned char)s[i]) * 1099511628211ULL;
	return h;
}

static void grow(char **b, size_t *cap, size_t need)
{
	if (need <= *cap)
		return;
	size_t c = *cap ? *cap : 1024;
	while (c < need)
		c *= 2;
	char *n = realloc(*b, c);
	if (!n) {
		fprintf(stderr, "out of memory\n");
		exit(1);
	}
	*b = n;
	*cap = c;
}

noinline void add_reply(struct client *c, const char *s, size_t n)
{
	grow(&c->reply, &c->rcap, c->rlen + n);
	memcpy(c->reply + c->rlen, s, n);
	c->rlen += n;
}

static struct entry *lookup(const char *k, size_t n, uint64_t h)
{
	for (struct entry *e = table[h & (BUCKETS - 1)]; e; e = e->next)
		if (e->hash == h && strlen(e->key) == n && memcmp(e->key, k, n) == 0)
			return e;
	return NULL;
}

noinline void set_command(struct client *c, char **argv, size_t *argl)
{
	uint64_t h = hash_key(argv[1], argl[1]);
	struct entry *e = lookup(argv[1], argl[1], h);
	if (!e) {
		e = calloc(1, sizeof *e);
		if (!e)
			exit(1);
		e->hash = h;
		memcpy(e->key, argv[1], argl[1] < 23 ? argl[1] : 23);
		e->next = table[h & (BUCKETS - 1)];
		table[h & (BUCKETS - 1)] = e;
		nkeys++;
	}
	size_t n = argl[2] < 31 ? argl[2] : 31;
	memcpy(e->val, argv[2], n);
	e->val[n] = 0;
	add_reply(c, "+OK\r\n", 5);
}

noinline void get_command(struct client *c, char **argv, size_t *argl)
{
	struct entry *e = lookup(argv[1], argl[1], hash_key(argv[1], argl[1]));
	if (!e) {
		add_reply(c, "$-1\r\n", 5);
		return;
	}
	char hdr[32];
	size_t vl = strlen(e->val);
	int n = snprintf(hdr, sizeof hdr, "$%zu\r\n", vl);
	add_reply(c, hdr, (size_t)n);
	add_reply(c, e->val, vl);
	add_reply(c, "\r\n", 2);
}

noinline void incr_command(struct client *c, char **argv, size_t *argl)
{
	uint64_t h = hash_key(argv[1], argl[1]);
	struct entry *e = lookup(argv[1], argl[1], h);
	long v = e ? strtol(e->val, NULL, 10) + 1 : 1;
	char num[32];
	int n = snprintf(num, sizeof num, "%ld", v);
	char *av[3] = {argv[0], argv[1], num};
	size_t al[3] = {argl[0], argl[1], (size_t)n};
	set_command(c, av, al);
	c->rlen -= 5; /* set_command's +OK */
	char rep[40];
	n = snprintf(rep, sizeof rep, ":%ld\r\n", v);
	add_reply(c, rep, (size_t)n);
}

noinline void call_command(struct client *c, int argc, char **argv, size_t *argl)
{
	if (argc == 3 && argl[0] == 3 && memcmp(argv[0], "SET", 3) == 0)
		set_command(c, argv, argl);
	else if (argc == 2 && argl[0] == 3 && memcmp(argv[0], "GET", 3) == 0)
		get_command(c, argv, argl);
	else if (argc == 2 && argl[0] == 4 && memcmp(argv[0], "INCR", 4) == 0)
		incr_command(c, argv, argl);
	else
		add_reply(c, "-ERR unknown command\r\n", 22);
}

/* process_inline_command runs the command in line[0..n) (no "\r\n"). */
noinline void process_inline_command(struct client *c, char *line, size_t n)
{
	char *argv[MAXARGS];
	size_t argl[MAXARGS];
	int argc = 0;
	size_t i = 0;
	while (i < n && argc < MAXARGS) {
		while (i < n && line[i] == ' ')
			i++;
		if (i == n)
			break;
		size_t s = i;
		while (i < n && line[i] != ' ')
			i++;
		argv[argc] = line + s;
		argl[argc++] = i - s;
	}
	if (argc > 0)
		call_command(c, argc, argv, argl);
}

/* process_input_buffer is the root cause: it moves the rest of the query
 * buffer to the front after each command (the fix: advance a read
 * position and trim once after the loop). */
noinline long process_input_buffer(struct client *c)
{
	long done = 0;
	for (;;) {
		char *nl = memchr(c->qbuf, '\n', c->qlen);
		if (!nl)
			break;
		size_t linelen = (size_t)(nl - c->qbuf);
		size_t cmdlen = linelen > 0 && c->qbuf[linelen - 1] == '\r' ? linelen - 1 : linelen;
		process_inline_command(c, c->qbuf, cmdlen);
		size_t consumed = linelen + 1;
		memmove(c->qbuf, c->qbuf + consumed, c->qlen - consumed);
		c->qlen -= consumed;
		done++;
	}
	return done;
}

/* read_query_from_client stands for read(2) on the client's socket: it
 * appends the next cfg_pipeline commands of the client's script. */
noinline size_t read_query_from_client(struct client *c)
{
	size_t before = c->qlen;
	for (long k = 0; k < cfg_pipeline && c->sent < cfg_commands; k++, c->sent++) {
		c->seed ^= c->seed << 13, c->seed ^= c->seed >> 7, c->seed ^= c->seed << 17;
		unsigned key = (unsigned)(c->seed % 50000);
		char cmd[96];
		int n;
		switch (c->seed >> 60 & 3) {
		case 0:
		case 1:
			n = snprintf(cmd, sizeof cmd, "SET user:%u:session %lx\r\n", key, (unsigned long)(c->seed >> 20));
			break;
		case 2:
			n = snprintf(cmd, sizeof cmd, "GET user:%u:session\r\n", key);
			break;
		default:
			n = snprintf(cmd, sizeof cmd, "INCR hits:%u\r\n", key % 1000);
			break;
		}
		grow(&c->qbuf, &c->qcap, c->qlen + (size_t)n);
		memcpy(c->qbuf + c->qlen, cmd, (size_t)n);
		c->qlen += (size_t)n;
	}
	return c->qlen - before;
}

noinline void write_to_client(struct client *c)
{
	uint64_t s = 0;
	for (size_t i = 0; i < c->rlen; i += 64)
		s += (unsigned char)c->reply[i];
	c->out_bytes += c->rlen + (s & 0);
	server_bytes_out += c->rlen;
	c->rlen = 0;
}

noinline long event_loop(struct client *cl, int n)
{
	long processed = 0;
	for (;;) {
		int active = 0;
		for (int i = 0; i < n; i++) {
			struct client *c = &cl[i];
			if (read_query_from_client(c) == 0)
				continue;
			active++;
			processed += process_input_buffer(c);
			write_to_client(c);
		}
		if (!active)
			return processed;
	}
}

int main(int argc, char **argv)
{
	if (argc > 1 && strcmp(argv[1], "buggy") == 0)
		cfg_pipeline = 10000;
	struct client *cl = calloc(CLIENTS, sizeof *cl);
	if (!cl)
		return 1;
	for (int i = 0; i < CLIENTS; i++) {
		cl[i].id = i;
		cl[i].seed = 0x9e3779b97f4a7c15ULL * (uint64_t)(i + 1);
	}
	long n = event_loop(cl, CLIENTS);
	printf("%ld commands, %ld keys, %llu reply bytes\n", n, nkeys, (unsigned long long)server_bytes_out);
	return 0;
}
