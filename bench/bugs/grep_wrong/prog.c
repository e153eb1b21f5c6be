/* A log search tool in the manner of journalctl --grep: the journal is kept
 * as binary entries (time, unit, priority, message id); grep_journal
 * renders each file's entries as text lines (render_file) and searches them
 * for a fixed string (grep_buffer, one match_line per line), counting the
 * matching lines. Options: -i (ignore case), -v (count the lines that do
 * not match).
 *
 * match_line picks the matcher: a Horspool search over bytes (match_fast,
 * which folds case through a table when -i is given) or a search that
 * decodes both the line and the pattern as multibyte characters and folds
 * them with towlower (match_mb), which a pattern with non-ASCII characters
 * needs under -i in a UTF-8 locale.
 *
 * The bug (wrong constraint): match_line takes the multibyte path whenever
 * -i is given in a multibyte locale (icase && MB_CUR_MAX > 1) instead of
 * only when the pattern itself holds multibyte characters (icase &&
 * pat->multibyte). An ASCII pattern with -i, the common case, decodes
 * every byte of the input. The fix tests the pattern, not the locale.
 *
 *   prog [-i] [-v] PATTERN
 */
#include <locale.h>
#include <time.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <wchar.h>
#include <wctype.h>

#define noinline __attribute__((noinline))
#define FILES 48
#define ENTRIES 24000
#define UNITS 16

struct entry {
	uint64_t usec;
	uint16_t unit, prio;
	uint32_t msg;
	uint32_t arg;
};

struct pattern {
	const char *s;
	size_t len;
	int icase;
	int invert;       /* -v: select the lines that do not match */
	int multibyte;    /* the pattern holds a non-ASCII byte */
	int mb_locale;    /* MB_CUR_MAX > 1 */
	unsigned char fold[256];
	size_t skip[256];
	wchar_t w[64];    /* the pattern decoded and folded, for match_mb */
	size_t wlen;
};

static const char *units[UNITS] = {"sshd", "cron", "nginx", "postgres", "kernel", "systemd", "dbus", "NetworkManager",
				   "containerd", "kubelet", "rsyslogd", "chronyd", "polkitd", "udisksd", "snapd", "cupsd"};
static const char *msgs[] = {
	"Accepted publickey for deploy from 10.0.%u.%u port %u",
	"Connection closed by authenticating user root 10.2.%u.%u port %u",
	"upstream timeout (110: Connection timed out) while reading response header from upstream, client: 10.1.%u.%u:%u",
	"checkpoint complete: wrote %u buffers (%u.%u%%); 0 WAL file(s) added",
	"Started Session %u of User deploy; Timeout set to %u.%u s",
	"eth0: Link is Up - 1Gbps/Full - flow control rx/tx; queue %u.%u.%u",
	"Successfully activated service 'org.freedesktop.hostname1' after %u.%u.%u ms",
	"pulling image \"registry.local/app:%u.%u.%u\": context deadline exceeded (TIMEOUT)",
};

long cfg_icase, cfg_invert;
static char *file_buf;
static size_t file_cap;

noinline void compile_pattern(struct pattern *p, const char *s, int icase, int invert)
{
	memset(p, 0, sizeof *p);
	p->s = s;
	p->len = strlen(s);
	p->icase = icase;
	p->invert = invert;
	p->mb_locale = MB_CUR_MAX > 1;
	for (int c = 0; c < 256; c++)
		p->fold[c] = icase && c < 128 ? (unsigned char)towlower((wint_t)c) : (unsigned char)c;
	for (size_t i = 0; i < p->len; i++)
		if ((unsigned char)s[i] >= 0x80)
			p->multibyte = 1;
	for (int c = 0; c < 256; c++)
		p->skip[c] = p->len;
	for (size_t i = 0; i + 1 < p->len; i++)
		p->skip[p->fold[(unsigned char)s[i]]] = p->len - 1 - i;
	mbstate_t st = {0};
	const char *q = s;
	p->wlen = mbsrtowcs(p->w, &q, 63, &st);
	if (p->wlen == (size_t)-1) {
		fprintf(stderr, "grep: pattern is not valid in this locale\n");
		exit(2);
	}
	for (size_t i = 0; i < p->wlen; i++)
		p->w[i] = (wchar_t)towlower((wint_t)p->w[i]);
}

/* match_fast: Horspool over bytes, case folded through p->fold. */
noinline int match_fast(const struct pattern *p, const char *line, size_t n)
{
	const unsigned char *l = (const unsigned char *)line;
	const unsigned char *s = (const unsigned char *)p->s;
	size_t m = p->len;
	if (m == 0)
		return 1;
	for (size_t i = 0; i + m <= n;) {
		size_t j = m;
		while (j > 0 && p->fold[l[i + j - 1]] == p->fold[s[j - 1]])
			j--;
		if (j == 0)
			return 1;
		i += p->skip[p->fold[l[i + m - 1]]];
	}
	return 0;
}

