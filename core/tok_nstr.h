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

void nstr_free(nstr *s);
/* s = the raw text t[0..len), whose byte 0 lies at offset base of the sequence. */
void nstr_from_raw(nstr *s, const char *t, size_t len, int32_t base);
void nstr_copy_range(nstr *dst, const nstr *src, size_t a, size_t b);
/* dst = src transformed by l (HF NormalizedString::transform over the whole string). */
void nstr_transform(nstr *dst, const nstr *src, const tlist *l);
void tlist_push(tlist *l, uint32_t c, int32_t change);
void tlist_free(tlist *l);
/* Removes leading / trailing White_Space characters (HF Strip). */
void nstr_strip(nstr *dst, const nstr *src, int left, int right);
/* Replaces every run of at least min_run characters c (single: every occurrence on its own, as
 * a one-character String pattern) by the UTF-8 string r, with HF Replace's span moves. */
void nstr_replace_run(nstr *dst, const nstr *src, uint32_t c, size_t min_run, int single, const char *r, size_t rlen);
/* Prepends the string r (HF NormalizedString::prepend: it shares the first character's span). */
void nstr_prepend(nstr *dst, const nstr *src, const char *r, size_t rlen);
/* The original span of normalized bytes [a,b): min start, max end (HF convert_offsets). */
void nstr_span(const nstr *s, size_t a, size_t b, int32_t *start, int32_t *end);

/* helpers */
int tok_is_ws(uint32_t c); /* Unicode White_Space (Rust char::is_whitespace) */
int tok_put_utf8(char *p, uint32_t c);
/* decodes the valid UTF-8 character at p; its length in *n */
uint32_t tok_get_utf8(const unsigned char *p, int *n);
#endif
