/* libhist: a histogram of distinct values with counts, kept sorted. */
#include <stdlib.h>
#include <string.h>
#include "hist.h"

#define noinline __attribute__((noinline))

struct bin {
	uint32_t value;
	uint32_t count;
};

struct hist {
	struct bin *bins;
	long n, cap;
	uint64_t total;
	hist_cmp cmp;
};

struct hist *hist_new(hist_cmp cmp)
{
	struct hist *h = calloc(1, sizeof *h);
	h->cmp = cmp;
	h->cap = 64;
	h->bins = malloc(h->cap * sizeof *h->bins);
	return h;
}

/* hist_add is the root cause: it finds a value's bin by a linear scan of
 * the sorted bins (the fix: binary search), fine for the few distinct values
 * it was written for. */
noinline void hist_add(struct hist *h, uint32_t x)
{
	long i = 0;
	while (i < h->n && h->cmp(h->bins[i].value, x) < 0)
		i++;
	h->total++;
	if (i < h->n && h->bins[i].value == x) {
		h->bins[i].count++;
		return;
	}
	if (h->n == h->cap) {
		h->cap *= 2;
		h->bins = realloc(h->bins, h->cap * sizeof *h->bins);
	}
	memmove(h->bins + i + 1, h->bins + i, (h->n - i) * sizeof *h->bins);
	h->bins[i] = (struct bin){x, 1};
	h->n++;
}

long hist_distinct(const struct hist *h) { return h->n; }

uint64_t hist_quantile(const struct hist *h, double q)
{
	uint64_t want = (uint64_t)(q * h->total), seen = 0;
	for (long i = 0; i < h->n; i++) {
		seen += h->bins[i].count;
		if (seen >= want)
			return h->bins[i].value;
	}
	return 0;
}
