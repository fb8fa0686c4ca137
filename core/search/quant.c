/* Records of quantized vectors (encode, decode, per-row values) and prepared queries; the
 * scans over arrays of records are in quant_scan.c, the inner loops in quant_kernels.c. */
#include "search/quant.h"
#include "math/half.h"
#include "search/quant_kernels.h"
#include <math.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

static const char *const storage_names[] = {"f32", "f16", "int8", "bit"};

int emb_storage_parse(const char *name, emb_storage *out) {
    for (int s = 0; s < 4; s++)
        if (name && strcasecmp(name, storage_names[s]) == 0) {
            *out = (emb_storage)s;
            return 0;
        }
    return -1;
}

const char *emb_storage_name(emb_storage s) { return storage_names[s]; }

size_t emb_code_bytes(emb_storage s, size_t d) {
    switch (s) {
    case EMB_STORAGE_F32: return 4 * d;
    case EMB_STORAGE_F16: return 2 * d;
    case EMB_STORAGE_INT8: return d + 4;
    case EMB_STORAGE_BIT: return (d + 7) / 8;
    }
    return 0;
}

/* ---------- kernel set ---------- */

static int forced_path = -1; /* emb_quant_force_path; tests and benchmarks only */

static emb_qpath current_path(void) {
    return forced_path >= 0 ? (emb_qpath)forced_path : emb_quant_kernels_best_path();
}

static const char *const path_names[] = {"scalar", "avx2", "avx512"};

const char *emb_quant_path(void) { return path_names[current_path()]; }

int emb_quant_force_path(const char *name) {
    if (!name) {
        forced_path = -1;
        return 0;
    }
    for (int p = 0; p < 3; p++)
        if (strcmp(name, path_names[p]) == 0) {
            if (!emb_quant_kernels_path_supported((emb_qpath)p)) return -1;
            forced_path = p;
            return 0;
        }
    return -1;
}

/* ---------- records ---------- */

/* x's int8 codes into codes; returns the scale max|x_i| / 127 (0 for a zero vector). */
static float int8_quantize(const float *x, size_t d, int8_t *codes) {
    float max = 0;
    for (size_t i = 0; i < d; i++) max = fabsf(x[i]) > max ? fabsf(x[i]) : max;
    float scale = max / 127.0f;
    for (size_t i = 0; i < d; i++) {
        double c = scale > 0 ? round((double)x[i] / scale) : 0; /* halves away from zero */
        codes[i] = (int8_t)(c > 127 ? 127 : c < -127 ? -127 : c == c ? c : 0);
    }
    return scale;
}

static void bits_of(const float *x, size_t d, uint8_t *out) {
    memset(out, 0, (d + 7) / 8);
    for (size_t i = 0; i < d; i++)
        if (x[i] > 0) out[i / 8] |= (uint8_t)(1u << (i % 8));
}

static float int8_scale(const unsigned char *record, size_t d) {
    float scale;
    memcpy(&scale, record + d, 4);
    return scale;
}

/* A word of `bits` bits whose exponent field `exp` is all ones is an infinity or a NaN. */
static int all_finite(const unsigned char *r, size_t words, size_t bytes, uint32_t exp) {
    uint32_t bad = 0;
    /* vectorised: three times as fast as the plain loop over 1M x 384 (bench/README.md) */
#pragma omp simd reduction(| : bad)
    for (size_t i = 0; i < words; i++) {
        uint32_t w = 0;
        memcpy(&w, r + i * bytes, bytes); /* little-endian, as stored */
        bad |= (w & exp) == exp;
    }
    return !bad;
}

int emb_codes_finite(emb_storage s, const void *records, size_t n, size_t d) {
    const unsigned char *r = records;
    switch (s) {
    case EMB_STORAGE_F32: return all_finite(r, n * d, 4, 0x7f800000u);
    case EMB_STORAGE_F16: return all_finite(r, n * d, 2, 0x7c00u);
    case EMB_STORAGE_INT8:
        for (size_t i = 0; i < n; i++) {
            float scale = int8_scale(r + i * (d + 4), d);
            if (!isfinite(scale) || scale < 0) return 0;
        }
        return 1;
    case EMB_STORAGE_BIT: return 1;
    }
    return 0;
}

void emb_encode(emb_storage s, const float *x, size_t d, void *record) {
    unsigned char *r = record;
    switch (s) {
    case EMB_STORAGE_F32: memcpy(r, x, 4 * d); break;
    case EMB_STORAGE_F16: emb_quant_kernels_f32_to_f16(current_path(), x, d, r); break;
    case EMB_STORAGE_INT8: {
        float scale = int8_quantize(x, d, (int8_t *)r);
        memcpy(r + d, &scale, 4);
        break;
    }
    case EMB_STORAGE_BIT: bits_of(x, d, r); break;
    }
}

