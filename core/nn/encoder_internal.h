/* The encoder's state, shared by the loader (encoder_load.c, which fills it from a checkpoint
 * folder), the forward pass (encoder.c, which only reads it) and what shows its attention
 * (encoder_attention_probe.c). Not for use outside the encoder's files. */
#ifndef EMBED_ENCODER_INTERNAL_H
#define EMBED_ENCODER_INTERNAL_H
#include "nn/encoder.h"
#include "math/bf16_gemm.h"
#include "math/int8_gemm.h"
#include "nn/safetensors.h"
#include <xxhash.h>

/* One layer's weights as float32 (in place in a file's memory, or converted at load). A bias
 * the architecture does not have points at the encoder's zeros, so the forward pass has one
 * shape. Post-norm (BERT): ln1 after attention, ln2 after the feed-forward. Pre-norm
 * (ModernBERT): ln1 before attention (NULL: none, as in its layer 0), ln2 before the MLP.
 * Gated feed-forward: w1 gives the activated half, w1b the multiplied half ([I, H] each;
 * w1b == w1 + I*H when one fused [2I, H] tensor holds both), b1 is 2I wide, w2 is [H, I]. */
typedef struct {
    const float *wq, *bq, *wk, *bk, *wv, *bv, *wo, *bo, *ln1_g, *ln1_b;
    const float *w1, *w1b, *b1, *w2, *b2, *ln2_g, *ln2_b;
} emb_layer_weights;

/* One layer's linear weights packed for int8 products (emb_encoder_set_weights): q, k, v and o
 * [H, H]; ffn_in the feed-forward's first product ([I, H], or [2I, H] when gated: the activated
 * half's rows first, as the float32 pass lays out its output); ffn_out [H, I]. */
typedef struct {
    emb_int8_gemm_weights *q, *k, *v, *o, *ffn_in, *ffn_out;
} emb_layer_i8;

/* The same for bfloat16 products. */
typedef struct {
    emb_bf16w *q, *k, *v, *o, *ffn_in, *ffn_out;
} emb_layer_bf16;

struct emb_encoder {
    emb_encoder_config cfg;
    emb_encoder_info info;
    char prefix[16];
    char src_label[64];         /* "model.safetensors" or "model.safetensors.index.json" */
    emb_safetensors **files;
    unsigned char *in_place;    /* per file: some tensor is used where it lies in the file's memory */
    int nfiles;
    void **owned;
    int nowned, capowned;
    const float *word, *pos, *type, *ln_g, *ln_b, *pool_w, *pool_b;
    const float *final_g, *final_b; /* pre-norm models: the norm after the last layer */
    const float *zeros;         /* max(3H, 2I) zeros: the biases an architecture does not have */
    float *alibi_slopes;        /* ALiBi: one per head */
    emb_layer_weights *L;
    emb_weights weights;
    emb_layer_i8 *L8;           /* int8 weights: one per layer; NULL otherwise */
    emb_layer_bf16 *LB;         /* bf16 weights: one per layer; NULL otherwise */
    int first_dtype, mixed;
    XXH3_state_t *hash;
    uint64_t fingerprint;       /* of what the forward pass multiplies with */
    uint64_t fingerprint_f32;   /* of the float32 weights as loaded */
    int steps_only;             /* tests: 1 runs every batch as one, each step split over the
                                 * threads (no sub-batches, no split by sequences) */
};

/* Frees the packed weights (emb_encoder_free, and switching back to float32). */
void emb_encoder_free_weights(emb_encoder *);

/* emb_encoder_forward that, given a span, also copies the attention weights of sequence 0 into
 * probs (laid out as emb_encoder_attention returns them). The span must be valid. */
int emb_encoder_forward_capture(const emb_encoder *, emb_workspace *, int B, int T, const int32_t *ids,
                                const int32_t *type_ids, const int32_t *lens, int n_layers, float *out,
                                const emb_attention_span *span, float *probs, char err[EMB_ERR_LEN]);
/* emb_encoder_forward_capture in its two steps: the checks of its arguments (sizes, lengths,
 * layers, every id and type id of the B x T cells), and the pass over arguments so checked. */
int emb_encoder_check_batch(const emb_encoder *, int B, int T, const int32_t *ids, const int32_t *type_ids,
                            const int32_t *lens, int n_layers, char err[EMB_ERR_LEN]);
int emb_encoder_run_batch(const emb_encoder *, emb_workspace *, int B, int T, const int32_t *ids,
                          const int32_t *type_ids, const int32_t *lens, int n_layers, float *out,
                          const emb_attention_span *span, float *probs, char err[EMB_ERR_LEN]);

#endif
