/* One GGUF architecture, one file (core/nn/gguf/<arch>.c): the {arch}.* keys written out as the
 * config.json that core/nn/arch's reader checks, and its tensors' names both ways (llama.cpp's
 * converter's names: token_embd, blk.N.attn_q ...). encoder_gguf.c finds the file's architecture
 * in gguf_arch_list.c and renames its tensors; ggml's dimensions are the reverse of Hugging Face's.
 * Internal to core/nn. */
#ifndef EMBED_NN_GGUF_ARCH_H
#define EMBED_NN_GGUF_ARCH_H
#include "nn/encoder_config.h"
#include "nn/gguf.h"
#include <stddef.h>

typedef struct {
    const char *gguf, *hf;
} emb_gguf_name_pair;

typedef struct emb_gguf_arch {
    const char *arch; /* general.architecture */
    const emb_gguf_name_pair *top;
    size_t n_top;
    const emb_gguf_name_pair *layer;
    size_t n_layer;
    const char *layer_fmt; /* Hugging Face's name of layer %d's part %s, kind %s */
    /* the metadata as config.json, parsed into cfg; label names the file */
    int (*config)(const emb_gguf *g, const char *label, emb_encoder_config *cfg, char err[EMB_ERR_LEN]);
} emb_gguf_arch;

/* The architecture the file names, or NULL. */
const emb_gguf_arch *emb_gguf_arch_find(const char *name, size_t n);
/* The architectures read, as "bert, qwen3" for messages. */
const char *emb_gguf_arch_names(void);

/* gguf_meta.c: what the architectures' files share. */
/* A metadata value that must be there: an integer in [lo, hi]. */
int emb_gguf_meta_int(const emb_gguf *g, const char *key, int64_t lo, int64_t hi, const char *label, int64_t *out,
                      char err[EMB_ERR_LEN]);
/* An optional number: *out unchanged when absent; an error naming the key when not a number. */
int emb_gguf_meta_number(const emb_gguf *g, const char *key, const char *label, double *out,
                         char err[EMB_ERR_LEN]);
/* The rows of a 2-D tensor (ggml's ne[1]), or 0 when absent or not 2-D. */
int64_t emb_gguf_rows_of(const emb_gguf *g, const char *name);
/* json (a config.json written from the metadata) parsed as "<label> (its <arch>.* keys as config.json)". */
int emb_gguf_config_parse(const char *json, const char *arch, const char *label, emb_encoder_config *cfg,
                          char err[EMB_ERR_LEN]);

extern const emb_gguf_arch emb_gguf_arch_bert, emb_gguf_arch_qwen3;
extern const emb_gguf_arch emb_gguf_arch_nomic_bert, emb_gguf_arch_jina_bert_v2;
extern const emb_gguf_arch emb_gguf_arch_gemma;
#endif
