/* sentence-transformers files around a Hugging Face model folder: modules.json,
 * the Pooling module's config.json (usually 1_Pooling/), a Normalize module, and
 * sentence_bert_config.json (max_seq_length, do_lower_case). */
#ifndef EMBED_SBERT_CONFIG_H
#define EMBED_SBERT_CONFIG_H
#include "base/emb_common.h"
#include "sqlite-embed/pooling.h"

typedef struct {
    int present; /* modules.json exists */
    emb_pool_mode pool; /* EMB_POOL_MEAN when not present */
    int normalize; /* a Normalize module is listed */
    int max_seq_length; /* sentence_bert_config.json; 0 if none */
    int do_lower_case; /* sentence_bert_config.json; sentence-transformers lowercases the text before tokenizing */
    int pooling_dim; /* word_embedding_dimension of the Pooling config; 0 if absent */
    char transformer_path[128]; /* the Transformer module's folder relative to the model dir ("" = the dir) */
} emb_sbert_config;

/* Absent files give present=0 and no error; malformed files and unsupported modules
 * or pooling modes give a clear error naming the file and key. */
int emb_sbert_config_load(const char *dir, emb_sbert_config *out, char err[EMB_ERR_LEN]);
#endif
