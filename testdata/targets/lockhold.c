// lockhold: a holder thread takes a mutex and keeps it while it works; a
// waiter thread blocks on it each round. The two are paced by pipes, and
// the holder keeps the mutex until glibc's lock word says a waiter is
// about to sleep on it (2: locked, with waiters) and the kernel says the
// waiter sleeps in futex (state S, in system call 202): the lock word is
// set before the futex call, and an unlock in between would let the
// waiter take the mutex without sleeping. So every round the waiter
// blocks in the kernel and the holder's unlock wakes it, however busy the
// machine.
// Prints the threads' TIDs so that tests can check that the waiter's lock
// waits name the holder.
#define _GNU_SOURCE
#include <pthread.h>
#include <sched.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <sys/syscall.h>

static pthread_mutex_t mu = PTHREAD_MUTEX_INITIALIZER;
static int go[2], back[2];
static volatile unsigned long sink;
static int rounds;
static volatile long waiter_tid;

// asleep_in_futex tells whether the waiter sleeps in the futex system call.
static int asleep_in_futex(void) {
	char path[64], buf[512];
	snprintf(path, sizeof path, "/proc/self/task/%ld/stat", waiter_tid);
	FILE *f = fopen(path, "r");
	if (!f)
		return 0;
	size_t n = fread(buf, 1, sizeof buf - 1, f);
	fclose(f);
	buf[n] = 0;
	char *p = strrchr(buf, ')'); // the command name may hold spaces
	if (!p || p[1] != ' ' || p[2] != 'S')
		return 0;
	snprintf(path, sizeof path, "/proc/self/task/%ld/syscall", waiter_tid);
	if (!(f = fopen(path, "r")))
		return 0;
	n = fread(buf, 1, sizeof buf - 1, f);
	fclose(f);
	buf[n] = 0;
	return atol(buf) == SYS_futex;
}

__attribute__((noinline)) static void hold_work(void) {
	for (long i = 0; i < 1000000L; i++)
		sink += i;
}

static void *holder(void *arg) {
	(void)arg;
	printf("holder %ld\n", (long)syscall(SYS_gettid));
	fflush(stdout);
	char b = 0;
	for (int i = 0; i < rounds; i++) {
		pthread_mutex_lock(&mu);
		if (write(go[1], &b, 1) != 1) // the waiter may now try the lock
			exit(1);
		hold_work();
		while (__atomic_load_n(&mu.__data.__lock, __ATOMIC_ACQUIRE) != 2 || !asleep_in_futex())
			sched_yield(); // the waiter does not sleep in its futex wait yet
		pthread_mutex_unlock(&mu);
		if (read(back[0], &b, 1) != 1) // the waiter had its turn
			exit(1);
	}
	return NULL;
}

static void *waiter(void *arg) {
	(void)arg;
	waiter_tid = syscall(SYS_gettid);
	printf("waiter %ld\n", waiter_tid);
	fflush(stdout);
	char b = 0;
	for (int i = 0; i < rounds; i++) {
		if (read(go[0], &b, 1) != 1)
			exit(1);
		pthread_mutex_lock(&mu); // blocks: the holder has it
		sink++;
		pthread_mutex_unlock(&mu);
		if (write(back[1], &b, 1) != 1)
			exit(1);
	}
	return NULL;
}

int main(int argc, char **argv) {
	rounds = argc > 1 ? atoi(argv[1]) : 50;
	if (pipe(go) || pipe(back))
		return 1;
	pthread_t h, w;
	pthread_create(&h, NULL, holder, NULL);
	pthread_create(&w, NULL, waiter, NULL);
	pthread_join(h, NULL);
	pthread_join(w, NULL);
	return 0;
}
