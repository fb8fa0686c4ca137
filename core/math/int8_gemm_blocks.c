/* The int8 products of block weights (int8_gemm.h: GGUF's Q8_0 codes with a scale per channel and
 * block of 32 inputs), per kernel set. The packed codes are laid out as for per-channel weights
 * (panels of 16 channels, 4 inputs side by side), so a block is 8 groups of 4 inputs: 512
 * consecutive bytes of a panel. Each tile sums a block's 8 groups in int32 (exact: 32 terms),
 * converts the sums to float and adds them, times the channels' block scales, into float
 * accumulators with one fma; then the next block. The epilogue subtracts zp wcorr, scales by sa,
 * adds the bias and C. Every set does the same float operations in the same order (fmaf in C),
 * so the results are the same bits on every set. */
/* The register tiles are written as rows of macro calls, which clang-format cannot lay out. */
// clang-format off
#include "math/int8_gemm_kernels.h"
#include <math.h>
#include <stdlib.h>
#include <string.h>

#if defined(__x86_64__) && defined(__GNUC__)
#define B_X86 1
#include <immintrin.h>
#define T_AVX2 __attribute__((target("avx2,fma")))
#define T_AVXVNNI __attribute__((target("avx2,fma,avxvnni")))
#define T_AVX512 __attribute__((target("avx512f,avx512bw,avx512vl,avx512vnni,avx2,fma")))
#define INLINE static inline __attribute__((always_inline))
#else
#define B_X86 0
#endif

#define load_i32 emb_int8_gemm_kernels_load_i32
#define GROUPS (EMB_I8_BLOCK / 4) /* groups of 4 inputs in a block */

/* Channel n's 16 block scales of panel n / 16, block b, start here. */
static inline const float *scales_at(const emb_int8_gemm_kernels_args *g, int p, int b) {
    return g->bs + ((size_t)p * (size_t)g->nb + (size_t)b) * 16;
}

/* The epilogue of one value (the reference every vector epilogue equals). */
static inline void epilogue1(const emb_int8_gemm_kernels_args *g, int m, int n, float acc) {
    float z = (float)g->zp[m] * g->wcorr[n];
    float t = acc - z;
    t = t * g->sa[m];
    t = t + (g->bias ? g->bias[n] : 0.0f);
    float *c = g->C + (size_t)m * g->ldc + n;
    *c = g->beta ? *c + t : t;
}

/* ---------- scalar ---------- */

static void run_scalar(const emb_int8_gemm_kernels_args *g, int m0, int m1, int p0, int p1) {
    const size_t Kp = (size_t)g->Kp;
    for (int p = p0; p < p1; p++) {
        const int8_t *w = g->wp + (size_t)p * 16 * Kp;
        int n0 = 16 * p, nn = g->N - n0 < 16 ? g->N - n0 : 16;
        for (int m = m0; m < m1; m++) {
            const uint8_t *a = g->u + (size_t)m * Kp;
            float acc[16] = {0};
            for (int b = 0; b < g->nb; b++) {
                int32_t s[16] = {0};
                for (size_t k = (size_t)b * EMB_I8_BLOCK; k < (size_t)(b + 1) * EMB_I8_BLOCK; k += 4)
                    for (int c = 0; c < 16; c++)
                        for (int j = 0; j < 4; j++) s[c] += (int32_t)a[k + j] * w[16 * k + 4 * c + j];
                const float *d = scales_at(g, p, b);
                for (int c = 0; c < 16; c++) acc[c] = fmaf((float)s[c], d[c], acc[c]);
            }
            for (int c = 0; c < nn; c++) epilogue1(g, m, n0 + c, acc[c]);
        }
    }
}

#if B_X86
/* ---------- AVX-512 VNNI: MR (<= 6) rows x NP (<= 2) panels: 12 int32 and 12 float accumulators ---------- */

#define FOR_NP(X, r) X(r, 0) X(r, 1)
#define FOR_TILE(X) FOR_NP(X, 0) FOR_NP(X, 1) FOR_NP(X, 2) FOR_NP(X, 3) FOR_NP(X, 4) FOR_NP(X, 5)
#define F512_ZERO(r, v) __m512 f##r##v = _mm512_setzero_ps();
#define I512_ZERO(r, v) __m512i c##r##v = _mm512_setzero_si512();
#define I512_DP(r, v) \
    if (MR > r && NP > v) c##r##v = _mm512_dpbusd_epi32(c##r##v, x##r, w##v);
