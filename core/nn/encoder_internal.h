/* The encoder's state, shared by the loader (encoder_load.c, which fills it from a checkpoint
 * folder), the forward pass (encoder.c and the encoder_*.c files it runs, which only read it) and
 * what shows its attention (encoder_attention_probe.c); then the forward pass's own workspace,
 * context and steps. Not for use outside the encoder's files. */
#ifndef EMBED_ENCODER_INTERNAL_H
#define EMBED_ENCODER_INTERNAL_H
#include "nn/encoder.h"
#include "math/bf16_gemm.h"
#include "math/int8_gemm.h"
#include "nn/safetensors.h"
#include "nn/encoder_attention.h"
#include "base/workers.h"
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
    /* Decoder stacks (RMSNorm weights, no biases; Gemma's 1 + w already added): q_norm and
     * k_norm over each head (head_dim), and Gemma's sandwich norms of the attention's and the
     * MLP's outputs (NULL: none). wq is [heads x head_dim, H], wk and wv [kv_heads x head_dim,
     * H], wo [H, heads x head_dim]. */
    const float *q_norm, *k_norm, *post1_g, *post2_g;
} emb_layer_weights;

/* One layer's linear weights packed for int8 products (emb_encoder_set_weights): q, k, v and o
 * as emb_layer_weights shapes them ([H, H] in the encoders); ffn_in the feed-forward's first product ([I, H], or [2I, H] when gated: the activated
 * half's rows first, as the float32 pass lays out its output); ffn_out [H, I]. */
typedef struct {
    emb_int8_gemm_weights *q, *k, *v, *o, *ffn_in, *ffn_out;
} emb_layer_i8;

/* The same for bfloat16 products. */
typedef struct {
    emb_bf16w *q, *k, *v, *o, *ffn_in, *ffn_out;
} emb_layer_bf16;

/* float32 on AVX-512: the same six weights packed at load for emb_sgemm_bcast (its
 * EMB_SGEMM_BCAST_PACKED layout), which then reads each as one stream in order; the mapped ones
 * stay for everything else. */
typedef struct {
    float *q, *k, *v, *o, *ffn_in, *ffn_out;
} emb_layer_f32p;

/* A GGUF Q8_0 tensor read without widening (encoder_q8.c). */
typedef struct {
    float *range; /* n floats of address space for the loaders' pointers: inaccessible until widened */
    size_t n;
    int rows, cols;
    const unsigned char *q8; /* its blocks in the file */
    const emb_safetensors *file;
    int rows_packed; /* rows packed from the blocks as int8 block weights */
    int widened; /* range holds the values as float32 */
} emb_q8_tensor;

struct emb_encoder {
    emb_encoder_config cfg;
    emb_encoder_info info;
    char prefix[16];
    char src_label[64]; /* "model.safetensors" or "model.safetensors.index.json" */
    emb_safetensors **files;
    unsigned char *in_place; /* per file: some tensor is used where it lies in the file's memory */
    int nfiles;
    void **owned;
    int nowned, capowned;
    const float *word, *pos, *type, *ln_g, *ln_b, *pool_w, *pool_b;
    /* an F16 / BF16 token table kept as the file holds it (word NULL): rows are widened as they are
     * read, so a 151,669-row table costs no float32 copy */
    const void *word_half;
    int word_half_bf16;
    const float *final_g, *final_b; /* pre-norm models: the norm after the last layer */
    const float *zeros; /* max(3H, 2I) zeros: the biases an architecture does not have */
    float *alibi_slopes; /* ALiBi: one per head */
    const float *rel_bias; /* MPNet: per head, the bias of each distance key - query from -(rel_span - 1) */
    int rel_span; /* to rel_span - 1, rel_span the most tokens (2 rel_span - 1 floats a head) */
    emb_layer_weights *L;
    emb_weights weights;
    int f32_pending; /* loaded without float32's packing (emb_encoder_load_open): set_weights does it */
    emb_layer_i8 *L8; /* int8 weights: one per layer; NULL otherwise */
    emb_layer_bf16 *LB; /* bf16 weights: one per layer; NULL otherwise */
    emb_layer_f32p *LF; /* float32 weights packed for emb_sgemm_bcast: one per layer; NULL otherwise */
    emb_q8_tensor *q8; /* GGUF: the Q8_0 tensors of 2 dimensions, rows of whole blocks */
    int nq8, capq8;
    int q8_done; /* emb_encoder_set_weights has packed or widened each (their blocks are read no more) */
    int first_dtype, mixed;
    XXH3_state_t *hash;
    uint64_t fingerprint; /* of what the forward pass multiplies with */
    uint64_t fingerprint_f32; /* of the float32 weights as loaded */
    int steps_only; /* tests: 1 runs every batch as one, each step split over the
                                 * threads (no sub-batches, no split by sequences) */
};

