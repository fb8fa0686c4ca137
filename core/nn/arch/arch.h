/* One architecture, one file (core/nn/arch/<name>.c, as llama.cpp keeps src/models/<arch>.cpp):
 * each describes itself with an emb_arch_desc, its config.json keys read into emb_encoder_config,
 * the names of its tensors (embeddings, each layer, head) and its layer recipe's flags.
 * encoder_config.c and encoder_load.c dispatch through these descriptions (arch_list.c); what
 * the architectures share is here: config.json readers (arch_config.c) and the tensor getters
 * that check shapes and feed the fingerprint (arch_tensors.c). Internal to core/nn. */
#ifndef EMBED_NN_ARCH_H
#define EMBED_NN_ARCH_H
#include "nn/encoder_internal.h"
#include <cjson/cJSON.h>

/* How config.json names the integer sizes, in this order (NULL: the key is not read). */
enum {
    EMB_ARCH_KEY_HIDDEN,
    EMB_ARCH_KEY_LAYERS,
    EMB_ARCH_KEY_HEADS,
    EMB_ARCH_KEY_INTERMEDIATE,
    EMB_ARCH_KEY_MAX_POSITIONS,
    EMB_ARCH_KEY_VOCAB,
    EMB_ARCH_KEY_TYPE_VOCAB, /* optional, 2 when absent */
    EMB_ARCH_KEY_PAD, /* optional, 0 when absent */
    EMB_ARCH_N_KEYS
};

typedef struct emb_arch_desc {
    emb_arch arch;
    const char *const *model_types; /* config.json's model_type values it reads, NULL-ended */
    /* NULL, or whether a config of those types is this architecture's (JinaBERT v2 is a "bert"
     * with ALiBi): descriptions are asked in arch_list.c's order */
    int (*claims)(const cJSON *root);
    /* config.json into c (zeroed, act GELU); type is model_type as found */
    int (*read_config)(const cJSON *root, const char *file, const char *type, emb_encoder_config *c,
                       char err[EMB_ERR_LEN]);
    const char *word_tensor; /* its name without prefix: find_prefix looks for it */
    const char *head_prefix; /* what a task-head save puts before the model's tensors */
    int (*load_embeddings)(emb_encoder *e, char err[EMB_ERR_LEN]);
    int (*load_layer)(emb_encoder *e, int l, char err[EMB_ERR_LEN]);
    int (*load_head)(emb_encoder *e, char err[EMB_ERR_LEN]); /* pooler, final norm, or nothing */
} emb_arch_desc;

/* arch_list.c: the description that reads a config of this model_type (NULL: none), and the one
 * of an architecture. */
const emb_arch_desc *emb_arch_for_type(const char *type, const cJSON *root);
const emb_arch_desc *emb_arch_of(emb_arch a);
/* "bert, distilbert, ...": what the refusals list as supported */
extern const char emb_arch_supported[];

/* ------------------------------------------------------------------ config.json (arch_config.c) */
int emb_arch_read_ints(const cJSON *root, const char *file, const char *const names[EMB_ARCH_N_KEYS],
                       emb_encoder_config *c, char err[EMB_ERR_LEN]);
/* The string at key, or dflt when absent or null. */
int emb_arch_read_string(const cJSON *root, const char *key, const char *dflt, const char *file, const char **out,
                         char err[EMB_ERR_LEN]);
int emb_arch_read_bool(const cJSON *root, const char *key, int dflt, const char *file, int *out,
                       char err[EMB_ERR_LEN]);
/* A number in [lo, hi] (absent or null: dflt). */
int emb_arch_read_number(const cJSON *root, const char *key, double dflt, double lo, double hi, const char *file,
                         double *out, char err[EMB_ERR_LEN]);
/* The LayerNorm epsilon at key into c->ln_eps (absent or null: dflt). */
int emb_arch_read_eps(const cJSON *root, const char *key, double dflt, const char *file, emb_encoder_config *c,
                      char err[EMB_ERR_LEN]);
/* The activation at key (absent: "gelu"), which must be "gelu". */
int emb_arch_read_activation(const cJSON *root, const char *key, const char *file, char err[EMB_ERR_LEN]);
/* "FILE: what is not supported" when bad. */
int emb_arch_refuse_if(int bad, const char *file, const char *what, char err[EMB_ERR_LEN]);
/* Every projection and norm has a bias (BERT, RoBERTa, DistilBERT, MPNet). */
void emb_arch_all_biases(emb_encoder_config *c);
/* Rotary positions on fraction of each head's dimensions: an even number of at least 2. */
int emb_arch_rope_dims(const char *file, emb_encoder_config *c, double fraction, char err[EMB_ERR_LEN]);
/* An integer in [lo, hi] at key (absent or null: dflt). */
int emb_arch_read_int(const cJSON *root, const char *key, int dflt, int lo, int hi, const char *file, int *out,
                      char err[EMB_ERR_LEN]);
/* One entry of rope_parameters (where: its name in messages): rope_type "default" only, its
 * rope_theta into *theta (absent: as it was), partial_rotary_factor 1. */
int emb_arch_read_rope_entry(const cJSON *o, const char *where, double *theta, char err[EMB_ERR_LEN]);
/* RoBERTa's and MPNet's position rows: from padding_idx + 1 (c->pad_token_id). */
int emb_arch_position_offset(const char *file, emb_encoder_config *c, char err[EMB_ERR_LEN]);

