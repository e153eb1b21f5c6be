/* Loads the plug-in given as argv[1] with dlopen and calls plugin_work. */
#include <dlfcn.h>
#include <stdio.h>

int main(int argc, char **argv) {
	if (argc < 2) { fprintf(stderr, "usage: dlmain PLUGIN.so\n"); return 2; }
	void *h = dlopen(argv[1], RTLD_NOW);
	if (!h) { fprintf(stderr, "dlopen: %s\n", dlerror()); return 1; }
	void (*work)(long) = (void (*)(long))dlsym(h, "plugin_work");
	if (!work) { fprintf(stderr, "dlsym: %s\n", dlerror()); return 1; }
	work(300000000);
	return 0;
}
