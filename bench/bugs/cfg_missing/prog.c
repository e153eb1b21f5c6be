/* A job dispatcher: each batch, notify_workers tells every worker about
 * the new batch and waits for its acknowledgement (wait_ack polls the
 * worker's mailbox until it answers or a timeout passes).
 *
 * The bug (missing constraint): notify_workers does not skip workers that
 * have exited. An exited worker never answers, so each of them costs a
 * whole timeout of polling. The normal input has no exited workers; the
 * buggy input retires a share of them (g_exit_every), which also takes a
 * path the normal input never takes (retire_worker).
 *
 *   prog normal|buggy
 */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define noinline __attribute__((noinline))
#define N_WORKERS 64
#define BATCHES 4000
#define TIMEOUT_POLLS 600

enum state { IDLE, BUSY, EXITED };

struct worker {
	int id;
	enum state state;
	volatile unsigned mailbox;
	unsigned acked;
	uint64_t done;
};

long g_exit_every = 0;   /* 0: no worker exits */
long g_verbose = 0;
long g_batch_size = 32;

static uint64_t rng = 0x2545F4914F6CDD1Dull;
static uint64_t next_rand(void)
{
	rng ^= rng << 13;
	rng ^= rng >> 7;
	rng ^= rng << 17;
	return rng;
}

/* poll_mailbox stands for reading a worker's mailbox (a syscall in a real
 * dispatcher). */
noinline unsigned poll_mailbox(struct worker *w)
{
	unsigned v = 0;
	for (int i = 0; i < 40; i++)
		v += w->mailbox; /* volatile: read each time */
	return w->state == EXITED ? 0 : v / 40;
}

noinline int wait_ack(struct worker *w, unsigned seq)
{
	for (int polls = 0; polls < TIMEOUT_POLLS; polls++)
		if (poll_mailbox(w) == seq)
			return 1;
	return 0;
}

/* A live worker answers at once. */
noinline void deliver(struct worker *w, unsigned seq)
{
	if (w->state != EXITED) {
		w->mailbox = seq;
		w->state = BUSY;
	}
}

/* notify_workers is the root cause: it should skip exited workers. */
noinline long notify_workers(struct worker *ws, int n, unsigned seq)
{
	long missed = 0;
	for (int i = 0; i < n; i++) {
		/* missing: if (ws[i].state == EXITED) continue; */
		deliver(&ws[i], seq);
		if (!wait_ack(&ws[i], seq))
			missed++;
	}
	return missed;
}

/* run_jobs does the batch's work on the live workers. */
noinline uint64_t run_jobs(struct worker *ws, int n, long size)
{
	uint64_t sum = 0;
	for (int i = 0; i < n; i++) {
		if (ws[i].state == EXITED)
			continue;
		uint64_t x = ws[i].done + (uint64_t)i;
		for (long k = 0; k < size * 100; k++)
			x = x * 6364136223846793005ull + 1442695040888963407ull;
		ws[i].done = x;
		ws[i].state = IDLE;
		sum += x >> 60;
	}
	return sum;
}

noinline void retire_worker(struct worker *ws, int n)
{
	int i = (int)(next_rand() % n);
	ws[i].state = EXITED;
	if (g_verbose)
		fprintf(stderr, "worker %d exited\n", i);
}

noinline uint64_t dispatch(struct worker *ws, int n)
{
	uint64_t sum = 0;
	long missed = 0;
	for (long b = 0; b < BATCHES; b++) {
		if (g_exit_every && b % g_exit_every == 0)
			retire_worker(ws, n);
		missed += notify_workers(ws, n, (unsigned)b + 1);
		sum += run_jobs(ws, n, g_batch_size);
	}
	return sum + (uint64_t)missed;
}

int main(int argc, char **argv)
{
	if (argc > 1 && strcmp(argv[1], "buggy") == 0) {
		g_exit_every = 100;
		g_batch_size = 30;
	}
	struct worker *ws = calloc(N_WORKERS, sizeof *ws);
	for (int i = 0; i < N_WORKERS; i++)
		ws[i].id = i;
	printf("%llx\n", (unsigned long long)dispatch(ws, N_WORKERS));
	return 0;
}