/* encoder_q8.c. A Q8_0 tensor of rows x cols (cols a multiple of 32) in file fi taken without
 * widening: the pointer the loaders use (NULL when out of memory). */
const float *emb_encoder_q8_defer(emb_encoder *e, const emb_safetensors_tensor *t, int fi, int rows, int cols);
/* n values of Q8_0 blocks widened, a piece at a time, into the fingerprint (e->hash). -1: out of memory. */
int emb_encoder_q8_hash(emb_encoder *e, const unsigned char *q8, size_t n);
/* The deferred tensor whose rows p .. p + N K (K wide) are, and *rows their blocks; NULL when p
 * is not such rows (another tensor, float32, or after emb_encoder_q8_finish). */
emb_q8_tensor *emb_encoder_q8_find(const emb_encoder *e, const float *p, int N, int K, const unsigned char **rows);
/* Each deferred tensor not wholly packed widened to float32 where its pointer is; then none is
 * read from the file again. -1: out of memory. */
int emb_encoder_q8_finish(emb_encoder *e);
/* 1 while a deferred tensor of the file still needs its blocks. */
int emb_encoder_q8_pending(const emb_encoder *e, const emb_safetensors *file);
void emb_encoder_q8_free(emb_encoder *e);

/* Frees the packed weights (emb_encoder_free, and switching back to float32). */
void emb_encoder_free_weights(emb_encoder *);
/* float32 on AVX-512: packs e's linear weights into e->LF (encoder_weights.c); -1 when out of
 * memory, e->LF then NULL (loading fails: the kernels of the mapped weights round otherwise). */
int emb_encoder_pack_f32(emb_encoder *e);

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

/* ------------------------------------------------------------------ the forward pass's own
 * (encoder.c: entry points and thread / batch policy; encoder_workspace.c; encoder_rows.c;
 * encoder_steps.c; encoder_layers.c) */

#define EMB_ENCODER_MAX_THREADS 16 /* helper threads and the caller, whatever OpenBLAS's count */

struct emb_workspace {
    float *arena;
    size_t arena_n;
    float *scores; /* one EMB_ATTENTION_SCRATCH(T, dh) block per worker */
    size_t scores_n;
    float *xn; /* pre-norm: the normed copy of the hidden states a layer reads */
    size_t xn_n;
    float *rope; /* rotary tables of rope_T positions: global base, then local base */
    size_t rope_n;
    int rope_T, rope_rot, rope_f32; /* rope_f32: the tables of emb_relpos_rope_table_f32 */
    double rope_theta[2];
    int32_t *pos_ids; /* RoBERTa: each token's row of the position table */
    size_t pos_n;
    emb_workers *workers; /* helper threads, or NULL */
    float *packs; /* float32 on AVX-512: each thread's scratch for emb_sgemm_bcast */
    size_t packs_n;
    float *panels; /* float32 on AVX-512, over 24 rows: BERT's residual stream, or the
                                 * hidden states packed for Q, K, V */
    size_t panels_n;
    emb_int8_gemm_act act; /* int8 weights: the quantized input of the current product */
    emb_bf16_act bact; /* bf16 weights: the rounded input of the current product */
    emb_workspace *share[EMB_ENCODER_MAX_THREADS]; /* a batch split by sequences over the threads:
                                                    * each worker's own */
};

/* encoder_workspace.c. Grows *p to at least n floats (by at least half again); -1 out of memory. */
int emb_workspace_grow(float **p, size_t *cap, size_t n);
/* The rotary tables of positions 0..T-1 for both bases, kept while T does not grow. */
int emb_workspace_rope_tables(const emb_encoder_config *c, emb_workspace *ws, int T);
/* The workspace's helper threads: as many as OpenBLAS has threads (nthr), minus the caller. */
void emb_workspace_use_workers(emb_workspace *ws, int nthr, int wanted);

/* encoder_rows.c: the element-wise row kernels (target clones), as the steps call them. */
void emb_encoder_embed_ln_row(float *dst, const float *w, const float *p, const float *ty, const float *g,
                              const float *b, int H, float eps);
void emb_encoder_fill_bias(float *C, const float *bias, size_t rows, int n);
void emb_encoder_bias_ln(float *X, const float *bias, const float *g, const float *b, size_t rows, int H,
                         float eps);
