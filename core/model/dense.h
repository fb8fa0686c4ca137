/* sentence-transformers' Dense module: y = act(W x + b) (+ x, or R x, with use_residual) on the
 * pooled sentence vector; its folder holds config.json and model.safetensors. */
#ifndef EMBED_DENSE_H
#define EMBED_DENSE_H
#include <stdint.h>
#include "base/emb_common.h"

typedef enum {
    EMB_DENSE_IDENTITY,
    EMB_DENSE_TANH,
    EMB_DENSE_RELU,
    EMB_DENSE_SIGMOID,
    EMB_DENSE_GELU
} emb_dense_act;

typedef struct {
    int in, out;
    float *w, *b, *residual; /* [out x in], [out] or NULL, [out x in] or NULL */
    int use_residual;
    emb_dense_act act;
} emb_dense;

/* Reads the Dense module in dir/path (label: path as messages name it); in is the width it
 * must take. */
int emb_dense_load(const char *dir, const char *path, int in, emb_dense *d, char err[EMB_ERR_LEN]);
void emb_dense_free(emb_dense *d);
/* y (d->out floats) from x (d->in floats); y and x do not overlap. */
void emb_dense_apply(const emb_dense *d, const float *x, float *y);
/* A hash of the layer, for the model's fingerprint. */
uint64_t emb_dense_fingerprint(const emb_dense *d);
#endif
