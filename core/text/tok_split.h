/* The Split pre-tokenizer regexes of byte-level BPE files (HF pre_tokenizers/split.rs and
 * byte_level.rs, Oniguruma semantics: alternatives tried in order at each position), each
 * written out by hand rather than run by a regex engine: GPT-2's, Qwen2's and Llama 3's
 * (cl100k-style), recognised by their exact pattern strings. */
#ifndef EMBED_TOK_SPLIT_H
#define EMBED_TOK_SPLIT_H
#include <stddef.h>

enum { SPLIT_GPT2 = 1, SPLIT_QWEN2, SPLIT_LLAMA3 };

/* The SPLIT_* of a Split pattern's regex string, 0 when it is none of them. */
int emb_tok_split_kind(const char *regex);
/* The regex string of a SPLIT_* (for error messages and tests). */
const char *emb_tok_split_regex(int kind);
/* Length of the match of pattern kind at s[i..len) (valid UTF-8, len > i); every pattern
 * matches at least one character anywhere. */
size_t emb_tok_split_next(int kind, const char *s, size_t len, size_t i);
#endif
