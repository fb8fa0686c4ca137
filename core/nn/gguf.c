/* See gguf.h. */
#include "nn/gguf.h"
#include "math/half.h"
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define MAX_NAME 64 /* ggml's GGML_MAX_NAME: a tensor name is shorter */
#define MAX_KEY 65536

typedef struct {
    const unsigned char *p, *end;
    const char *label;
    char *err;
} cursor;

static int fail_at(cursor *c, const char *what) { return emb_fail(c->err, "%.80s: %s", c->label, what); }
static int need(cursor *c, uint64_t n, const char *what) {
    return (uint64_t)(c->end - c->p) < n ? fail_at(c, what) : 0;
}
static uint64_t le(const unsigned char *p, int n) {
    uint64_t v = 0;
    for (int i = n - 1; i >= 0; i--) v = v << 8 | p[i];
    return v;
}
static int rd_u32(cursor *c, uint32_t *v, const char *what) {
    if (need(c, 4, what)) return -1;
    *v = (uint32_t)le(c->p, 4);
    c->p += 4;
    return 0;
}
static int rd_u64(cursor *c, uint64_t *v, const char *what) {
    if (need(c, 8, what)) return -1;
    *v = le(c->p, 8);
    c->p += 8;
    return 0;
}
static int rd_str(cursor *c, const char **s, uint64_t *len, const char *what) {
    if (rd_u64(c, len, what) || need(c, *len, what)) return -1;
    *s = (const char *)c->p;
    c->p += *len;
    return 0;
}

/* Bytes of a scalar value of type t; 0 for strings and arrays, -1 for an unknown type. */
static int scalar_size(uint32_t t) {
    static const signed char size[EMB_GGUF_N_TYPES] = {1, 1, 2, 2, 4, 4, 4, 1, 0, 0, 8, 8, 8};
    return t < EMB_GGUF_N_TYPES ? size[t] : -1;
}

static int read_value(cursor *c, emb_gguf_kv *kv) {
    char what[160];
    snprintf(what, sizeof what, "the value of '%.*s' runs past the end of the file",
             (int)(kv->key_len > 60 ? 60 : kv->key_len), kv->key);
    if (rd_u32(c, &kv->type, what)) return -1;
    kv->n = 1;
    kv->elem_type = kv->type;
    if (kv->type == EMB_GGUF_ARRAY) {
        if (rd_u32(c, &kv->elem_type, what) || rd_u64(c, &kv->n, what)) return -1;
        if (kv->elem_type == EMB_GGUF_ARRAY || scalar_size(kv->elem_type) < 0) {
            snprintf(what, sizeof what, "'%.*s' is an array of value type %u, which GGUF does not define",
                     (int)(kv->key_len > 60 ? 60 : kv->key_len), kv->key, kv->elem_type);
            return fail_at(c, what);
        }
    } else if (scalar_size(kv->type) < 0) {
        snprintf(what, sizeof what, "'%.*s' has value type %u, which GGUF does not define",
                 (int)(kv->key_len > 60 ? 60 : kv->key_len), kv->key, kv->type);
        return fail_at(c, what);
    }
    kv->value = c->p;
    int sz = scalar_size(kv->elem_type);
    if (sz > 0) {
        if ((uint64_t)(c->end - c->p) / (uint64_t)sz < kv->n) return fail_at(c, what);
        c->p += kv->n * (uint64_t)sz;
        return 0;
    }
    for (uint64_t i = 0; i < kv->n; i++) { /* strings: each length checked in turn */
        const char *s;
        uint64_t len;
        if (rd_str(c, &s, &len, what)) return -1;
    }
    return 0;
}

static int cmp_kv(const void *a, const void *b) {
    const emb_gguf_kv *x = a, *y = b;
    size_t n = x->key_len < y->key_len ? x->key_len : y->key_len;
    int r = memcmp(x->key, y->key, n);
    return r ? r : (x->key_len > y->key_len) - (x->key_len < y->key_len);
}
static int cmp_tensor(const void *a, const void *b) {
    const emb_gguf_tensor *x = a, *y = b;
    size_t n = x->name_len < y->name_len ? x->name_len : y->name_len;
    int r = memcmp(x->name, y->name, n);
    return r ? r : (x->name_len > y->name_len) - (x->name_len < y->name_len);
}

/* Every type ggml has stored in files: those no loader reads (the IQ, TQ and other K types) are
 * known too, so that a file of them parses and is refused by its type's name. */
