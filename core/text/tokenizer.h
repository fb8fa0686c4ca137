/* Tokenizers equal to Hugging Face tokenizers (0.23), read from tokenizer.json (or vocab.txt):
 *   WordPiece: BertNormalizer + BertPreTokenizer + WordPiece (tokenizer.c). Added (special) tokens
 *     matched literally in the raw text (lstrip / rstrip take the white space beside them); clean_text; CJK padding; strip accents (NFD, drop Mn) then
 *     lowercase; split on whitespace and punctuation; greedy longest-match WordPiece with the
 *     continuation prefix; [UNK] for unsplittable words or words over max_input_chars_per_word.
 *   Unigram (SentencePiece, XLM-R layout) and BPE (RoBERTa / GPT-2 / Qwen2 byte-level, Gemma over
 *     characters with byte fallback): a pipeline driven by the file (tok_pipeline.c): added tokens
 *     with lstrip / rstrip, normalizers (Precompiled charsmap, Strip, Replace, NFC), Metaspace,
 *     ByteLevel (after a known Split regex) or no pre-tokenizer, Viterbi or merges by rank,
 *     RobertaProcessing's trim_offsets.
 * Then the post-processor's template ([CLS] A [SEP] [B [SEP]], <s> A </s> [</s> B </s>], with type
 * ids) and optional truncation. Offsets are UTF-8 byte spans of the original text, as HF gives them.
 *
 * A loaded emb_tokenizer is immutable and may be shared by threads; each thread uses its own
 * emb_encoding (which keeps its working memory between calls). */
#ifndef EMBED_TOKENIZER_H
#define EMBED_TOKENIZER_H
#include <stddef.h>
#include <stdint.h>

#include "base/emb_common.h"
#include "sqlite-embed/token.h" /* emb_token, emb_encoding */

typedef struct emb_tokenizer emb_tokenizer;

/* Loads dir/tokenizer.json, else dir/vocab.txt (+ dir/tokenizer_config.json when present).
 * dir/tokenizer_config.json, when present, also gives model_max_length. 0 ok. Token ids are
 * bounded by the entries present, and every special token of the templates must be in the
 * vocabulary: a file that breaks either is an error at load. */
int emb_tokenizer_load(const char *dir, emb_tokenizer **out, char err[EMB_ERR_LEN]);
/* The same from explicit files: tokenizer.json (json_path) or vocab.txt (vocab_path) with an
 * optional tokenizer_config.json (config_path, may be NULL). Exactly one of json_path and
 * vocab_path is non-NULL. */
int emb_tokenizer_load_files(const char *json_path, const char *vocab_path, const char *config_path,
                             emb_tokenizer **out, char err[EMB_ERR_LEN]);
/* The same from the text of a tokenizer.json held in memory. */
int emb_tokenizer_from_json(const char *json, size_t len, emb_tokenizer **out, char err[EMB_ERR_LEN]);
void emb_tokenizer_free(emb_tokenizer *t);

void emb_encoding_init(emb_encoding *enc);
void emb_encoding_free(emb_encoding *enc); /* frees tok and the scratch memory */

/* Encodes text (and text_b when not NULL) with special tokens into out (out->n tokens).
 * max_len: 0 = no truncation; else the total length including special tokens, truncated as
 * HF tokenizers 0.23 does (right side; pairs: longest_first with its early exit). max_len smaller
 * than the number of special tokens is an error. Invalid UTF-8 is an error
 * ("invalid UTF-8 at byte N" / "invalid UTF-8 in text_b at byte N"). 0 ok. */
int emb_tokenize(const emb_tokenizer *t, const char *text, size_t len, const char *text_b, size_t len_b,
                 size_t max_len, emb_encoding *out, char err[EMB_ERR_LEN]);

/* The text Hugging Face reports for token i of enc when it is not the vocabulary's string of
 * its id, else NULL: a Unigram piece that maps to unk is named by the normalized text it could
 * not segment (consecutive unknowns fused), e.g. "\xe2\x96\x81" + the text, not "<unk>". Valid
 * until the next emb_tokenize with enc. */
const char *emb_encoding_token_text(const emb_encoding *enc, size_t i, size_t *len);

/* Vocabulary */
const char *emb_tokenizer_token(const emb_tokenizer *t, int32_t id, size_t *len); /* NULL if none */
int32_t emb_tokenizer_vocab_size(const emb_tokenizer *t);
int32_t emb_tokenizer_lookup(const emb_tokenizer *t, const char *s, size_t len); /* -1 if absent */
/* XXH3_64 over the settings, special tokens, template and vocabulary; stable across machines. */
uint64_t emb_tokenizer_fingerprint(const emb_tokenizer *t);

/* Settings */
int emb_tokenizer_lowercase(const emb_tokenizer *t);
int emb_tokenizer_strip_accents(const emb_tokenizer *t); /* effective value */
int emb_tokenizer_chinese_chars(const emb_tokenizer *t);
int emb_tokenizer_clean_text(const emb_tokenizer *t);
int32_t emb_tokenizer_unk_id(const emb_tokenizer *t); /* -1 when the model has none (byte-level BPE) */
int32_t emb_tokenizer_cls_id(const emb_tokenizer *t);
int32_t emb_tokenizer_sep_id(const emb_tokenizer *t);
int32_t emb_tokenizer_pad_id(const emb_tokenizer *t);
int32_t emb_tokenizer_mask_id(const emb_tokenizer *t);
int emb_tokenizer_max_input_chars_per_word(const emb_tokenizer *t);
/* 1 when a text cut between two words (HF word ids) tokenizes as the same tokens on each side
 * as in the whole: WordPiece, which splits the text into words first and each word alone. 0 for
 * Unigram and byte-level BPE, whose pieces depend on the white space before a word. */
int emb_tokenizer_words_alone(const emb_tokenizer *t);
/* model_max_length from tokenizer_config.json; 0 when absent or a "no limit" sentinel. */
int64_t emb_tokenizer_model_max_length(const emb_tokenizer *t);
/* Number of template special tokens added to a single sequence (pair = 0) or a pair (1). */
int emb_tokenizer_num_special(const emb_tokenizer *t, int pair);
/* The largest token type id the single (pair = 0) or the pair template (1) gives. */
int emb_tokenizer_max_type_id(const emb_tokenizer *t, int pair);
#endif
