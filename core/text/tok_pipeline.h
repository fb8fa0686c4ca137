/* The Unigram and BPE tokenizers as a pipeline read from tokenizer.json: normalizers
 * (Precompiled, Strip, Replace, NFC), one pre-tokenizer (Metaspace, ByteLevel, a known Split
 * regex then ByteLevel, or none), one model (Unigram or BPE); the added tokens and the post-processor's template are the tokenizer's own (shared
 * with WordPiece). Internal to the tokenizer files. */
#ifndef EMBED_TOK_PIPELINE_H
#define EMBED_TOK_PIPELINE_H
#include <cjson/cJSON.h>

#include "text/tokenizer_internal.h"
#include "text/sp_charsmap.h"
#include "text/tok_bpe.h"
#include "text/tok_split.h"
#include "text/tok_unigram.h"

/* tok_pipeline_load.c. Reads model (kind "Unigram" or "BPE"), normalizer and pre_tokenizer of j
 * into t (vocab, unk_id, t->pipe). bound: ids must lie below it. 0 ok. */
int emb_tok_pipeline_parse(emb_tokenizer *t, const cJSON *j, const char *kind, int64_t bound,
                           char err[EMB_ERR_LEN]);
void emb_tok_pipeline_free(tok_pipe *p);
uint64_t emb_tok_pipeline_fingerprint(const tok_pipe *p);
int emb_tok_pipeline_has_normalizer(const tok_pipe *p);
void emb_tok_pipeline_set_trim(tok_pipe *p, int trim, int add_prefix_space);
/* tok_pipeline.c. Tokenizes one valid UTF-8 sequence into out (cleared first), stopping after
 * the word that brings the count to cap (0: no cap). *scratch is the pipeline's memory, kept by
 * the caller. -1 out of memory. */
int emb_tok_pipeline_seq(const emb_tokenizer *t, void **scratch, const char *text, size_t len, int seq, size_t cap,
                         toklist *out);
void emb_tok_pipeline_scratch_free(void *scratch);

/* The pipeline's state: filled by tok_pipeline_load.c, run by tok_pipeline.c (the tokenizer's
 * other files use the functions above only). */
#define MAX_NORM 8

enum { N_PRECOMPILED, N_STRIP, N_REPLACE, N_NFC };
enum { P_METASPACE, P_BYTELEVEL, P_NONE };
enum { PREPEND_ALWAYS, PREPEND_FIRST, PREPEND_NEVER };

typedef struct {
    int kind;
    sp_charsmap cm; /* Precompiled */
    int left, right; /* Strip */
    uint32_t rc; /* Replace: the repeated character */
    size_t min_run; /* Replace: runs of at least min_run characters rc ... */
    int single; /* ... or (1) every occurrence on its own */
    char *rs; /* Replace: the content */
    size_t rlen;
} norm_step;

struct tok_pipe {
    norm_step norm[MAX_NORM];
    int n_norm;
    int pre; /* P_* */
    char repl[8]; /* Metaspace replacement, UTF-8 */
    size_t repl_len;
    uint32_t repl_cp;
    int prepend, split; /* Metaspace */
    int prefix_space; /* ByteLevel */
    int pat; /* ByteLevel: the SPLIT_* regex that cuts pre-tokens (its own or a Split's), 0 none */
    tok_unigram ug;
    tok_bpe bpe;
    int trim, trim_prefix; /* RobertaProcessing trim_offsets / add_prefix_space */
    uint64_t fp;
};

#endif