#define I512_ROW(r)                                                                             \
    if (MR > r) {                                                                               \
        __m512i x##r = _mm512_set1_epi32(load_i32(a + r * Kp + k));                             \
        FOR_NP(I512_DP, r)                                                                      \
    }
#define F512_FMA(r, v) \
    if (MR > r && NP > v) f##r##v = _mm512_fmadd_ps(_mm512_cvtepi32_ps(c##r##v), d##v, f##r##v);
#define F512_STORE(r, v) \
    if (MR > r && NP > v) _mm512_store_ps(sums + 16 * (2 * r + v), f##r##v);

T_AVX512 __attribute__((noinline)) static void epilogue512(const emb_int8_gemm_kernels_args *g, int m, int p, int MR,
                                                          int NP, const float *sums) {
    for (int v = 0; v < NP; v++) {
        int n = 16 * (p + v), valid = g->N - n;
        __mmask16 mask = valid >= 16 ? (__mmask16)0xffff : (__mmask16)((1u << valid) - 1u);
        __m512 corr = _mm512_loadu_ps(g->wcorr + n);
        __m512 bias = g->bias ? _mm512_maskz_loadu_ps(mask, g->bias + n) : _mm512_setzero_ps();
        for (int r = 0; r < MR; r++) {
            /* as epilogue1: z = zp wcorr, (acc - z) sa, + bias, + C */
            __m512 z = _mm512_mul_ps(_mm512_set1_ps((float)g->zp[m + r]), corr);
            __m512 t = _mm512_mul_ps(_mm512_sub_ps(_mm512_load_ps(sums + 16 * (2 * r + v)), z),
                                     _mm512_set1_ps(g->sa[m + r]));
            t = _mm512_add_ps(t, bias);
            float *c = g->C + (size_t)(m + r) * g->ldc + n;
            if (g->beta) t = _mm512_add_ps(_mm512_maskz_loadu_ps(mask, c), t);
            _mm512_mask_storeu_ps(c, mask, t);
        }
    }
}

T_AVX512 INLINE void tile512(const emb_int8_gemm_kernels_args *g, int m, int p, const int MR, const int NP) {
    const size_t Kp = (size_t)g->Kp, ps = 16 * Kp;
    const int8_t *wp = g->wp + (size_t)p * ps;
    const uint8_t *a = g->u + (size_t)m * Kp;
    const size_t dstep = (size_t)g->nb * 16; /* from a panel's block scales to the next panel's */
    FOR_TILE(F512_ZERO)
    for (int b = 0; b < g->nb; b++) {
        FOR_TILE(I512_ZERO)
        for (size_t k = (size_t)b * EMB_I8_BLOCK; k < (size_t)(b + 1) * EMB_I8_BLOCK; k += 4) {
            const int8_t *bk = wp + 16 * k;
            __m512i w0 = _mm512_load_si512(bk);
            __m512i w1 = NP > 1 ? _mm512_load_si512(bk + ps) : w0;
            I512_ROW(0) I512_ROW(1) I512_ROW(2) I512_ROW(3) I512_ROW(4) I512_ROW(5)
        }
        const float *d = scales_at(g, p, b);
        __m512 d0 = _mm512_loadu_ps(d), d1 = NP > 1 ? _mm512_loadu_ps(d + dstep) : d0;
        FOR_TILE(F512_FMA)
    }
    __attribute__((aligned(64))) float sums[6 * 2 * 16];
    FOR_TILE(F512_STORE)
    epilogue512(g, m, p, MR, NP, sums);
}

#define TILE512(mr, np)                                                                          \
    T_AVX512 __attribute__((noinline)) static void tile512_##mr##_##np(const emb_int8_gemm_kernels_args *g, int m, int p) { \
        tile512(g, m, p, mr, np);                                                                \
    }
#define TILES512(mr) TILE512(mr, 1) TILE512(mr, 2)
TILES512(1) TILES512(2) TILES512(3) TILES512(4) TILES512(5) TILES512(6)
#define NAMES512(mr) {tile512_##mr##_1, tile512_##mr##_2}
typedef void (*tile_fn)(const emb_int8_gemm_kernels_args *g, int m, int p);
static const tile_fn tiles512[6][2] = {NAMES512(1), NAMES512(2), NAMES512(3), NAMES512(4), NAMES512(5), NAMES512(6)};
static void tile512_any(const emb_int8_gemm_kernels_args *g, int m, int p, int mr, int np) { tiles512[mr - 1][np - 1](g, m, p); }

