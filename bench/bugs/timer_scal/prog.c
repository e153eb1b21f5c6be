/* An event-driven session server: the loop (loop_run) takes ready events
 * from a queue and calls each one's handler through a table of function
 * pointers; a read on a session (on_read) parses the message and touches
 * the session (session_touch), which re-arms its idle timer
 * (timer_rearm -> timer_insert). Expired timers are popped from the front of
 * the timer list on each tick (timers_expire).
 *
 * The bug (scalability): the timers are a sorted linked list, and
 * timer_insert walks it from the front to find the new deadline's place.
 * With a short idle timeout (the normal configuration, cfg_idle_timeout =
 * 2 ticks) few timers are pending and the walk is short; with a long one
 * (the buggy configuration, 20000 ticks) every session's timer stays
 * pending and each re-arm walks thousands of them. The fix is a timer
 * wheel or a heap.
 *
 *   prog normal|buggy
 */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define noinline __attribute__((noinline))
#define SESSIONS 3000
#define EVENTS 300000

struct timer {
	long deadline;
	struct timer *next, *prev;
	int armed;
};

struct session {
	int id;
	long bytes;
	uint64_t digest;
	struct timer idle;
};

struct event {
	int kind;
	int session;
	char msg[48];
};

typedef void handler(struct event *);

static struct session sessions[SESSIONS];
static struct timer head = { .deadline = -1 };
static long now;
static long expired;
int cfg_idle_timeout = 2;

static uint64_t rng(uint64_t *s)
{
	*s ^= *s << 13;
	*s ^= *s >> 7;
	*s ^= *s << 17;
	return *s;
}

static void timer_unlink(struct timer *t)
{
	if (!t->armed)
		return;
	t->prev->next = t->next;
	if (t->next)
		t->next->prev = t->prev;
	t->armed = 0;
}

/* timer_insert is the root cause: a walk of the sorted list. */
noinline void timer_insert(struct timer *t)
{
	struct timer *p = &head;
	while (p->next && p->next->deadline <= t->deadline)
		p = p->next;
	t->next = p->next;
	t->prev = p;
	if (p->next)
		p->next->prev = t;
	p->next = t;
	t->armed = 1;
}

noinline void timer_rearm(struct timer *t, long timeout)
{
	timer_unlink(t);
	t->deadline = now + timeout;
	timer_insert(t);
}

noinline void timers_expire(void)
{
	while (head.next && head.next->deadline <= now) {
		timer_unlink(head.next);
		expired++;
	}
}

noinline void session_touch(struct session *s, long n)
{
	s->bytes += n;
	timer_rearm(&s->idle, cfg_idle_timeout);
}

noinline uint64_t parse_msg(const char *m)
{
	uint64_t h = 1469598103934665603ull;
	for (int r = 0; r < 60; r++)
		for (const char *c = m; *c; c++)
			h = (h ^ (uint8_t)*c) * 1099511628211ull;
	return h;
}

static void on_read(struct event *e)
{
	struct session *s = &sessions[e->session];
	s->digest ^= parse_msg(e->msg);
	session_touch(s, (long)strlen(e->msg));
}

static void on_tick(struct event *e)
{
	(void)e;
	now++;
	timers_expire();
}

static handler *handlers[] = { on_read, on_tick };

noinline void loop_run(struct event *q, int n)
{
	for (int i = 0; i < n; i++)
		handlers[q[i].kind](&q[i]);
}

int main(int argc, char **argv)
{
	if (argc != 2 || (strcmp(argv[1], "normal") && strcmp(argv[1], "buggy"))) {
		fprintf(stderr, "usage: prog normal|buggy\n");
		return 2;
	}
	if (!strcmp(argv[1], "buggy"))
		cfg_idle_timeout = 20000;
	struct event *q = calloc(EVENTS, sizeof *q);
	uint64_t s = 88172645463325252ull;
	for (int i = 0; i < EVENTS; i++) {
		q[i].kind = i % 100 == 99;
		q[i].session = (int)(rng(&s) % SESSIONS);
		snprintf(q[i].msg, sizeof q[i].msg, "GET /feed?since=%llx&n=20",
			 (unsigned long long)(rng(&s) & 0xffffffffffull));
	}
	for (int i = 0; i < SESSIONS; i++)
		sessions[i].id = i;
	loop_run(q, EVENTS);
	uint64_t d = 0;
	for (int i = 0; i < SESSIONS; i++)
		d ^= sessions[i].digest;
	printf("%ld %llx\n", expired, (unsigned long long)d);
	return 0;
}
