/* What the architectures' loaders share (arch.h): a tensor found in the checkpoint's files under
 * its prefix, checked against the config's shape, used in place or converted once to float32,
 * and hashed into the fingerprint; the layouts several architectures have in common. */
#include "nn/arch/arch.h"
#include "math/half.h"
#include "nn/gguf_quant.h"
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

const emb_safetensors_tensor *emb_arch_find(const emb_encoder *e, const char *name, int *file) {
    for (int i = 0; i < e->nfiles; i++) {
        const emb_safetensors_tensor *t = emb_safetensors_find(e->files[i], name);
        if (t) {
            if (file) *file = i;
            return t;
        }
    }
    return NULL;
}

int emb_arch_own(emb_encoder *e, void *p) {
    if (e->nowned == e->capowned) {
        int nc = e->capowned ? e->capowned * 2 : 64;
        void **n = realloc(e->owned, (size_t)nc * sizeof *n);
        if (!n) return -1;
        e->owned = n;
        e->capowned = nc;
    }
    e->owned[e->nowned++] = p;
    return 0;
}

static void fmt_shape(char *buf, size_t cap, int nd, const int64_t *s) {
    size_t o = 0;
    o += (size_t)snprintf(buf + o, cap - o, "[");
    for (int i = 0; i < nd && o < cap; i++)
        o += (size_t)snprintf(buf + o, cap - o, "%s%lld", i ? "," : "", (long long)s[i]);
    if (o < cap) snprintf(buf + o, cap - o, "]");
}

void emb_arch_hash_u64(XXH3_state_t *h, uint64_t v) {
    unsigned char b[8];
    for (int i = 0; i < 8; i++) b[i] = (unsigned char)(v >> (8 * i));
    XXH3_64bits_update(h, b, 8);
}

/* Tensors of at least this many floats (1 MB) are released from memory once hashed. */
#define RELEASE_MIN_FLOATS 262144

/* n floats of t as float32: in place where aligned F32, else a converted copy the encoder owns. */
static const float *as_f32(emb_encoder *e, const emb_safetensors_tensor *t, int fi, size_t n) {
    if (t->dtype == EMB_DT_F32 && ((uintptr_t)t->data & 3u) == 0) {
        e->in_place[fi] = 1;
        if (e->files[fi]->mapped) e->info.mapped_bytes += n * sizeof(float);
        return (const float *)(const void *)t->data;
    }
    float *c = emb_alloc_large(n * sizeof(float) + 1);
    if (!c || emb_arch_own(e, c)) {
        free(c);
        return NULL;
    }
    emb_tensor_to_f32(t, n, c); /* get_tensor let through only the dtypes it widens */
    /* a GGUF file's blocks are read once: their pages leave memory (the copy is what is used) */
    if (emb_quant_dtype(t->dtype)) emb_safetensors_release(e->files[fi], t->data, (size_t)t->end);
    e->info.converted_bytes += n * sizeof(float);
    return c;
}

