/* A small web application server in the manner of PHP's request startup:
 * for each request (serve → handle_request) it parses the query string and
 * the url-encoded POST body (parse_form → parse_pairs, which splits the
 * pairs and decodes them with url_decode) and registers each variable
 * (register_variable) in the request's variable list, where a repeated
 * name replaces the earlier value; then the application runs
 * (run_app: looks up its fields and renders a page with snprintf).
 *
 * The bug (missing constraint): register_variable has no limit on the
 * number of variables. The configuration has one (cfg_max_input_vars,
 * 1000, as PHP's max_input_vars) but nothing checks it, and each
 * registration walks the whole list comparing names (strcmp), so a form
 * with n fields costs O(n^2) comparisons. The fix: once the list holds
 * cfg_max_input_vars variables, register_variable refuses the rest (with
 * one warning per request).
 *
 *   prog normal|buggy
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define noinline __attribute__((noinline))

struct var {
	struct var *next;
	char *name;
	char *value;
};

struct vars {
	struct var *head, *tail;
	long count;
	long dropped;
};

long cfg_max_input_vars = 1000;
long cfg_requests = 120000;
long cfg_big_forms = 0;        /* requests with a form of cfg_big_fields fields */
long cfg_big_fields = 6000;
static unsigned long page_bytes;

static int hexval(int c)
{
	if (c >= '0' && c <= '9')
		return c - '0';
	if (c >= 'a' && c <= 'f')
		return c - 'a' + 10;
	if (c >= 'A' && c <= 'F')
		return c - 'A' + 10;
	return -1;
}

/* url_decode decodes s[0..n) into a new string. */
noinline char *url_decode(const char *s, size_t n)
{
	char *d = malloc(n + 1), *o = d;
	if (!d)
		exit(1);
	for (size_t i = 0; i < n; i++) {
		if (s[i] == '+') {
			*o++ = ' ';
		} else if (s[i] == '%' && i + 2 < n && hexval(s[i + 1]) >= 0 && hexval(s[i + 2]) >= 0) {
			*o++ = (char)(hexval(s[i + 1]) * 16 + hexval(s[i + 2]));
			i += 2;
		} else {
			*o++ = s[i];
		}
	}
	*o = 0;
	return d;
}

/* register_variable is the root cause: it never checks
 * cfg_max_input_vars, and it walks the whole list for each name. */
noinline int register_variable(struct vars *vs, char *name, char *value)
{
	for (struct var *v = vs->head; v; v = v->next) {
		if (strcmp(v->name, name) == 0) {
			free(v->value);
			v->value = value;
			free(name);
			return 0;
		}
	}
	struct var *v = malloc(sizeof *v);
	if (!v)
		exit(1);
	v->next = NULL;
	v->name = name;
	v->value = value;
	if (vs->tail)
		vs->tail->next = v;
	else
		vs->head = v;
	vs->tail = v;
	vs->count++;
	return 1;
}

noinline long parse_pairs(struct vars *vs, const char *s, size_t n)
{
	long pairs = 0;
	const char *end = s + n;
	while (s < end) {
		const char *amp = memchr(s, '&', (size_t)(end - s));
		if (!amp)
			amp = end;
		const char *eq = memchr(s, '=', (size_t)(amp - s));
		if (eq && eq > s) {
			char *name = url_decode(s, (size_t)(eq - s));
			char *value = url_decode(eq + 1, (size_t)(amp - eq - 1));
			if (register_variable(vs, name, value) < 0) {
				free(name);
				free(value);
			}
			pairs++;
		}
		s = amp + 1;
	}
	return pairs;
}

noinline long parse_form(struct vars *vs, const char *query, const char *body)
{
	long n = parse_pairs(vs, query, strlen(query));
	return n + parse_pairs(vs, body, strlen(body));
}

static const char *lookup(const struct vars *vs, const char *name)
{
	for (const struct var *v = vs->head; v; v = v->next)
		if (strcmp(v->name, name) == 0)
			return v->value;
	return "";
}

noinline void run_app(const struct vars *vs)
{
	char page[2048];
	int n = snprintf(page, sizeof page,
			 "<html><body><h1>Order %s</h1><p>Customer: %s &lt;%s&gt;</p>"
			 "<p>Ship to: %s, %s %s</p><p>%ld fields received</p></body></html>",
			 lookup(vs, "order_id"), lookup(vs, "name"), lookup(vs, "email"), lookup(vs, "street"),
			 lookup(vs, "zip"), lookup(vs, "city"), vs->count);
	page_bytes += (unsigned long)n;
}

static void free_vars(struct vars *vs)
{
	for (struct var *v = vs->head, *nx; v; v = nx) {
		nx = v->next;
		free(v->name);
		free(v->value);
		free(v);
	}
}

noinline void handle_request(const char *query, const char *body, long *fields)
{
	struct vars vs = {0};
	parse_form(&vs, query, body);
	run_app(&vs);
	*fields += vs.count;
	free_vars(&vs);
}

/* make_body writes a checkout form of extra line items (rows) plus the
 * usual fields. */
static size_t make_body(char *b, long req, long rows)
{
	size_t n = (size_t)sprintf(b, "name=Jane+Doe+%ld&email=jane%ld%%40example.org&street=12+Main+St&zip=%05ld&city=Springfield",
				   req, req % 1000, req % 99999);
	for (long r = 0; r < rows; r++)
		n += (size_t)sprintf(b + n, "&item_%05ld_sku=SKU-%ld&item_%05ld_qty=%ld", r, (req * 31 + r) % 100000, r,
				     1 + (req + r) % 9);
	n += (size_t)sprintf(b + n, "&csrf_token=%016lx", (unsigned long)req * 0x9e3779b97f4a7c15UL);
	return n;
}

noinline long serve(void)
{
	size_t cap = (size_t)cfg_big_fields * 48 + 4096;
	char *body = malloc(cap);
	char query[128];
	if (!body)
		exit(1);
	long fields = 0;
	long total = cfg_requests + cfg_big_forms;
	for (long i = 0; i < total; i++) {
		/* every (total / cfg_big_forms)-th request is a big form */
		int big = cfg_big_forms && i % (total / cfg_big_forms) == 0;
		snprintf(query, sizeof query, "order_id=%ld&lang=en&ref=cart", 100000 + i);
		make_body(body, i, big ? cfg_big_fields / 2 : 16);
		handle_request(query, body, &fields);
	}
	free(body);
	return fields;
}

int main(int argc, char **argv)
{
	if (argc > 1 && strcmp(argv[1], "buggy") == 0) {
		cfg_requests = 30000;
		cfg_big_forms = 24;
	}
	long fields = serve();
	printf("%ld requests, %ld fields registered, %lu page bytes\n", cfg_requests + cfg_big_forms, fields, page_bytes);
	return 0;
}