static const struct {
    uint32_t type, values, bytes;
    const char *name;
} TYPES[] = {{EMB_GGML_F32, 1, 4, "F32"},
             {EMB_GGML_F16, 1, 2, "F16"},
             {EMB_GGML_BF16, 1, 2, "BF16"},
             {EMB_GGML_Q4_0, 32, 18, "Q4_0"},
             {EMB_GGML_Q4_1, 32, 20, "Q4_1"},
             {EMB_GGML_Q5_0, 32, 22, "Q5_0"},
             {EMB_GGML_Q5_1, 32, 24, "Q5_1"},
             {EMB_GGML_Q8_0, 32, 34, "Q8_0"},
             {EMB_GGML_Q8_1, 32, 36, "Q8_1"},
             {EMB_GGML_Q2_K, 256, 84, "Q2_K"},
             {EMB_GGML_Q3_K, 256, 110, "Q3_K"},
             {EMB_GGML_Q4_K, 256, 144, "Q4_K"},
             {EMB_GGML_Q5_K, 256, 176, "Q5_K"},
             {EMB_GGML_Q6_K, 256, 210, "Q6_K"},
             {EMB_GGML_Q8_K, 256, 292, "Q8_K"},
             {EMB_GGML_I8, 1, 1, "I8"},
             {EMB_GGML_I16, 1, 2, "I16"},
             {EMB_GGML_I32, 1, 4, "I32"},
             {EMB_GGML_I64, 1, 8, "I64"},
             {EMB_GGML_F64, 1, 8, "F64"},
             {EMB_GGML_IQ2_XXS, 256, 66, "IQ2_XXS"},
             {EMB_GGML_IQ2_XS, 256, 74, "IQ2_XS"},
             {EMB_GGML_IQ3_XXS, 256, 98, "IQ3_XXS"},
             {EMB_GGML_IQ1_S, 256, 50, "IQ1_S"},
             {EMB_GGML_IQ4_NL, 32, 18, "IQ4_NL"},
             {EMB_GGML_IQ3_S, 256, 110, "IQ3_S"},
             {EMB_GGML_IQ2_S, 256, 82, "IQ2_S"},
             {EMB_GGML_IQ4_XS, 256, 136, "IQ4_XS"},
             {EMB_GGML_IQ1_M, 256, 56, "IQ1_M"},
             {EMB_GGML_TQ1_0, 256, 54, "TQ1_0"},
             {EMB_GGML_TQ2_0, 256, 66, "TQ2_0"},
             {EMB_GGML_MXFP4, 32, 17, "MXFP4"}};

static int type_index(uint32_t type) {
    for (int i = 0; i < (int)(sizeof TYPES / sizeof *TYPES); i++)
        if (TYPES[i].type == type) return i;
    return -1;
}
int emb_ggml_type_block(uint32_t type, uint32_t *values, uint32_t *bytes) {
    int i = type_index(type);
    if (i < 0) return 0;
    if (values) *values = TYPES[i].values;
    if (bytes) *bytes = TYPES[i].bytes;
    return 1;
}
const char *emb_ggml_type_name(uint32_t type) {
    int i = type_index(type);
    return i < 0 ? NULL : TYPES[i].name;
}

/* One tensor info: its name, dimensions, type and offset, and its size from the type's blocks. */
static int read_tensor(cursor *c, emb_gguf_tensor *t) {
    const char *s;
    uint64_t len, d;
    char what[200];
    if (rd_str(c, &s, &len, "a tensor's name runs past the end of the file")) return -1;
    t->name = s;
    t->name_len = (size_t)len;
    int nl = (int)(len > 64 ? 64 : len);
    if (len == 0 || len >= MAX_NAME) {
        snprintf(what, sizeof what, "tensor '%.*s': its name is %s (1 to %d bytes)", nl, s,
                 len ? "too long" : "empty", MAX_NAME - 1);
        return fail_at(c, what);
    }
    snprintf(what, sizeof what, "tensor '%.*s': its info runs past the end of the file", nl, s);
    if (rd_u32(c, &t->n_dims, what)) return -1;
    if (t->n_dims < 1 || t->n_dims > EMB_GGUF_MAX_DIMS) {
        snprintf(what, sizeof what, "tensor '%.*s' has %u dimensions (1 to %d)", nl, s, t->n_dims,
                 EMB_GGUF_MAX_DIMS);
        return fail_at(c, what);
    }
    uint64_t count = 1;
    for (uint32_t i = 0; i < EMB_GGUF_MAX_DIMS; i++) {
        d = 1;
        if (i < t->n_dims && rd_u64(c, &d, what)) return -1;
        if (d > (uint64_t)INT64_MAX || (d && count > (uint64_t)INT64_MAX / d)) {
            snprintf(what, sizeof what, "tensor '%.*s': its dimensions overflow", nl, s);
            return fail_at(c, what);
        }
        t->ne[i] = (int64_t)d;
        count *= d;
    }
    if (rd_u32(c, &t->type, what) || rd_u64(c, &t->offset, what)) return -1;
    uint32_t bv, bb;
    if (!emb_ggml_type_block(t->type, &bv, &bb)) {
        snprintf(what, sizeof what, "tensor '%.*s' has ggml type %u, which is not known here", nl, s, t->type);
        return fail_at(c, what);
    }
    if (t->ne[0] % bv) {
        snprintf(what, sizeof what, "tensor '%.*s': rows of %lld values are not whole %s blocks of %u", nl, s,
                 (long long)t->ne[0], emb_ggml_type_name(t->type), bv);
        return fail_at(c, what);
    }
    if (count / bv > (uint64_t)INT64_MAX / bb) {
        snprintf(what, sizeof what, "tensor '%.*s': its size overflows", nl, s);
        return fail_at(c, what);
    }
    t->bytes = count / bv * bb;
    return 0;
}

