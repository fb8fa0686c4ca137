/* The NFC normalizer of HF tokenizers (NormalizedString::nfc): the unicode-normalization-
 * alignments crate's canonical decomposition, reordering and recomposition with its Unicode 9.0
 * tables, each output character carrying the crate's change so that spans move as HF's do. */
#ifndef EMBED_TOK_NFC_H
#define EMBED_TOK_NFC_H
#include "text/tok_nstr.h"

/* dst = NFC of src and 1, or 0 (dst untouched) when NFC leaves src as it is. dec and out are
 * working lists kept by the caller. */
int emb_tok_nfc(const nstr *src, nstr *dst, tlist *dec, tlist *out);
#endif
