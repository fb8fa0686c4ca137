/* The int8 products of AVX2 without VNNI (int8_gemm_kernels.h): exact int32 sums with vpmaddwd,
 * whose 16 int16 products are summed in pairs into 8 int32 lanes without saturation (vpmaddubsw
 * would saturate at 2 x 255 x 127).
 *
 * Each chunk of activation rows is widened to int16 once, and each panel's packed codes (per 16
 * channels, 4 codes k..k+3 of each channel side by side, as the VNNI kernels read them) once per
 * chunk. A vpmaddwd of 4 channels' 4 widened codes against a row's 4 codes broadcast (one
 * vpbroadcastq from memory) leaves each channel's k, k+1 and k+2, k+3 sums in two lanes; a tile
 * of 3 rows x 16 channels keeps them in 12 accumulators, takes the weights as memory operands
 * (so a broadcast serves 4 products and nothing else needs a register) and adds each channel's
 * two lanes once, at its end.
 *
 * And the AVX-VNNI kernels (256-bit vpdpbusd on the same packed codes), which share the 8-lane
 * epilogue. */
#include "math/int8_gemm_kernels.h"
#include <stdlib.h>
#include <string.h>

#if defined(__x86_64__) && defined(__GNUC__)
#include <immintrin.h>
#define T_AVX2 __attribute__((target("avx2,fma")))
#define T_AVXVNNI __attribute__((target("avx2,fma,avxvnni")))
#define INLINE static inline __attribute__((always_inline))

/* Rows per tile: 4 accumulators a row, a broadcast and a product in 16 registers. */
#define TILE_ROWS 3

#define load_i32 emb_int8_gemm_kernels_load_i32

/* n codes (a multiple of 4) as int16: the rows of activations and, sign-extended, the panels. */
T_AVX2 void emb_int8_gemm_avx2_widen_u8(const uint8_t *u, int n, int16_t *out) {
    int k = 0;
    for (; k + 16 <= n; k += 16)
        _mm256_storeu_si256((__m256i *)(out + k), _mm256_cvtepu8_epi16(_mm_loadu_si128((const __m128i *)(u + k))));
    for (; k < n; k++) out[k] = u[k];
}
T_AVX2 void emb_int8_gemm_avx2_widen_s8(const int8_t *q, size_t n, int16_t *out) {
    for (size_t k = 0; k < n; k += 16) /* n: a multiple of 64 */
        _mm256_store_si256((__m256i *)(out + k), _mm256_cvtepi8_epi16(_mm_load_si128((const __m128i *)(q + k))));
}

/* Lanes (c, k..k+1), (c, k+2..k+3) of channels c = 0-3 in g0 and 4-7 in g1: the 8 channels' sums. */
T_AVX2 INLINE __m256i pair_sums(__m256i g0, __m256i g1) {
    return _mm256_permute4x64_epi64(_mm256_hadd_epi32(g0, g1), _MM_SHUFFLE(3, 1, 2, 0));
}

/* Row m, channels n .. n + 7 (the first `valid` of them): as epilogue1, 8 at a time. */
T_AVX2 INLINE void epilogue8(const emb_int8_gemm_kernels_args *g, int m, int n, int valid, __m256i acc) {
    if (valid < 8) {
        int32_t v[8];
        _mm256_storeu_si256((__m256i *)v, acc);
        for (int j = 0; j < valid; j++) emb_int8_gemm_kernels_epilogue1(g, m, n + j, v[j]);
        return;
    }
    __m256i P = _mm256_sub_epi32(acc, _mm256_mullo_epi32(_mm256_set1_epi32(g->zp[m]),
                                                         _mm256_loadu_si256((const __m256i *)(g->colsum + n))));
    if (g->P) {
        _mm256_storeu_si256((__m256i *)(g->P + (size_t)m * g->ldp + n), P);
        return;
    }
    __m256 s = _mm256_mul_ps(_mm256_set1_ps(g->sa[m]), _mm256_loadu_ps(g->sw + n));
    __m256 t = _mm256_mul_ps(_mm256_cvtepi32_ps(P), s);
    t = _mm256_add_ps(t, g->bias ? _mm256_loadu_ps(g->bias + n) : _mm256_setzero_ps());
    float *c = g->C + (size_t)m * g->ldc + n;
    if (g->beta) t = _mm256_add_ps(_mm256_loadu_ps(c), t);
    _mm256_storeu_ps(c, t);
}

/* Rows m .. m + rows - 1 (widened in a, row stride Kp), panel p (widened in b). Named accumulators,
 * not arrays: GCC keeps arrays of vectors on the stack. rows is a constant after inlining. */
