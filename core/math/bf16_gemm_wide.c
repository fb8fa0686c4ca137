/* bfloat16 products on CPUs without AVX512_BF16 (bf16_gemm_kernels.h): AVX2 + FMA and AVX-512F.
 *
 * A bf16 value is the high half of its float32, so widening is a mask (the pair's k + 1 value, in
 * the high half) or a 16-bit shift (its k value): exact. Each chunk of activation rows is widened
 * once into float32 pairs (k + 1, k), so that a row's operand is one vbroadcastss from memory,
 * and each weight pair vector is widened in registers (two instructions) for the 6 rows of a tile.
 * The sums are vdpbf16ps's, as the C loop of bf16_gemm.c computes them: per output, for each pair
 * in order, s = s + a[k+1] w[k+1] then s = s + a[k] w[k], each a fused multiply-add (the product
 * of two bf16 values is exact in float32) rounded to nearest, a result below float32's normal
 * range flushed to a signed zero by MXCSR's FTZ. */
/* The register tiles are rows of macro calls, which clang-format lays out differently at each
 * pass: this file keeps its own layout. */
// clang-format off
#include "math/bf16_gemm_kernels.h"
#include <stdlib.h>
#include <string.h>

#if defined(__x86_64__) && defined(__GNUC__)
#include <immintrin.h>
#define T_AVX2 __attribute__((target("avx2,fma")))
#define T_AVX512 __attribute__((target("avx512f,avx2,fma")))
#define INLINE static inline __attribute__((always_inline))

/* Rows a tile: AVX-512F's (and the row chunks' multiple), AVX2's (10 accumulators: with 12 GCC
 * spilled 4 of them, and each pair's two multiply-adds met through memory). */
#define ROWS 6
#ifndef ROWS2
#define ROWS2 5
#endif

/* Row of kp2 pairs as floats (k + 1, k) per pair. */
T_AVX2 static void widen_row(const uint32_t *x, int kp2, float *out) {
    const __m256i hi = _mm256_set1_epi32((int)0xffff0000u);
    int j = 0;
    for (; j + 8 <= kp2; j += 8) {
        __m256i v = _mm256_loadu_si256((const __m256i *)(x + j));
        __m256i h = _mm256_and_si256(v, hi), l = _mm256_slli_epi32(v, 16);
        __m256i u0 = _mm256_unpacklo_epi32(h, l), u1 = _mm256_unpackhi_epi32(h, l); /* pairs 0 1 4 5, 2 3 6 7 */
        _mm256_storeu_si256((__m256i *)(out + 2 * j), _mm256_permute2x128_si256(u0, u1, 0x20));
        _mm256_storeu_si256((__m256i *)(out + 2 * j + 8), _mm256_permute2x128_si256(u0, u1, 0x31));
    }
    for (; j < kp2; j++) {
        uint32_t h = x[j] & 0xffff0000u, l = x[j] << 16;
        memcpy(out + 2 * j, &h, 4);
        memcpy(out + 2 * j + 1, &l, 4);
    }
}

/* ---------- AVX2: 5 rows x 16 channels, 10 accumulators ---------- */