static int check_unique(cursor *c, emb_gguf *g) {
    char what[200];
    for (uint64_t i = 1; i < g->n_kv; i++)
        if (cmp_kv(&g->kv[i - 1], &g->kv[i]) == 0) {
            snprintf(what, sizeof what, "key '%.*s' appears twice",
                     (int)(g->kv[i].key_len > 64 ? 64 : g->kv[i].key_len), g->kv[i].key);
            return fail_at(c, what);
        }
    for (uint64_t i = 1; i < g->n_tensors; i++)
        if (cmp_tensor(&g->tensors[i - 1], &g->tensors[i]) == 0) {
            snprintf(what, sizeof what, "tensor '%.*s' appears twice", (int)g->tensors[i].name_len,
                     g->tensors[i].name);
            return fail_at(c, what);
        }
    return 0;
}

/* general.alignment: a power of two, 32 when absent. */
static int read_alignment(cursor *c, emb_gguf *g) {
    const emb_gguf_kv *a = emb_gguf_find(g, "general.alignment");
    g->alignment = 32;
    if (!a) return 0;
    if (a->type != EMB_GGUF_U32) return fail_at(c, "general.alignment is not a uint32");
    uint32_t v = (uint32_t)le(a->value, 4);
    if (v == 0 || (v & (v - 1))) return fail_at(c, "general.alignment is not a power of two");
    g->alignment = v;
    return 0;
}

static int parse(cursor *c, const unsigned char *base, size_t size, emb_gguf *g) {
    uint32_t magic;
    if (rd_u32(c, &magic, "not a GGUF file (shorter than its header)")) return -1;
    if (magic != 0x46554747u) return fail_at(c, "not a GGUF file (no \"GGUF\" magic)");
    if (rd_u32(c, &g->version, "not a GGUF file (shorter than its header)")) return -1;
    if (g->version == 1 || g->version > 3 || g->version == 0) {
        char what[96];
        snprintf(what, sizeof what, "GGUF version %u is not supported (2 and 3 are)", g->version);
        return fail_at(c, what);
    }
    if (rd_u64(c, &g->n_tensors, "truncated header") || rd_u64(c, &g->n_kv, "truncated header")) return -1;
    /* every pair takes at least 12 bytes, every tensor info 24: counts past that are lies */
    if (g->n_kv > size / 12 || g->n_tensors > size / 24)
        return fail_at(c, "its counts exceed what the file can hold");
    g->kv = calloc(g->n_kv ? g->n_kv : 1, sizeof *g->kv);
    g->tensors = calloc(g->n_tensors ? g->n_tensors : 1, sizeof *g->tensors);
    if (!g->kv || !g->tensors) return emb_fail(c->err, "out of memory");
    for (uint64_t i = 0; i < g->n_kv; i++) {
        emb_gguf_kv *kv = &g->kv[i];
        uint64_t len;
        if (rd_str(c, &kv->key, &len, "a key runs past the end of the file")) return -1;
        if (len == 0 || len > MAX_KEY) return fail_at(c, "a key is empty or longer than 64 KiB");
        kv->key_len = (size_t)len;
        if (read_value(c, kv)) return -1;
    }
    for (uint64_t i = 0; i < g->n_tensors; i++)
        if (read_tensor(c, &g->tensors[i])) return -1;
    qsort(g->kv, (size_t)g->n_kv, sizeof *g->kv, cmp_kv);
    if (read_alignment(c, g)) return -1;
    uint64_t at = (uint64_t)(c->p - base), pad = (g->alignment - at % g->alignment) % g->alignment;
    if (pad > size - at) return fail_at(c, "the data section starts past the end of the file");
    g->data = base + at + pad;
    g->data_len = size - at - pad;
    for (uint64_t i = 0; i < g->n_tensors; i++) {
        emb_gguf_tensor *t = &g->tensors[i];
        if (t->offset % g->alignment || t->offset > g->data_len || t->bytes > g->data_len - t->offset) {
            char what[200];
            snprintf(what, sizeof what, "tensor '%.*s': its data (offset %llu, %llu bytes) is %s",
                     (int)t->name_len, t->name, (unsigned long long)t->offset, (unsigned long long)t->bytes,
                     t->offset % g->alignment ? "not aligned" : "past the end of the file");
            return fail_at(c, what);
        }
        t->data = g->data + t->offset;
    }
    qsort(g->tensors, (size_t)g->n_tensors, sizeof *g->tensors, cmp_tensor);
    return check_unique(c, g);
}

