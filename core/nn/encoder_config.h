/* The encoder's configuration: config.json of a Hugging Face checkpoint (BERT, DistilBERT,
 * RoBERTa / XLM-RoBERTa, NomicBERT, JinaBERT v2, ModernBERT, MPNet), read into the one description the
 * encoder is built from: sizes, and the parts of the forward pass that vary between these
 * architectures (position scheme, attention pattern, feed-forward kind, biases, norm placement).
 * Named for its user, the encoder: the model folder holds other JSON settings, read by the
 * tokenizer and sbert_config. */
#ifndef EMBED_ENCODER_CONFIG_H
#define EMBED_ENCODER_CONFIG_H
#include <stddef.h>
#include "base/emb_common.h"
#include "sqlite-embed/model_dims.h"

typedef enum {
    EMB_ARCH_BERT,
    EMB_ARCH_DISTILBERT,
    EMB_ARCH_ROBERTA, /* model_type roberta and xlm-roberta */
    EMB_ARCH_NOMIC_BERT, /* model_type nomic_bert */
    EMB_ARCH_JINA_BERT, /* model_type bert with position_embedding_type alibi (JinaBERT v2) */
    EMB_ARCH_MODERNBERT, /* model_type modernbert */
    EMB_ARCH_MPNET, /* model_type mpnet */
    EMB_ARCH_QWEN3, /* model_type qwen3 (Qwen3Model, Qwen3ForCausalLM) */
    EMB_ARCH_GEMMA3_TEXT /* model_type gemma3_text (Gemma3TextModel, EmbeddingGemma) */
} emb_arch;
#define EMB_ENCODER_MAX_LAYERS 1024 /* what config.json may ask for */
typedef enum { EMB_ACT_GELU /* exact erf */, EMB_ACT_SILU, EMB_ACT_RELU, EMB_ACT_GELU_TANH } emb_activation;
typedef enum {
    EMB_POS_LEARNED, /* a table added to the input (RoBERTa: rows from pos_offset) */
    EMB_POS_SINUSOIDAL, /* DistilBERT's fixed table */
    EMB_POS_ROTARY, /* q and k rotated in attention */
    EMB_POS_ALIBI /* a bias -slope_h |i - j| on the attention scores */
} emb_pos_kind;

typedef struct {
    emb_arch arch;
    const char *
        arch_name; /* "bert" | "distilbert" | "roberta" | "xlm-roberta" | "nomic_bert" | "jina_bert" | "modernbert" | "mpnet"
                    * | "qwen3" | "gemma3_text" */
    emb_model_dims dims; /* type_vocab 0 for distilbert and modernbert */
    int sinusoidal; /* distilbert sinusoidal_pos_embds */
    float ln_eps;
    emb_activation act; /* of the feed-forward (of its gate half when gated) */
    int pad_token_id; /* RoBERTa: padding_idx of its position ids; otherwise unused */
    emb_pos_kind pos_kind;
    int pos_offset; /* RoBERTa: padding_idx + 1, the table row of position 0; else 0 */
    int gated; /* feed-forward act(first half) * second half (GEGLU, SwiGLU) */
    int pre_norm; /* ModernBERT: norm before attention / MLP, final norm after the last layer */
    int rope_dims; /* rotary: dimensions rotated per head (pairs (i, i + rope_dims/2)) */
    double rope_theta; /* rotary base (global layers) */
    double rope_theta_local; /* rotary base of sliding-window layers */
    int half_window; /* sliding-window layers: a query sees keys with |i - j| <= half_window */
    int global_every; /* layer l attends globally iff l % global_every == 0 (0: all global; -1: layer_types
                       * follows no such period) */
    unsigned char local_layers[EMB_ENCODER_MAX_LAYERS / 8]; /* bit l: layer l has the sliding window */
    int qkv_bias, out_bias; /* attention projections have biases */
    int ffn_in_bias, ffn_out_bias; /* feed-forward projections have biases */
    int norm_bias; /* LayerNorms have biases */
    int rel_buckets; /* MPNet: rows of the relative-position bias table added to the scores (0: none) */
    /* Attention's shape: head_dim need not be hidden / heads (Qwen3, Gemma3), and kv_heads key and
     * value heads serve heads / kv_heads query heads each (grouped-query attention). Set for
     * every architecture once read (head_dim hidden / heads, kv_heads heads where not given). */
    int head_dim, kv_heads;
    int causal; /* a query sees only the keys up to its own position (Qwen3) */
    float attn_scale; /* the scores' scale: 1 / sqrt(head_dim) unless the config says otherwise */
    float attn_softcap; /* Gemma's attn_logit_softcapping: scores cap * tanh(s / cap) (0: none) */
    /* Decoder stacks (Qwen3, Gemma3): token rows times embed_scale (1: none), no norm; RMSNorm
     * before attention and MLP, q_norm / k_norm per head; sandwich: Gemma's norms of each
     * block's output before the residual; a final norm. */
    int decoder, sandwich;
    float embed_scale;
    /* Gemma's RMSNorm weights are stored as the 1 + w the norm multiplies by (llama.cpp's
     * converter adds the 1), not as Hugging Face's w: used as they are. */
    int norm_weights_shifted;
} emb_encoder_config;

/* Parse config.json text; file names the file in messages. */
int emb_encoder_config_parse(const char *json, size_t len, const char *file, emb_encoder_config *out,
                             char err[EMB_ERR_LEN]);
/* Read <dir>/config.json. */
int emb_encoder_config_load(const char *dir, emb_encoder_config *out, char err[EMB_ERR_LEN]);
/* "learned", "sinusoidal", "rotary" or "alibi" */
const char *emb_pos_kind_name(emb_pos_kind k);
/* Layer l (0-based) of a sliding-window model attends only within its window. */
int emb_encoder_config_layer_is_local(const emb_encoder_config *c, int l);
/* Widths of a layer's queries (heads x head_dim) and of its keys and values (kv_heads x head_dim). */
static inline int emb_encoder_config_q_width(const emb_encoder_config *c) { return c->dims.heads * c->head_dim; }
static inline int emb_encoder_config_kv_width(const emb_encoder_config *c) { return c->kv_heads * c->head_dim; }
/* Weights of one layer's linear products (Q, K, V, the output projection and the feed-forward,
 * gated or not), biases left out. */
size_t emb_encoder_config_linear_weights(const emb_encoder_config *c);
#endif
