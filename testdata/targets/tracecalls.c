/* A program whose traced functions' calls it counts and times itself, so
 * that a tracer's counts, durations and arguments can be checked exactly.
 * It prints one line per fact: "count FUNC N", "spin NS" (each spin call's
 * own duration by CLOCK_MONOTONIC, from its first clock reading to its
 * last), "spin-call NS" (the same call as its caller timed it, from
 * before the call to after it), "args A B C" (each args3 call),
 * "narrow R" (what each narrow call returned); args also calls keep, which
 * returns nothing.
 * Usage: tracecalls [fib N] [leaf N] [threads T N] [churn T N] [tail N] [jump N] [spin MS N] [gap MS] [args N] [plugin PATH N] [open N]
 * churn T N runs T threads that each call leaf N times, two at a time, each
 * pair ended before the next begins: more threads than a tracer keeps
 * per-thread slots for, so that later threads' ids meet earlier ones'.
 * gap MS makes one spin call as long as the previous command took plus MS.
 * open N makes one call of gate on a thread that lasts while the main
 * thread makes N more, and 50 ms after; it prints "open NS", that call's
 * duration by the caller's clock.
 */
#include <dlfcn.h>
#include <pthread.h>
#include <setjmp.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

static long now_ns(void) {
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return ts.tv_sec * 1000000000L + ts.tv_nsec;
}

/* Every call is a real call at -O2 too: not removed when its result is
 * unused, and no tail-call or accumulator transformation turns recursion
 * into a loop. */
#define REAL_CALLS __attribute__((noipa, optimize("no-optimize-sibling-calls")))

static volatile long sink;

REAL_CALLS long leaf(long n) {
	long s = 0;
	for (long i = 0; i < n; i++)
		s += i ^ (s >> 3);
	sink = s;
	return s;
}

long calls_fib;

REAL_CALLS long fib(int n) {
	calls_fib++;
	return n < 2 ? n : fib(n - 1) + fib(n - 2);
}

static jmp_buf jb;

/* Jumps out of depth+1 nested calls of itself: none of them returns. */
REAL_CALLS void thrower(int depth) {
	if (depth == 0)
		longjmp(jb, 1);
	thrower(depth - 1);
	sink++;
}

/* Calls thrower, which never returns; jumper itself returns normally. */
REAL_CALLS int jumper(int depth) {
	if (setjmp(jb) == 0) {
		thrower(depth);
		return 0;
	}
	return 1;
}

/* Spins for ms milliseconds and returns the ns it measured. */
REAL_CALLS long spin(long ms) {
	long t0 = now_ns(), t;
	do
		t = now_ns();
	while (t - t0 < ms * 1000000L);
	return t - t0;
}

/* Calls spin(ms) and prints its "spin" and "spin-call" lines. */
static void timed_spin(long ms) {
	long w0 = now_ns();
	long own = spin(ms);
	long w1 = now_ns();
	printf("spin %ld\nspin-call %ld\n", own, w1 - w0);
}

REAL_CALLS long args3(long a, int b, unsigned c) { return a + b + c; }

/* Returns an int in EAX: RAX's upper half is zero, so only its type
 * says that 0xfffffff9 is -7. */
REAL_CALLS int narrow(int b) { return b - 7; }

/* Returns a double, in XMM0; RAX at its return holds a (not the value). */
REAL_CALLS double half(long a) {
	__asm__ volatile("" ::"a"(a));
	return a / 2.0;
}

/* Returns nothing: RAX at its return is whatever it held (here b). */
REAL_CALLS void keep(long a, int b) {
	sink = a;
	__asm__ volatile("" ::"a"((long)b));
}

/* At -O2 tail_outer jumps to tail_inner (a sibling call): both return
 * through the one return address. */
long calls_tail;
__attribute__((noipa)) long tail_inner(long n) { return leaf(n) + 1; }
__attribute__((noipa)) long tail_outer(long n) {
	calls_tail++;
	return tail_inner(n + 1);
}

static volatile long gate_calls;

/* Counts its call; gate(N > 0) returns 50 ms after N more calls of it
 * have been made, gate(0) at once. */
REAL_CALLS long gate(long n) {
	long first = __sync_fetch_and_add(&gate_calls, 1);
	if (n <= 0)
		return 0;
	while (gate_calls <= first + n) {
		struct timespec ts = {0, 1000000};
		nanosleep(&ts, NULL);
	}
	return spin(50);
}

static void *opener(void *arg) {
	long t0 = now_ns();
	gate((long)arg);
	printf("open %ld\n", now_ns() - t0);
	return NULL;
}

static long per_thread;

