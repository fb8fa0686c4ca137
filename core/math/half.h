/* F16 (IEEE binary16) and BF16 (bfloat16) to float32 conversion. */
#ifndef EMBED_HALF_H
#define EMBED_HALF_H
#include <stddef.h>
#include <stdint.h>

float emb_f16_to_f32(uint16_t h);
float emb_bf16_to_f32(uint16_t h);
/* Convert n little-endian 16-bit values at src (any alignment) into dst. */
void emb_f16_to_f32_n(const void *src, float *dst, size_t n);
void emb_bf16_to_f32_n(const void *src, float *dst, size_t n);
#endif