void emb_encoder_glu_rows(float *Y, size_t rows, int n, emb_activation act, int quick);
void emb_encoder_bias_norm_to(float *X, float *dst, const float *bias, const float *g, const float *b, size_t rows,
                              int H, float eps);
/* Decoder stacks: dst = w[id] * scale; dst = RMSNorm(x) * g (in place when dst == x); each of
 * n heads of dh floats RMS-normed by g (NULL: not) and rotated by a rotary row (rot dims). */
void emb_encoder_scale_row(float *dst, const float *w, float scale, int H);
void emb_encoder_rms_to(const float *x, float *dst, const float *g, int H, float eps);
void emb_encoder_heads_norm_rope(float *x, int n, int dh, const float *g, const float *rope, int rot, float eps);

/* One pass over a batch: what the layer schedules (encoder_layers.c) and the row steps
 * (encoder_steps.c) share. */
typedef struct {
    const emb_encoder *e;
    const emb_layer_weights *w;
    const emb_layer_i8 *w8; /* int8 weights: this layer's packed weights, else NULL */
    emb_int8_gemm_act *act; /* int8 weights: the quantized input of a product */
    const emb_layer_bf16 *wb; /* bf16 weights: this layer's packed weights, else NULL */
    emb_bf16_act *bact; /* bf16 weights: the rounded input of a product */
    emb_workers *gemm_workers; /* int8 weights: the threads a large product is split over */
    int failed; /* an int8 product ran out of memory */
    int bias_in_gemm; /* products write bias + A W^T (beta 0): int8, bf16, float32 on
                                           * emb_sgemm_bcast; float32 on OpenBLAS: the row tasks preload
                                           * the biases into the outputs */
    const float *quant_src; /* int8: the rows (stride quant_ld) a row task quantizes into
                                           * act once it has written them, while they are in cache */
    int quant_ld;
    const float *act_of; /* int8: whose rows act holds, ready for a product, or NULL */
    float *packs; /* float32 on AVX-512: the products run on emb_sgemm_bcast
                                           * with this scratch; else NULL and OpenBLAS */
    float *stream_panels; /* float32 on AVX-512, BERT's layers, over 24 rows: the residual
                                           * stream between the embeddings and the last layer, kept as
                                           * panels (layers_post_norm_panels); else NULL */
    float *qkv_panels; /* float32 on AVX-512, over 24 rows: Q, K and V read one
                                           * packing of their input from here; else NULL */
    int tile_products; /* float32 on OpenBLAS, a short batch on several threads: the
                                           * products run as tiles on the calling thread */
    const emb_layer_weights *next; /* layer whose Q/K/V biases the row tasks preload, or NULL */
    int B, T, H, NH, dh, FF;
    int QW, KW; /* widths of the queries' and of the keys' (values') rows */
    size_t BT;
    const int32_t *ids, *type_ids, *lens, *pos_ids;
    float *X, *q, *k, *v, *inter, *xn;
    float eps;
    int rows_per_task, ffn_rows;
    int FFin; /* width of the feed-forward's inner rows (2 FF when gated) */
    emb_attention_job att; /* this layer's attention: rotary table, window, capture */
    const emb_attention_span *span; /* the layers whose weights are captured into probs, or NULL */
    float *probs;
    const float *res_bias; /* pre-norm: the bias the residual stream still lacks, or NULL */
    const float *norm_g, *norm_b; /* pre-norm: the norm the row task applies into xn (NULL: none);
                                           * stream panels: the norm emb_encoder_step_panel_ln applies */
    const float *post_g; /* decoder sandwich: the norm of the block's output (in xn) added to X */
    const float *rope_rows; /* decoder: this layer's rotary table, applied by emb_encoder_step_qk */
    float *norm_dst; /* decoder: where emb_encoder_step_dec_norm writes the norm (xn, or X at the end) */
} emb_fwd_ctx;

/* Where the row tasks and the attention tasks run (helper threads or the caller alone), in how
 * many tasks. */
typedef struct {
    emb_workers *rows, *att;
    int row_tasks, ffn_tasks;
} emb_fwd_plan;

/* encoder_products.c: the products and attention the schedules share. A product of at most
 * EMB_ENCODER_TILE_MAX_ROWS rows on OpenBLAS with several threads runs as tiles (tile_products). */
