/* A tensor of a sentence-transformers module's own safetensors file (a Dense layer, a static
 * table) copied out as float32: these are small, or used in ways the encoder's packing does not
 * serve, and the copy leaves no mapping behind. */
#ifndef EMBED_TENSOR_COPY_H
#define EMBED_TENSOR_COPY_H
#include <stdint.h>
#include "base/emb_common.h"
#include "nn/safetensors.h"

/* Tensor name of sf with shape [d0] (d1 < 0) or [d0, d1]; a dimension given as 0 takes the
 * file's (at most max_dim) and is returned in *got0 / *got1 (may be NULL). F32, F16, BF16 and
 * I8 (as its integer values) become a malloc'd float32 copy in *out (NULL when absent and
 * optional). Errors name the file and the tensor. */
int emb_tensor_copy_f32(const emb_safetensors *sf, const char *name, int64_t d0, int64_t d1, int64_t max_dim,
                        int optional, float **out, int64_t *got0, int64_t *got1, char err[EMB_ERR_LEN]);
#endif
