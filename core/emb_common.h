/* Conventions shared by all of core/: functions return 0 on success, nonzero on
 * failure, and then write a message of at most EMB_ERR_LEN bytes into err. */
#ifndef EMBED_COMMON_H
#define EMBED_COMMON_H
#include <stddef.h>

#ifndef EMB_ERR_LEN
#define EMB_ERR_LEN 256
#endif

/* Formats the message into err (when err is not NULL) and returns -1. */
int emb_fail(char err[EMB_ERR_LEN], const char *fmt, ...) __attribute__((format(printf, 2, 3)));

/* Grows *p (realloc) to hold at least need elements of elem bytes, doubling from *cap
 * (64 at first). Returns 0, or -1 when out of memory (then *p and *cap are unchanged). */
int emb_grow(void **p, size_t *cap, size_t need, size_t elem);

#endif
