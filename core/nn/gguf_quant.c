/* See gguf_quant.h. Each block is widened in ggml's own order of float operations (the f16 scales
 * to float32, then d * scale, then times the code, less dmin * min), so that the float32 values
 * are the ones llama.cpp computes from the same file, bit for bit where neither contracts to FMA. */
#include "nn/gguf_quant.h"
#include "math/half.h"
#include "nn/gguf.h"
#include <string.h>

static float f16_at(const unsigned char *p) { return emb_f16_to_f32((uint16_t)(p[0] | p[1] << 8)); }

/* The 32 fifth bits of a Q5_0 / Q5_1 block, bit j for value j (little-endian, as ggml's memcpy
 * into a uint32_t reads them on the hosts it runs on). */
static uint32_t u32_at(const unsigned char *p) {
    return (uint32_t)p[0] | (uint32_t)p[1] << 8 | (uint32_t)p[2] << 16 | (uint32_t)p[3] << 24;
}

/* Q4_0 and Q4_1: byte j holds value j in its low nibble and value j + 16 in its high one. */
static void q4_0(const unsigned char *b, float *y) {
    float d = f16_at(b);
    for (int j = 0; j < 16; j++) {
        y[j] = (float)((b[2 + j] & 0x0F) - 8) * d;
        y[j + 16] = (float)((b[2 + j] >> 4) - 8) * d;
    }
}
static void q4_1(const unsigned char *b, float *y) {
    float d = f16_at(b), m = f16_at(b + 2);
    for (int j = 0; j < 16; j++) {
        y[j] = (float)(b[4 + j] & 0x0F) * d + m;
        y[j + 16] = (float)(b[4 + j] >> 4) * d + m;
    }
}

/* Q5_0 and Q5_1: the nibbles as Q4's, each given its fifth bit from qh (bit j for value j). */
static void q5_codes(const unsigned char *qh4, const unsigned char *qs, int codes[32]) {
    uint32_t qh = u32_at(qh4);
    for (int j = 0; j < 16; j++) {
        codes[j] = (qs[j] & 0x0F) | (int)((qh >> j) & 1) << 4;
        codes[j + 16] = (qs[j] >> 4) | (int)((qh >> (j + 16)) & 1) << 4;
    }
}
static void q5_0(const unsigned char *b, float *y) {
    float d = f16_at(b);
    int q[32];
    q5_codes(b + 2, b + 6, q);
    for (int j = 0; j < 32; j++) y[j] = (float)(q[j] - 16) * d;
}
static void q5_1(const unsigned char *b, float *y) {
    float d = f16_at(b), m = f16_at(b + 2);
    int q[32];
    q5_codes(b + 4, b + 8, q);
    for (int j = 0; j < 32; j++) y[j] = (float)q[j] * d + m;
}

static void q8_0(const unsigned char *b, float *y) {
    float d = f16_at(b);
    for (int j = 0; j < 32; j++) y[j] = (float)(int8_t)b[2 + j] * d;
}

/* Q4_K / Q5_K's 12 bytes: sub-block j's 6-bit scale and min. j < 4: the low 6 bits of bytes j and
 * j + 4; j >= 4: a nibble of byte j + 4 (low: scale, high: min) under the top 2 bits of bytes
 * j - 4 (scale) and j (min), which the first four left free (ggml's get_scale_min_k4). */
static void k_scale_min(const unsigned char *s, int j, float d, float dmin, float *scale, float *min) {
    int sc, m;
    if (j < 4) {
        sc = s[j] & 63;
        m = s[j + 4] & 63;
    } else {
        sc = (s[j + 4] & 0x0F) | (s[j - 4] >> 6) << 4;
        m = (s[j + 4] >> 4) | (s[j] >> 6) << 4;
    }
    *scale = d * (float)sc;
    *min = dmin * (float)m;
}

/* Q4_K: 4 groups of 64 values over 32 bytes of nibbles (low nibbles: sub-block 2g, high: 2g + 1);
 * Q5_K adds the fifth bit of value l of sub-block k from bit k of qh[l]. qh NULL for Q4_K. */
