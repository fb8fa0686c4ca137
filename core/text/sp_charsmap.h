/* SentencePiece's precompiled character map (the Precompiled normalizer of tokenizer.json):
 * a base64 blob holding a darts-clone double-array trie of source strings and the pool of their
 * NUL-terminated replacements. Read with every index bounded, so a hostile blob is a load error
 * or a non-match, never an out-of-bounds read. */
#ifndef EMBED_SP_CHARSMAP_H
#define EMBED_SP_CHARSMAP_H
#include <stddef.h>
#include <stdint.h>

#include "base/emb_common.h"
#include "text/tok_nstr.h"

typedef struct {
    uint32_t *unit;
    size_t n_units;
    char *pool; /* replacements, NUL-terminated, valid UTF-8 */
    size_t pool_len;
    uint8_t ascii_mapped[128]; /* the one-byte key c has a replacement */
} sp_charsmap;

/* Decodes the base64 text b64 into m. 0 ok; else err says what is wrong. */
int emb_sp_charsmap_load(sp_charsmap *m, const char *b64, char err[EMB_ERR_LEN]);
void emb_sp_charsmap_free(sp_charsmap *m);
/* The replacement of the first (shortest) key that is a prefix of s[0..len) (the spm_precompiled
 * crate's transform); NULL when none. */
const char *emb_sp_charsmap_lookup(const sp_charsmap *m, const char *s, size_t len, size_t *out_len);
/* HF's Precompiled normalizer: graphemes shorter than 6 bytes looked up whole, else (or when
 * absent) character by character; dst = src with the replacements and HF's span moves.
 * 0 (dst untouched) when nothing in src is replaced. */
int emb_sp_charsmap_precompiled(const sp_charsmap *m, const nstr *src, nstr *dst, tlist *scratch);
#endif
