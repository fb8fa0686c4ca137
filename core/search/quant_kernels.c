#include "search/quant_kernels.h"
#include "math/half.h"
#include "base/simd.h"
#include <string.h>

#if defined(__BYTE_ORDER__) && __BYTE_ORDER__ != __ORDER_LITTLE_ENDIAN__
#error "records are little-endian and read as native values"
#endif

#if defined(__x86_64__) && defined(__GNUC__)
#define QK_X86 1
#include <immintrin.h>
/* Not the target_clones of vec.c: one function per set, picked per query (tests force each),
 * which also works under ASan, where ifunc resolvers run too early. */
#define T_AVX2 __attribute__((target("avx2,fma,f16c,popcnt")))
#define T_AVX512                                                                                                  \
    __attribute__((target("avx512f,avx512bw,avx512vl,avx512vnni,avx512vpopcntdq,avx2,fma,f16c,popcnt")))
#else
#define QK_X86 0
#endif

int emb_quant_kernels_path_supported(emb_qpath p) {
    if (p == EMB_QPATH_SCALAR) return 1;
#if QK_X86
    __builtin_cpu_init();
    int avx2 = emb_simd() >= EMB_SIMD_AVX2; /* F16C comes with every AVX2 CPU */
    if (p == EMB_QPATH_AVX2) return avx2;
    if (p == EMB_QPATH_AVX512)
        return emb_simd() >= EMB_SIMD_AVX512 && __builtin_cpu_supports("avx512f") &&
               __builtin_cpu_supports("avx512bw") && __builtin_cpu_supports("avx512vl") &&
               __builtin_cpu_supports("avx512vnni") && __builtin_cpu_supports("avx512vpopcntdq");
#endif
    return 0;
}

emb_qpath emb_quant_kernels_best_path(void) {
    if (emb_quant_kernels_path_supported(EMB_QPATH_AVX512)) return EMB_QPATH_AVX512;
    if (emb_quant_kernels_path_supported(EMB_QPATH_AVX2)) return EMB_QPATH_AVX2;
    return EMB_QPATH_SCALAR;
}

static float load_f32(const unsigned char *p) {
    float f;
    memcpy(&f, p, 4);
    return f;
}

static uint16_t load_u16(const unsigned char *p) { return (uint16_t)(p[0] | p[1] << 8); }

/* ---------- f16 conversion ---------- */

/* float32 to binary16, nearest even; beyond +-65504 saturates; NaN stays a quiet NaN (as F16C). */
static uint16_t f32_to_f16(float f) {
    uint32_t u;
    memcpy(&u, &f, 4);
    uint16_t sign = (uint16_t)((u >> 16) & 0x8000u);
    uint32_t a = u & 0x7fffffffu;
    if (a > 0x7f800000u) return (uint16_t)(sign | 0x7e00u | ((a >> 13) & 0x3ffu));
    if (a > 0x477fe000u) a = 0x477fe000u; /* 65504, the largest f16 */
    if (a >= 0x38800000u) { /* 2^-14 and up: a normal f16 */
        uint32_t r = a - 0x38000000u; /* exponent bias 127 -> 15 */
        r += 0x0fffu + ((r >> 13) & 1u); /* round the 13 dropped bits to nearest even */
        return (uint16_t)(sign | (r >> 13));
    }
    if (a <= 0x33000000u) return sign; /* up to 2^-25 (half the smallest subnormal; a tie goes to 0) */
    /* subnormal: value / 2^-24 = mantissa * 2^(exponent - 126), rounded to nearest even */
    uint32_t e = a >> 23, m = (a & 0x7fffffu) | 0x800000u, shift = 126u - e;
    uint32_t q = m >> shift, rem = m & ((1u << shift) - 1u), half = 1u << (shift - 1u);
    if (rem > half || (rem == half && (q & 1u))) q++;
    return (uint16_t)(sign | q);
}

static void f32_to_f16_scalar(const float *x, size_t n, unsigned char *out) {
    for (size_t i = 0; i < n; i++) {
        uint16_t h = f32_to_f16(x[i]);
        out[2 * i] = (unsigned char)h;
        out[2 * i + 1] = (unsigned char)(h >> 8);
    }
}