static void k_4_5(const unsigned char *b, const unsigned char *qh, const unsigned char *qs, float *y) {
    float d = f16_at(b), dmin = f16_at(b + 2);
    for (int g = 0; g < 4; g++, qs += 32, y += 64) {
        float d1, m1, d2, m2;
        k_scale_min(b + 4, 2 * g, d, dmin, &d1, &m1);
        k_scale_min(b + 4, 2 * g + 1, d, dmin, &d2, &m2);
        for (int l = 0; l < 32; l++) {
            int lo = qs[l] & 0x0F, hi = qs[l] >> 4;
            if (qh) lo |= (qh[l] >> (2 * g) & 1) << 4, hi |= (qh[l] >> (2 * g + 1) & 1) << 4;
            y[l] = d1 * (float)lo - m1;
            y[l + 32] = d2 * (float)hi - m2;
        }
    }
}
static void q4_k(const unsigned char *b, float *y) { k_4_5(b, NULL, b + 16, y); }
static void q5_k(const unsigned char *b, float *y) { k_4_5(b, b + 16, b + 48, y); }

/* Q6_K: 2 halves of 128 values, each over 64 bytes of nibbles and 32 of 2-bit pairs; in a half,
 * value l + 32 * k (k = 0..3) takes the low (k even) or high (k odd) nibble of ql[l + 32 * (k & 1)]
 * and the pair at bits 2k of qh[l], less 32; its scale is int8 scales[l / 16 + 2k]. */
static void q6_k(const unsigned char *b, float *y) {
    const unsigned char *ql = b, *qh = b + 128;
    const int8_t *sc = (const int8_t *)(b + 192);
    float d = f16_at(b + 208);
    for (int h = 0; h < 2; h++, ql += 64, qh += 32, sc += 8, y += 128)
        for (int l = 0; l < 32; l++)
            for (int k = 0; k < 4; k++) {
                int nib = k & 2 ? ql[l + 32 * (k & 1)] >> 4 : ql[l + 32 * (k & 1)] & 0x0F;
                int q = (nib | (qh[l] >> (2 * k) & 3) << 4) - 32;
                y[l + 32 * k] = d * (float)sc[l / 16 + 2 * k] * (float)q;
            }
}

typedef void (*block_fn)(const unsigned char *, float *);
static const struct {
    emb_dtype dtype;
    uint32_t ggml;
    block_fn fn;
} BLOCKS[] = {{EMB_DT_Q4_0, EMB_GGML_Q4_0, q4_0}, {EMB_DT_Q4_1, EMB_GGML_Q4_1, q4_1},
              {EMB_DT_Q5_0, EMB_GGML_Q5_0, q5_0}, {EMB_DT_Q5_1, EMB_GGML_Q5_1, q5_1},
              {EMB_DT_Q8_0, EMB_GGML_Q8_0, q8_0}, {EMB_DT_Q4_K, EMB_GGML_Q4_K, q4_k},
              {EMB_DT_Q5_K, EMB_GGML_Q5_K, q5_k}, {EMB_DT_Q6_K, EMB_GGML_Q6_K, q6_k}};
#define N_BLOCKS (sizeof BLOCKS / sizeof *BLOCKS)

int emb_quant_dtype_of_ggml(uint32_t ggml_type) {
    if (ggml_type == EMB_GGML_F32) return EMB_DT_F32;
    if (ggml_type == EMB_GGML_F16) return EMB_DT_F16;
    if (ggml_type == EMB_GGML_BF16) return EMB_DT_BF16;
    for (size_t i = 0; i < N_BLOCKS; i++)
        if (BLOCKS[i].ggml == ggml_type) return (int)BLOCKS[i].dtype;
    return -1;
}

int emb_quant_dtype(emb_dtype d) {
    for (size_t i = 0; i < N_BLOCKS; i++)
        if (BLOCKS[i].dtype == d) return 1;
    return 0;
}

int emb_quant_to_f32(emb_dtype d, const unsigned char *blocks, size_t n, float *out) {
    for (size_t i = 0; i < N_BLOCKS; i++) {
        uint32_t values, bytes;
        if (BLOCKS[i].dtype != d) continue;
        emb_ggml_type_block(BLOCKS[i].ggml, &values, &bytes); /* gguf.c's table: the one the offsets used */
        if (n % values) return -1;
        for (size_t b = 0; b < n / values; b++) BLOCKS[i].fn(blocks + b * bytes, out + b * values);
        return 0;
    }
    return -1;
}

int emb_tensor_to_f32(const emb_safetensors_tensor *t, size_t n, float *out) {
    switch (t->dtype) {
    case EMB_DT_F32: memcpy(out, t->data, n * sizeof(float)); return 0;
    case EMB_DT_F16: emb_f16_to_f32_n(t->data, out, n); return 0;
    case EMB_DT_BF16: emb_bf16_to_f32_n(t->data, out, n); return 0;
    default: return emb_quant_to_f32(t->dtype, t->data, n, out);
    }
}
