#include <stdint.h>
struct pool;
struct pool *pool_new(int n);
void pool_open_all(struct pool *p);
void pool_mark_closed(struct pool *p, int i);
long pool_close_all(struct pool *p);
uint64_t pool_traffic(struct pool *p, int rounds);