#if QK_X86
T_AVX2 static void f32_to_f16_f16c(const float *x, size_t n, unsigned char *out) {
    const __m256 lo = _mm256_set1_ps(-65504.0f), hi = _mm256_set1_ps(65504.0f);
    size_t i = 0;
    for (; i + 8 <= n; i += 8) {
        /* max(lo, x), min(hi, .): a NaN x passes through (the second operand is returned) */
        __m256 v = _mm256_min_ps(hi, _mm256_max_ps(lo, _mm256_loadu_ps(x + i)));
        _mm_storeu_si128((__m128i *)(out + 2 * i),
                         _mm256_cvtps_ph(v, _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC));
    }
    f32_to_f16_scalar(x + i, n - i, out + 2 * i);
}

T_AVX2 static void f16_to_f32_f16c(const unsigned char *in, size_t n, float *out) {
    size_t i = 0;
    for (; i + 8 <= n; i += 8)
        _mm256_storeu_ps(out + i, _mm256_cvtph_ps(_mm_loadu_si128((const __m128i *)(in + 2 * i))));
    emb_f16_to_f32_n(in + 2 * i, out + i, n - i);
}
#endif

void emb_quant_kernels_f32_to_f16(emb_qpath p, const float *x, size_t n, void *out) {
#if QK_X86
    if (p != EMB_QPATH_SCALAR) {
        f32_to_f16_f16c(x, n, out);
        return;
    }
#endif
    (void)p;
    f32_to_f16_scalar(x, n, out);
}

void emb_quant_kernels_f16_to_f32(emb_qpath p, const void *in, size_t n, float *out) {
#if QK_X86
    if (p != EMB_QPATH_SCALAR) {
        f16_to_f32_f16c(in, n, out);
        return;
    }
#endif
    (void)p;
    emb_f16_to_f32_n(in, out, n);
}

/* ---------- scalar kernels (also the bodies the popcnt set instantiates) ---------- */

static inline int32_t int8_dot_c(const int8_t *q8, const unsigned char *r, size_t d) {
    int64_t s = 0;
    for (size_t i = 0; i < d; i++) s += q8[i] * (int8_t)r[i];
    return (int32_t)s;
}

static inline float f16_dot_c(const float *qf, const unsigned char *r, size_t d) {
    float s = 0;
    for (size_t i = 0; i < d; i++) s += qf[i] * emb_f16_to_f32(load_u16(r + 2 * i));
    return s;
}

static inline float f32_dot_c(const float *qf, const unsigned char *r, size_t d) {
    float s = 0;
    for (size_t i = 0; i < d; i++) s += qf[i] * load_f32(r + 4 * i);
    return s;
}

static inline int32_t hamming_c(const uint8_t *qb, const unsigned char *r, size_t d) {
    size_t full = d / 8, i = 0;
    int32_t s = 0;
    for (; i + 8 <= full; i += 8) {
        uint64_t a, b;
        memcpy(&a, qb + i, 8);
        memcpy(&b, r + i, 8);
        s += __builtin_popcountll(a ^ b);
    }
    for (; i < full; i++) s += __builtin_popcount((unsigned)(qb[i] ^ r[i]));
    if (d % 8) s += __builtin_popcount((unsigned)((qb[i] ^ r[i]) & ((1u << (d % 8)) - 1u)));
    return s;
}

#define ROWS_LOOP(b, expr)                                                                                        \
    for (size_t j = 0; j < (b)->n; j++) {                                                                         \
        const unsigned char *r = (b)->records + emb_qblock_pos((b), j) * (b)->bytes;                              \
        out[j] = expr;                                                                                            \
    }

/* the exact code product times the row's scale: one float multiply, the same on every set */
static inline float int8_scaled(int32_t isum, const unsigned char *r, size_t d) {
    return (float)isum * load_f32(r + d);
}

static void int8_dots_c(const int8_t *q8, size_t d, const emb_qblock *b, float *out) {
    ROWS_LOOP(b, int8_scaled(int8_dot_c(q8, r, d), r, d))
}
static void f16_dots_c(const float *qf, size_t d, const emb_qblock *b, float *out) {
    ROWS_LOOP(b, f16_dot_c(qf, r, d))
}
static void f32_dots_c(const float *qf, size_t d, const emb_qblock *b, float *out) {
    ROWS_LOOP(b, f32_dot_c(qf, r, d))
}
static void hamming_rows_c(const uint8_t *qb, size_t d, const emb_qblock *b, float *out) {
    ROWS_LOOP(b, (float)hamming_c(qb, r, d))
}

