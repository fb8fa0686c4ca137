/* UTF-8 validation (RFC 3629: no overlong forms, no surrogates, nothing above U+10FFFF). */
#ifndef EMBED_UTF8_H
#define EMBED_UTF8_H
#include <stddef.h>

/* 1 if the n bytes at s are valid UTF-8; else 0, with *bad_at (when not NULL) the offset of
 * the first byte of the first invalid or truncated sequence. */
int emb_utf8_valid(const char *s, size_t n, size_t *bad_at);

#endif
