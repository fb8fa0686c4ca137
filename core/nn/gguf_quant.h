/* ggml's quantized block types widened to float32, as ggml-quants.c's dequantize_row_* do
 * (ggml-common.h's block layouts; every scale an IEEE f16, little-endian):
 *   Q4_0  32 values in 18 bytes: d, 16 bytes of 4-bit codes       value = d * (q - 8)
 *   Q4_1  32 in 20: d, m, 16 bytes of 4-bit codes                  value = d * q + m
 *   Q5_0  32 in 22: d, 4 bytes of fifth bits, 16 of low nibbles    value = d * (q - 16)
 *   Q5_1  32 in 24: d, m, 4 bytes of fifth bits, 16 of nibbles     value = d * q + m
 *   Q8_0  32 in 34: d, 32 int8 codes                               value = d * q
 *   Q4_K 256 in 144: d, dmin, 12 bytes of eight 6-bit scales and mins, 128 of nibbles;
 *                    value = d * scale[j] * q - dmin * min[j] for sub-block j of 32
 *   Q5_K 256 in 176: as Q4_K, with 32 bytes of fifth bits before the nibbles
 *   Q6_K 256 in 210: 128 bytes of low nibbles, 64 of high 2-bit pairs, 16 int8 scales, d;
 *                    value = d * scale[j] * (q - 32) for sub-block j of 16
 * A tensor's row is a whole number of blocks (gguf.c refuses a file where it is not), so a
 * tensor is blocks end to end. Tensors of these types keep their file's bytes in the tensor table
 * under their own dtype (EMB_DT_Q4_0 ...); the loaders widen each to float32 as they take it,
 * as they do F16 and BF16. */
#ifndef EMBED_GGUF_QUANT_H
#define EMBED_GGUF_QUANT_H
#include <stddef.h>
#include <stdint.h>
#include "nn/safetensors.h"

/* The dtype that holds ggml type's blocks (EMB_DT_F32 / F16 / BF16 for those, EMB_DT_Q4_0 ...
 * for the block types above); -1 for a type not read. */
int emb_quant_dtype_of_ggml(uint32_t ggml_type);
/* 1 for the block dtypes (EMB_DT_Q4_0 ... EMB_DT_Q6_K). */
int emb_quant_dtype(emb_dtype d);
/* n values of blocks of dtype d widened into out; -1 (nothing written) when d is not a block type
 * or n is not a whole number of its blocks. */
int emb_quant_to_f32(emb_dtype d, const unsigned char *blocks, size_t n, float *out);
/* n values of tensor t as float32 into out: F32 copied, F16 and BF16 widened, the block types
 * dequantized; -1 for any other dtype. */
int emb_tensor_to_f32(const emb_safetensors_tensor *t, size_t n, float *out);
#endif
