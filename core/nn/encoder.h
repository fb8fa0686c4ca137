/* Transformer encoder: loads a Hugging Face checkpoint folder (config.json plus
 * model.safetensors or a sharded model.safetensors.index.json) and runs the forward pass
 * exactly as transformers' BertModel, DistilBertModel, RobertaModel / XLMRobertaModel,
 * ModernBertModel and MPNetModel, nomic-ai's NomicBertModel and jinaai's JinaBertModel (v2) do,
 * on cblas_sgemm.
 *
 * An emb_encoder is immutable after load and may be shared by threads; each thread
 * brings its own emb_workspace (scratch buffers that grow as needed and are reused). */
#ifndef EMBED_ENCODER_H
#define EMBED_ENCODER_H
#include <stddef.h>
#include <stdint.h>
#include "base/emb_common.h"
#include "nn/encoder_config.h"
#include "nn/safetensors.h"
#include "sqlite-embed/weights.h"

typedef struct emb_encoder emb_encoder;

/* What loading found; the sizes and settings are the config's (emb_encoder_get_config). */
typedef struct {
    const char *weight_type; /* "F32" | "F16" | "BF16" ("mixed" if the tensors differ) */
    size_t weight_bytes; /* bytes of the tensors used, as float32 in memory */
    const char *tensor_prefix; /* "", or a task-head save's "bert.", "distilbert.", "roberta.", "model." */
    int has_pooler; /* pooler.dense present (BERT, RoBERTa, JinaBERT) */
    int n_files; /* safetensors files read (shards) */
    size_t converted_bytes; /* bytes copied/converted at load (F16/BF16, misaligned F32) */
    size_t mapped_bytes; /* bytes of F32 tensors used in place from a file mapping */
    size_t packed_bytes; /* int8 weights: bytes of the packed linear layers (else 0) */
    size_t used_bytes; /* what the forward pass reads: weight_bytes, or with int8 weights
                                  * the packed linear layers in place of their float32 tensors */
} emb_encoder_info;

/* dir: folder with config.json and model.safetensors (or model.safetensors.index.json).
 * F32 tensors are used in place from the files' memory, F16/BF16 converted once. With use_mmap
 * that memory is a mapping of the files (truncating a file then breaks the model: SIGBUS);
 * without, the files are read into private memory. Files none of whose tensors is used in
 * place are closed after loading. emb_encoder_load is emb_encoder_load_with(dir, 1, ...). */
int emb_encoder_load(const char *dir, emb_encoder **out, char err[EMB_ERR_LEN]);
int emb_encoder_load_with(const char *dir, int use_mmap, emb_encoder **out, char err[EMB_ERR_LEN]);
/* emb_encoder_load_with that leaves every weight file open until emb_encoder_close_unused, so
 * that what else a checkpoint holds (a task head: nn/classifier.h) can be read from the same
 * files first, and that leaves the weight type to the caller: emb_encoder_set_weights before
 * the first forward pass (float32's packed copy, on AVX-512, is made there, so that a model
 * loaded for int8 or bf16 never holds it). */
int emb_encoder_load_open(const char *dir, int use_mmap, emb_encoder **out, char err[EMB_ERR_LEN]);
void emb_encoder_close_unused(emb_encoder *);
/* A tensor of the open weight files by its full name (no prefix added), with the name of the
 * file that holds it; NULL when none has it. */
const emb_safetensors_tensor *emb_encoder_file_tensor(const emb_encoder *, const char *name, const char **file);
void emb_encoder_free(emb_encoder *);
const emb_encoder_info *emb_encoder_get_info(const emb_encoder *);
/* What the linear layers multiply with (EMB_WEIGHTS_F32 after loading). EMB_WEIGHTS_INT8 and
 * EMB_WEIGHTS_BF16 pack every linear layer's weight once (int8_gemm.h: per output channel;
 * bf16_gemm.h: rounded; a gated layer's two halves as one) and change the fingerprint;
 * embeddings, norms, attention scores and the pooler stay float32. int8 gives the same numbers on
 * every CPU: with VNNI (AVX-512 or AVX) several times faster than float32, with AVX2 alone about
 * as fast, without AVX2 far slower. bf16 needs AVX512_BF16 (refused elsewhere). Call before the
 * encoder is shared. Returns 0, or -1 with err (the encoder then keeps the weights it had). */
int emb_encoder_set_weights(emb_encoder *, emb_weights w, char err[EMB_ERR_LEN]);
emb_weights emb_encoder_weights(const emb_encoder *);

/* config.json as read: architecture, sizes (dims), settings. */
const emb_encoder_config *emb_encoder_get_config(const emb_encoder *);

/* Token id's row: a pointer into the table, or (an F16 / BF16 table) the row widened into buf, hidden
 * floats; NULL if out of range. */
const float *emb_encoder_word_row(const emb_encoder *, int32_t id, float *buf);
/* The row of the model's own position table that the token at position pos receives (RoBERTa:
 * row pad_token_id + 1 + pos); NULL out of range and for rotary and ALiBi models, which add no
 * position vector to the input. */
const float *emb_encoder_position_row(const emb_encoder *, int32_t pos);
/* The most tokens one sequence may have: the position table's rows (less RoBERTa's offset). */
int emb_encoder_max_tokens(const emb_encoder *);
const float *emb_encoder_type_row(const emb_encoder *, int32_t type); /* NULL for distilbert */