int emb_arch_get_tensor(emb_encoder *e, const char *suffix, int64_t d0, int64_t d1, int optional,
                        const float **out, char err[EMB_ERR_LEN]) {
    char name[256];
    snprintf(name, sizeof name, "%s%s", e->prefix, suffix);
    int fi = 0;
    const emb_safetensors_tensor *t = emb_arch_find(e, name, &fi);
    const emb_safetensors *file = e->files[fi];
    *out = NULL;
    if (!t) {
        if (optional) return 0;
        return emb_fail(err, "%.40s: missing tensor '%.150s'", e->src_label, name);
    }
    int64_t want[2] = {d0, d1};
    int nd = d1 < 0 ? 1 : 2;
    if (t->ndim != nd || t->shape[0] != d0 || (nd == 2 && t->shape[1] != d1)) {
        char got[128], exp[64];
        fmt_shape(got, sizeof got, t->ndim, t->shape);
        fmt_shape(exp, sizeof exp, nd, want);
        return emb_fail(err, "%.40s: tensor '%.100s' has shape %.40s, expected %.40s", file->label, name, got,
                        exp);
    }
    if (t->dtype != EMB_DT_F32 && t->dtype != EMB_DT_F16 && t->dtype != EMB_DT_BF16 && !emb_quant_dtype(t->dtype))
        return emb_fail(err, "%.40s: tensor '%.150s' has dtype %.10s, expected F32, F16 or BF16", file->label,
                        name, emb_dtype_name(t->dtype));
    size_t n = (size_t)d0 * (size_t)(nd == 2 ? d1 : 1);
    /* a GGUF Q8_0 matrix stays blocks until emb_encoder_set_weights: packed as they are, or widened */
    int deferred = nd == 2 && t->dtype == EMB_DT_Q8_0 && d1 % EMB_I8_BLOCK == 0 && d0 <= INT_MAX && !e->q8_done;
    const float *p = deferred ? emb_encoder_q8_defer(e, t, fi, (int)d0, (int)d1) : as_f32(e, t, fi, n);
    if (!p) return emb_fail(err, "out of memory loading '%.150s'", name);
    if (e->first_dtype < 0) e->first_dtype = (int)t->dtype;
    else if (e->first_dtype != (int)t->dtype) e->mixed = 1;
    e->info.weight_bytes += n * sizeof(float);
    /* fingerprint: canonical name, shape, float32 values (little-endian host) */
    XXH3_64bits_update(e->hash, suffix, strlen(suffix) + 1);
    emb_arch_hash_u64(e->hash, (uint64_t)d0);
    emb_arch_hash_u64(e->hash, (uint64_t)(nd == 2 ? d1 : 0));
    if (!deferred) XXH3_64bits_update(e->hash, p, n * sizeof(float));
    else if (emb_encoder_q8_hash(e, t->data, n)) return emb_fail(err, "out of memory loading '%.150s'", name);
    /* hashed: a large mapped tensor leaves memory until its products (or packing) read it */
    if (n >= RELEASE_MIN_FLOATS)
        emb_safetensors_release(file, deferred ? (const void *)t->data : (const void *)p,
                                deferred ? (size_t)t->end : n * sizeof(float));
    *out = p;
    return 0;
}

/* rows x cols F16 / BF16 values widened into the fingerprint a block of rows at a time: the hash
 * a float32 copy would give, without the copy. */
static int hash_half(emb_encoder *e, const unsigned char *data, int bf16, size_t rows, size_t cols) {
    size_t block = (65536 + cols - 1) / cols;
    float *tmp = malloc(block * cols * sizeof(float));
    if (!tmp) return -1;
    for (size_t r = 0; r < rows; r += block) {
        size_t n = (rows - r < block ? rows - r : block) * cols;
        if (bf16) emb_bf16_to_f32_n(data + r * cols * 2, tmp, n);
        else emb_f16_to_f32_n(data + r * cols * 2, tmp, n);
        XXH3_64bits_update(e->hash, tmp, n * sizeof(float));
    }
    free(tmp);
    return 0;
}

int emb_arch_get_word_table(emb_encoder *e, const char *suffix, int64_t rows, int64_t cols,
                            char err[EMB_ERR_LEN]) {
    char name[256];
    snprintf(name, sizeof name, "%s%s", e->prefix, suffix);
    int fi = 0;
    const emb_safetensors_tensor *t = emb_arch_find(e, name, &fi);
    if (!t || t->ndim != 2 || t->shape[0] != rows || t->shape[1] != cols ||
        (t->dtype != EMB_DT_F16 && t->dtype != EMB_DT_BF16))
        return emb_arch_get_tensor(e, suffix, rows, cols, 0, &e->word, err); /* F32, or its error */
    size_t n = (size_t)rows * (size_t)cols;
    if (e->first_dtype < 0) e->first_dtype = (int)t->dtype;
    else if (e->first_dtype != (int)t->dtype) e->mixed = 1;
    e->in_place[fi] = 1;
    if (e->files[fi]->mapped) e->info.mapped_bytes += n * 2;
    e->info.weight_bytes += n * 2;
    XXH3_64bits_update(e->hash, suffix, strlen(suffix) + 1);
    emb_arch_hash_u64(e->hash, (uint64_t)rows);
    emb_arch_hash_u64(e->hash, (uint64_t)cols);
    if (hash_half(e, t->data, t->dtype == EMB_DT_BF16, (size_t)rows, (size_t)cols))
        return emb_fail(err, "out of memory loading '%.150s'", name);
    emb_safetensors_release(e->files[fi], t->data, n * 2); /* rows come back as texts need them */
    e->word = NULL;
    e->word_half = t->data;
    e->word_half_bf16 = t->dtype == EMB_DT_BF16;
    return 0;
}

