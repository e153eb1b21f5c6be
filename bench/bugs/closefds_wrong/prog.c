/* A cron-like job runner in the manner of cronie's crond: a table of jobs,
 * each with a five-field schedule, is evaluated minute by minute over the
 * first eight hours of a simulated day (next_due, match_field); each job due in a minute is
 * started (spawn_job): the runner forks, and the child closes the
 * descriptors it inherited (close_inherited_fds), points its standard
 * streams at /dev/null and execs /bin/true (the job's command); the
 * runner waits for it and logs the exit status.
 *
 * The bug (wrong constraint): close_inherited_fds walks every descriptor
 * number up to the process's limit (sysconf(_SC_OPEN_MAX), RLIMIT_NOFILE)
 * and calls close on each, instead of only the descriptors that are open
 * (the fix reads /proc/self/fd, or stops at the highest open one). With
 * the usual limit of 1024 that is a thousand cheap failing calls per job;
 * in a container whose limit is 1,048,576 it is a million system calls
 * per job.
 *
 *   prog   (the descriptor limit is the process's RLIMIT_NOFILE)
 */
#include <fcntl.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#define noinline __attribute__((noinline))
#define JOBS 8
#define MINUTES (8 * 60) /* the first eight hours of each day */

struct field {
	uint64_t bits; /* the values this field matches, one bit each */
};

struct job {
	struct field min, hour, dom, mon, dow;
	char cmd[64];
	long runs, failures;
};

static struct job jobs[JOBS];
static FILE *logf;

/* parse_field: "*", "*\/N", "A-B" or "A" over [lo, hi]. */
noinline struct field parse_field(const char *s, int lo, int hi)
{
	struct field f = {0};
	int a, b, step = 1;
	if (s[0] == '*') {
		a = lo, b = hi;
		if (s[1] == '/')
			step = atoi(s + 2);
	} else if (sscanf(s, "%d-%d", &a, &b) != 2) {
		a = b = atoi(s);
	}
	if (step < 1)
		step = 1;
	for (int v = a; v <= b && v <= hi; v += step)
		if (v >= lo)
			f.bits |= 1ULL << v;
	return f;
}

noinline int match_field(const struct field *f, int v)
{
	return (f->bits >> v) & 1;
}

noinline int next_due(const struct job *j, int minute, int day)
{
	int m = minute % 60, h = minute / 60;
	return match_field(&j->min, m) && match_field(&j->hour, h) && match_field(&j->dom, 1 + day % 28) &&
	       match_field(&j->mon, 1 + day / 28 % 12) && match_field(&j->dow, day % 7);
}

/* close_inherited_fds is the root cause: it closes every descriptor number
 * below the limit (fix: close only the open ones, from /proc/self/fd). */
noinline void close_inherited_fds(void)
{
	long fdmax = sysconf(_SC_OPEN_MAX);
	if (fdmax < 0)
		fdmax = 1024;
	for (long fd = 3; fd < fdmax; fd++)
		close((int)fd);
}

noinline int spawn_job(struct job *j)
{
	fflush(logf);
	pid_t pid = fork();
	if (pid < 0) {
		perror("fork");
		return -1;
	}
	if (pid == 0) {
		close_inherited_fds();
		int nul = open("/dev/null", O_RDWR);
		if (nul >= 0) {
			dup2(nul, 0);
			dup2(nul, 1);
			if (nul > 2)
				close(nul);
		}
		execl("/bin/true", "true", j->cmd, (char *)NULL);
		_exit(127);
	}
	int st = 0;
	if (waitpid(pid, &st, 0) < 0)
		return -1;
	return WIFEXITED(st) ? WEXITSTATUS(st) : 128;
}

noinline long run_day(int day)
{
	long started = 0;
	for (int minute = 0; minute < MINUTES; minute++) {
		for (int i = 0; i < JOBS; i++) {
			if (!next_due(&jobs[i], minute, day))
				continue;
			int rc = spawn_job(&jobs[i]);
			jobs[i].runs++;
			if (rc != 0)
				jobs[i].failures++;
			fprintf(logf, "day %d %02d:%02d job %d (%s) exit %d\n", day, minute / 60, minute % 60, i, jobs[i].cmd, rc);
			started++;
		}
	}
	return started;
}

noinline void load_table(void)
{
	static const char *mins[] = {"*/5", "0", "15", "30", "45", "*/10", "7", "0-59"};
	static const char *hours[] = {"*", "3", "*/6", "12", "0-23", "2", "22", "*/2"};
	uint64_t x = 0x9e3779b97f4a7c15ULL;
	for (int i = 0; i < JOBS; i++) {
		x ^= x << 13, x ^= x >> 7, x ^= x << 17;
		struct job *j = &jobs[i];
		/* most jobs run a few times a day; one in sixteen every 5 minutes */
		const char *m = i % 16 == 0 ? mins[0] : mins[1 + x % 6];
		const char *h = i % 16 == 0 ? hours[0] : hours[1 + (x >> 8) % 6];
		j->min = parse_field(m, 0, 59);
		j->hour = parse_field(h, 0, 23);
		j->dom = parse_field("*", 1, 31);
		j->mon = parse_field("*", 1, 12);
		j->dow = parse_field((x >> 16) % 3 ? "*" : "1-5", 0, 6);
		snprintf(j->cmd, sizeof j->cmd, "/usr/local/bin/task-%03d", i);
	}
}

int main(int argc, char **argv)
{
	(void)argc, (void)argv;
	logf = fopen("/dev/null", "w");
	if (!logf) {
		perror("/dev/null");
		return 1;
	}
	load_table();
	long started = run_day(0);
	long failed = 0;
	for (int i = 0; i < JOBS; i++)
		failed += jobs[i].failures;
	printf("%ld jobs started, %ld failed, descriptor limit %ld\n", started, failed, sysconf(_SC_OPEN_MAX));
	return 0;
}
