/* A normalized string as Hugging Face tokenizers keeps it (NormalizedString): the normalized
 * UTF-8 bytes and, for every byte, the span [s,e) in the original text of the character it came
 * from. Offsets of tokens are read back through these spans (min start, max end), so every
 * normalizer below moves spans exactly as HF's transform() does, quirks included. */
#ifndef EMBED_TOK_NSTR_H
#define EMBED_TOK_NSTR_H
#include <stddef.h>
#include <stdint.h>

typedef struct {
    char *b;
    int32_t (*al)[2];
    size_t n, cap;
    int oom;
} nstr;

/* One character of a transformation and its change (HF's (char, isize)): 0 replaces the next
 * original character, 1 is inserted, -k replaces the next one and removes k more. */
typedef struct {
    uint32_t c;
    int32_t change;
} tchar;

typedef struct {
    tchar *t;
    size_t n, cap;
    int oom;
} tlist;

void emb_tok_nstr_free(nstr *s);
/* s = the raw text t[0..len), whose byte 0 lies at offset base of the sequence. */
void emb_tok_nstr_from_raw(nstr *s, const char *t, size_t len, int32_t base);
/* dst = src transformed by l (HF NormalizedString::transform over the whole string). */
void emb_tok_nstr_transform(nstr *dst, const nstr *src, const tlist *l);
void emb_tok_nstr_tlist_push(tlist *l, uint32_t c, int32_t change);
void emb_tok_nstr_tlist_free(tlist *l);
/* Removes leading / trailing White_Space characters (HF Strip), in place. */
void emb_tok_nstr_strip(nstr *s, int left, int right);
/* Replaces every run of at least min_run characters c (single: every occurrence on its own, as
 * a one-character String pattern) by the UTF-8 string r, with HF Replace's span moves. */
void emb_tok_nstr_replace_run(nstr *dst, const nstr *src, uint32_t c, size_t min_run, int single, const char *r,
                              size_t rlen);
/* 1 if src holds a run that emb_tok_nstr_replace_run would replace (else it would only copy src). */
int emb_tok_nstr_has_run(const nstr *src, uint32_t c, size_t min_run);
/* Metaspace: every ' ' replaced by r, then r prepended when prepend is set and the result does
 * not start with r (one pass: HF's replace and prepend). */
void emb_tok_nstr_metaspace(nstr *dst, const nstr *src, const char *r, size_t rlen, int prepend);
/* Prepends the string r (HF NormalizedString::prepend: it shares the first character's span). */
void emb_tok_nstr_prepend(nstr *dst, const nstr *src, const char *r, size_t rlen);
/* The original span of normalized bytes [a,b): min start, max end (HF convert_offsets). */
void emb_tok_nstr_span(const nstr *s, size_t a, size_t b, int32_t *start, int32_t *end);

/* helpers, inline: called for every character */

/* Unicode White_Space (Rust char::is_whitespace) */
static inline int tok_is_ws(uint32_t c) {
    if (c < 0x80) return (c >= 9 && c <= 13) || c == 0x20;
    return c == 0x85 || c == 0xA0 || c == 0x1680 || (c >= 0x2000 && c <= 0x200A) || c == 0x2028 || c == 0x2029 ||
           c == 0x202F || c == 0x205F || c == 0x3000;
}

static inline int tok_put_utf8(char *p, uint32_t c) {
    if (c < 0x80) {
        p[0] = (char)c;
        return 1;
    }
    if (c < 0x800) {
        p[0] = (char)(0xC0 | (c >> 6));
        p[1] = (char)(0x80 | (c & 0x3F));
        return 2;
    }
    if (c < 0x10000) {
        p[0] = (char)(0xE0 | (c >> 12));
        p[1] = (char)(0x80 | ((c >> 6) & 0x3F));
        p[2] = (char)(0x80 | (c & 0x3F));
        return 3;
    }
    p[0] = (char)(0xF0 | (c >> 18));
    p[1] = (char)(0x80 | ((c >> 12) & 0x3F));
    p[2] = (char)(0x80 | ((c >> 6) & 0x3F));
    p[3] = (char)(0x80 | (c & 0x3F));
    return 4;
}

/* decodes the valid UTF-8 character at p; its length in *n */
static inline uint32_t tok_get_utf8(const unsigned char *p, int *n) {
    unsigned b = p[0];
    if (b < 0x80) {
        *n = 1;
        return b;
    }
    if (b < 0xE0) {
        *n = 2;
        return ((b & 0x1Fu) << 6) | (p[1] & 0x3Fu);
    }
    if (b < 0xF0) {
        *n = 3;
        return ((b & 0x0Fu) << 12) | ((p[1] & 0x3Fu) << 6) | (p[2] & 0x3Fu);
    }
    *n = 4;
    return ((b & 0x07u) << 18) | ((p[1] & 0x3Fu) << 12) | ((p[2] & 0x3Fu) << 6) | (p[3] & 0x3Fu);
}

/* Added tokens' lstrip / rstrip (HF 0.23): the start of the whitespace run of s that ends at i
 * (not before lo), and the end of the one that starts at i (not past len). */
static inline size_t tok_ws_left(const char *s, size_t lo, size_t i) {
    while (i > lo) {
        size_t q = i - 1;
        while (q > lo && ((unsigned char)s[q] & 0xC0) == 0x80) q--;
        int k;
        if (!tok_is_ws(tok_get_utf8((const unsigned char *)s + q, &k))) break;
        i = q;
    }
    return i;
}
static inline size_t tok_ws_right(const char *s, size_t len, size_t i) {
    while (i < len) {
        int k;
        if (!tok_is_ws(tok_get_utf8((const unsigned char *)s + i, &k))) break;
        i += (size_t)k;
    }
    return i;
}
#endif