static void *worker(void *arg) {
	(void)arg;
	for (long i = 0; i < per_thread; i++)
		leaf(100);
	return NULL;
}

int main(int argc, char **argv) {
	long leafs = 0, fibs = 0, throwers = 0, jumpers = 0, spins = 0, argss = 0, plugins = 0;
	long prev = 0; /* ns the previous command took */
	for (int i = 1; i < argc; i++) {
		long t0 = now_ns();
		if (!strcmp(argv[i], "fib") && i + 1 < argc) {
			int n = atoi(argv[++i]);
			calls_fib = 0;
			sink = fib(n);
			fibs += calls_fib;
		} else if (!strcmp(argv[i], "open") && i + 1 < argc) {
			long n = atol(argv[++i]);
			pthread_t th;
			gate_calls = 0;
			pthread_create(&th, NULL, opener, (void *)n);
			while (gate_calls == 0)
				;
			for (long k = 0; k < n; k++)
				gate(0);
			pthread_join(th, NULL);
			printf("count gate %ld\n", n + 1);
		} else if (!strcmp(argv[i], "leaf") && i + 1 < argc) {
			long n = atol(argv[++i]);
			for (long k = 0; k < n; k++)
				leaf(10);
			leafs += n;
		} else if (!strcmp(argv[i], "threads") && i + 2 < argc) {
			int t = atoi(argv[++i]);
			per_thread = atol(argv[++i]);
			pthread_t th[64];
			if (t > 64)
				t = 64;
			for (int k = 0; k < t; k++)
				pthread_create(&th[k], NULL, worker, NULL);
			for (int k = 0; k < t; k++)
				pthread_join(th[k], NULL);
			leafs += t * per_thread;
		} else if (!strcmp(argv[i], "churn") && i + 2 < argc) {
			int t = atoi(argv[++i]);
			per_thread = atol(argv[++i]);
			for (int k = 0; k + 1 < t; k += 2) {
				pthread_t a, b;
				pthread_create(&a, NULL, worker, NULL);
				pthread_create(&b, NULL, worker, NULL);
				pthread_join(a, NULL);
				pthread_join(b, NULL);
			}
			leafs += (t / 2) * 2 * per_thread;
		} else if (!strcmp(argv[i], "tail") && i + 1 < argc) {
			long n = atol(argv[++i]);
			for (long k = 0; k < n; k++)
				sink = tail_outer(k % 16);
			leafs += n;
		} else if (!strcmp(argv[i], "jump") && i + 1 < argc) {
			long n = atol(argv[++i]);
			for (long k = 0; k < n; k++) {
				jumper(3);
				jumpers++;
				throwers += 4;
			}
		} else if (!strcmp(argv[i], "spin") && i + 2 < argc) {
			long ms = atol(argv[++i]), n = atol(argv[++i]);
			for (long k = 0; k < n; k++)
				timed_spin(ms);
			spins += n;
		} else if (!strcmp(argv[i], "gap") && i + 1 < argc) {
			long ms = atol(argv[++i]);
			timed_spin(prev / 1000000 + ms);
			spins++;
		} else if (!strcmp(argv[i], "args") && i + 1 < argc) {
			long n = atol(argv[++i]);
			for (long k = 0; k < n; k++) {
				long a = 1000 * k - 7;
				int b = -(int)k;
				unsigned c = 3000000000u + k;
				printf("args %ld %d %u\n", a, b, c);
				sink = args3(a, b, c);
				printf("narrow %d\n", narrow(b));
				printf("half %g\n", half(a));
				keep(a, b);
			}
			argss += n;
		} else if (!strcmp(argv[i], "plugin") && i + 2 < argc) {
			const char *path = argv[++i];
			long n = atol(argv[++i]);
			void *h = dlopen(path, RTLD_NOW);
			if (!h) {
				fprintf(stderr, "%s\n", dlerror());
				return 2;
			}
			long (*f)(long) = (long (*)(long))dlsym(h, "plugin_work");
			if (!f) {
				fprintf(stderr, "no plugin_work in %s\n", path);
				return 2;
			}
			for (long k = 0; k < n; k++)
				sink = f(k);
			plugins += n;
		} else {
			fprintf(stderr, "bad argument %s\n", argv[i]);
			return 2;
		}
		prev = now_ns() - t0;
	}
	printf("count leaf %ld\ncount fib %ld\ncount thrower %ld\ncount jumper %ld\ncount spin %ld\ncount args3 %ld\ncount plugin_work %ld\ncount tail_outer %ld\ncount tail_inner %ld\n",
	       leafs, fibs, throwers, jumpers, spins, argss, plugins, calls_tail, calls_tail);
	return 0;
}