/* match_mb: decodes the line character by character and compares the
 * folded characters with the folded pattern at each start. */
noinline int match_mb(const struct pattern *p, const char *line, size_t n)
{
	mbstate_t st;
	size_t i = 0;
	while (i < n) {
		size_t at = i, k = 0, first = 1;
		memset(&st, 0, sizeof st);
		while (k < p->wlen && at < n) {
			wchar_t wc;
			size_t r = mbrtowc(&wc, line + at, n - at, &st);
			if (r == (size_t)-1 || r == (size_t)-2) {
				r = 1;
				wc = (wchar_t)(unsigned char)line[at];
				memset(&st, 0, sizeof st);
			}
			if (first)
				first = r;
			if ((wchar_t)towlower((wint_t)wc) != p->w[k])
				break;
			at += r;
			k++;
		}
		if (k == p->wlen)
			return 1;
		i += first;
	}
	return 0;
}

/* match_line is the root cause: the multibyte matcher is chosen on the
 * locale, not on the pattern (fix: p->icase && p->multibyte). */
noinline int match_line(const struct pattern *p, const char *line, size_t n)
{
	int found;
	if (p->icase && p->mb_locale)
		found = match_mb(p, line, n);
	else
		found = match_fast(p, line, n);
	return found != p->invert;
}

noinline long grep_buffer(const struct pattern *p, const char *buf, size_t n, long *lines)
{
	long hits = 0;
	const char *end = buf + n;
	for (const char *l = buf; l < end;) {
		const char *nl = memchr(l, '\n', (size_t)(end - l));
		if (!nl)
			nl = end;
		if (match_line(p, l, (size_t)(nl - l)))
			hits++;
		(*lines)++;
		l = nl + 1;
	}
	return hits;
}

/* render_file writes a journal file's entries as text lines. */
noinline size_t render_file(const struct entry *e, long n)
{
	size_t len = 0;
	for (long i = 0; i < n; i++) {
		if (file_cap - len < 512) {
			file_cap *= 2;
			file_buf = realloc(file_buf, file_cap);
			if (!file_buf)
				abort();
		}
		char msg[256];
		unsigned a = e[i].arg;
		snprintf(msg, sizeof msg, msgs[e[i].msg % 8], a % 250, (a >> 8) % 250, (a >> 16) % 60000);
		char when[64];
		struct tm tm;
		time_t t = (time_t)(e[i].usec / 1000000);
		gmtime_r(&t, &tm);
		strftime(when, sizeof when, "%b %d %H:%M:%S", &tm);
		len += (size_t)snprintf(file_buf + len, file_cap - len, "%s.%06llu host %s[%u]: <%u> %s\n", when, (unsigned long long)(e[i].usec % 1000000), units[e[i].unit],
					1000 + e[i].unit * 37, e[i].prio, msg);
	}
	return len;
}

noinline long grep_journal(const struct pattern *p, long *lines)
{
	struct entry *e = malloc(ENTRIES * sizeof *e);
	if (!e)
		abort();
	long hits = 0;
	uint64_t x = 88172645463325252ULL;
	for (int f = 0; f < FILES; f++) {
		for (long i = 0; i < ENTRIES; i++) {
			x ^= x << 13, x ^= x >> 7, x ^= x << 17;
			e[i].usec = 1700000000000000ULL + (uint64_t)f * 86400000000ULL + (uint64_t)i * 3600000;
			e[i].unit = (uint16_t)(x % UNITS);
			e[i].prio = (uint16_t)((x >> 8) % 8);
			e[i].msg = (uint32_t)((x >> 16) % 8);
			e[i].arg = (uint32_t)(x >> 32);
		}
		size_t n = render_file(e, ENTRIES);
		hits += grep_buffer(p, file_buf, n, lines);
	}
	free(e);
	return hits;
}

int main(int argc, char **argv)
{
	int a = 1;
	for (; a < argc && argv[a][0] == '-'; a++) {
		if (strcmp(argv[a], "-i") == 0)
			cfg_icase = 1;
		else if (strcmp(argv[a], "-v") == 0)
			cfg_invert = 1;
		else
			a = argc;
	}
	if (a >= argc) {
		fprintf(stderr, "usage: prog [-i] [-v] PATTERN\n");
		return 2;
	}
	if (!setlocale(LC_ALL, "C.UTF-8"))
		setlocale(LC_ALL, "");
	struct pattern p;
	compile_pattern(&p, argv[a], (int)cfg_icase, (int)cfg_invert);
	file_cap = 1 << 20;
	file_buf = malloc(file_cap);
	if (!file_buf)
		return 1;
	long lines = 0;
	long hits = grep_journal(&p, &lines);
	printf("%ld of %ld lines match\n", hits, lines);
	return 0;
}