T_AVX2 INLINE void tile2(const emb_bf16_args *g, const float *a, int m, int p, const int mr) {
    const size_t kp2 = (size_t)g->kp2;
    const uint32_t *b = g->b + (size_t)p * 16 * kp2;
    const __m256i himask = _mm256_set1_epi32((int)0xffff0000u);
    __m256 c00 = _mm256_setzero_ps(), c01 = c00, c10 = c00, c11 = c00, c20 = c00, c21 = c00, c30 = c00, c31 = c00,
           c40 = c00, c41 = c00;
    for (size_t j = 0; j < kp2; j++) {
        const __m256i v0 = _mm256_load_si256((const __m256i *)(b + 16 * j)),
                      v1 = _mm256_load_si256((const __m256i *)(b + 16 * j + 8));
        const float *aj = a + 2 * j;
#define ROW(r, half)                                                                                              \
    do {                                                                                                          \
        if (mr > r) {                                                                                             \
            __m256 x = _mm256_broadcast_ss(aj + (size_t)r * 2 * kp2 + half);                                      \
            c##r##0 = _mm256_fmadd_ps(x, w0, c##r##0);                                                            \
            c##r##1 = _mm256_fmadd_ps(x, w1, c##r##1);                                                            \
        }                                                                                                         \
    } while (0)
        __m256 w0 = _mm256_castsi256_ps(_mm256_and_si256(v0, himask)),
               w1 = _mm256_castsi256_ps(_mm256_and_si256(v1, himask));
        ROW(0, 0);
        ROW(1, 0);
        ROW(2, 0);
        ROW(3, 0);
        ROW(4, 0);
        w0 = _mm256_castsi256_ps(_mm256_slli_epi32(v0, 16));
        w1 = _mm256_castsi256_ps(_mm256_slli_epi32(v1, 16));
        ROW(0, 1);
        ROW(1, 1);
        ROW(2, 1);
        ROW(3, 1);
        ROW(4, 1);
#undef ROW
    }
    __attribute__((aligned(32))) float sums[5 * 16];
#define STORE(r)                                                                                                  \
    do {                                                                                                          \
        if (mr > r) {                                                                                             \
            _mm256_store_ps(sums + 16 * r, c##r##0);                                                              \
            _mm256_store_ps(sums + 16 * r + 8, c##r##1);                                                          \
        }                                                                                                         \
    } while (0)
    STORE(0);
    STORE(1);
    STORE(2);
    STORE(3);
    STORE(4);
#undef STORE
    for (int r = 0; r < mr; r++) emb_bf16_epilogue(g, m + r, 16 * p, sums + 16 * r);
}

/* ---------- AVX-512F: 6 rows x 4 panels, 24 accumulators ---------- */

#define FOR_NP(X, r) X(r, 0) X(r, 1) X(r, 2) X(r, 3)
#define FOR_TILE(X) FOR_NP(X, 0) FOR_NP(X, 1) FOR_NP(X, 2) FOR_NP(X, 3) FOR_NP(X, 4) FOR_NP(X, 5)
#define ACC_ZERO(r, v) __m512 c##r##v = _mm512_setzero_ps();
#define ACC_FMA(r, v)                                                                                             \
    if (mr > r && np > v) c##r##v = _mm512_fmadd_ps(x, w##v, c##r##v);
#define ACC_ROW(half, r)                                                                                          \
    if (mr > r) {                                                                                                 \
        __m512 x = _mm512_set1_ps(aj[(size_t)r * 2 * kp2 + half]);                                                \
        FOR_NP(ACC_FMA, r)                                                                                        \
    }
#define ACC_STORE(r, v)                                                                                           \
    if (mr > r && np > v) _mm512_store_ps(sums + 16 * (4 * r + v), c##r##v);

T_AVX512 INLINE void tile512(const emb_bf16_args *g, const float *a, int m, int p, const int mr, const int np) {
    const size_t kp2 = (size_t)g->kp2, ps = 16 * kp2;
    const uint32_t *b = g->b + (size_t)p * ps;
    const __m512i himask = _mm512_set1_epi32((int)0xffff0000u);
    FOR_TILE(ACC_ZERO)
    for (size_t j = 0; j < kp2; j++) {
        const uint32_t *bj = b + 16 * j;
        const float *aj = a + 2 * j;
        __m512i v0 = _mm512_load_si512(bj);
        __m512i v1 = np > 1 ? _mm512_load_si512(bj + ps) : v0;
        __m512i v2 = np > 2 ? _mm512_load_si512(bj + 2 * ps) : v0;
        __m512i v3 = np > 3 ? _mm512_load_si512(bj + 3 * ps) : v0;
        __m512 w0 = _mm512_castsi512_ps(_mm512_and_si512(v0, himask)),
               w1 = _mm512_castsi512_ps(_mm512_and_si512(v1, himask)),
               w2 = _mm512_castsi512_ps(_mm512_and_si512(v2, himask)),
               w3 = _mm512_castsi512_ps(_mm512_and_si512(v3, himask));
        ACC_ROW(0, 0)
        ACC_ROW(0, 1) ACC_ROW(0, 2) ACC_ROW(0, 3) ACC_ROW(0, 4) ACC_ROW(0, 5) w0 =
            _mm512_castsi512_ps(_mm512_slli_epi32(v0, 16));
        w1 = _mm512_castsi512_ps(_mm512_slli_epi32(v1, 16));
        w2 = _mm512_castsi512_ps(_mm512_slli_epi32(v2, 16));
        w3 = _mm512_castsi512_ps(_mm512_slli_epi32(v3, 16));
        ACC_ROW(1, 0) ACC_ROW(1, 1) ACC_ROW(1, 2) ACC_ROW(1, 3) ACC_ROW(1, 4) ACC_ROW(1, 5)
    }
    __attribute__((aligned(64))) float sums[ROWS * 4 * 16];
    FOR_TILE(ACC_STORE)
    for (int r = 0; r < mr; r++)
        for (int v = 0; v < np; v++) emb_bf16_epilogue(g, m + r, 16 * (p + v), sums + 16 * (4 * r + v));
}

/* One function per tile shape, so that each keeps its accumulators in registers. */
typedef void (*tile_fn)(const emb_bf16_args *g, const float *a, int m, int p);
#define TILE2(mr)                                                                                                 \
    T_AVX2                                                                                                        \
        __attribute__((noinline)) static void tile2_##mr(const emb_bf16_args *g, const float *a, int m, int p) {  \
        tile2(g, a, m, p, mr);                                                                                    \
    }
TILE2(1)
TILE2(2)
TILE2(3)
TILE2(4)
TILE2(5)
static const tile_fn tiles2[5] = {tile2_1, tile2_2, tile2_3, tile2_4, tile2_5};
#define TILE512(mr, np)                                                                                           \
    T_AVX512 __attribute__((noinline)) static void tile512_##mr##_##np(const emb_bf16_args *g, const float *a,    \
                                                                       int m, int p) {                            \
        tile512(g, a, m, p, mr, np);                                                                              \
    }
#define TILES512(mr) TILE512(mr, 1) TILE512(mr, 2) TILE512(mr, 3) TILE512(mr, 4)
TILES512(1)
TILES512(2)
TILES512(3)
TILES512(4)
TILES512(5)
TILES512(6)
#define NAMES512(mr)                                                                                              \
    { tile512_##mr##_1, tile512_##mr##_2, tile512_##mr##_3, tile512_##mr##_4 }
static const tile_fn tiles512[ROWS][4] = {NAMES512(1), NAMES512(2), NAMES512(3),
                                          NAMES512(4), NAMES512(5), NAMES512(6)};

int emb_bf16_wide_run(int avx512, const emb_bf16_args *g, int m0, int m1, int p0, int p1) {
    /* rows in chunks whose widened pairs (about 256 KB) stay in L2 while every panel meets them */
    const int kp2 = g->kp2, width = avx512 ? 4 : 1, tr = avx512 ? ROWS : ROWS2;
    int mc = 256 * 1024 / (8 * kp2) / (ROWS * ROWS2) * (ROWS * ROWS2);
    if (mc < ROWS * ROWS2) mc = ROWS * ROWS2;
    int rows = m1 - m0 < mc ? m1 - m0 : mc;
    float *a = aligned_alloc(64, ((size_t)rows * (size_t)kp2 * 8 + 63) / 64 * 64);
    if (!a) return -1;
    unsigned csr = _mm_getcsr();
    _mm_setcsr(csr | 0x8000u); /* FTZ */
    for (int c0 = m0; c0 < m1; c0 += mc) {
        int c1 = m1 - c0 < mc ? m1 : c0 + mc;
        for (int m = c0; m < c1; m++)
            widen_row(g->a + (size_t)m * (size_t)kp2, kp2, a + (size_t)(m - c0) * 2 * (size_t)kp2);
        for (int p = p0; p < p1; p += width)
            for (int m = c0; m < c1; m += tr) {
                int mr = c1 - m < tr ? c1 - m : tr, np = p1 - p < width ? p1 - p : width;
                const float *am = a + (size_t)(m - c0) * 2 * (size_t)kp2;
                if (avx512) tiles512[mr - 1][np - 1](g, am, m, p);
                else tiles2[mr - 1](g, am, m, p);
            }
    }
    _mm_setcsr(csr);
    free(a);
    return 0;
}
#endif
// clang-format on
