/* A message relay: two worker threads take messages from a shared queue
 * (worker -> relay_one -> deliver_with_retry -> send_frame) and send each to
 * its destination. send_frame builds the frame (encode_frame: a checksum
 * over the payload and a copy) and "sends" it; a destination can fail
 * temporarily (busy: worth retrying) or permanently (gone: never succeeds).
 *
 * The bug (missing constraint): deliver_with_retry retries every failure up
 * to max_attempts times, with a growing back-off computed in a spin; it
 * lacks the check that stops at a permanent failure
 * (if (rc == ERR_GONE) break;), so every message to a gone destination is
 * encoded and sent max_attempts times. The normal input's destinations are
 * only ever busy; in the buggy input a fifth of the messages go to
 * destinations that are gone.
 *
 *   prog normal|buggy
 */
#include <pthread.h>
#include <stdatomic.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define noinline __attribute__((noinline))
#define MESSAGES 150000
#define PAYLOAD 1024
#define DESTS 64
#define ERR_BUSY 1
#define ERR_GONE 2

struct msg {
	int dest;
	int len;
	unsigned char payload[PAYLOAD];
};

static struct msg *queue;
static atomic_int next_msg;
static int dest_state[DESTS]; /* 0 up, 1 flaky, 2 gone */
static int max_attempts = 12;
static atomic_ulong sent, dropped;

static uint64_t rng(uint64_t *s)
{
	*s ^= *s << 13;
	*s ^= *s >> 7;
	*s ^= *s << 17;
	return *s;
}

noinline uint32_t encode_frame(const struct msg *m, unsigned char *out)
{
	uint32_t crc = 0xffffffffu;
	for (int i = 0; i < m->len; i++) {
		crc ^= m->payload[i];
		for (int k = 0; k < 8; k++)
			crc = (crc >> 1) ^ (0xedb88320u & -(crc & 1));
	}
	memcpy(out, m->payload, (size_t)m->len);
	return ~crc;
}

noinline int send_frame(const struct msg *m, uint64_t *seed)
{
	static __thread unsigned char frame[PAYLOAD + 16];
	uint32_t crc = encode_frame(m, frame);
	frame[m->len] = (unsigned char)crc;
	switch (dest_state[m->dest]) {
	case 2:
		return ERR_GONE;
	case 1:
		return rng(seed) % 4 == 0 ? ERR_BUSY : 0;
	}
	return 0;
}

noinline void backoff(int attempt)
{
	volatile unsigned long x = 0;
	for (int i = 0; i < 50 << (attempt < 4 ? attempt : 4); i++)
		x += (unsigned long)i;
}

/* deliver_with_retry is the root cause: it never stops at ERR_GONE. */
noinline int deliver_with_retry(const struct msg *m, uint64_t *seed)
{
	int rc = 0;
	for (int attempt = 0; attempt < max_attempts; attempt++) {
		rc = send_frame(m, seed);
		if (rc == 0)
			return 0;
		backoff(attempt);
	}
	return rc;
}

noinline void relay_one(const struct msg *m, uint64_t *seed)
{
	if (deliver_with_retry(m, seed) == 0)
		atomic_fetch_add(&sent, 1);
	else
		atomic_fetch_add(&dropped, 1);
}

static void *worker(void *arg)
{
	uint64_t seed = 0x9e3779b97f4a7c15ull + (uintptr_t)arg;
	for (;;) {
		int i = atomic_fetch_add(&next_msg, 1);
		if (i >= MESSAGES)
			return NULL;
		relay_one(&queue[i], &seed);
	}
}

int main(int argc, char **argv)
{
	int buggy = argc > 1 && strcmp(argv[1], "buggy") == 0;
	uint64_t s = 42;
	for (int d = 0; d < DESTS; d++)
		dest_state[d] = d % 4 == 1 ? 1 : 0;
	if (buggy)
		for (int d = 0; d < DESTS; d += 5)
			dest_state[d] = 2;
	queue = calloc(MESSAGES, sizeof *queue);
	if (!queue)
		return 1;
	for (int i = 0; i < MESSAGES; i++) {
		queue[i].dest = (int)(rng(&s) % DESTS);
		queue[i].len = 256 + (int)(rng(&s) % (PAYLOAD - 256));
		for (int k = 0; k < queue[i].len; k += 8)
			queue[i].payload[k] = (unsigned char)rng(&s);
	}
	pthread_t t[2];
	for (long k = 0; k < 2; k++)
		pthread_create(&t[k], NULL, worker, (void *)k);
	for (int k = 0; k < 2; k++)
		pthread_join(t[k], NULL);
	printf("sent %lu dropped %lu\n", (unsigned long)sent, (unsigned long)dropped);
	return 0;
}