/* ------------------------------------------------------------------ tensors (arch_tensors.c) */
/* The tensor of that full name in any of the files (*file: which), or NULL. */
const emb_safetensors_tensor *emb_arch_find(const emb_encoder *e, const char *name, int *file);
/* p freed with the encoder; -1 (p not kept) when out of memory. */
int emb_arch_own(emb_encoder *e, void *p);
void emb_arch_hash_u64(XXH3_state_t *h, uint64_t v);
/* Tensor prefix+suffix with shape [d0] (d1 < 0) or [d0, d1] as float32, into the fingerprint
 * (suffix, shape, values); optional: *out NULL when absent. */
int emb_arch_get_tensor(emb_encoder *e, const char *suffix, int64_t d0, int64_t d1, int optional,
                        const float **out, char err[EMB_ERR_LEN]);
/* The bias of n values where present (the architecture has it), else the encoder's zeros. */
/* The token table prefix+suffix, [rows, cols]: as emb_arch_get_tensor into e->word, except that an
 * F16 / BF16 table stays as the file holds it (e->word_half), widened row by row when read. */
int emb_arch_get_word_table(emb_encoder *e, const char *suffix, int64_t rows, int64_t cols, char err[EMB_ERR_LEN]);
int emb_arch_get_bias(emb_encoder *e, const char *suffix, int64_t n, int present, const float **out,
                      char err[EMB_ERR_LEN]);
/* The same with layer l put into the name's format. */
int emb_arch_layer_tensor(emb_encoder *e, const char *fmt, int l, int64_t d0, int64_t d1, const float **out,
                          char err[EMB_ERR_LEN]);
int emb_arch_layer_bias(emb_encoder *e, const char *fmt, int l, int64_t n, int present, const float **out,
                        char err[EMB_ERR_LEN]);
/* Q, K, V as the three row blocks of a fused Wqkv [3H, H] and its bias (or the zeros). */
void emb_arch_split_qkv(const emb_encoder *e, emb_layer_weights *w, const float *qkv, const float *qkv_b);
/* A post-norm layer of n tensors named by fmt (layer number in each), in this order: q, bq, k,
 * bk, v, bv, o, bo, ln1 g, b, ffn in, bias, ffn out, bias, ln2 g, b (n 16: all; 10: up to ln1). */
int emb_arch_load_post_norm(emb_encoder *e, int l, const char *const fmt[16], int n, char err[EMB_ERR_LEN]);
/* A norm's weight and bias (norm_bias), named ln + ".weight" / ".bias". */
int emb_arch_load_norm(emb_encoder *e, const char *ln, const float **g, const float **b, char err[EMB_ERR_LEN]);
/* The embeddings as BERT lays them out: word rows (tensor word), a learned position table
 * (pos_kind learned), token types (type_vocab > 0), then the norm named ln. */
int emb_arch_load_embeddings(emb_encoder *e, const char *word, const char *ln, char err[EMB_ERR_LEN]);

/* ------------------------------------------------------------------ what files share */
/* bert.c: BERT's sixteen layer tensors (JinaBERT v2 keeps its attention), and its pooler where
 * present (RoBERTa, JinaBERT and MPNet checkpoints have one too). */
extern const char *const emb_arch_bert_layer_names[16];
int emb_arch_bert_pooler(emb_encoder *e, char err[EMB_ERR_LEN]);
/* A head of nothing (DistilBERT, NomicBERT). */
int emb_arch_no_head(emb_encoder *e, char err[EMB_ERR_LEN]);

/* ------------------------------------------------------------------ decoder stacks (arch_decoder.c) */
/* What Qwen3 and Gemma3 share: RMSNorm pre-norm stacks with q_norm / k_norm, grouped-query
 * attention of head_dim (not hidden / heads), rotary positions on the whole head, gated MLP. */
/* num_key_value_heads (absent: the heads) and head_dim (absent: dflt_head_dim, or hidden / heads
 * when 0) into c, each checked and named when bad; the recipe's flags (pre-norm decoder, rotary). */
int emb_arch_decoder_shape(const cJSON *root, const char *file, int dflt_head_dim, emb_encoder_config *c,
                           char err[EMB_ERR_LEN]);
/* rope_scaling (transformers 4): absent, null or of rope_type / type "default". */
int emb_arch_decoder_no_scaling(const cJSON *root, const char *file, char err[EMB_ERR_LEN]);
/* A layer's tensor names where the two differ; unit_offset: RMSNorm weights hold w - 1 (Gemma's
 * x * (1 + w)), turned into 1 + w at load. */
typedef struct {
    const char *mlp_norm; /* the norm before the MLP */
    const char *post_attn, *post_mlp; /* the sandwich norms of the blocks' outputs, or NULL */
    int unit_offset;
} emb_arch_decoder_layout;
int emb_arch_decoder_layer(emb_encoder *e, int l, const emb_arch_decoder_layout *d, char err[EMB_ERR_LEN]);
/* The token rows (embed_tokens, no norm); the final norm. */
int emb_arch_decoder_embeddings(emb_encoder *e, char err[EMB_ERR_LEN]);
int emb_arch_decoder_final_norm(emb_encoder *e, int unit_offset, char err[EMB_ERR_LEN]);

extern const emb_arch_desc emb_arch_bert, emb_arch_roberta, emb_arch_distilbert, emb_arch_nomic_bert,
    emb_arch_jina_bert, emb_arch_modernbert, emb_arch_mpnet, emb_arch_qwen3, emb_arch_gemma3_text;
#endif
