/* Public API of libembedcore (installed as <sqlite-embed/model.h>).
 * A model as SQL sees it: a name, a tokenizer, and (unless tokenizer-only) vectors.
 * Three kinds share this interface: models defined from JSON (a fixed table, whitespace
 * tokens), tokenizer-only folders, and Hugging Face encoders. A model is immutable after
 * creation and reference-counted, so connections and threads share it freely. */
#ifndef EMBED_MODEL_H
#define EMBED_MODEL_H
#include <stddef.h>
#include <stdint.h>
#include "emb_error.h"
#include "model_dims.h"
#include "weights.h"
#include "token.h"

typedef struct emb_model emb_model;

typedef struct {
    const char *name;
    const char *path; /* folder it was loaded from; NULL for defined models */
    const char *architecture; /* "defined", "tokenizer", "bert", "distilbert" */
    const emb_model_dims *dims; /* the sizes, owned by the model (hidden, layers, vocab_size, ...) */
    int max_tokens; /* truncation limit in force (incl. special tokens) */
    const char *position_kind; /* "learned", "sinusoidal", or NULL */
    const char *pooling; /* "mean", "cls", "max", or NULL */
    int normalize;
    const char *weight_type; /* the checkpoint's tensors: "F32", "F16", "BF16", or NULL */
    const char *weights; /* what the products use: "f32", "int8", "bf16", "q8_0" (emb_weights_name); NULL
                                * for models without an encoder */
    int64_t bytes; /* bytes of weights in use */
    int mmap; /* the load option: F32 weights may be used from a file mapping */
    int mapped; /* some weights are used in place from a mapping of a file */
    char fingerprint[17]; /* 16 hex digits */
    int has_vectors; /* 0 for tokenizer-only models */
    /* A cross-encoder (rerank.h): config.json's "BertForSequenceClassification",
     * "XLMRobertaForSequenceClassification", ... and its labels; NULL and 0 for other models. */
    const char *classifier;
    int num_labels;
    int dimensions; /* the width of emb_model_embed's vectors: hidden, or the last Dense module's */
    const char *prompts; /* config_sentence_transformers.json's prompts as a JSON object, or NULL */
    int is_static; /* a static embedding model: a token table and a mean, no layers */
} emb_model_info;

int emb_model_define(const char *name, const char *json, size_t len, emb_model **out, char err[EMB_ERR_LEN]);
typedef struct {
    /* 1 (default): F32 weights are used in place from a read-only mapping of the weight files;
     * replacing a file in place (truncating it, writing over it) then reaches the model.
     * 0: the files are read into private memory. */
    int mmap;
    /* EMB_WEIGHTS_DEFAULT (float32, or a GGUF file's Q8_0 blocks where its linear layers are Q8_0:
     * see weights.h), EMB_WEIGHTS_F32, EMB_WEIGHTS_INT8, EMB_WEIGHTS_BF16 or EMB_WEIGHTS_Q8_0: the
     * linear layers' weights as the products read them; the fingerprint differs from float32's
     * but for EMB_WEIGHTS_F32. */
    emb_weights weights;
    /* 0 (default): a GGUF EmbeddingGemma file (gemma-embedding) without the sentence-transformers
     * Dense layers (converted without --sentence-transformers-dense-modules) is refused, its vectors
     * being not sentence-transformers'; 1: it is loaded, its vectors llama.cpp's (the pooled ones). */
    int allow_missing_dense;
} emb_load_options;
#define EMB_LOAD_DEFAULTS                                                                                         \
    { 1, EMB_WEIGHTS_DEFAULT, 0 }

/* Loads a model folder; emb_model_load uses the default options. */
int emb_model_load(const char *name, const char *dir, emb_model **out, char err[EMB_ERR_LEN]);
int emb_model_load_with(const char *name, const char *dir, const emb_load_options *opt, emb_model **out,
                        char err[EMB_ERR_LEN]);
void emb_model_retain(emb_model *m);
void emb_model_release(emb_model *m); /* frees the model with its last reference */
const emb_model_info *emb_model_get_info(const emb_model *m);
/* 0 when the model makes vectors; else -1 with the one message for a model that does not,
 * "model 'NAME' is a tokenizer only: it has no <what>" (what: "vectors", "position vectors"). */
int emb_model_require_vectors(const emb_model_info *info, const char *what, char err[EMB_ERR_LEN]);