int emb_arch_get_bias(emb_encoder *e, const char *suffix, int64_t n, int present, const float **out,
                      char err[EMB_ERR_LEN]) {
    if (!present) {
        *out = e->zeros;
        return 0;
    }
    return emb_arch_get_tensor(e, suffix, n, -1, 0, out, err);
}

int emb_arch_layer_tensor(emb_encoder *e, const char *fmt, int l, int64_t d0, int64_t d1, const float **out,
                          char err[EMB_ERR_LEN]) {
    char name[128];
    snprintf(name, sizeof name, fmt, l);
    return emb_arch_get_tensor(e, name, d0, d1, 0, out, err);
}

int emb_arch_layer_bias(emb_encoder *e, const char *fmt, int l, int64_t n, int present, const float **out,
                        char err[EMB_ERR_LEN]) {
    char name[128];
    snprintf(name, sizeof name, fmt, l);
    return emb_arch_get_bias(e, name, n, present, out, err);
}

void emb_arch_split_qkv(const emb_encoder *e, emb_layer_weights *w, const float *qkv, const float *qkv_b) {
    const size_t H = (size_t)e->cfg.dims.hidden;
    int has_b = qkv_b != e->zeros;
    w->wq = qkv, w->wk = qkv + H * H, w->wv = qkv + 2 * H * H;
    w->bq = qkv_b, w->bk = qkv_b + (has_b ? H : 0), w->bv = qkv_b + (has_b ? 2 * H : 0);
}

int emb_arch_load_post_norm(emb_encoder *e, int l, const char *const fmt[16], int n, char err[EMB_ERR_LEN]) {
    const int64_t H = e->cfg.dims.hidden, FF = e->cfg.dims.intermediate;
    emb_layer_weights *w = &e->L[l];
    const float **dst[16] = {&w->wq,    &w->bq,    &w->wk, &w->bk, &w->wv, &w->bv, &w->wo,    &w->bo,
                             &w->ln1_g, &w->ln1_b, &w->w1, &w->b1, &w->w2, &w->b2, &w->ln2_g, &w->ln2_b};
    const int64_t shp[16][2] = {{H, H},  {H, -1}, {H, H},  {H, -1},  {H, H},  {H, -1}, {H, H},  {H, -1},
                                {H, -1}, {H, -1}, {FF, H}, {FF, -1}, {H, FF}, {H, -1}, {H, -1}, {H, -1}};
    for (int k = 0; k < n; k++)
        if (emb_arch_layer_tensor(e, fmt[k], l, shp[k][0], shp[k][1], dst[k], err)) return -1;
    return 0;
}

int emb_arch_load_norm(emb_encoder *e, const char *ln, const float **g, const float **b, char err[EMB_ERR_LEN]) {
    const int H = e->cfg.dims.hidden;
    char gn[48], bn[48];
    snprintf(gn, sizeof gn, "%s.weight", ln);
    snprintf(bn, sizeof bn, "%s.bias", ln);
    return emb_arch_get_tensor(e, gn, H, -1, 0, g, err) || emb_arch_get_bias(e, bn, H, e->cfg.norm_bias, b, err);
}

int emb_arch_load_embeddings(emb_encoder *e, const char *word, const char *ln, char err[EMB_ERR_LEN]) {
    const emb_encoder_config *c = &e->cfg;
    int H = c->dims.hidden;
    if (emb_arch_get_word_table(e, word, c->dims.vocab_size, H, err)) return -1;
    if (c->pos_kind == EMB_POS_LEARNED &&
        emb_arch_get_tensor(e, "embeddings.position_embeddings.weight", c->dims.max_positions, H, 0, &e->pos, err))
        return -1;
    if (c->dims.type_vocab > 0 &&
        emb_arch_get_tensor(e, "embeddings.token_type_embeddings.weight", c->dims.type_vocab, H, 0, &e->type, err))
        return -1;
    return emb_arch_load_norm(e, ln, &e->ln_g, &e->ln_b, err);
}

int emb_arch_no_head(emb_encoder *e, char err[EMB_ERR_LEN]) {
    (void)e, (void)err;
    return 0;
}