int emb_gguf_parse(const void *buf, size_t size, const char *label, emb_gguf *out, char err[EMB_ERR_LEN]) {
    memset(out, 0, sizeof *out);
    cursor c = {buf, (const unsigned char *)buf + size, label ? label : "GGUF", err};
    if (!buf) return fail_at(&c, "no data");
    if (parse(&c, buf, size, out) == 0) return 0;
    emb_gguf_free(out);
    return -1;
}

void emb_gguf_free(emb_gguf *g) {
    if (!g) return;
    free(g->kv);
    free(g->tensors);
    memset(g, 0, sizeof *g);
}

const emb_gguf_kv *emb_gguf_find(const emb_gguf *g, const char *key) {
    emb_gguf_kv k = {key, strlen(key), 0, 0, 0, NULL};
    return g->n_kv ? bsearch(&k, g->kv, (size_t)g->n_kv, sizeof *g->kv, cmp_kv) : NULL;
}

const emb_gguf_tensor *emb_gguf_find_tensor(const emb_gguf *g, const char *name) {
    emb_gguf_tensor k;
    memset(&k, 0, sizeof k);
    k.name = name;
    k.name_len = strlen(name);
    return g->n_tensors ? bsearch(&k, g->tensors, (size_t)g->n_tensors, sizeof *g->tensors, cmp_tensor) : NULL;
}

int emb_gguf_kv_int(const emb_gguf_kv *kv, int64_t *out) {
    if (!kv || kv->type == EMB_GGUF_ARRAY) return -1;
    const unsigned char *p = kv->value;
    switch (kv->type) {
    case EMB_GGUF_U8:
    case EMB_GGUF_BOOL: *out = p[0]; return kv->type == EMB_GGUF_BOOL && p[0] > 1 ? -1 : 0;
    case EMB_GGUF_I8: *out = (int8_t)p[0]; return 0;
    case EMB_GGUF_U16: *out = (int64_t)le(p, 2); return 0;
    case EMB_GGUF_I16: *out = (int16_t)le(p, 2); return 0;
    case EMB_GGUF_U32: *out = (int64_t)le(p, 4); return 0;
    case EMB_GGUF_I32: *out = (int32_t)(uint32_t)le(p, 4); return 0;
    case EMB_GGUF_U64: {
        uint64_t v = le(p, 8);
        if (v > (uint64_t)INT64_MAX) return -1;
        *out = (int64_t)v;
        return 0;
    }
    case EMB_GGUF_I64: *out = (int64_t)le(p, 8); return 0;
    default: return -1;
    }
}

int emb_gguf_kv_number(const emb_gguf_kv *kv, double *out) {
    int64_t i;
    if (!kv) return -1;
    if (kv->type == EMB_GGUF_F32) {
        uint32_t u = (uint32_t)le(kv->value, 4);
        float f;
        memcpy(&f, &u, 4);
        *out = f;
        return 0;
    }
    if (kv->type == EMB_GGUF_F64) {
        uint64_t u = le(kv->value, 8);
        memcpy(out, &u, 8);
        return 0;
    }
    if (emb_gguf_kv_int(kv, &i)) return -1;
    *out = (double)i;
    return 0;
}

int emb_gguf_kv_string(const emb_gguf_kv *kv, const char **s, size_t *len) {
    if (!kv || kv->type != EMB_GGUF_STRING) return -1;
    *len = (size_t)le(kv->value, 8);
    *s = (const char *)kv->value + 8;
    return 0;
}

int emb_gguf_array_next_string(const emb_gguf_kv *kv, size_t *cursor_, const char **s, size_t *len) {
    if (!kv || kv->type != EMB_GGUF_ARRAY || kv->elem_type != EMB_GGUF_STRING) return -1;
    /* the parse checked every length: the walk stays inside the array */
    const unsigned char *p = kv->value + *cursor_;
    *len = (size_t)le(p, 8);
    *s = (const char *)p + 8;
    *cursor_ += 8 + *len;
    return 0;
}
