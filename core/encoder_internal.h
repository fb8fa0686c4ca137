/* The encoder's state, shared by the loader (encoder_load.c, which fills it from a checkpoint
 * folder) and the forward pass (encoder.c, which only reads it). Not for use outside these two. */
#ifndef EMBED_ENCODER_INTERNAL_H
#define EMBED_ENCODER_INTERNAL_H
#include "encoder.h"
#include "safetensors.h"
#include <xxhash.h>

/* One layer's weights as float32 (in place in a file's memory, or converted at load). */
typedef struct {
    const float *wq, *bq, *wk, *bk, *wv, *bv, *wo, *bo, *ln1_g, *ln1_b;
    const float *w1, *b1, *w2, *b2, *ln2_g, *ln2_b;
} emb_layer_weights;

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
    emb_layer_weights *L;
    int first_dtype, mixed;
    XXH3_state_t *hash;
    uint64_t fingerprint;
};

#endif