void emb_model_encoding_init(emb_encoding *enc);
void emb_model_encoding_free(emb_encoding *enc);
/* Tokens of text (and text_b, or NULL), special tokens included, truncated to max_tokens. */
int emb_model_tokenize(const emb_model *m, const char *text, size_t len, const char *text_b, size_t len_b,
                       emb_encoding *enc, char err[EMB_ERR_LEN]);
/* The same with another token limit (the C API's way to ask for one; -1: the model's own). */
int emb_model_tokenize_limit(const emb_model *m, const char *text, size_t len, const char *text_b, size_t len_b,
                             int max_tokens, emb_encoding *enc, char err[EMB_ERR_LEN]);
const char *emb_model_token_text(const emb_model *m, int32_t id, size_t *len);

/* Rows of the model's tables; NULL when out of range or the model has no vectors. A token row
 * of a table kept as F16 / BF16 is widened into buf (hidden floats), which is then returned. */
const float *emb_model_token_row(const emb_model *m, int32_t id, float *buf);
const float *emb_model_position_row(const emb_model *m, int32_t pos);
/* A rotary model's rotation: 0 with the dimensions rotated per head and the base of its global
 * layers (ModernBERT's sliding-window layers use another); -1 for any other model. */
int emb_model_rotary(const emb_model *m, int *rot_dims, double *theta);

/* Hidden states of an encoded input after n_layers layers (0: the input embedding; for a
 * defined model, the only level: token row + position row). out: enc->n x hidden. */
int emb_model_hidden_states(emb_model *m, const emb_encoding *enc, int n_layers, float *out,
                            char err[EMB_ERR_LEN]);

/* Attention weights of an encoded input (one sequence of n = enc->n tokens), taken from the
 * forward pass itself: layers first_layer..last_layer (1 is the first layer, which reads level 0
 * of emb_model_hidden_states; layer l makes level l), heads first_head..last_head (from 0).
 * out[((l - first_layer) * nh + (h - first_head)) * n * n + i * n + j], nh the heads asked: the
 * softmax weight of key j for query i. Rows sum to 1; keys a query does not see (outside a
 * sliding window) weigh 0. An error for defined and tokenizer-only models. */
int emb_model_attention(emb_model *m, const emb_encoding *enc, int first_layer, int last_layer, int first_head,
                        int last_head, float *out, char err[EMB_ERR_LEN]);
/* The additive bias of the attention score of query i and key j in a layer (1..layers; 0: the
 * bias all layers share, an error where they differ), one float per head: ALiBi's
 * -slope * |i - j|, -INFINITY where a sliding window hides the key, 0 otherwise. */
int emb_model_attention_bias(const emb_model *m, int layer, int64_t i, int64_t j, float *out,
                             char err[EMB_ERR_LEN]);

typedef struct {
    int pool; /* -1: the model's own pooling, else an emb_pool_mode (pooling.h) */
    int normalize; /* -1: the model's own */
    int dims; /* 0: every dimension; else the first dims of the vector (Matryoshka),
               * normalised after the cut when normalize is in force; 1 .. dimensions */
    /* Text put before each input, as sentence-transformers' prompts (see emb_model_prompt);
     * NULL: the folder's default_prompt_name's, if any; "": none. */
    const char *prompt;
} emb_embed_options;

typedef enum { EMB_PROMPT_DEFAULT, EMB_PROMPT_QUERY, EMB_PROMPT_DOCUMENT } emb_prompt_role;
/* The folder's prompt called name (config_sentence_transformers.json), or NULL. */
const char *emb_model_prompt(const emb_model *m, const char *name);
/* The prompt of a role, as sentence-transformers' encode, encode_query and encode_document pick
 * it: default_prompt_name's; "query"; the first of "document", "passage", "corpus". NULL: none. */
const char *emb_model_role_prompt(const emb_model *m, emb_prompt_role role);

/* The width of emb_model_embed's vectors under opt (NULL: the model's dimensions). */
int emb_model_embed_dims(const emb_model *m, const emb_embed_options *opt);

/* Sentence vectors for n texts (out: n x emb_model_embed_dims), batched by length internally.
 * dims outside 1 .. dimensions is an error. */
int emb_model_embed(emb_model *m, const char *const *texts, const size_t *lens, size_t n,
                    const emb_embed_options *opt, float *out, char err[EMB_ERR_LEN]);

#endif
