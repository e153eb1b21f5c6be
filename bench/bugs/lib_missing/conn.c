/* libconn: a pool of connections. Closing a connection sends a goodbye and
 * drains its socket until the peer's acknowledgement or a timeout. */
#include <stdlib.h>
#include "conn.h"

#define noinline __attribute__((noinline))
#define DRAIN_POLLS 1500

enum cstate { C_OPEN, C_CLOSED };

struct conn {
	enum cstate state;
	volatile unsigned inbox;
	uint64_t bytes;
};

struct pool {
	struct conn *c;
	int n;
};

struct pool *pool_new(int n)
{
	struct pool *p = calloc(1, sizeof *p);
	p->c = calloc(n, sizeof *p->c);
	p->n = n;
	return p;
}

void pool_open_all(struct pool *p)
{
	for (int i = 0; i < p->n; i++)
		p->c[i].state = C_OPEN;
}

void pool_mark_closed(struct pool *p, int i) { p->c[i % p->n].state = C_CLOSED; }

/* conn_recv stands for a non-blocking read of the socket. */
noinline unsigned conn_recv(struct conn *c)
{
	unsigned v = 0;
	for (int i = 0; i < 24; i++)
		v += c->inbox;
	return c->state == C_OPEN ? 1 : v & 0;
}

noinline int conn_drain(struct conn *c)
{
	for (int polls = 0; polls < DRAIN_POLLS; polls++)
		if (conn_recv(c))
			return 1;
	return 0;
}

/* pool_close_all is the root cause: it drains every connection, including
 * those already closed, which never answer (the fix: skip them). */
noinline long pool_close_all(struct pool *p)
{
	long timeouts = 0;
	for (int i = 0; i < p->n; i++) {
		/* missing: if (p->c[i].state == C_CLOSED) continue; */
		if (!conn_drain(&p->c[i]))
			timeouts++;
		p->c[i].state = C_CLOSED;
	}
	return timeouts;
}

noinline uint64_t conn_send(struct conn *c, int len)
{
	uint64_t h = c->bytes;
	for (int i = 0; i < len; i++)
		h = h * 31 + (uint64_t)i;
	c->bytes = h;
	return h;
}

uint64_t pool_traffic(struct pool *p, int rounds)
{
	uint64_t s = 0;
	for (int r = 0; r < rounds; r++)
		for (int i = 0; i < p->n; i++)
			if (p->c[i].state == C_OPEN)
				s += conn_send(&p->c[i], 512);
	return s;
}
