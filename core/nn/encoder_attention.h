/* The attention of one encoder layer, one (sequence, head) per task, as the forward pass
 * (encoder_layers.c) hands it to its helper threads: rotary positions on the queries and keys, scores,
 * ALiBi's bias, the sliding window, the softmax, the context. Also the additive bias itself,
 * for those who want to see it (emb_encoder_attention_bias). Internal to the encoder's files. */
#ifndef EMBED_ENCODER_ATTENTION_H
#define EMBED_ENCODER_ATTENTION_H
#include <stdint.h>

/* Queries per block of a head's scores at most: the scores of a head then take at most
 * EMB_ATTENTION_ROWS x T floats, so that memory grows in proportion to the tokens (32 MB at
 * Qwen3's 32,768 rather than 4 GB). */
#define EMB_ATTENTION_ROWS 256
/* Floats of scratch per worker: a block of scores (min(T, EMB_ATTENTION_ROWS) x T), the keys of a
 * head transposed (dh*T), each row's 1 / sum of its weights (T). */
#define EMB_ATTENTION_SCRATCH(T, dh)                                                                              \
    ((size_t)((T) < EMB_ATTENTION_ROWS ? (T) : EMB_ATTENTION_ROWS) * (size_t)(T) +                                \
     ((size_t)(dh) + 1) * (size_t)(T))

typedef struct {
    int NH, T, H, dh; /* heads, padded length, row stride of q (and ctx), head size */
    int kv_ld, kv_group; /* row stride of k and v; query heads per key head (grouped-query attention) */
    const int32_t *lens; /* real tokens of each sequence (the keys past them are padding) */
    float *q, *k, *v; /* B*T*H each, heads side by side in a row; q receives the context */
    int qk_panels; /* own kernels, no rotary: q and k are 32-row panels of H columns
                                 * (sgemm_bcast.h), read in place; the context goes to ctx */
    float *ctx; /* B*T*H rows for the context, or NULL: into q */
    float *scores; /* one EMB_ATTENTION_SCRATCH(T, dh) block per worker */
    float scale; /* 1 / sqrt(dh) */
    int own_kernels; /* the products on nn_gemm (AVX-512F), else on OpenBLAS */
    int split; /* OpenBLAS: issue the products in blocks it keeps on the calling thread */
    const float *rope; /* this layer's rotary table (T rows of rot), or NULL */
    int rot;
    int half_window; /* this layer's window (-1: full attention) */
    int causal; /* a query sees no key after its own position */
    float softcap; /* scores cap * tanh(s / cap) before the softmax (0: none) */
    const float *slopes; /* ALiBi: one per head, or NULL */
    const float *rel_bias; /* MPNet: per head, 2 rel_span - 1 biases of key - query, or NULL */
    int rel_span;
    /* The weights of sequence 0's heads capture_h0.. capture_h0 + capture_nh - 1 are copied
     * here (capture_nh * T * T, row i the weights of query i; keys it does not see get 0), or
     * NULL: the normal pass, which pays one test per block of rows. */
    float *capture;
    int capture_h0, capture_nh;
} emb_attention_job;

/* Task t of B * NH: sequence t / NH, head t % NH; worker indexes the score blocks. */
void emb_attention_task(void *job, int t, int worker);

/* The additive bias of the score of query i and key j of one head: ALiBi's -slope |i - j|
 * (slope 0: none), -INFINITY where a window of half_window (>= 0) hides the key, else 0. The
 * forward pass adds the same float. */
float emb_attention_bias_of(float slope, int half_window, int64_t i, int64_t j);
/* The same with a causal mask: -INFINITY for a key after the query. */
float emb_attention_bias_causal(float slope, int half_window, int causal, int64_t i, int64_t j);
#endif
