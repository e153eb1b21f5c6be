/* Loop counters GCC -O2 turns into pointer walks, whose DWARF locations
 * are then computed from two registers (the walking pointer minus the
 * array's start) or from a register and a word of memory (the walking
 * pointer minus the start read through the object's pointer). */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define noinline __attribute__((noinline))

struct msg {
	int len;
	unsigned char payload[1024];
};

struct target {
	long n;
	long pad;
	const unsigned char *data;
};

noinline unsigned encode(const struct msg *m, unsigned char *out)
{
	unsigned crc = 0xffffffffu;
	for (int i = 0; i < m->len; i++) {
		crc ^= m->payload[i];
		for (int k = 0; k < 8; k++)
			crc = (crc >> 1) ^ (0xedb88320u & -(crc & 1));
	}
	memcpy(out, m->payload, (size_t)m->len);
	return ~crc;
}

noinline unsigned long digest(const struct target *t)
{
	unsigned long h = 5381;
	for (long i = 0; i < t->n; i++)
		h = h * 33 + t->data[i];
	return h;
}

int main(int argc, char **argv)
{
	long rounds = argc > 1 ? atol(argv[1]) : 2000;
	static struct msg m;
	static unsigned char out[1024];
	m.len = 1000;
	for (int i = 0; i < m.len; i++)
		m.payload[i] = (unsigned char)(i * 7);
	struct target t = {.n = 4096, .data = malloc(4096)};
	memset((void *)t.data, 3, 4096);
	unsigned long sum = 0;
	for (long r = 0; r < rounds; r++) {
		m.payload[r % m.len] ^= (unsigned char)r;
		sum += encode(&m, out) + digest(&t);
	}
	printf("%lu\n", sum);
	return 0;
}
