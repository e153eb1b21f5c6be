/* IntroPerf e2e target: a host program whose slowdown comes from a plug-in.
 *
 *   introperf_host PLUGIN.so RECORDS FIELD
 *
 * processes RECORDS records of FIELD bytes: transform_record does the host's
 * own CPU work on each record, then every loaded plug-in's on_record hook is
 * called. The plug-in (introperf_plugin.c) is dlopen'ed after the host has
 * started running, as plug-ins are. Its audit hook writes records to an
 * audit log one byte per system call: harmless for short fields (the base
 * input), costly for long ones (the buggy input). A CPU profile ranks the
 * host's transform_record and the kernel's write path first and the
 * plug-in's own code far lower, as it spends little CPU time itself. */
#include <dlfcn.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

typedef void (*hook_fn)(const unsigned char *rec, long len);

static hook_fn hooks[4];
static int nhooks;
volatile unsigned long host_sink;

__attribute__((noinline)) void transform_record(unsigned char *rec, long len) {
	for (int round = 0; round < 24; round++)
		for (long i = 0; i < len; i++) {
			rec[i] = (unsigned char)(rec[i] * 33 + (rec[(i + 1) % len] ^ round));
			host_sink += rec[i];
		}
}

__attribute__((noinline)) void notify_plugins(const unsigned char *rec, long len) {
	for (int h = 0; h < nhooks; h++)
		hooks[h](rec, len);
}

__attribute__((noinline)) void process_records(long n, long len) {
	unsigned char *rec = malloc(len);
	for (long r = 0; r < n; r++) {
		for (long i = 0; i < len; i++)
			rec[i] = (unsigned char)(r + i);
		transform_record(rec, len);
		notify_plugins(rec, len);
	}
	free(rec);
}

__attribute__((noinline)) int load_plugin(const char *path) {
	void *h = dlopen(path, RTLD_NOW);
	if (!h) { fprintf(stderr, "dlopen: %s\n", dlerror()); return -1; }
	hook_fn f = (hook_fn)dlsym(h, "plugin_on_record");
	if (!f) { fprintf(stderr, "dlsym: %s\n", dlerror()); return -1; }
	hooks[nhooks++] = f;
	return 0;
}

int main(int argc, char **argv) {
	if (argc < 4) { fprintf(stderr, "usage: introperf_host PLUGIN.so RECORDS FIELD\n"); return 2; }
	long n = atol(argv[2]), len = atol(argv[3]);
	if (n < 1 || len < 1) return 2;
	/* Warm up before loading plug-ins: the host is running by then. */
	unsigned char warm[256] = {0};
	transform_record(warm, sizeof warm);
	if (load_plugin(argv[1]) < 0) return 1;
	process_records(n, len);
	printf("%lu\n", host_sink & 0xff);
	return 0;
}
