/* libbp: a pool of fixed-size buffers over one device, written back in
 * the background once enough of them are dirty. */
#include <stddef.h>
#include <stdint.h>

#define BP_BUFSIZE 4096

struct bp;
struct bp *bp_new(int nbufs, int bg_thresh);
void bp_free(struct bp *p);
/* bp_write copies len bytes to buffer idx at offset off, marks the buffer
 * dirty and lets writeback catch up (bp_balance). */
void bp_write(struct bp *p, int idx, size_t off, const void *src, size_t len);
void bp_balance(struct bp *p);
/* bp_sync writes back every dirty buffer. */
void bp_sync(struct bp *p);
uint64_t bp_written(const struct bp *p);
uint32_t bp_checksum(const struct bp *p);
