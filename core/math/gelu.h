/* GELU (exact: x Phi(x), the formula of emb_gelu_of in encoder_kernels.h) in place over n
 * floats: the feed-forward's activation, one definition for the row tasks and for the products
 * that apply it in their epilogue, so both give the same bits. Internal to the encoder's files. */
#ifndef EMBED_GELU_H
#define EMBED_GELU_H
#include <stddef.h>

void emb_gelu(float *y, size_t n);

/* GELU within 1e-6 absolutely, about 2.4 times as fast (emb_gelu_quick_of in encoder_kernels.h):
 * for activations that are quantized to int8 or rounded to bf16 next, whose steps are thousands
 * of times coarser. */
void emb_gelu_quick(float *y, size_t n);

#endif
