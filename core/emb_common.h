/* Helpers every core file shares (not part of the public API): the one way to write an error
 * (the convention is emb_error.h's) and the one way to grow an array. */
#ifndef EMBED_COMMON_H
#define EMBED_COMMON_H
#include <stddef.h>
#include "emb_error.h"

/* Formats the message into err (when err is not NULL) and returns -1. Messages about a file
 * name it first: "PATH: cannot open: <reason>", "FILE: key 'name' is not an integer". */
int emb_fail(char err[EMB_ERR_LEN], const char *fmt, ...) __attribute__((format(printf, 2, 3)));

/* Grows *p (realloc) to hold at least need elements of elem bytes, doubling from *cap
 * (64 at first). Returns 0, or -1 when out of memory (then *p and *cap are unchanged). */
int emb_grow(void **p, size_t *cap, size_t need, size_t elem);

#endif