/* ---------- the 8-channel epilogue of AVX2 and AVX-VNNI ---------- */

/* Row m, channels n .. n + 7 (the first `valid` of them) from their float sums. */
T_AVX2 INLINE void epilogue8(const emb_int8_gemm_kernels_args *g, int m, int n, int valid, __m256 acc) {
    if (valid < 8) {
        float v[8];
        _mm256_storeu_ps(v, acc);
        for (int j = 0; j < valid; j++) epilogue1(g, m, n + j, v[j]);
        return;
    }
    __m256 z = _mm256_mul_ps(_mm256_set1_ps((float)g->zp[m]), _mm256_loadu_ps(g->wcorr + n));
    __m256 t = _mm256_mul_ps(_mm256_sub_ps(acc, z), _mm256_set1_ps(g->sa[m]));
    t = _mm256_add_ps(t, g->bias ? _mm256_loadu_ps(g->bias + n) : _mm256_setzero_ps());
    float *c = g->C + (size_t)m * g->ldc + n;
    if (g->beta) t = _mm256_add_ps(_mm256_loadu_ps(c), t);
    _mm256_storeu_ps(c, t);
}

/* ---------- AVX-VNNI: MR (<= 3) rows x one panel (two halves of 8 channels) ---------- */

#define I256_ROW(r)                                                                             \
    if (MR > r) {                                                                               \
        __m256i x = _mm256_set1_epi32(load_i32(a + r * Kp + k));                                \
        c##r##0 = _mm256_dpbusd_avx_epi32(c##r##0, x, w0);                                      \
        c##r##1 = _mm256_dpbusd_avx_epi32(c##r##1, x, w1);                                      \
    }
#define F256_FMA(r)                                                                             \
    if (MR > r) {                                                                               \
        f##r##0 = _mm256_fmadd_ps(_mm256_cvtepi32_ps(c##r##0), d0, f##r##0);                    \
        f##r##1 = _mm256_fmadd_ps(_mm256_cvtepi32_ps(c##r##1), d1, f##r##1);                    \
    }
