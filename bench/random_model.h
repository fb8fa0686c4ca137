/* Random-weight checkpoints for the benchmarks: config.json and model.safetensors (F32, the
 * tensor names and shapes of the published checkpoints, laid out in name order as Hugging
 * Face's safetensors files are), the same weights on every call with the same sizes.
 *   BERT: transformers' BertModel, vocabulary 30522, 512 positions.
 *   NomicBERT: nomic-embed-text-v1.5's config.json with the sizes given (fused Wqkv, rotary
 *     base 1000 fraction 1.0, SwiGLU fc11 / fc12 / fc2, no linear biases, vocabulary 30528).
 *   ModernBERT: ModernBERT-base's config.json with the sizes given (fused Wqkv, GeGLU Wi / Wo,
 *     no biases, global attention every 3rd layer, local window 128, rope thetas 160000 and
 *     10000, final_norm, no attn_norm in layer 0, vocabulary 50368).
 *   MPNet: all-mpnet-base-v2's config.json with the sizes given (BERT's layers under
 *     attention.attn.q / k / v / o, 514 positions from padding_idx + 1, no token types, one
 *     relative-position table of 32 buckets, vocabulary 30527). */
#ifndef BENCH_RANDOM_MODEL_H
#define BENCH_RANDOM_MODEL_H

typedef enum {
    BENCH_ARCH_BERT,
    BENCH_ARCH_NOMIC,
    BENCH_ARCH_MODERNBERT,
    BENCH_ARCH_MPNET,
    BENCH_ARCH_QWEN3,
    BENCH_ARCH_GEMMA3
} bench_arch;
/* Qwen3: Qwen3-Embedding-0.6B's config.json with the sizes given (Qwen3Model names, no biases,
 * rope_theta 1e6, SiLU-gated MLP, causal); its key / value heads, head_dim and vocabulary: */
#define BENCH_QWEN3_KV_HEADS 8
#define BENCH_QWEN3_HEAD_DIM 128
#define BENCH_QWEN3_VOCAB 151669
/* Gemma3: EmbeddingGemma-300m's (Gemma3TextModel, bidirectional, sandwich norms, tanh-GELU-gated
 * MLP, scale 256^-0.5, windows of 512 in five layers of six, rope bases 1e6 and 1e4): */
#define BENCH_GEMMA3_KV_HEADS 1
#define BENCH_GEMMA3_HEAD_DIM 256
#define BENCH_GEMMA3_VOCAB 262144
#define BENCH_GEMMA3_WINDOW 512

/* Writes the model into dir (created if missing). with_tokenizer (BERT only): also the
 * tokenizer and sentence-transformers files of tests/fixtures/models/minilm-tiny-st (mean
 * pooling, normalised, as all-MiniLM-L6-v2), so that emb_model_load and embed_load() take the
 * folder; those paths are relative to the repository root. Returns 0, or nonzero after a
 * message on stderr. */
int bench_random_model_write_arch(const char *dir, bench_arch arch, int hidden, int layers, int heads,
                                  int intermediate, int with_tokenizer);

/* Trained checkpoints are not uniform: a few weights are several times the rest, and a few
 * hidden dimensions carry far larger values than the others (BERT's "outlier dimensions", from
 * large LayerNorm gains), which is what makes int8 activations hard. flags (0: as
 * bench_random_model_write_arch):
 *   BENCH_MODEL_BIG_WEIGHTS  1 weight in 512 of every linear layer is 6 times as large
 *   BENCH_MODEL_BIG_DIMS     in every LayerNorm two dimensions (hidden / 3 and 2 * hidden / 3 + 1)
 *                            have gain 8 instead of about 1 */
#define BENCH_MODEL_BIG_WEIGHTS 1u
#define BENCH_MODEL_BIG_DIMS 2u
#define BENCH_MODEL_OUTLIERS (BENCH_MODEL_BIG_WEIGHTS | BENCH_MODEL_BIG_DIMS)
int bench_random_model_write_flags(const char *dir, bench_arch arch, int hidden, int layers, int heads,
                                   int intermediate, int with_tokenizer, unsigned flags);

/* bench_random_model_write_arch(dir, BENCH_ARCH_BERT, ...) */
int bench_random_model_write(const char *dir, int hidden, int layers, int heads, int intermediate,
                             int with_tokenizer);

#endif
