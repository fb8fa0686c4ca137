/* Public API of libembedcore (installed as <sqlite-embed/weights.h>).
 * What an encoder's linear layers (attention projections, feed-forward) multiply with. */
#ifndef EMBED_WEIGHTS_H
#define EMBED_WEIGHTS_H

typedef enum {
    EMB_WEIGHTS_F32 = 0, /* the checkpoint's values as float32, float32 products */
    EMB_WEIGHTS_INT8 = 1, /* quantized once at load per output channel, activations per token at run
                           * time, int32 products (VNNI); see core/int8_gemm.h */
    EMB_WEIGHTS_BF16 = 2, /* weights and activations rounded to bfloat16, float32 sums (AVX512_BF16
                           * only); see core/bf16_gemm.h */
    EMB_WEIGHTS_Q8_0 = 3, /* a GGUF file's Q8_0 tensors as they are: their codes and their scale per
                           * block of 32, int8 products as EMB_WEIGHTS_INT8's (activations per token)
                           * with the blocks' scales; a linear layer of another type quantized as
                           * EMB_WEIGHTS_INT8 quantizes it. Only for files whose layers hold Q8_0 */
    EMB_WEIGHTS_DEFAULT = -1 /* the load options' default: EMB_WEIGHTS_Q8_0 for a GGUF file whose
                              * linear layers are all Q8_0, else EMB_WEIGHTS_F32 */
} emb_weights;

/* "f32" | "int8" | "bf16" | "q8_0" (the embed_load option's values); NULL for an unknown value
 * (and for EMB_WEIGHTS_DEFAULT). */
const char *emb_weights_name(emb_weights w);
/* The value a name gives; -1 for an unknown name. */
int emb_weights_parse(const char *name, emb_weights *out);

#endif
