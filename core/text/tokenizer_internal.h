/* The tokenizer's state, shared by the loader (tokenizer_load.c, which fills it from
 * tokenizer.json or vocab.txt + tokenizer_config.json, and tokenizer_finish.c), the pipeline
 * (tok_pipeline*.c) and the encoding (tokenizer.c, which only reads it). Not for use outside the
 * tokenizer's files. */
#ifndef EMBED_TOKENIZER_INTERNAL_H
#define EMBED_TOKENIZER_INTERNAL_H
#include "text/tokenizer.h"
#include "text/vocab.h"

#define MAX_TMPL 16
#define MAX_PREFIX 32

typedef struct {
    char *s;
    size_t len;
    int32_t id;
    uint8_t lstrip, rstrip; /* absorb the whitespace before / after a match */
} added_tok;

enum { TOK_WORDPIECE = 0, TOK_UNIGRAM = 1, TOK_BPE = 2 };
typedef struct tok_pipe tok_pipe; /* tok_pipeline.h: the Unigram / BPE pipeline */

/* A token that Hugging Face names by its own text rather than the vocabulary's string (a
 * Unigram piece that maps to unk: the normalized text it could not segment, unknowns fused). */
typedef struct {
    size_t index; /* of the token in its list */
    size_t off, len; /* its text in the list's text buffer */
    emb_token tok; /* in the output: the token itself, so that an encoding another tokenizer
                      * refilled does not match */
} tok_text;

typedef struct {
    emb_token *tok;
    size_t n, cap;
    tok_text *tt; /* by index */
    size_t ntt, ttcap;
    char *text;
    size_t text_n, text_cap;
} toklist;

typedef struct {
    int kind; /* 0 special token, 1 sequence A, 2 sequence B */
    int32_t id;
    int32_t type_id;
} tmpl_item;

enum { A_WORD = 0, A_REMOVED = 1, A_WS = 2, A_PUNCT = 3 };

struct emb_tokenizer {
    int kind; /* TOK_* */
    tok_pipe *pipe; /* Unigram and BPE: normalizers, pre-tokenizer, model */
    emb_vocab *vocab; /* every token */
    emb_vocab *cont; /* tokens that start with the prefix, keyed without it */
    size_t max_tok, max_cont;
    int lowercase, strip, chinese, clean;
    int max_chars;
    char prefix[MAX_PREFIX];
    size_t prefix_len;
    int32_t unk_id, cls_id, sep_id, pad_id, mask_id;
    int64_t model_max_length;
    added_tok *added;
    size_t n_added;
    uint8_t added_first[256];
    tmpl_item single[MAX_TMPL], pair[MAX_TMPL];
    int n_single, n_pair, spec_single, spec_pair;
    int max_type[2]; /* the largest type id of the single and of the pair template */
    uint64_t fp;
    const uint8_t *bmp;
    uint8_t ascii_act[128];
    char ascii_low[128];
};

/* Length of the longest added token at p (0 if none), its index in t->added in *k
 * (tok_pipeline.c; WordPiece uses it too). */
size_t emb_tok_pipeline_match_added(const emb_tokenizer *t, const char *p, size_t rem, size_t *k);

/* Everything after the settings are read (tokenizer_finish.c): the checks of the ids they name,
 * the continuation table, the added tokens sorted, the ASCII tables, the fingerprint. src names
 * the settings' file in errors. */
int emb_tokenizer_finish(emb_tokenizer *t, const char *src, char err[EMB_ERR_LEN]);

#endif
