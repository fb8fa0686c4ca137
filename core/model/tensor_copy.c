#include "model/tensor_copy.h"
#include "nn/gguf_quant.h"
#include <stdlib.h>
#include <string.h>

/* The shape wanted (0: any size up to max_dim) against the file's. */
static int check_shape(const emb_safetensors *sf, const emb_safetensors_tensor *t, int64_t d0, int64_t d1,
                       int64_t max_dim, char err[EMB_ERR_LEN]) {
    int nd = d1 < 0 ? 1 : 2;
    int64_t want[2] = {d0, d1};
    if (t->ndim != nd)
        return emb_fail(err, "%.60s: tensor '%.80s' has %d dimensions, expected %d", sf->label, t->name, t->ndim,
                        nd);
    for (int i = 0; i < nd; i++) {
        if (want[i] > 0 && t->shape[i] != want[i])
            return emb_fail(err, "%.60s: tensor '%.80s' has %lld rows or columns where %lld were expected",
                            sf->label, t->name, (long long)t->shape[i], (long long)want[i]);
        if (t->shape[i] < 1 || t->shape[i] > max_dim)
            return emb_fail(err, "%.60s: tensor '%.80s' dimension %d is %lld (1 to %lld)", sf->label, t->name, i,
                            (long long)t->shape[i], (long long)max_dim);
    }
    return 0;
}

int emb_tensor_copy_f32(const emb_safetensors *sf, const char *name, int64_t d0, int64_t d1, int64_t max_dim,
                        int optional, float **out, int64_t *got0, int64_t *got1, char err[EMB_ERR_LEN]) {
    *out = NULL;
    const emb_safetensors_tensor *t = emb_safetensors_find(sf, name);
    if (!t) return optional ? 0 : emb_fail(err, "%.60s: missing tensor '%.80s'", sf->label, name);
    if (check_shape(sf, t, d0, d1, max_dim, err)) return -1;
    size_t n = (size_t)t->shape[0] * (size_t)(d1 < 0 ? 1 : t->shape[1]);
    if (got0) *got0 = t->shape[0];
    if (got1) *got1 = d1 < 0 ? 0 : t->shape[1];
    float *c = malloc(n * sizeof(float) + 1);
    if (!c) return emb_fail(err, "out of memory reading '%.80s'", name);
    /* F32, F16, BF16 and a GGUF file's blocks widened; I8 taken as its integers */
    if (t->dtype == EMB_DT_I8) {
        for (size_t i = 0; i < n; i++) c[i] = (float)(int8_t)t->data[i];
    } else if (emb_tensor_to_f32(t, n, c)) {
        free(c);
        return emb_fail(err, "%.60s: tensor '%.80s' has dtype %s (F32, F16, BF16 or I8 expected)", sf->label, name,
                        emb_dtype_name(t->dtype));
    }
    *out = c;
    return 0;
}
