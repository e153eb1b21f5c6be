/* IntroPerf e2e target: a slowdown whose root cause is a caller several
 * frames above the hot function.
 *
 *   introperf_caller N [ENTRY]
 *
 * serves N requests, each session's history entry ENTRY bytes (2048). Each
 * request is logged (small writes to /dev/null) and its session is
 * validated. validate_session keeps the last CACHE sessions
 * verified; a request whose session is in that window only re-verifies its
 * own entry. With more than CACHE sessions (the buggy input) the window is
 * exceeded and validate_session falls back to re-verifying the whole session
 * history for every request: the time is spent in checksum_block, three
 * frames below (validate_session -> verify_history -> verify_entry ->
 * checksum_block), but the bug, and the fix, is in validate_session. A CPU
 * profile shows checksum_block; the ranked calling context shows the
 * caller. A base run uses N <= CACHE. A larger ENTRY makes each
 * validate_session of the buggy input proportionally longer, for samplers
 * whose period is longer than the default input's instances (a few ms). */
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#define CACHE 256

static unsigned char *history;
static unsigned long verified;
static int logfd;
static long entry = 2048;

__attribute__((noinline)) unsigned long checksum_block(const unsigned char *p, int n) {
	unsigned long h = 1469598103934665603UL;
	for (int i = 0; i < n; i++)
		h = (h ^ p[i]) * 1099511628211UL;
	return h;
}

__attribute__((noinline)) void verify_entry(long k) {
	verified += checksum_block(history + k * entry, entry) & 1;
}

__attribute__((noinline)) void verify_history(long upto) {
	for (long k = 0; k <= upto; k++)
		verify_entry(k);
}

__attribute__((noinline)) void validate_session(long i, long n) {
	if (n <= CACHE)
		verify_entry(i); /* in the window: only this session */
	else
		verify_history(i); /* BUG: the window overflowed, re-verify everything */
}

__attribute__((noinline)) void parse_request(long i) {
	for (int j = 0; j < entry; j++)
		history[i * entry + j] = (unsigned char)(i * 31 + j);
	verified += checksum_block(history + i * entry, 256) & 1;
}

__attribute__((noinline)) void log_request(long i) {
	char line[64];
	int len = snprintf(line, sizeof line, "request %ld\n", i);
	for (int k = 0; k < 4; k++)
		if (write(logfd, line, len) < 0) exit(1);
}

__attribute__((noinline)) void handle_request(long i, long n) {
	parse_request(i);
	validate_session(i, n);
	log_request(i);
}

__attribute__((noinline)) void serve(long n) {
	for (long i = 0; i < n; i++)
		handle_request(i, n);
}

int main(int argc, char **argv) {
	long n = argc > 1 ? atol(argv[1]) : 1000;
	if (argc > 2) entry = atol(argv[2]);
	if (n < 1 || entry < 256) return 2;
	history = calloc(n + 1, entry);
	logfd = open("/dev/null", O_WRONLY);
	if (!history || logfd < 0) return 1;
	serve(n);
	printf("%lu\n", verified);
	return 0;
}
