/* The encoder's configuration: config.json of a Hugging Face BERT or DistilBERT checkpoint,
 * read into the one description the encoder is built from (named for its user, the encoder:
 * the model folder holds other JSON settings, read by the tokenizer and sbert_config). */
#ifndef EMBED_ENCODER_CONFIG_H
#define EMBED_ENCODER_CONFIG_H
#include <stddef.h>
#include "emb_common.h"
#include "model_dims.h"

typedef enum { EMB_ARCH_BERT, EMB_ARCH_DISTILBERT } emb_arch;
typedef enum { EMB_ACT_GELU /* exact erf */ } emb_activation;

typedef struct {
    emb_arch arch;
    const char *arch_name;      /* "bert" | "distilbert" */
    emb_model_dims dims;        /* type_vocab 0 for distilbert */
    int sinusoidal;             /* distilbert sinusoidal_pos_embds */
    float ln_eps;
    emb_activation act;
    int pad_token_id;           /* read and checked; padded positions are masked, so unused */
} emb_encoder_config;

/* Parse config.json text; file names the file in messages. */
int emb_encoder_config_parse(const char *json, size_t len, const char *file, emb_encoder_config *out, char err[EMB_ERR_LEN]);
/* Read <dir>/config.json. */
int emb_encoder_config_load(const char *dir, emb_encoder_config *out, char err[EMB_ERR_LEN]);
#endif