/* XXH3_64 over the config numbers and the weights actually used (as float32 values,
 * in a fixed order, tensor names without prefix): the same on every machine. */
uint64_t emb_encoder_fingerprint(const emb_encoder *);

/* BERT pooler: out[H] = tanh(W cls + b). Returns -1 (out untouched) if the model has none. */
int emb_encoder_pooler(const emb_encoder *, const float *cls, float *out);

/* Per-thread scratch: activations (about B*T*max(3*hidden, intermediate) floats) and,
 * when OpenBLAS has several threads and the batch is large enough, as many helper
 * threads minus one, which run the attention heads, LayerNorms and GELU between the
 * matrix products and sleep otherwise. Freeing the workspace joins them. Not to be
 * used by two threads at once, nor across fork(). */
typedef struct emb_workspace emb_workspace;
emb_workspace *emb_workspace_new(void);
void emb_workspace_free(emb_workspace *);
size_t emb_workspace_bytes(const emb_workspace *); /* currently allocated */

/* B sequences padded to T tokens: ids and type_ids are row-major B*T (type_ids may be NULL:
 * all 0; ignored by distilbert), lens[b] in 1..T real tokens, the rest padding, masked out
 * of attention as HF's attention_mask does (padded rows are still computed, as HF does).
 * Runs the embeddings then n_layers encoder layers (0 = embedding LayerNorm output =
 * HF hidden_states[0]; dims.layers = last_hidden_state, which for ModernBERT is final_norm of
 * HF hidden_states[L]). out: B*T*hidden floats.
 * Returns 0, or nonzero with a message in err. */
int emb_encoder_forward(const emb_encoder *, emb_workspace *, int B, int T, const int32_t *ids,
                        const int32_t *type_ids, const int32_t *lens, int n_layers, float *out,
                        char err[EMB_ERR_LEN]);

/* emb_encoder_forward for a batch whose lens are in increasing order (as emb_model_embed sorts
 * its texts), run as consecutive groups each padded only to its own longest sequence, where
 * that computes fewer rows (emb_encoder_groups): padding is then hardly computed. Its arguments
 * are checked as emb_encoder_forward checks them, with the same errors. The real tokens' rows
 * of out are emb_encoder_forward's within float32 rounding (a sequence's rows depend slightly on
 * the shape of its batch). A batch cut into groups leaves its padding rows 0; one that runs
 * whole, as lengths in any other order do, is emb_encoder_forward's, padding rows included. */
int emb_encoder_forward_grouped(const emb_encoder *, emb_workspace *, int B, int T, const int32_t *ids,
                                const int32_t *type_ids, const int32_t *lens, int n_layers, float *out,
                                char err[EMB_ERR_LEN]);
/* The groups: starts[0] = 0 < starts[1] < ... < starts[n] = B (starts holds B + 1 ints), n
 * returned, chosen to minimise the rows computed, each group B_g x T_g counted in whole 32-row
 * blocks plus EMB_GROUP_COST rows for a pass's fixed work, and of at most EMB_GROUP_MAX
 * sequences (so that the search stays linear in B). One group unless lens increase. lens are
 * lengths emb_encoder_forward accepts (each at most the model's emb_encoder_max_tokens). */
#define EMB_GROUP_COST 16
#define EMB_GROUP_MAX 512
int emb_encoder_groups(const int32_t *lens, int B, int *starts);

/* Which softmax weights of attention emb_encoder_attention returns: layers first_layer ..
 * last_layer, counted as n_layers counts them (layer l turns hidden state l - 1 into l: 1 is
 * the first layer, which reads the embedding output), and heads first_head .. last_head (from 0). */
typedef struct {
    int first_layer, last_layer, first_head, last_head;
} emb_attention_span;

/* The attention weights of one sequence of T tokens (ids and type_ids as emb_encoder_forward
 * takes them, for B = 1), taken from the forward pass itself after rotary positions, ALiBi's or
 * MPNet's bias, the sliding window and the softmax: probs[((l - first_layer) * nh + (h - first_head))
 * * T * T + i * T + j] is the weight of key j in the context of query i (nh = the span's
 * heads); every row sums to 1, and keys outside a query's window have weight 0. Runs the
 * layers up to last_layer. Returns 0, or nonzero with a message in err. */
int emb_encoder_attention(const emb_encoder *, emb_workspace *, int T, const int32_t *ids, const int32_t *type_ids,
                          const emb_attention_span *span, float *probs, char err[EMB_ERR_LEN]);

/* The additive bias that layer `layer` (1 to layers) adds to the score of query i and key j,
 * one float per head, exactly as the forward pass applies it: ALiBi's -slope_h * |i - j|;
 * MPNet's relative-position bias (its table's row for the bucket of j - i, every layer's);
 * -INFINITY in a sliding-window layer where |i - j| exceeds the half window (the key is hidden,
 * its weight 0); 0 otherwise. layer 0: the bias every layer shares, an error for a model whose
 * layers differ (ModernBERT's global and sliding-window layers). Positions i, j from 0 to
 * emb_encoder_max_tokens - 1. Returns 0, or nonzero with a message in err. */
int emb_encoder_attention_bias(const emb_encoder *, int layer, int64_t i, int64_t j, float *out,
                               char err[EMB_ERR_LEN]);

/* Floating-point operations of one forward pass over those shapes (for benchmarks). */
double emb_encoder_flops(const emb_encoder *, int B, int T, const int32_t *lens, int n_layers);
#endif
