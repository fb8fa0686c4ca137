/* Helpers every core file shares (not part of the public API): the one way to write an error
 * (the convention is emb_error.h's), the one way to grow an array, and large buffers. */
#ifndef EMBED_COMMON_H
#define EMBED_COMMON_H
#include <stddef.h>
#include "sqlite-embed/emb_error.h"

/* Formats the message into err (when err is not NULL) and returns -1. Messages about a file
 * name it first: "PATH: cannot open: <reason>", "FILE: key 'name' is not an integer". */
int emb_fail(char err[EMB_ERR_LEN], const char *fmt, ...) __attribute__((format(printf, 2, 3)));

/* Grows *p (realloc) to hold at least need elements of elem bytes, doubling from *cap
 * (64 at first). Returns 0, or -1 when out of memory (then *p and *cap are unchanged). */
int emb_grow(void **p, size_t *cap, size_t need, size_t elem);

/* bytes of memory aligned to 64 bytes, freed with free(); NULL when out of memory. From 2 MiB on
 * it is aligned to 2 MiB and its whole 2 MiB pieces are marked for transparent huge pages
 * (madvise, for kernels whose THP mode is "madvise"; the tail stays in small pages, so no memory
 * is wasted). The products stream activations and packed weights far larger than the TLB covers
 * in 4 KiB pages, and on a VM a TLB miss walks two page tables: with the workspace and the packed
 * weights in huge pages, bert-base's 32 x 128 ran in 0.95 (one thread) and 0.98 (two) of the time
 * with float32 weights, 0.90 and 0.91 with int8 (one-process A/B); 1 x 128 and MiniLM, whose
 * buffers are a few MiB, level. */
void *emb_alloc_large(size_t bytes);

#endif