#define F256_END(r)                                                                             \
    if (MR > r) {                                                                               \
        epilogue8(g, m + r, n, valid, f##r##0);                                                 \
        if (valid > 8) epilogue8(g, m + r, n + 8, valid - 8, f##r##1);                          \
    }

T_AVXVNNI INLINE void tile256(const emb_int8_gemm_kernels_args *g, int m, int p, const int MR) {
    const size_t Kp = (size_t)g->Kp;
    const int8_t *wp = g->wp + (size_t)p * 16 * Kp;
    const uint8_t *a = g->u + (size_t)m * Kp;
    __m256 f00 = _mm256_setzero_ps(), f01 = f00, f10 = f00, f11 = f00, f20 = f00, f21 = f00;
    for (int b = 0; b < g->nb; b++) {
        __m256i c00 = _mm256_setzero_si256(), c01 = c00, c10 = c00, c11 = c00, c20 = c00, c21 = c00;
        for (size_t k = (size_t)b * EMB_I8_BLOCK; k < (size_t)(b + 1) * EMB_I8_BLOCK; k += 4) {
            __m256i w0 = _mm256_load_si256((const __m256i *)(wp + 16 * k)),
                    w1 = _mm256_load_si256((const __m256i *)(wp + 16 * k + 32));
            I256_ROW(0) I256_ROW(1) I256_ROW(2)
        }
        const float *d = scales_at(g, p, b);
        __m256 d0 = _mm256_loadu_ps(d), d1 = _mm256_loadu_ps(d + 8);
        F256_FMA(0) F256_FMA(1) F256_FMA(2)
    }
    int n = 16 * p, valid = g->N - n;
    F256_END(0) F256_END(1) F256_END(2)
}

#define TILE256(mr)                                                                              \
    T_AVXVNNI __attribute__((noinline)) static void tile256_##mr(const emb_int8_gemm_kernels_args *g, int m, int p) { \
        tile256(g, m, p, mr);                                                                    \
    }
TILE256(1) TILE256(2) TILE256(3)
static const tile_fn tiles256[3] = {tile256_1, tile256_2, tile256_3};
/* run_blocked's tiles of up to 6 rows, as tiles of up to 3 */
static void tile256_any(const emb_int8_gemm_kernels_args *g, int m, int p, int mr, int np) {
    (void)np;
    for (int r = 0; r < mr; r += 3) tiles256[(mr - r < 3 ? mr - r : 3) - 1](g, m + r, p);
}

/* ---------- AVX2 without VNNI: vpmaddwd on widened codes, MR (<= 2) rows x one panel ---------- */

/* Lanes (c, k..k+1), (c, k+2..k+3) of channels c = 0-3 in g0 and 4-7 in g1: the 8 channels' sums. */
T_AVX2 INLINE __m256i pair_sums(__m256i g0, __m256i g1) {
    return _mm256_permute4x64_epi64(_mm256_hadd_epi32(g0, g1), _MM_SHUFFLE(3, 1, 2, 0));
}

#define W16_ROW(r)                                                                              \
    if (MR > r) {                                                                               \
        int64_t x4;                                                                             \
        memcpy(&x4, a + (size_t)r * Kp + k, 8);                                                 \
        __m256i x = _mm256_set1_epi64x(x4);                                                     \
        c##r##0 = _mm256_add_epi32(c##r##0, _mm256_madd_epi16(x, _mm256_load_si256(bk)));       \
        c##r##1 = _mm256_add_epi32(c##r##1, _mm256_madd_epi16(x, _mm256_load_si256(bk + 1)));   \
        c##r##2 = _mm256_add_epi32(c##r##2, _mm256_madd_epi16(x, _mm256_load_si256(bk + 2)));   \
        c##r##3 = _mm256_add_epi32(c##r##3, _mm256_madd_epi16(x, _mm256_load_si256(bk + 3)));   \
    }
#define W16_FMA(r)                                                                              \
    if (MR > r) {                                                                               \
        f##r##0 = _mm256_fmadd_ps(_mm256_cvtepi32_ps(pair_sums(c##r##0, c##r##1)), d0, f##r##0); \
        f##r##1 = _mm256_fmadd_ps(_mm256_cvtepi32_ps(pair_sums(c##r##2, c##r##3)), d1, f##r##1); \
    }

/* Rows m .. m + MR - 1 (widened in a, row stride Kp), panel p (widened in w). */
T_AVX2 INLINE void tile16(const emb_int8_gemm_kernels_args *g, const int16_t *a, const int16_t *w, int m, int p,
                          const int MR) {
    const size_t Kp = (size_t)g->Kp;
    __m256 f00 = _mm256_setzero_ps(), f01 = f00, f10 = f00, f11 = f00;
    for (int b = 0; b < g->nb; b++) {
        __m256i c00 = _mm256_setzero_si256(), c01 = c00, c02 = c00, c03 = c00, c10 = c00, c11 = c00, c12 = c00,
                c13 = c00;
        for (size_t k = (size_t)b * EMB_I8_BLOCK; k < (size_t)(b + 1) * EMB_I8_BLOCK; k += 4) {
            const __m256i *bk = (const __m256i *)(w + 16 * k);
            W16_ROW(0) W16_ROW(1)
        }
        const float *d = scales_at(g, p, b);
        __m256 d0 = _mm256_loadu_ps(d), d1 = _mm256_loadu_ps(d + 8);
        W16_FMA(0) W16_FMA(1)
    }
    int n = 16 * p, valid = g->N - n;
    F256_END(0) F256_END(1)
}

T_AVX2 __attribute__((noinline)) static void tile16_1(const emb_int8_gemm_kernels_args *g, const int16_t *a,
                                                      const int16_t *w, int m, int p) { tile16(g, a, w, m, p, 1); }
T_AVX2 __attribute__((noinline)) static void tile16_2(const emb_int8_gemm_kernels_args *g, const int16_t *a,
                                                      const int16_t *w, int m, int p) { tile16(g, a, w, m, p, 2); }

static const emb_int8_gemm_avx2_tile tiles16[2] = {tile16_1, tile16_2};
#endif

void emb_int8_gemm_blocks_run(emb_int8_gemm_path p, const emb_int8_gemm_kernels_args *g, int m0, int m1, int p0, int p1) {
#if B_X86
    switch (p) {
    case EMB_I8_AVX512_VNNI: emb_int8_gemm_kernels_blocked(g, m0, m1, p0, p1, 2, tile512_any); return;
    case EMB_I8_AVX_VNNI: emb_int8_gemm_kernels_blocked(g, m0, m1, p0, p1, 1, tile256_any); return;
    case EMB_I8_AVX2:
        if (emb_int8_gemm_avx2_chunks(g, m0, m1, p0, p1, 2, tiles16) == 0) return;
        break; /* out of memory: the same sums in C */
    default: break;
    }
#endif
    (void)p;
    run_scalar(g, m0, m1, p0, p1);
}
// clang-format on