T_AVX2 INLINE void tile(const emb_int8_gemm_kernels_args *g, const int16_t *a, const int16_t *b, int m, int p,
                        const int rows) {
    const size_t Kp = (size_t)g->Kp;
    __m256i c00 = _mm256_setzero_si256(), c01 = c00, c02 = c00, c03 = c00, c10 = c00, c11 = c00, c12 = c00,
            c13 = c00, c20 = c00, c21 = c00, c22 = c00, c23 = c00;
    for (size_t k = 0; k < Kp; k += 4) {
        const __m256i *bk = (const __m256i *)(b + 16 * k);
#define ROW(r)                                                                                                    \
    do {                                                                                                          \
        if (rows > r) {                                                                                           \
            int64_t x4;                                                                                           \
            memcpy(&x4, a + (size_t)r * Kp + k, 8);                                                               \
            __m256i x = _mm256_set1_epi64x(x4);                                                                   \
            c##r##0 = _mm256_add_epi32(c##r##0, _mm256_madd_epi16(x, _mm256_load_si256(bk)));                     \
            c##r##1 = _mm256_add_epi32(c##r##1, _mm256_madd_epi16(x, _mm256_load_si256(bk + 1)));                 \
            c##r##2 = _mm256_add_epi32(c##r##2, _mm256_madd_epi16(x, _mm256_load_si256(bk + 2)));                 \
            c##r##3 = _mm256_add_epi32(c##r##3, _mm256_madd_epi16(x, _mm256_load_si256(bk + 3)));                 \
        }                                                                                                         \
    } while (0)
        ROW(0);
        ROW(1);
        ROW(2);
#undef ROW
    }
    int n = 16 * p, valid = g->N - n;
#define STORE(r)                                                                                                  \
    do {                                                                                                          \
        if (rows > r) {                                                                                           \
            epilogue8(g, m + r, n, valid, pair_sums(c##r##0, c##r##1));                                           \
            if (valid > 8) epilogue8(g, m + r, n + 8, valid - 8, pair_sums(c##r##2, c##r##3));                    \
        }                                                                                                         \
    } while (0)
    STORE(0);
    STORE(1);
    STORE(2);
#undef STORE
}

/* One function per row count, so that each keeps its accumulators in registers. */
#define TILE(r)                                                                                                   \
    T_AVX2 __attribute__((noinline)) static void tile##r(const emb_int8_gemm_kernels_args *g, const int16_t *a,   \
                                                         const int16_t *b, int m, int p) {                        \
        tile(g, a, b, m, p, r);                                                                                   \
    }
TILE(1)
TILE(2)
TILE(3)
#undef TILE
static const emb_int8_gemm_avx2_tile tiles[TILE_ROWS] = {tile1, tile2, tile3};

/* Rows in chunks whose widened codes (about 256 KB) stay in L2 while every panel meets them; in a
 * chunk, panels outside (each widened once, 32 Kp bytes: in L1 up to K = 1024) and row tiles
 * inside. */
int emb_int8_gemm_avx2_chunks(const emb_int8_gemm_kernels_args *g, int m0, int m1, int p0, int p1, int tile_rows,
                              const emb_int8_gemm_avx2_tile *row_tiles) {
    const int Kp = g->Kp;
    int mc = (256 * 1024) / (2 * Kp) / tile_rows * tile_rows;
    mc = mc < 4 * tile_rows ? 4 * tile_rows : mc;
    int rows = m1 - m0 < mc ? m1 - m0 : mc;
    size_t abytes = ((size_t)rows * (size_t)Kp * 2 + 63) / 64 * 64;
    int16_t *a = aligned_alloc(64, abytes + (size_t)Kp * 32), *bw = a + abytes / 2;
    if (!a) return -1;
    for (int c0 = m0; c0 < m1; c0 += mc) {
        int c1 = m1 - c0 < mc ? m1 : c0 + mc;
        for (int m = c0; m < c1; m++)
            emb_int8_gemm_avx2_widen_u8(g->u + (size_t)m * (size_t)Kp, Kp, a + (size_t)(m - c0) * (size_t)Kp);
        for (int p = p0; p < p1; p++) {
            emb_int8_gemm_avx2_widen_s8(g->wp + (size_t)p * 16 * (size_t)Kp, 16 * (size_t)Kp, bw);
            for (int m = c0; m < c1; m += tile_rows)
                row_tiles[(c1 - m < tile_rows ? c1 - m : tile_rows) - 1](g, a + (size_t)(m - c0) * (size_t)Kp, bw,
                                                                         m, p);
        }
    }
    free(a);
    return 0;
}

int emb_int8_gemm_avx2_run(const emb_int8_gemm_kernels_args *g, int m0, int m1, int p0, int p1) {
    return emb_int8_gemm_avx2_chunks(g, m0, m1, p0, p1, TILE_ROWS, tiles);
}
/* The register tiles below are written as rows of macro calls, which clang-format cannot lay out. */
// clang-format off
#define ACC256_ZERO(r, v) __m256i c##r##v = _mm256_setzero_si256();
/* ---------- AVX-VNNI (256-bit vpdpbusd): MR rows x one panel (two 8-channel halves) ---------- */

#define ACC256_ROW(r)                                                                           \
    if (MR > r) {                                                                               \
        __m256i x##r = _mm256_set1_epi32(load_i32(a + r * Kp + k));                             \
        c##r##0 = _mm256_dpbusd_avx_epi32(c##r##0, x##r, w0);                                   \
        c##r##1 = _mm256_dpbusd_avx_epi32(c##r##1, x##r, w1);                                   \
    }
#define ACC256_STORE(r)                                                                         \
    if (MR > r) {                                                                               \
        _mm256_store_si256((__m256i *)(sums + 16 * r), c##r##0);                                \
        _mm256_store_si256((__m256i *)(sums + 16 * r + 8), c##r##1);                            \
    }

/* Through memory, as the AVX-512 tiles do (below). */
T_AVXVNNI __attribute__((noinline)) static void epilogue_tile8(const emb_int8_gemm_kernels_args *g, int m, int p, int MR,
                                                               const int32_t *sums) {
    int n = 16 * p, valid = g->N - n;
    for (int r = 0; r < MR; r++) {
        epilogue8(g, m + r, n, valid, _mm256_load_si256((const __m256i *)(sums + 16 * r)));
        if (valid > 8) epilogue8(g, m + r, n + 8, valid - 8, _mm256_load_si256((const __m256i *)(sums + 16 * r + 8)));
    }
}

T_AVXVNNI INLINE void tile_avxvnni(const emb_int8_gemm_kernels_args *g, int m, int p, const int MR) {
    const size_t Kp = (size_t)g->Kp;
    const int8_t *b = g->wp + (size_t)p * 16 * Kp;
    const uint8_t *a = g->u + (size_t)m * Kp;
    ACC256_ZERO(0, 0) ACC256_ZERO(0, 1) ACC256_ZERO(1, 0) ACC256_ZERO(1, 1) ACC256_ZERO(2, 0) ACC256_ZERO(2, 1)
    ACC256_ZERO(3, 0) ACC256_ZERO(3, 1) ACC256_ZERO(4, 0) ACC256_ZERO(4, 1) ACC256_ZERO(5, 0) ACC256_ZERO(5, 1)
    for (size_t k = 0; k < Kp; k += 4) {
        __m256i w0 = _mm256_load_si256((const __m256i *)(b + 16 * k)),
                w1 = _mm256_load_si256((const __m256i *)(b + 16 * k + 32));
        ACC256_ROW(0) ACC256_ROW(1) ACC256_ROW(2) ACC256_ROW(3) ACC256_ROW(4) ACC256_ROW(5)
    }
    __attribute__((aligned(32))) int32_t sums[6 * 16];
    ACC256_STORE(0) ACC256_STORE(1) ACC256_STORE(2) ACC256_STORE(3) ACC256_STORE(4) ACC256_STORE(5)
    epilogue_tile8(g, m, p, MR, sums);
}

#define AVXVNNI_TILE(mr)                                                                         \
    T_AVXVNNI __attribute__((noinline)) static void tile256_##mr(const emb_int8_gemm_kernels_args *g, int m, int p) { \
        tile_avxvnni(g, m, p, mr);                                                               \
    }
AVXVNNI_TILE(1) AVXVNNI_TILE(2) AVXVNNI_TILE(3) AVXVNNI_TILE(4) AVXVNNI_TILE(5) AVXVNNI_TILE(6)
static void (*const tiles256[6])(const emb_int8_gemm_kernels_args *g, int m, int p) = {tile256_1, tile256_2, tile256_3,
                                                                          tile256_4, tile256_5, tile256_6};

void emb_int8_gemm_avxvnni_tile(const emb_int8_gemm_kernels_args *g, int m, int p, int mr, int np) {
    (void)np;
    tiles256[mr - 1](g, m, p);
}
// clang-format on
#endif