#if QK_X86
/* ---------- AVX2 (+ FMA, F16C, POPCNT) ---------- */

T_AVX2 static inline int32_t hsum256_epi32(__m256i v) {
    __m128i s = _mm_add_epi32(_mm256_castsi256_si128(v), _mm256_extracti128_si256(v, 1));
    s = _mm_add_epi32(s, _mm_shuffle_epi32(s, 0x4e));
    s = _mm_add_epi32(s, _mm_shuffle_epi32(s, 0xb1));
    return _mm_cvtsi128_si32(s);
}

T_AVX2 static inline float hsum256_ps(__m256 v) {
    __m128 s = _mm_add_ps(_mm256_castps256_ps128(v), _mm256_extractf128_ps(v, 1));
    s = _mm_add_ps(s, _mm_movehl_ps(s, s));
    s = _mm_add_ss(s, _mm_movehdup_ps(s));
    return _mm_cvtss_f32(s);
}

/* |q| (u8) times the row's code with q's sign (s8): pairs stay within int16 (2 * 127 * 127) */
T_AVX2 static void int8_dots_avx2(const int8_t *q8, const uint8_t *qabs, size_t d, const emb_qblock *b,
                                  float *out) {
    const __m256i ones = _mm256_set1_epi16(1);
    size_t body = d - d % 32;
    for (size_t j = 0; j < b->n; j++) {
        const unsigned char *r = b->records + emb_qblock_pos(b, j) * b->bytes;
        __m256i acc = _mm256_setzero_si256();
        for (size_t i = 0; i < body; i += 32) {
            __m256i x = _mm256_sign_epi8(_mm256_loadu_si256((const __m256i *)(r + i)),
                                         _mm256_load_si256((const __m256i *)(q8 + i)));
            __m256i p = _mm256_maddubs_epi16(_mm256_load_si256((const __m256i *)(qabs + i)), x);
            acc = _mm256_add_epi32(acc, _mm256_madd_epi16(p, ones));
        }
        int32_t isum =
            (int32_t)((uint32_t)hsum256_epi32(acc) + (uint32_t)int8_dot_c(q8 + body, r + body, d - body));
        out[j] = int8_scaled(isum, r, d);
    }
}

T_AVX2 static void f16_dots_avx2(const float *qf, size_t d, const emb_qblock *b, float *out) {
    size_t body = d - d % 8;
    for (size_t j = 0; j < b->n; j++) {
        const unsigned char *r = b->records + emb_qblock_pos(b, j) * b->bytes;
        __m256 a0 = _mm256_setzero_ps(), a1 = a0, a2 = a0, a3 = a0;
        size_t i = 0;
        for (; i + 32 <= body; i += 32) {
            a0 = _mm256_fmadd_ps(_mm256_cvtph_ps(_mm_loadu_si128((const __m128i *)(r + 2 * i))),
                                 _mm256_load_ps(qf + i), a0);
            a1 = _mm256_fmadd_ps(_mm256_cvtph_ps(_mm_loadu_si128((const __m128i *)(r + 2 * i + 16))),
                                 _mm256_load_ps(qf + i + 8), a1);
            a2 = _mm256_fmadd_ps(_mm256_cvtph_ps(_mm_loadu_si128((const __m128i *)(r + 2 * i + 32))),
                                 _mm256_load_ps(qf + i + 16), a2);
            a3 = _mm256_fmadd_ps(_mm256_cvtph_ps(_mm_loadu_si128((const __m128i *)(r + 2 * i + 48))),
                                 _mm256_load_ps(qf + i + 24), a3);
        }
        for (; i < body; i += 8)
            a0 = _mm256_fmadd_ps(_mm256_cvtph_ps(_mm_loadu_si128((const __m128i *)(r + 2 * i))),
                                 _mm256_load_ps(qf + i), a0);
        if (i < d) { /* the last d % 8 values, through a zero-padded copy (qf is padded with zeros) */
            uint16_t tail[8] = {0};
            memcpy(tail, r + 2 * i, 2 * (d - i));
            a1 = _mm256_fmadd_ps(_mm256_cvtph_ps(_mm_loadu_si128((const __m128i *)tail)), _mm256_load_ps(qf + i),
                                 a1);
        }
        out[j] = hsum256_ps(_mm256_add_ps(_mm256_add_ps(a0, a1), _mm256_add_ps(a2, a3)));
    }
}

