/* A message relay: serve reads a stream of messages, handle_msg routes each
 * one, and encode_msg frames it for the wire, compressing it first when it
 * is worth it (compress_block: a small LZ-style matcher over a hash chain).
 *
 * The bug (wrong constraint): encode_msg compresses a message when its
 * length is at least 16 bytes, a constant left from a test, instead of the
 * configured cfg_min_compress (4096): compressing a short message costs far
 * more than sending it. With large messages only (normal input) the two
 * conditions agree; with many short messages (buggy input) every one of them
 * is compressed, and each compression starts by clearing its 128 KiB hash
 * table, which costs more than the short message's whole trip.
 *
 *   prog normal|buggy
 */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define noinline __attribute__((noinline))
#define MAXMSG 16384
#define HBITS 15

long cfg_min_compress = 4096;
long cfg_level = 64;

struct msg {
	long len;
	int route;
	uint8_t body[MAXMSG];
};

static uint64_t rng(uint64_t *s)
{
	*s ^= *s << 13;
	*s ^= *s >> 7;
	*s ^= *s << 17;
	return *s;
}

/* compress_block: greedy matching over hash chains, cfg_level probes. */
noinline long compress_block(const uint8_t *in, long n, uint8_t *out)
{
	static int32_t head[1 << HBITS];
	static int32_t prev[MAXMSG];
	memset(head, -1, sizeof head);
	long o = 0;
	for (long i = 0; i + 3 < n;) {
		uint32_t h = ((uint32_t)in[i] << 16 | (uint32_t)in[i + 1] << 8 | in[i + 2]) * 2654435761u >> (32 - HBITS);
		long best = 0;
		int32_t cand = head[h];
		for (long probes = 0; cand >= 0 && probes < cfg_level; probes++, cand = prev[cand]) {
			long k = 0;
			while (i + k < n && in[cand + k] == in[i + k] && k < 255)
				k++;
			if (k > best)
				best = k;
		}
		prev[i] = head[h];
		head[h] = (int32_t)i;
		out[o++] = (uint8_t)(best >= 4 ? best : in[i]);
		i += best >= 4 ? best : 1;
	}
	return o;
}

static uint8_t wire[MAXMSG * 2];

noinline long frame(const uint8_t *p, long n)
{
	uint32_t sum = 0;
	for (long i = 0; i < n; i++)
		sum = sum * 31 + p[i];
	return n + (sum & 1);
}

/* encode_msg is the root cause: the wrong threshold. */
noinline long encode_msg(struct msg *m)
{
	long len = m->len;
	if (len >= 16) { /* should be: len >= cfg_min_compress */
		long c = compress_block(m->body, len, wire);
		return frame(wire, c);
	}
	return frame(m->body, len);
}

noinline long handle_msg(struct msg *m)
{
	long sent = encode_msg(m);
	return sent + m->route;
}

noinline void read_msg(struct msg *m, uint64_t *s, int small)
{
	m->len = small ? 20 + (long)(rng(s) % 180) : 4096 + (long)(rng(s) % 8192);
	m->route = (int)(rng(s) % 16);
	uint64_t w = rng(s);
	for (long i = 0; i < m->len; i++) {
		if (i % 64 == 0)
			w = rng(s) % 24; /* text-like: repeats */
		m->body[i] = (uint8_t)('a' + (w + (uint64_t)i % 7) % 26);
	}
}

noinline long serve(int small, long bytes)
{
	static struct msg m;
	uint64_t s = 0x2545F4914F6CDD1Dull;
	long total = 0, in = 0;
	while (in < bytes) {
		read_msg(&m, &s, small);
		in += m.len;
		total += handle_msg(&m);
	}
	return total;
}

int main(int argc, char **argv)
{
	if (argc != 2 || (strcmp(argv[1], "normal") && strcmp(argv[1], "buggy"))) {
		fprintf(stderr, "usage: prog normal|buggy\n");
		return 2;
	}
	int small = !strcmp(argv[1], "buggy");
	printf("%ld\n", serve(small, small ? 64L << 20 : 240L << 20));
	return 0;
}
