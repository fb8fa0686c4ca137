/* See gguf_dense.h. convert_hf_to_gguf.py's EmbeddingGemma class with
 * --sentence-transformers-dense-modules writes 2_Dense's and 3_Dense's linear.weight as
 * dense_2.weight and dense_3.weight (ggml's {in, out}: Hugging Face's [out, in]) and their widths
 * as {arch}.dense_2_feat_in / _feat_out, dense_3_feat_in / _feat_out; no bias (the converter writes
 * weights only; EmbeddingGemma's Dense layers have none), activation Identity. llama.cpp applies
 * them to the pooled vector; sentence-transformers then normalises. */
#include "model/gguf_dense.h"
#include "nn/gguf_quant.h"
#include "math/half.h"
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* Tensor t ([out, in] as Hugging Face orders it) as float32 into d->w. */
static int weights(const emb_gguf_tensor *t, const char *name, const char *label, emb_dense *d,
                   char err[EMB_ERR_LEN]) {
    size_t n = (size_t)d->in * (size_t)d->out;
    if (t->n_dims != 2 || t->ne[0] != d->in || t->ne[1] != d->out)
        return emb_fail(err,
                        "%s: tensor '%s' is not %d x %d (ggml's %d, %d), as its _feat_in / _feat_out keys say",
                        label, name, d->out, d->in, d->in, d->out);
    if (!(d->w = malloc(n * sizeof(float)))) return emb_fail(err, "out of memory");
    switch (t->type) {
    case EMB_GGML_F32: memcpy(d->w, t->data, n * sizeof(float)); return 0;
    case EMB_GGML_F16: emb_f16_to_f32_n(t->data, d->w, n); return 0;
    case EMB_GGML_BF16: emb_bf16_to_f32_n(t->data, d->w, n); return 0;
    default: { /* a block type: its rows must be whole blocks */
        int dt = emb_quant_dtype_of_ggml(t->type);
        if (dt >= 0 && emb_quant_dtype((emb_dtype)dt) && emb_quant_to_f32((emb_dtype)dt, t->data, n, d->w) == 0)
            return 0;
    }
    }
    free(d->w);
    d->w = NULL;
    return emb_fail(err,
                    "%s: tensor '%s' has type %s, which is not read for Dense layers (F32, F16, BF16 and "
                    "the block types of whole rows are)",
                    label, name, emb_ggml_type_name(t->type) ? emb_ggml_type_name(t->type) : "unknown");
}

static int one(const emb_gguf *g, const char *arch, const char *part, int in, const char *label, emb_dense *d,
               char err[EMB_ERR_LEN]) {
    char name[64], key_in[96], key_out[96];
    snprintf(name, sizeof name, "%s.weight", part);
    snprintf(key_in, sizeof key_in, "%s.%s_feat_in", arch, part);
    snprintf(key_out, sizeof key_out, "%s.%s_feat_out", arch, part);
    int64_t fi, fo;
    if (emb_gguf_kv_int(emb_gguf_find(g, key_in), &fi) || emb_gguf_kv_int(emb_gguf_find(g, key_out), &fo) ||
        fi < 1 || fo < 1 || fi > (1 << 20) || fo > (1 << 20))
        return emb_fail(err, "%s: tensor '%s' without integer keys '%s' and '%s'", label, name, key_in, key_out);
    if (fi != in)
        return emb_fail(err, "%s: key '%s' is %lld, but the vector before it has %d dimensions", label, key_in,
                        (long long)fi, in);
    memset(d, 0, sizeof *d);
    d->in = (int)fi;
    d->out = (int)fo;
    d->act = EMB_DENSE_IDENTITY;
    return weights(emb_gguf_find_tensor(g, name), name, label, d, err);
}

int emb_gguf_dense_load(const emb_gguf *g, const char *arch, const char *label, int hidden, int allow_missing,
                        emb_dense dense[2], int *n_dense, char err[EMB_ERR_LEN]) {
    *n_dense = 0;
    if (strcmp(arch, "gemma-embedding") != 0) return 0;
    int has2 = emb_gguf_find_tensor(g, "dense_2.weight") != NULL,
        has3 = emb_gguf_find_tensor(g, "dense_3.weight") != NULL;
    if (!has2 && !has3) {
        if (allow_missing) return 0;
        return emb_fail(err,
                        "%s: no sentence-transformers Dense layers (dense_2, dense_3), so refused unless "
                        "option allow_missing_dense is true: its vectors (llama.cpp's) are not "
                        "sentence-transformers'",
                        label);
    }
    if (!has2 || !has3)
        return emb_fail(err, "%s: tensor '%s' without '%s'", label, has2 ? "dense_2.weight" : "dense_3.weight",
                        has2 ? "dense_3.weight" : "dense_2.weight");
    if (one(g, arch, "dense_2", hidden, label, &dense[0], err)) return -1;
    *n_dense = 1;
    if (one(g, arch, "dense_3", dense[0].out, label, &dense[1], err)) return -1;
    *n_dense = 2;
    return 0;
}