T_AVX2 static void f32_dots_avx2(const float *qf, size_t d, const emb_qblock *b, float *out) {
    size_t body = d - d % 8;
    for (size_t j = 0; j < b->n; j++) {
        const unsigned char *r = b->records + emb_qblock_pos(b, j) * b->bytes;
        const float *x = (const float *)(const void *)r;
        __m256 a0 = _mm256_setzero_ps(), a1 = a0;
        size_t i = 0;
        for (; i + 16 <= body; i += 16) {
            a0 = _mm256_fmadd_ps(_mm256_loadu_ps(x + i), _mm256_load_ps(qf + i), a0);
            a1 = _mm256_fmadd_ps(_mm256_loadu_ps(x + i + 8), _mm256_load_ps(qf + i + 8), a1);
        }
        for (; i < body; i += 8) a0 = _mm256_fmadd_ps(_mm256_loadu_ps(x + i), _mm256_load_ps(qf + i), a0);
        if (i < d) {
            __m256i idx = _mm256_setr_epi32(0, 1, 2, 3, 4, 5, 6, 7);
            __m256i mask = _mm256_cmpgt_epi32(_mm256_set1_epi32((int)(d - i)), idx);
            a1 = _mm256_fmadd_ps(_mm256_maskload_ps(x + i, mask), _mm256_load_ps(qf + i), a1);
        }
        out[j] = hsum256_ps(_mm256_add_ps(a0, a1));
    }
}

/* the scalar loop, compiled with the POPCNT instruction */
T_AVX2 static void hamming_rows_popcnt(const uint8_t *qb, size_t d, const emb_qblock *b,
                                       float *out){ROWS_LOOP(b, (float)hamming_c(qb, r, d))}

/* ---------- AVX-512 (F, BW, VL, VNNI, VPOPCNTDQ) ---------- */

/* vpdpbusd multiplies unsigned by signed bytes: the row's code + 128 (code ^ 0x80) is
 * unsigned, so the sum is q.code + 128 * sum(q). 32-byte loads: streaming from memory, 64-byte
 * loads that straddle cache lines (rows are d + 4 bytes) ran 15% slower on Zen 5; the tail is
 * loaded masked (zeros, not read). */
T_AVX512 static void int8_dots_avx512(const int8_t *q8, int32_t qsum, size_t d, const emb_qblock *b, float *out) {
    const __m256i bias = _mm256_set1_epi8((char)0x80);
    size_t body = d - d % 32;
    __mmask32 tail = (__mmask32)((1ull << (d - body)) - 1u);
    uint32_t offset = (uint32_t)qsum * 128u;
    for (size_t j = 0; j < b->n; j++) {
        const unsigned char *r = b->records + emb_qblock_pos(b, j) * b->bytes;
        __m256i a0 = _mm256_setzero_si256(), a1 = a0;
        size_t i = 0;
        for (; i + 64 <= body; i += 64) {
            a0 = _mm256_dpbusd_epi32(a0, _mm256_xor_si256(_mm256_loadu_si256((const __m256i *)(r + i)), bias),
                                     _mm256_load_si256((const __m256i *)(q8 + i)));
            a1 = _mm256_dpbusd_epi32(a1, _mm256_xor_si256(_mm256_loadu_si256((const __m256i *)(r + i + 32)), bias),
                                     _mm256_load_si256((const __m256i *)(q8 + i + 32)));
        }
        if (i < body) {
            a0 = _mm256_dpbusd_epi32(a0, _mm256_xor_si256(_mm256_loadu_si256((const __m256i *)(r + i)), bias),
                                     _mm256_load_si256((const __m256i *)(q8 + i)));
            i += 32;
        }
        if (tail)
            a1 = _mm256_dpbusd_epi32(a1, _mm256_xor_si256(_mm256_maskz_loadu_epi8(tail, r + i), bias),
                                     _mm256_load_si256((const __m256i *)(q8 + i)));
        out[j] = int8_scaled((int32_t)((uint32_t)hsum256_epi32(_mm256_add_epi32(a0, a1)) - offset), r, d);
    }
}

