/* sentence-transformers files around a Hugging Face model folder, in the layouts of
 * sentence-transformers 2.x to 6.x: modules.json (the input module, a Transformer or a
 * StaticEmbedding, then Pooling, Dense and Normalize modules in order), the Pooling module's
 * config.json (the pooling_mode_* booleans or sentence-transformers 6's "pooling_mode"), and
 * sentence_bert_config.json (max_seq_length, do_lower_case). Dense modules' own files are read
 * by dense.c, prompts by prompts.c. */
#ifndef EMBED_SBERT_CONFIG_H
#define EMBED_SBERT_CONFIG_H
#include "base/emb_common.h"
#include "sqlite-embed/pooling.h"

#define EMB_SBERT_MAX_DENSE 8
#define EMB_SBERT_PATH 128

typedef struct {
    int present; /* modules.json exists */
    int input_static; /* the input module is a StaticEmbedding (a token table and a mean) */
    emb_pool_mode pool; /* EMB_POOL_MEAN when not present */
    int include_prompt; /* 0: a prompt's tokens are left out of the pooling (INSTRUCTOR) */
    int normalize; /* the last module is a Normalize */
    int max_seq_length; /* sentence_bert_config.json; 0 if none */
    int do_lower_case; /* sentence_bert_config.json; sentence-transformers lowercases the text before tokenizing */
    int pooling_dim; /* the Pooling config's embedding dimension; 0 if absent */
    char transformer_path[EMB_SBERT_PATH]; /* the input module's folder relative to the model dir ("" = the dir) */
    int n_dense; /* Dense modules after the pooling, in order */
    char dense_path[EMB_SBERT_MAX_DENSE][EMB_SBERT_PATH];
    int normalize_before[EMB_SBERT_MAX_DENSE]; /* a Normalize module comes just before Dense i */
} emb_sbert_config;

/* Absent files give present=0 and no error; malformed files and unsupported modules
 * or pooling modes give a clear error naming the file and key. */
int emb_sbert_config_load(const char *dir, emb_sbert_config *out, char err[EMB_ERR_LEN]);
#endif
