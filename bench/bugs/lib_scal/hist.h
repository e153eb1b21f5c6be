#include <stdint.h>
struct hist;
typedef int (*hist_cmp)(uint32_t, uint32_t);
struct hist *hist_new(hist_cmp cmp);
void hist_add(struct hist *h, uint32_t x);
long hist_distinct(const struct hist *h);
uint64_t hist_quantile(const struct hist *h, double q);
