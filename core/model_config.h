/* config.json of a Hugging Face BERT or DistilBERT checkpoint, mapped to one
 * encoder description. */
#ifndef EMBED_MODEL_CONFIG_H
#define EMBED_MODEL_CONFIG_H
#include <stddef.h>
#include "emb_common.h"

typedef enum { EMB_ARCH_BERT, EMB_ARCH_DISTILBERT } emb_arch;
typedef enum { EMB_ACT_GELU /* exact erf */ } emb_activation;

typedef struct {
    emb_arch arch;
    const char *arch_name;      /* "bert" | "distilbert" */
    int hidden, layers, heads, intermediate, max_positions, type_vocab, vocab_size;
    int sinusoidal;             /* distilbert sinusoidal_pos_embds */
    float ln_eps;
    emb_activation act;
    int pad_token_id;
} emb_model_config;

/* Parse config.json text; file names the file in messages. */
int emb_model_config_parse(const char *json, size_t len, const char *file, emb_model_config *out, char err[EMB_ERR_LEN]);
/* The most bytes a JSON settings file of a model folder (config.json, tokenizer_config.json,
 * the sentence-transformers files) may have. */
#define EMB_CONFIG_MAX_BYTES (16u << 20)
/* Read <dir>/config.json. */
int emb_model_config_load(const char *dir, emb_model_config *out, char err[EMB_ERR_LEN]);
#endif