void emb_decode(emb_storage s, const void *record, size_t d, float *out) {
    const unsigned char *r = record;
    switch (s) {
    case EMB_STORAGE_F32: memcpy(out, r, 4 * d); break;
    case EMB_STORAGE_F16: emb_quant_kernels_f16_to_f32(current_path(), r, d, out); break;
    case EMB_STORAGE_INT8: {
        float scale = int8_scale(r, d);
        for (size_t i = 0; i < d; i++) out[i] = (float)(int8_t)r[i] * scale;
        break;
    }
    case EMB_STORAGE_BIT:
        for (size_t i = 0; i < d; i++) out[i] = (r[i / 8] >> (i % 8)) & 1 ? 1.0f : -1.0f;
        break;
    }
}

int emb_code_needs_aux(emb_storage s, emb_metric m) {
    return s != EMB_STORAGE_BIT && (m == EMB_METRIC_COSINE || m == EMB_METRIC_L2);
}

float emb_code_aux(emb_storage s, emb_metric m, const void *record, size_t d) {
    if (!emb_code_needs_aux(s, m)) return 0;
    const unsigned char *r = record;
    double s2 = 0;
    float x[64];
    for (size_t at = 0; at < d; at += 64) { /* |x^|^2 of the decoded values, 64 at a time */
        size_t n = d - at < 64 ? d - at : 64;
        switch (s) {
        case EMB_STORAGE_F32: memcpy(x, r + 4 * at, 4 * n); break;
        case EMB_STORAGE_F16: emb_f16_to_f32_n(r + 2 * at, x, n); break;
        default: /* int8 */
            for (size_t i = 0; i < n; i++) x[i] = (float)(int8_t)r[at + i] * int8_scale(r, d);
            break;
        }
        s2 += emb_vec_norm2(x, n);
    }
    if (m == EMB_METRIC_L2) return (float)s2;
    return s2 > 0 ? (float)(1.0 / sqrt(s2)) : 0.0f;
}

/* ---------- queries ---------- */

static size_t round_up(size_t n, size_t to) { return (n + to - 1) / to * to; }

int emb_code_query_init(emb_code_query *q, emb_storage s, emb_metric m, const float *x, size_t d) {
    memset(q, 0, sizeof *q);
    q->storage = s;
    q->metric = m;
    q->d = d;
    q->bytes = emb_code_bytes(s, d);
    q->path = (int)current_path();
    size_t nf = round_up(d, 16) * sizeof(float), n8 = round_up(d, 64), nb = round_up((d + 7) / 8, 64);
    size_t total = nf + (s == EMB_STORAGE_INT8 ? 2 * n8 : 0) + (s == EMB_STORAGE_BIT ? nb : 0);
    unsigned char *mem = aligned_alloc(64, round_up(total ? total : 64, 64));
    if (!mem) return -1;
    memset(mem, 0, round_up(total ? total : 64, 64));
    q->mem = mem;
    memcpy(mem, x, d * sizeof *x);
    q->qf = (const float *)(void *)mem;
    double norm2 = emb_vec_norm2(x, d);
    if (s == EMB_STORAGE_INT8) {
        int8_t *q8 = (int8_t *)(mem + nf);
        uint8_t *qabs = mem + nf + n8;
        float qscale = int8_quantize(x, d, q8);
        int32_t sum = 0;
        norm2 = 0;
        for (size_t i = 0; i < d; i++) {
            qabs[i] = (uint8_t)abs(q8[i]);
            sum += q8[i];
            double v = (float)q8[i] * qscale; /* q^, as a row would decode */
            norm2 += v * v;
        }
        q->q8 = q8;
        q->qabs = qabs;
        q->qsum = sum;
        q->factor = m == EMB_METRIC_COSINE ? (norm2 > 0 ? (float)(qscale / sqrt(norm2)) : 0.0f) : qscale;
    } else if (s == EMB_STORAGE_BIT) {
        bits_of(x, d, mem + nf);
        q->qbits = mem + nf;
    } else if (m == EMB_METRIC_COSINE) {
        q->factor = norm2 > 0 ? (float)(1.0 / sqrt(norm2)) : 0.0f;
    }
    return 0;
}

void emb_code_query_free(emb_code_query *q) {
    free(q->mem);
    memset(q, 0, sizeof *q);
}