#define EMB_ENCODER_TILE_MAX_ROWS 32
/* Which of a layer's linear weights a product uses (EMB_LIN_NONE: the float32 one given). */
typedef enum {
    EMB_LIN_NONE,
    EMB_LIN_Q,
    EMB_LIN_K,
    EMB_LIN_V,
    EMB_LIN_O,
    EMB_LIN_FFN_IN,
    EMB_LIN_FFN_OUT
} emb_lin_slot;
/* float32 on emb_sgemm_bcast: the weight as the products read it (packed: *ldw 0). */
const float *emb_encoder_f32_weight(const emb_fwd_ctx *fc, emb_lin_slot s, const float *W, int K, int *ldw);
/* C[M,N] += A[M,K] W[N,K]^T, or with a bias C = bias + A W^T on our kernels (OpenBLAS: the bias
 * preloaded into C by the row tasks). */
void emb_encoder_linear(emb_fwd_ctx *fc, const float *A, int lda, const float *W, emb_lin_slot slot,
                        const float *bias, float *C, int ldc, int M, int N, int K);
/* C = bias + A W^T on every path (bias not NULL). */
void emb_encoder_linear_to(emb_fwd_ctx *fc, const float *A, int lda, const float *W, emb_lin_slot slot,
                           const float *bias, float *C, int ldc, int M, int N, int K);
void emb_encoder_ffn_in(emb_fwd_ctx *fc, const emb_layer_weights *w, const float *A); /* into inter */
void emb_encoder_qkv_panels(emb_fwd_ctx *fc, const emb_layer_weights *w, const float *P);
void emb_encoder_qkv_in(emb_fwd_ctx *fc, const emb_layer_weights *w, const float *A); /* into q, k, v */
/* Layer l's window and rotary table into att; its attention over Q, K, V (the span captured). */
void emb_encoder_layer_attention(emb_fwd_ctx *fc, const emb_workspace *ws, int l);
void emb_encoder_attend(emb_fwd_ctx *fc, const emb_workspace *ws, const emb_fwd_plan *pl, int l);
/* Q, K, V from A, attention, and the output projection added onto X. */
void emb_encoder_attention_block(emb_fwd_ctx *fc, const emb_workspace *ws, const emb_fwd_plan *pl, int l,
                                 const float *A);
/* Layer l's float32 weights into fc (and its packed int8 / bf16 ones). */
const emb_layer_weights *emb_encoder_use_layer(emb_fwd_ctx *fc, int l);

/* encoder_decoder_layers.c: the decoder stacks' layers (Qwen3, Gemma3), then their final norm. */
void emb_encoder_layers_decoder(emb_fwd_ctx *fc, const emb_workspace *ws, const emb_fwd_plan *pl, int n_layers);

/* encoder_steps.c: the row steps, tasks for emb_workers_run on an emb_fwd_ctx (task t: a block of
 * rows_per_task rows, ffn_rows for the activation, one 32-row panel for panel_ln). Before a step,
 * emb_encoder_quantize_in_tasks says which rows its tasks quantize for the next int8 product. */
void emb_encoder_quantize_in_tasks(emb_fwd_ctx *c, const float *src, int ld, int K);
void emb_encoder_step_embed(void *cv, int t, int worker); /* embeddings + their norm */
void emb_encoder_step_ln1(void *cv, int t, int worker); /* post-norm: after attention */
void emb_encoder_step_gelu(void *cv, int t, int worker); /* the feed-forward's activation */
void emb_encoder_step_pn_attn_in(void *cv, int t, int worker); /* pre-norm: before attention */
void emb_encoder_step_pn_mlp_in(void *cv, int t, int worker); /* pre-norm: before the MLP */
void emb_encoder_step_ln2(void *cv, int t, int worker); /* post-norm: after the feed-forward */
void emb_encoder_step_panel_ln(void *cv, int t, int worker); /* post-norm on the stream's panels */
/* Decoder stacks: X += the sandwich norm of xn's rows (post_g) or res_bias; then xn = RMSNorm(X)
 * with norm_g (NULL: none); q and k normed per head and rotated (rope_rows). */
void emb_encoder_step_dec_norm(void *cv, int t, int worker);
void emb_encoder_step_qk(void *cv, int t, int worker);

/* encoder_layers.c: the pass proper on a batch already checked, its steps split over nthr
 * threads (the caller and the workspace's helpers). */
int emb_encoder_forward_batch(const emb_encoder *e, emb_workspace *ws, int B, int T, const int32_t *ids,
                              const int32_t *type_ids, const int32_t *lens, int n_layers, float *out,
                              const emb_attention_span *span, float *probs, int nthr, char err[EMB_ERR_LEN]);

#endif
