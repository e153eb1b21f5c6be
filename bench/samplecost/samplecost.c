/* samplecost LOOPS REPS CPU: what one cpu-clock sample costs the sampled
 * thread, by what the sample carries. The thread, pinned to CPU, runs the
 * overhead workload's loop for LOOPS iterations with no event and then under a
 * 9999 Hz cpu-clock event of each kind below (its ring drained by the thread
 * itself between chunks), REPS times interleaved; it prints the median run
 * time and the extra time per sample against the run without an event. */
#define _GNU_SOURCE
#include <linux/perf_event.h>
#include <sched.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

#define FREQ 9999
#define PAGES 1024
#define REGS_ALL (0x1ffull | 0xffull << 16) /* what culprit asks for: AX..IP, R8..R15 */
#define REGS_MIN (1ull << 6 | 1ull << 7 | 1ull << 8) /* BP, SP, IP */
#define REGS_BX (REGS_MIN | 1ull << 1)                  /* BX, BP, SP, IP */
#define REGS_FP (REGS_BX | 1ull << 5)                   /* BX, DI, BP, SP, IP: culprit's fp mode */

volatile unsigned long sink;
__attribute__((noinline)) void worker(long n) {
	for (long i = 0; i < n; i++)
		sink += i ^ (sink >> 3);
}
__attribute__((noinline)) void dispatch(long n) { worker(n); sink++; }

static double now_ms(void) {
	struct timespec t;
	clock_gettime(CLOCK_MONOTONIC, &t);
	return t.tv_sec * 1e3 + t.tv_nsec / 1e6;
}

struct kind {
	const char *name;
	int on;
	uint64_t type;
	uint32_t stack;
	uint64_t regs;
};

static double run(const struct kind *k, long loops, int cpu) {
	int fd = -1;
	struct perf_event_mmap_page *m = NULL;
	size_t len = (PAGES + 1) * 4096;
	if (k->on) {
		struct perf_event_attr a;
		memset(&a, 0, sizeof a);
		a.size = sizeof a;
		a.type = PERF_TYPE_SOFTWARE;
		a.config = PERF_COUNT_SW_CPU_CLOCK;
		a.freq = 1;
		a.sample_freq = FREQ;
		a.sample_type = PERF_SAMPLE_IP | PERF_SAMPLE_TID | PERF_SAMPLE_TIME | PERF_SAMPLE_CPU |
				PERF_SAMPLE_PERIOD | k->type;
		a.sample_regs_user = k->regs ? k->regs : REGS_ALL;
		a.sample_stack_user = k->stack;
		a.sample_max_stack = 127;
		a.use_clockid = 1;
		a.clockid = CLOCK_MONOTONIC;
		a.exclude_hv = 1;
		a.inherit = 1;
		fd = syscall(SYS_perf_event_open, &a, 0, cpu, -1, 0);
		if (fd < 0) {
			perror("perf_event_open");
			exit(1);
		}
		m = mmap(NULL, len, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
		if (m == MAP_FAILED) {
			perror("mmap");
			exit(1);
		}
	}
	double t0 = now_ms();
	for (int i = 0; i < 100; i++) {
		dispatch(loops / 100);
		if (m) {
			__sync_synchronize();
			m->data_tail = m->data_head;
		}
	}
	double t1 = now_ms();
	if (fd >= 0) {
		munmap(m, len);
		close(fd);
	}
	return t1 - t0;
}

static int cmp(const void *a, const void *b) {
	double x = *(const double *)a, y = *(const double *)b;
	return (x > y) - (x < y);
}

int main(int argc, char **argv) {
	long loops = argc > 1 ? atol(argv[1]) : 300000000;
	int reps = argc > 2 ? atoi(argv[2]) : 15;
	int cpu = argc > 3 ? atoi(argv[3]) : 1;
	if (reps > 64)
		reps = 64;
	cpu_set_t set;
	CPU_ZERO(&set);
	CPU_SET(cpu, &set);
	if (sched_setaffinity(0, sizeof set, &set) != 0) {
		perror("sched_setaffinity");
		return 1;
	}
	const uint64_t cc = PERF_SAMPLE_CALLCHAIN, ru = PERF_SAMPLE_REGS_USER, su = PERF_SAMPLE_STACK_USER;
	struct kind kinds[] = {
		{"no event", 0},
		{"ip, tid, time, cpu, period", 1, 0},
		{"+ callchain (perf -g)", 1, cc},
		{"+ 17 user regs", 1, ru},
		{"+ 3 user regs (bp sp ip)", 1, ru, 0, REGS_MIN},
		{"cc, 4 regs (bx bp sp ip)", 1, cc | ru, 0, REGS_BX},
		{"cc, 5 regs (bx di bp sp ip): fp mode", 1, cc | ru, 0, REGS_FP},
		{"+ 4 KiB user stack", 1, su, 4096},
		{"culprit fp: cc, 17 regs, 4 KiB", 1, cc | ru | su, 4096},
		{"cc, 17 regs, 2 KiB", 1, cc | ru | su, 2048},
		{"cc, 17 regs, 1 KiB", 1, cc | ru | su, 1024},
		{"cc, 3 regs, 4 KiB (culprit fp now)", 1, cc | ru | su, 4096, REGS_MIN},
		{"cc, 3 regs, 2 KiB", 1, cc | ru | su, 2048, REGS_MIN},
		{"cc, 3 regs, 1 KiB", 1, cc | ru | su, 1024, REGS_MIN},
		{"cc, 3 regs, 512 B", 1, cc | ru | su, 512, REGS_MIN},
		{"culprit dwarf: cc, 17 regs, 16 KiB", 1, cc | ru | su, 16384},
	};
	int n = sizeof kinds / sizeof kinds[0];
	static double t[32][64];
	for (int r = 0; r < reps; r++)
		for (int k = 0; k < n; k++)
			t[k][r] = run(&kinds[k], loops, cpu);
	double base = 0;
	printf("%-36s %10s %12s %16s\n", "sample carries", "median ms", "µs/sample", "range ms");
	for (int k = 0; k < n; k++) {
		qsort(t[k], reps, sizeof t[k][0], cmp);
		double med = t[k][reps / 2];
		if (k == 0) {
			base = med;
			printf("%-36s %10.1f %12s %7.1f–%.1f\n", kinds[k].name, med, "", t[k][0], t[k][reps - 1]);
			continue;
		}
		double samples = med / 1000 * FREQ;
		printf("%-36s %10.1f %12.2f %7.1f–%.1f\n", kinds[k].name, med, (med - base) * 1000 / samples,
		       t[k][0], t[k][reps - 1]);
	}
	return 0;
}