T_AVX512 static void f16_dots_avx512(const float *qf, size_t d, const emb_qblock *b, float *out) {
    size_t body = d - d % 16;
    __mmask16 tail = (__mmask16)((1u << (d - body)) - 1u);
    for (size_t j = 0; j < b->n; j++) {
        const unsigned char *r = b->records + emb_qblock_pos(b, j) * b->bytes;
        __m512 a0 = _mm512_setzero_ps(), a1 = a0, a2 = a0, a3 = a0;
        size_t i = 0;
        for (; i + 64 <= body; i += 64) {
            a0 = _mm512_fmadd_ps(_mm512_cvtph_ps(_mm256_loadu_si256((const __m256i *)(r + 2 * i))),
                                 _mm512_load_ps(qf + i), a0);
            a1 = _mm512_fmadd_ps(_mm512_cvtph_ps(_mm256_loadu_si256((const __m256i *)(r + 2 * i + 32))),
                                 _mm512_load_ps(qf + i + 16), a1);
            a2 = _mm512_fmadd_ps(_mm512_cvtph_ps(_mm256_loadu_si256((const __m256i *)(r + 2 * i + 64))),
                                 _mm512_load_ps(qf + i + 32), a2);
            a3 = _mm512_fmadd_ps(_mm512_cvtph_ps(_mm256_loadu_si256((const __m256i *)(r + 2 * i + 96))),
                                 _mm512_load_ps(qf + i + 48), a3);
        }
        for (; i < body; i += 16)
            a0 = _mm512_fmadd_ps(_mm512_cvtph_ps(_mm256_loadu_si256((const __m256i *)(r + 2 * i))),
                                 _mm512_load_ps(qf + i), a0);
        if (tail)
            a1 = _mm512_fmadd_ps(_mm512_cvtph_ps(_mm256_maskz_loadu_epi16(tail, r + 2 * i)),
                                 _mm512_load_ps(qf + i), a1);
        out[j] = _mm512_reduce_add_ps(_mm512_add_ps(_mm512_add_ps(a0, a1), _mm512_add_ps(a2, a3)));
    }
}

T_AVX512 static void f32_dots_avx512(const float *qf, size_t d, const emb_qblock *b, float *out) {
    size_t body = d - d % 16;
    __mmask16 tail = (__mmask16)((1u << (d - body)) - 1u);
    for (size_t j = 0; j < b->n; j++) {
        const float *x = (const float *)(const void *)(b->records + emb_qblock_pos(b, j) * b->bytes);
        __m512 a0 = _mm512_setzero_ps(), a1 = a0;
        size_t i = 0;
        for (; i + 32 <= body; i += 32) {
            a0 = _mm512_fmadd_ps(_mm512_loadu_ps(x + i), _mm512_load_ps(qf + i), a0);
            a1 = _mm512_fmadd_ps(_mm512_loadu_ps(x + i + 16), _mm512_load_ps(qf + i + 16), a1);
        }
        for (; i < body; i += 16) a0 = _mm512_fmadd_ps(_mm512_loadu_ps(x + i), _mm512_load_ps(qf + i), a0);
        if (tail) a1 = _mm512_fmadd_ps(_mm512_maskz_loadu_ps(tail, x + i), _mm512_load_ps(qf + i), a1);
        out[j] = _mm512_reduce_add_ps(_mm512_add_ps(a0, a1));
    }
}

/* 32-byte chunks (a masked 64-byte load straddling two rows ran 4x slower from memory), then
 * 16, then the last bytes masked, with the bits past d cleared. */
