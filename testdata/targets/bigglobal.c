// bigglobal: a global struct of 120 scalar fields, as real programs keep
// their state (redis's server, nginx's cycle). spin() runs rounds of busy
// work; before round r it sets every field, the last one to BASE + r, and
// prints BASE and the number of rounds, so that a test can check the value
// sampled in spin at every sample.
//
// usage: bigglobal ROUNDS BASE
#include <stdio.h>
#include <stdlib.h>

struct state {
	long f0;
	long f1;
	long f2;
	long f3;
	long f4;
	long f5;
	long f6;
	long f7;
	long f8;
	long f9;
	long f10;
	long f11;
	long f12;
	long f13;
	long f14;
	long f15;
	long f16;
	long f17;
	long f18;
	long f19;
	long f20;
	long f21;
	long f22;
	long f23;
	long f24;
	long f25;
	long f26;
	long f27;
	long f28;
	long f29;
	long f30;
	long f31;
	long f32;
	long f33;
	long f34;
	long f35;
	long f36;
	long f37;
	long f38;
	long f39;
	long f40;
	long f41;
	long f42;
	long f43;
	long f44;
	long f45;
	long f46;
	long f47;
	long f48;
	long f49;
	long f50;
	long f51;
	long f52;
	long f53;
	long f54;
	long f55;
	long f56;
	long f57;
	long f58;
	long f59;
	long f60;
	long f61;
	long f62;
	long f63;
	long f64;
	long f65;
	long f66;
	long f67;
	long f68;
	long f69;
	long f70;
	long f71;
	long f72;
	long f73;
	long f74;
	long f75;
	long f76;
	long f77;
	long f78;
	long f79;
	long f80;
	long f81;
	long f82;
	long f83;
	long f84;
	long f85;
	long f86;
	long f87;
	long f88;
	long f89;
	long f90;
	long f91;
	long f92;
	long f93;
	long f94;
	long f95;
	long f96;
	long f97;
	long f98;
	long f99;
	long f100;
	long f101;
	long f102;
	long f103;
	long f104;
	long f105;
	long f106;
	long f107;
	long f108;
	long f109;
	long f110;
	long f111;
	long f112;
	long f113;
	long f114;
	long f115;
	long f116;
	long f117;
	long f118;
	long f119;
};

struct state big;

__attribute__((noinline)) long spin(long n) {
	long s = 0;
	for (long i = 0; i < n; i++)
		s = s * 31 + (i ^ big.f0);
	return s;
}

int main(int argc, char **argv) {
	long rounds = argc > 1 ? atol(argv[1]) : 10;
	long base = argc > 2 ? atol(argv[2]) : 1000;
	long sum = 0;
	long *f = (long *)&big;
	for (long r = 1; r <= rounds; r++) {
		for (int k = 0; k < 119; k++)
			f[k] = base + k;
		big.f119 = base + r;
		__asm__ volatile("" ::: "memory");
		sum += spin(100000000);
	}
	printf("%ld %ld %ld\n", base, rounds, sum & 1);
	return 0;
}
