/* A template server: each request renders a page template; a node of the
 * page is text, a variable, or an include of another template, resolved
 * through a cache of parsed templates.
 *
 * The bug (wrong constraint): resolve_include's freshness test compares the
 * cached template's generation with the store's using > instead of >=, so
 * a cached template is never fresh and every include parses its source
 * again (parse_template, which every request also runs on its page).
 * Only pages with includes (the buggy input) take this path.
 *
 *   prog normal|buggy
 */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define noinline __attribute__((noinline))
#define REQUESTS 150000
#define N_INCLUDES 16
#define MAX_NODES 256

enum kind { TEXT, VAR, INCLUDE };

struct node {
	enum kind kind;
	int arg; /* VAR: variable index; INCLUDE: template id */
	int len;
	const char *text;
};

struct tpl {
	struct node nodes[MAX_NODES];
	int n;
	long gen;
};

struct store {
	char *src[N_INCLUDES];
	long gen[N_INCLUDES]; /* generation of each source */
	struct tpl *cache[N_INCLUDES];
};

/* parse_template tokenises "text {{v}} text {{>k}}" sources. */
noinline void parse_template(const char *s, struct tpl *t)
{
	t->n = 0;
	const char *p = s;
	while (*p && t->n < MAX_NODES) {
		const char *q = strstr(p, "{{");
		if (!q) {
			t->nodes[t->n++] = (struct node){TEXT, 0, (int)strlen(p), p};
			break;
		}
		if (q > p)
			t->nodes[t->n++] = (struct node){TEXT, 0, (int)(q - p), p};
		const char *e = strstr(q, "}}");
		if (!e)
			break;
		if (q[2] == '>')
			t->nodes[t->n++] = (struct node){INCLUDE, atoi(q + 3), 0, NULL};
		else
			t->nodes[t->n++] = (struct node){VAR, atoi(q + 2), 0, NULL};
		p = e + 2;
	}
}

/* resolve_include is the root cause: the cache test is wrong. */
noinline struct tpl *resolve_include(struct store *st, int id)
{
	struct tpl *t = st->cache[id];
	long stamp = st->gen[id];
	if (t && t->gen > stamp) /* BUG: >= */
		return t;
	if (!t)
		t = st->cache[id] = malloc(sizeof *t);
	parse_template(st->src[id], t);
	t->gen = stamp;
	return t;
}

noinline uint64_t emit(const char *s, int n, uint64_t h)
{
	for (int i = 0; i < n; i++)
		h = (h ^ (unsigned char)s[i]) * 1099511628211ull;
	return h;
}

noinline uint64_t render_nodes(struct store *st, const struct tpl *t, const long *vars, int depth, uint64_t h);

noinline uint64_t render_node(struct store *st, const struct node *n, const long *vars, int depth, uint64_t h)
{
	char num[24];
	switch (n->kind) {
	case TEXT:
		return emit(n->text, n->len, h);
	case VAR:
		return emit(num, snprintf(num, sizeof num, "%ld", vars[n->arg & 7]), h);
	case INCLUDE:
		if (depth < 2)
			return render_nodes(st, resolve_include(st, n->arg % N_INCLUDES), vars, depth + 1, h);
	}
	return h;
}

noinline uint64_t render_nodes(struct store *st, const struct tpl *t, const long *vars, int depth, uint64_t h)
{
	for (int i = 0; i < t->n; i++)
		h = render_node(st, &t->nodes[i], vars, depth, h);
	return h;
}

noinline uint64_t render_page(struct store *st, const char *page, const long *vars)
{
	struct tpl t;
	parse_template(page, &t);
	return render_nodes(st, &t, vars, 0, 14695981039346656037ull);
}

noinline uint64_t handle(struct store *st, const char *page, long r)
{
	long vars[8];
	for (int i = 0; i < 8; i++)
		vars[i] = r * (i + 1);
	return render_page(st, page, vars);
}

noinline uint64_t serve_requests(struct store *st, const char *page)
{
	uint64_t s = 0;
	for (long r = 0; r < REQUESTS; r++)
		s += handle(st, page, r);
	return s;
}

static char *make_source(int words, int every, int include)
{
	size_t cap = (size_t)words * 24 + 64;
	char *s = malloc(cap), *p = s;
	for (int w = 0; w < words; w++) {
		if (include >= 0 && w % every == every - 1)
			p += sprintf(p, "{{>%d}} ", (include + w) % N_INCLUDES);
		else if (w % 5 == 4)
			p += sprintf(p, "{{%d}} ", w % 8);
		else
			p += sprintf(p, "word%d ", w % 97);
	}
	*p = 0;
	return s;
}

int main(int argc, char **argv)
{
	int buggy = argc > 1 && strcmp(argv[1], "buggy") == 0;
	struct store st = {0};
	for (int i = 0; i < N_INCLUDES; i++) {
		st.src[i] = make_source(120, 0, -1);
		st.gen[i] = 1;
	}
	/* The page: 160 words; the buggy one includes a template every 20. */
	char *page = make_source(160, 20, buggy ? 0 : -1);
	printf("%llx\n", (unsigned long long)serve_requests(&st, page));
	return 0;
}
