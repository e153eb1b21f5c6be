/* IntroPerf coverage target: a program whose every call is known.
 *
 *   introperf_cov JOBS
 *
 * Built with -finstrument-functions, it records every function entry and
 * exit with a CLOCK_MONOTONIC timestamp (the clock of culprit's samples)
 * through the tiny tracer below and writes them, at exit, to the file named
 * by $INTROPERF_TRACE: one line "E|X OFFSET NS" per event, OFFSET being the
 * function's address minus the executable's load base (its symbol value in
 * a PIE). Recorded under culprit at the same time, the inferred instances
 * can be checked against these ground-truth instances.
 *
 * The workload runs JOBS jobs: each reads a block (read(2) of /dev/zero),
 * parses it with many tiny calls, compresses every 8th block (CPU work),
 * writes a result (write(2) to /dev/null) and, every 50th job, waits for a
 * slow device (nanosleep). */
#define _GNU_SOURCE
#include <dlfcn.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <time.h>
#include <unistd.h>

/* ---- ground-truth tracer (not instrumented itself) ---- */

#define NI __attribute__((no_instrument_function))
#define MAXEV (4 << 20)

struct tev {
	void *fn;
	unsigned long ns;
	char kind;
};
static struct tev *tev;
static long ntev;

NI static unsigned long now_ns(void) {
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (unsigned long)ts.tv_sec * 1000000000UL + (unsigned long)ts.tv_nsec;
}

NI static void trace(void *fn, char kind) {
	if (!tev) {
		tev = malloc(sizeof *tev * MAXEV);
		if (!tev) return;
	}
	if (ntev < MAXEV) tev[ntev++] = (struct tev){fn, now_ns(), kind};
}

NI void __cyg_profile_func_enter(void *fn, void *site) { (void)site; trace(fn, 'E'); }
NI void __cyg_profile_func_exit(void *fn, void *site) { (void)site; trace(fn, 'X'); }

NI __attribute__((destructor)) static void dump_trace(void) {
	const char *path = getenv("INTROPERF_TRACE");
	if (!path || !tev) return;
	FILE *f = fopen(path, "w");
	if (!f) return;
	Dl_info info;
	unsigned long base = 0;
	if (ntev > 0 && dladdr(tev[0].fn, &info)) base = (unsigned long)info.dli_fbase;
	fprintf(f, "# tid %d\n", (int)getpid());
	for (long i = 0; i < ntev; i++)
		fprintf(f, "%c %lx %lu\n", tev[i].kind, (unsigned long)tev[i].fn - base, tev[i].ns);
	fclose(f);
}

/* ---- workload ---- */

static int devzero, devnull;
static unsigned char block[4096];
volatile unsigned long sink;

__attribute__((noinline)) unsigned long tiny_hash(unsigned long x) {
	return (x ^ (x >> 13)) * 0x9E3779B97F4A7C15UL;
}

__attribute__((noinline)) void parse_field(int off) {
	for (int k = 0; k < 4; k++)
		sink += tiny_hash(block[(off + k) & 4095] + k);
}

__attribute__((noinline)) void parse_block(void) {
	for (int off = 0; off < 4096; off += 256)
		parse_field(off);
}

__attribute__((noinline)) void read_block(void) {
	if (read(devzero, block, sizeof block) < 0) exit(1);
}

__attribute__((noinline)) void compress_block(long j) {
	unsigned long h = (unsigned long)j;
	for (long i = 0; i < 300000; i++)
		h = h * 6364136223846793005UL + block[i & 4095];
	sink += h;
}

__attribute__((noinline)) void write_result(long j) {
	char line[32];
	int n = snprintf(line, sizeof line, "job %ld\n", j);
	if (write(devnull, line, n) < 0) exit(1);
}

__attribute__((noinline)) void wait_device(void) {
	struct timespec ts = {0, 400000};
	nanosleep(&ts, NULL);
}

__attribute__((noinline)) void process_job(long j) {
	read_block();
	parse_block();
	if (j % 8 == 0) compress_block(j);
	write_result(j);
	if (j % 50 == 0) wait_device();
}

__attribute__((noinline)) void run_jobs(long n) {
	for (long j = 0; j < n; j++)
		process_job(j);
}

int main(int argc, char **argv) {
	long n = argc > 1 ? atol(argv[1]) : 4000;
	devzero = open("/dev/zero", O_RDONLY);
	devnull = open("/dev/null", O_WRONLY);
	if (devzero < 0 || devnull < 0) return 1;
	run_jobs(n);
	return 0;
}