T_AVX512 static void hamming_rows_avx512(const uint8_t *qb, size_t d, const emb_qblock *b, float *out) {
    size_t nbytes = (d + 7) / 8, body = nbytes - nbytes % 32;
    if (body == nbytes && body && d % 8) body -= 32; /* the last byte's padding is cleared below */
    size_t half = nbytes - body >= 16 ? 16 : 0, rest = nbytes - body - half; /* rest: 0 to 16 */
    __mmask16 tail = (__mmask16)((1u << rest) - 1u);
    unsigned char keep[16]; /* the valid bits of the last 16-byte chunk */
    memset(keep, 0xff, sizeof keep);
    if (d % 8) keep[(rest ? rest : 16) - 1] = (unsigned char)((1u << (d % 8)) - 1u);
    const __m128i keep_v = _mm_loadu_si128((const __m128i *)keep), ones = _mm_set1_epi8(-1);
    const __m128i q16 = half ? _mm_load_si128((const __m128i *)(qb + body)) : ones;
    const __m128i qt = rest ? _mm_load_si128((const __m128i *)(qb + body + half)) : ones;
    for (size_t j = 0; j < b->n; j++) {
        const unsigned char *r = b->records + emb_qblock_pos(b, j) * b->bytes;
        __m256i acc = _mm256_setzero_si256();
        for (size_t i = 0; i < body; i += 32)
            acc = _mm256_add_epi64(
                acc, _mm256_popcnt_epi64(_mm256_xor_si256(_mm256_loadu_si256((const __m256i *)(r + i)),
                                                          _mm256_load_si256((const __m256i *)(qb + i)))));
        __m128i s = _mm_add_epi64(_mm256_castsi256_si128(acc), _mm256_extracti128_si256(acc, 1));
        if (half) {
            __m128i x = _mm_xor_si128(_mm_loadu_si128((const __m128i *)(r + body)), q16);
            s = _mm_add_epi64(s, _mm_popcnt_epi64(_mm_and_si128(x, rest ? ones : keep_v)));
        }
        if (rest) {
            __m128i x = _mm_xor_si128(_mm_maskz_loadu_epi8(tail, r + body + half), qt);
            s = _mm_add_epi64(s, _mm_popcnt_epi64(_mm_and_si128(x, keep_v)));
        }
        out[j] = (float)(_mm_cvtsi128_si64(s) + _mm_extract_epi64(s, 1));
    }
}
#endif

/* ---------- dispatch ---------- */

void emb_quant_kernels_int8_dots(emb_qpath p, const int8_t *q8, const uint8_t *qabs, int32_t qsum, size_t d,
                                 const emb_qblock *b, float *out) {
#if QK_X86
    if (p == EMB_QPATH_AVX512) {
        int8_dots_avx512(q8, qsum, d, b, out);
        return;
    }
    if (p == EMB_QPATH_AVX2) {
        int8_dots_avx2(q8, qabs, d, b, out);
        return;
    }
#endif
    (void)p, (void)qabs, (void)qsum;
    int8_dots_c(q8, d, b, out);
}

void emb_quant_kernels_f16_dots(emb_qpath p, const float *qf, size_t d, const emb_qblock *b, float *out) {
#if QK_X86
    if (p == EMB_QPATH_AVX512) {
        f16_dots_avx512(qf, d, b, out);
        return;
    }
    if (p == EMB_QPATH_AVX2) {
        f16_dots_avx2(qf, d, b, out);
        return;
    }
#endif
    (void)p;
    f16_dots_c(qf, d, b, out);
}

void emb_quant_kernels_f32_dots(emb_qpath p, const float *qf, size_t d, const emb_qblock *b, float *out) {
#if QK_X86
    if (p == EMB_QPATH_AVX512) {
        f32_dots_avx512(qf, d, b, out);
        return;
    }
    if (p == EMB_QPATH_AVX2) {
        f32_dots_avx2(qf, d, b, out);
        return;
    }
#endif
    (void)p;
    f32_dots_c(qf, d, b, out);
}

void emb_quant_kernels_hamming(emb_qpath p, const uint8_t *qbits, size_t d, const emb_qblock *b, float *out) {
#if QK_X86
    if (p == EMB_QPATH_AVX512) {
        hamming_rows_avx512(qbits, d, b, out);
        return;
    }
    if (p == EMB_QPATH_AVX2) {
        hamming_rows_popcnt(qbits, d, b, out);
        return;
    }
#endif
    (void)p;
    hamming_rows_c(qbits, d, b, out);
}
