/* A small query server: the main thread (serve) parses requests of the form
 * "SELECT ... WHERE city = X LIMIT n" into struct query and queues them;
 * worker threads take them (worker) and run them (run_query, exec_select)
 * against an in-memory table of text rows ("id|name|age|city|score"):
 * scan_rows tests each row (row_matches, which finds the city field with
 * field_at) and collects the matching row numbers, at most q->limit of them.
 *
 * The bug (missing constraint): scan_rows stops collecting at the limit
 * but not scanning: it has no "if (found == q->limit) break", so every
 * query reads the whole table. The normal workload is a report over rare
 * cities (a handful of rows each, fewer than the limit, so the whole table
 * must be read anyway); the buggy workload is a paginated listing that asks
 * for the first 10 rows of common cities, found within the table's first
 * hundred rows, three times as many queries, each of which should be
 * almost free. The fix: break out of the loop when found reaches q->limit.
 *
 *   prog normal|buggy
 */
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define noinline __attribute__((noinline))
#define ROWS 120000
#define QUEUE 64

struct query {
	char city[16];
	int limit;
	long id;
};

struct table {
	char *text;
	long *row;  /* offset of each row in text */
	long nrows;
};

struct queue {
	pthread_mutex_t mu;
	pthread_cond_t nonempty, nonfull;
	struct query q[QUEUE];
	long head, tail;
	int done;
};

long cfg_workers = 2;
static struct table tab;
static struct queue qu = {.mu = PTHREAD_MUTEX_INITIALIZER,
			  .nonempty = PTHREAD_COND_INITIALIZER,
			  .nonfull = PTHREAD_COND_INITIALIZER};
static const char *common[] = {"Berlin", "Paris", "Madrid", "Rome", "Vienna", "Prague", "Lisbon", "Dublin"};
static const char *rare[] = {"Aarhus", "Bergen", "Brno", "Cork", "Delft", "Faro", "Ghent", "Graz",
			     "Kaunas", "Linz", "Lund", "Malmo", "Nantes", "Oulu", "Porto", "Split",
			     "Tartu", "Turku", "Umea", "Varna"};

noinline const char *field_at(const char *row, int field, int *len)
{
	const char *p = row;
	for (int f = 0; f < field; f++) {
		while (*p != '|')
			p++;
		p++;
	}
	const char *e = p;
	while (*e != '|' && *e != '\n')
		e++;
	*len = (int)(e - p);
	return p;
}

noinline int row_matches(const struct table *t, long r, const struct query *q)
{
	int len;
	const char *city = field_at(t->text + t->row[r], 3, &len);
	return (size_t)len == strlen(q->city) && memcmp(city, q->city, (size_t)len) == 0;
}

/* scan_rows is the root cause: it keeps scanning once found == q->limit. */
noinline int scan_rows(const struct table *t, const struct query *q, long *out)
{
	int found = 0;
	for (long r = 0; r < t->nrows; r++) {
		if (!row_matches(t, r, q))
			continue;
		if (found < q->limit)
			out[found++] = r;
	}
	return found;
}

noinline long exec_select(const struct query *q)
{
	long out[64];
	int n = scan_rows(&tab, q, out);
	long sum = 0;
	for (int i = 0; i < n; i++)
		sum += out[i];
	return sum + n;
}

noinline long run_query(const struct query *q)
{
	if (q->limit <= 0 || q->limit > 64)
		return 0;
	return exec_select(q);
}

static void *worker(void *arg)
{
	(void)arg;
	long total = 0;
	for (;;) {
		pthread_mutex_lock(&qu.mu);
		while (qu.head == qu.tail && !qu.done)
			pthread_cond_wait(&qu.nonempty, &qu.mu);
		if (qu.head == qu.tail) {
			pthread_mutex_unlock(&qu.mu);
			break;
		}
		struct query q = qu.q[qu.head % QUEUE];
		qu.head++;
		pthread_cond_signal(&qu.nonfull);
		pthread_mutex_unlock(&qu.mu);
		total += run_query(&q);
	}
	return (void *)total;
}

noinline int parse_request(const char *req, struct query *q)
{
	return sscanf(req, "SELECT id FROM people WHERE city = %15s LIMIT %d", q->city, &q->limit) == 2 ? 0 : -1;
}

noinline void serve(long nreq, int buggy)
{
	char req[128];
	for (long i = 0; i < nreq; i++) {
		struct query q = {.id = i};
		const char *city = buggy ? common[i % 8] : rare[i % 20];
		snprintf(req, sizeof req, "SELECT id FROM people WHERE city = %s LIMIT %d", city, 10);
		if (parse_request(req, &q) != 0)
			continue;
		pthread_mutex_lock(&qu.mu);
		while (qu.tail - qu.head == QUEUE)
			pthread_cond_wait(&qu.nonfull, &qu.mu);
		qu.q[qu.tail % QUEUE] = q;
		qu.tail++;
		pthread_cond_signal(&qu.nonempty);
		pthread_mutex_unlock(&qu.mu);
	}
	pthread_mutex_lock(&qu.mu);
	qu.done = 1;
	pthread_cond_broadcast(&qu.nonempty);
	pthread_mutex_unlock(&qu.mu);
}

static void load_table(void)
{
	tab.text = malloc((size_t)ROWS * 64);
	tab.row = malloc(ROWS * sizeof *tab.row);
	if (!tab.text || !tab.row)
		abort();
	unsigned long x = 2463534242UL;
	long pos = 0;
	for (long r = 0; r < ROWS; r++) {
		x ^= x << 13, x ^= x >> 17, x ^= x << 5;
		x &= 0xffffffffUL;
		const char *city = r % 1000 == 999 ? rare[(r / 1000) % 20] : common[x % 8];
		tab.row[r] = pos;
		pos += sprintf(tab.text + pos, "%ld|person%lu|%lu|%s|%lu\n", r, x % 100000, 18 + x % 60, city, x % 1000);
	}
	tab.nrows = ROWS;
}

int main(int argc, char **argv)
{
	int buggy = argc > 1 && strcmp(argv[1], "buggy") == 0;
	long nreq = buggy ? 9000 : 3000;
	load_table();
	pthread_t th[8];
	for (long i = 0; i < cfg_workers; i++)
		pthread_create(&th[i], NULL, worker, NULL);
	serve(nreq, buggy);
	long total = 0;
	for (long i = 0; i < cfg_workers; i++) {
		void *r;
		pthread_join(th[i], &r);
		total += (long)r;
	}
	printf("%ld queries, checksum %ld\n", nreq, total);
	return 0;
}
