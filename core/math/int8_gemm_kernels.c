/* int8 products per kernel set: register tiles of MR rows x NP panels of 16 channels, the
 * int32 sums kept in registers over the whole K, then one epilogue per tile (exact product,
 * then scale, bias, accumulate: the same float operations, in the same order, on every set).
 * One function per set with __attribute__((target)), picked per call, as quant_kernels.c does
 * (no ifunc: it runs too early under ASan). */
/* The register tiles are written as rows of macro calls, which clang-format cannot lay out (it
 * splits them differently at each pass): this file keeps its own layout. */
// clang-format off
#include "math/int8_gemm_kernels.h"
#include <string.h>

#if defined(__x86_64__) && defined(__GNUC__)
#define I8_X86 1
#include <immintrin.h>
#define T_AVX2 __attribute__((target("avx2,fma")))
#define T_AVX512 __attribute__((target("avx512f,avx512bw,avx512vl,avx512vnni,avx2,fma")))
#define INLINE static inline __attribute__((always_inline))
#else
#define I8_X86 0
#endif

#define load_i32 emb_int8_gemm_kernels_load_i32
#define epilogue1 emb_int8_gemm_kernels_epilogue1

/* ---------- scalar ---------- */

static void run_scalar(const emb_int8_gemm_kernels_args *g, int m0, int m1, int p0, int p1) {
    const size_t Kp = (size_t)g->Kp;
    for (int p = p0; p < p1; p++) {
        const int8_t *b = g->wp + (size_t)p * 16 * Kp;
        int n0 = 16 * p, nn = g->N - n0 < 16 ? g->N - n0 : 16;
        for (int m = m0; m < m1; m++) {
            const uint8_t *a = g->u + (size_t)m * Kp;
            int32_t acc[16] = {0};
            for (size_t k = 0; k < Kp; k += 4)
                for (int c = 0; c < 16; c++)
                    for (int j = 0; j < 4; j++) acc[c] += (int32_t)a[k + j] * b[16 * k + 4 * c + j];
            for (int c = 0; c < nn; c++) epilogue1(g, m, n0 + c, acc[c]);
        }
    }
}

int emb_int8_gemm_kernels_row_chunk(int Kp) {
    int mc = (256 * 1024) / Kp - 64;
    return mc < 48 ? 48 : mc > 1536 ? 1536 : mc / 6 * 6;
}

#if I8_X86
/* The order of the tiles (MR = 6 rows x `width` panels each). When the task's panels fit a 512 KB
 * share of L2, row tiles outside, panels inside: the output is written row by row (at M = 4096,
 * N = 1152 1.5x faster than by columns). Otherwise blocks of rows that, with one group of panels
 * (64 channels x Kp), stay in L2 while every panel group meets them (without blocks, at M = 4096
 * the rows came from L3 once per panel group: half the speed). */
void emb_int8_gemm_kernels_blocked(const emb_int8_gemm_kernels_args *g, int m0, int m1, int p0, int p1, int width,
                                   emb_int8_gemm_tile_fn tile) {
    const size_t Kp = (size_t)g->Kp;
    if ((size_t)(p1 - p0) * 16 * Kp <= EMB_I8K_L2_WEIGHTS) {
        for (int m = m0; m < m1; m += 6)
            for (int p = p0; p < p1; p += width) tile(g, m, p, m1 - m < 6 ? m1 - m : 6, p1 - p < width ? p1 - p : width);
        return;
    }
    int mc = emb_int8_gemm_kernels_row_chunk((int)Kp);
    for (int c0 = m0; c0 < m1; c0 += mc) {
        int c1 = m1 - c0 < mc ? m1 : c0 + mc;
        for (int p = p0; p < p1; p += width)
            for (int m = c0; m < c1; m += 6) tile(g, m, p, c1 - m < 6 ? c1 - m : 6, p1 - p < width ? p1 - p : width);
    }
}

/* ---------- AVX-512 VNNI: MR (<= 6) rows x NP (<= 4) panels, 24 accumulators at most ---------- */

/* Named accumulators, not arrays (GCC kept arrays of vectors on the stack). */
#define FOR_NP(X, r) X(r, 0) X(r, 1) X(r, 2) X(r, 3)
#define FOR_TILE(X) FOR_NP(X, 0) FOR_NP(X, 1) FOR_NP(X, 2) FOR_NP(X, 3) FOR_NP(X, 4) FOR_NP(X, 5)
#define ACC512_ZERO(r, v) __m512i c##r##v = _mm512_setzero_si512();
#define ACC512_DP(r, v) \
    if (MR > r && NP > v) c##r##v = _mm512_dpbusd_epi32(c##r##v, x##r, w##v);
#define ACC512_ROW(r)                                                                           \
    if (MR > r) {                                                                               \
        __m512i x##r = _mm512_set1_epi32(load_i32(a + r * Kp + k));                             \
        FOR_NP(ACC512_DP, r)                                                                    \
    }
/* the output tile's lines, fetched while the sums run (at M = 4096 they come from memory) */
#define C_PREFETCH(r, v) \
    if (MR > r && NP > v && g->C) _mm_prefetch((const char *)(g->C + (size_t)(m + r) * g->ldc + 16 * (p + v)), _MM_HINT_T0);
#define ACC512_STORE(r, v) \
    if (MR > r && NP > v) _mm512_store_si512(sums + 16 * (4 * r + v), c##r##v);

/* epilogue1 over the tile, 16 channels a vector: each panel's column terms loaded once, g's fields
 * held in locals (the masked stores may alias anything: GCC reloaded every field for every vector) */
T_AVX512 __attribute__((noinline)) static void epilogue_tile16(const emb_int8_gemm_kernels_args *g, int m, int p, int MR, int NP,
                                                              const int32_t *sums) {
    const int32_t *zp = g->zp;
    const float *sa = g->sa;
    int32_t *const Pout = g->P;
    float *const C = g->C;
    const size_t ldc = (size_t)g->ldc, ldp = (size_t)g->ldp;
    const int beta = g->beta;
    __m512i colsum[4];
    __m512 sw[4], bias[4];
    __mmask16 mask[4];
    for (int v = 0; v < NP; v++) {
        int n = 16 * (p + v), valid = g->N - n;
        mask[v] = valid >= 16 ? (__mmask16)0xffff : (__mmask16)((1u << valid) - 1u);
        colsum[v] = _mm512_loadu_si512(g->colsum + n);
        sw[v] = _mm512_loadu_ps(g->sw + n);
        bias[v] = g->bias ? _mm512_maskz_loadu_ps(mask[v], g->bias + n) : _mm512_setzero_ps();
    }
    for (int r = 0; r < MR; r++) {
        const __m512i z = _mm512_set1_epi32(zp[m + r]);
        const __m512 a = _mm512_set1_ps(sa[m + r]);
        for (int v = 0; v < NP; v++) {
            size_t n = (size_t)16 * (p + v);
            __m512i P = _mm512_sub_epi32(_mm512_load_si512(sums + 16 * (4 * r + v)), _mm512_mullo_epi32(z, colsum[v]));
            if (Pout) {
                _mm512_mask_storeu_epi32(Pout + (size_t)(m + r) * ldp + n, mask[v], P);
                continue;
            }
            /* as epilogue1: s = sa sw, P s, + bias, + C */
            __m512 t = _mm512_add_ps(_mm512_mul_ps(_mm512_cvtepi32_ps(P), _mm512_mul_ps(a, sw[v])), bias[v]);
            float *c = C + (size_t)(m + r) * ldc + n;
            if (beta) t = _mm512_add_ps(_mm512_maskz_loadu_ps(mask[v], c), t);
            _mm512_mask_storeu_ps(c, mask[v], t);
        }
    }
}

T_AVX512 INLINE void tile_avx512(const emb_int8_gemm_kernels_args *g, int m, int p, const int MR, const int NP) {
    const size_t Kp = (size_t)g->Kp, ps = 16 * Kp;
    const int8_t *b = g->wp + (size_t)p * ps;
    const uint8_t *a = g->u + (size_t)m * Kp;
    FOR_TILE(ACC512_ZERO)
    FOR_TILE(C_PREFETCH)
    for (size_t k = 0; k < Kp; k += 4) {
        const int8_t *bk = b + 16 * k;
        __m512i w0 = _mm512_load_si512(bk);
        __m512i w1 = NP > 1 ? _mm512_load_si512(bk + ps) : w0;
        __m512i w2 = NP > 2 ? _mm512_load_si512(bk + 2 * ps) : w0;
        __m512i w3 = NP > 3 ? _mm512_load_si512(bk + 3 * ps) : w0;
        ACC512_ROW(0) ACC512_ROW(1) ACC512_ROW(2) ACC512_ROW(3) ACC512_ROW(4) ACC512_ROW(5)
    }
    /* through memory: epilogue temporaries live beside 24 accumulators made GCC spill in the loop */
    __attribute__((aligned(64))) int32_t sums[6 * 4 * 16];
    FOR_TILE(ACC512_STORE)
    epilogue_tile16(g, m, p, MR, NP, sums);
}

/* One function per tile shape: inlined into one big switch, GCC's register allocation gave up
 * and kept the accumulators on the stack. */
#define AVX512_TILE(mr, np)                                                                      \
    T_AVX512 __attribute__((noinline)) static void tile512_##mr##_##np(const emb_int8_gemm_kernels_args *g, int m, int p) { \
        tile_avx512(g, m, p, mr, np);                                                            \
    }
#define AVX512_TILES(mr) AVX512_TILE(mr, 1) AVX512_TILE(mr, 2) AVX512_TILE(mr, 3) AVX512_TILE(mr, 4)
AVX512_TILES(1) AVX512_TILES(2) AVX512_TILES(3) AVX512_TILES(4) AVX512_TILES(5) AVX512_TILES(6)
#define AVX512_NAMES(mr) {tile512_##mr##_1, tile512_##mr##_2, tile512_##mr##_3, tile512_##mr##_4}
typedef void (*tile_fn)(const emb_int8_gemm_kernels_args *g, int m, int p);
static const tile_fn tiles512[6][4] = {AVX512_NAMES(1), AVX512_NAMES(2), AVX512_NAMES(3),
                                       AVX512_NAMES(4), AVX512_NAMES(5), AVX512_NAMES(6)};

static void tile512_any(const emb_int8_gemm_kernels_args *g, int m, int p, int mr, int np) { tiles512[mr - 1][np - 1](g, m, p); }
#endif

void emb_int8_gemm_kernels_run(emb_int8_gemm_path p, const emb_int8_gemm_kernels_args *g, int m0, int m1, int p0, int p1) {
#if I8_X86
    switch (p) {
    case EMB_I8_AVX512_VNNI: emb_int8_gemm_kernels_blocked(g, m0, m1, p0, p1, 4, tile512_any); return;
    case EMB_I8_AVX_VNNI: emb_int8_gemm_kernels_blocked(g, m0, m1, p0, p1, 1, emb_int8_gemm_avxvnni_tile); return;
    case EMB_I8_AVX2:
        if (emb_int8_gemm_avx2_run(g, m0, m1, p0, p1) == 0) return;
        break; /* out of memory: the same sums in C */
    default: break;
    }
#endif
    (void)p;
    run_scalar(g, m0, m1, p0, p1);
}

/* ---------- activation rows ---------- */

/* Rounding by adding and subtracting 1.5 * 2^23 (nearest even, exact for |v| < 2^22): the same
 * in a vectorized loop as in a scalar one, unlike a call to lrintf. */
#define ROUND_MAGIC 12582912.0f

/* A row's scale and zero point from its range [lo, hi] (which holds 0); 0 when the row is all
 * zeros or not finite, after writing its codes (zeros) and scale (0, or NaN for a row of NaN
 * results). */
static int row_params(float lo, float hi, int bad, int Kp, uint8_t *u, float *sa_out, int32_t *zp_out, float *inv_out) {
    float range = hi - lo;
    if (bad || !(range <= 3.0e38f) || range == 0.0f) {
        memset(u, 0, (size_t)Kp);
        *sa_out = range == 0.0f && !bad ? 0.0f : __builtin_nanf("");
        *zp_out = 0;
        return 0;
    }
    float sa = range / 255.0f, inv = 1.0f / sa;
    float zf = (-lo * inv + ROUND_MAGIC) - ROUND_MAGIC;
    *zp_out = zf < 0.0f ? 0 : zf > 255.0f ? 255 : (int32_t)zf;
    *sa_out = sa;
    *inv_out = inv;
    return 1;
}

/* One code: the same operations, in the same order, as the vector loop below. */
static inline uint8_t code_of(float x, float inv, float fz) {
    float q = (x * inv + ROUND_MAGIC) - ROUND_MAGIC + fz;
    q = q < 0.0f ? 0.0f : q;
    q = q > 255.0f ? 255.0f : q;
    return (uint8_t)(int)q;
}

static void quantize_row_c(const float *x, int K, int Kp, uint8_t *u, float *sa, int32_t *zp) {
    float lo = 0.0f, hi = 0.0f, inv = 0.0f; /* the range always holds 0, so that zero is exact */
    int bad = 0;
    for (int k = 0; k < K; k++) {
        float v = x[k];
        lo = v < lo ? v : lo;
        hi = v > hi ? v : hi;
        bad |= !(v - v == 0.0f); /* NaN or infinity */
    }
    if (!row_params(lo, hi, bad, Kp, u, sa, zp, &inv)) return;
    float fz = (float)*zp;
    for (int k = 0; k < K; k++) u[k] = code_of(x[k], inv, fz);
    for (int k = K; k < Kp; k++) u[k] = 0;
}

#if I8_X86
T_AVX512 static void quantize_row_avx512(const float *x, int K, int Kp, uint8_t *u, float *sa, int32_t *zp) {
    __m512 lo = _mm512_setzero_ps(), hi = lo, zero = lo;
    __mmask16 bad = 0;
    for (int k = 0; k < K; k += 16) {
        __mmask16 m = K - k >= 16 ? (__mmask16)0xffff : (__mmask16)((1u << (K - k)) - 1u);
        __m512 v = _mm512_maskz_loadu_ps(m, x + k); /* zeros past K: inside the range already */
        lo = _mm512_min_ps(lo, v);
        hi = _mm512_max_ps(hi, v);
        bad |= _mm512_cmp_ps_mask(_mm512_sub_ps(v, v), zero, _CMP_NEQ_UQ);
    }
    float inv = 0.0f;
    if (!row_params(_mm512_reduce_min_ps(lo), _mm512_reduce_max_ps(hi), bad != 0, Kp, u, sa, zp, &inv)) return;
    /* code_of in integers: |x inv| <= 255 (the range holds x), so converting with rounding to
     * nearest even gives the magic number's integer exactly; + zp, then 0 .. 255 (the store
     * saturates above) */
    const __m512 vinv = _mm512_set1_ps(inv);
    const __m512i vzp = _mm512_set1_epi32(*zp), izero = _mm512_setzero_si512();
    for (int k = 0; k < Kp; k += 16) {
        __mmask16 m = K - k >= 16 ? (__mmask16)0xffff : K > k ? (__mmask16)((1u << (K - k)) - 1u) : 0;
        __mmask16 store = Kp - k >= 16 ? (__mmask16)0xffff : (__mmask16)((1u << (Kp - k)) - 1u);
        __m512i q = _mm512_cvt_roundps_epi32(_mm512_mul_ps(_mm512_maskz_loadu_ps(m, x + k), vinv),
                                             _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC);
        q = _mm512_max_epi32(_mm512_add_epi32(q, vzp), izero);
        /* codes past K are zero, not the zero point */
        _mm512_mask_cvtusepi32_storeu_epi8(u + k, store, _mm512_maskz_mov_epi32(m, q));
    }
}
#endif

#if I8_X86
/* 8 lanes, the last K % 8 values through the C code (the same operations) */
T_AVX2 static void quantize_row_avx2(const float *x, int K, int Kp, uint8_t *u, float *sa, int32_t *zp) {
    const int body = K - K % 8;
    __m256 lo8 = _mm256_setzero_ps(), hi8 = lo8, zero = lo8, badv = lo8;
    for (int k = 0; k < body; k += 8) {
        __m256 v = _mm256_loadu_ps(x + k);
        lo8 = _mm256_min_ps(lo8, v);
        hi8 = _mm256_max_ps(hi8, v);
        badv = _mm256_or_ps(badv, _mm256_cmp_ps(_mm256_sub_ps(v, v), zero, _CMP_NEQ_UQ));
    }
    float l[8], h[8], lo = 0.0f, hi = 0.0f, inv = 0.0f;
    int bad = _mm256_movemask_ps(badv) != 0;
    _mm256_storeu_ps(l, lo8);
    _mm256_storeu_ps(h, hi8);
    for (int j = 0; j < 8; j++) lo = l[j] < lo ? l[j] : lo, hi = h[j] > hi ? h[j] : hi;
    for (int k = body; k < K; k++) {
        float v = x[k];
        lo = v < lo ? v : lo;
        hi = v > hi ? v : hi;
        bad |= !(v - v == 0.0f);
    }
    if (!row_params(lo, hi, bad, Kp, u, sa, zp, &inv)) return;
    const __m256 vinv = _mm256_set1_ps(inv), magic = _mm256_set1_ps(ROUND_MAGIC), fz = _mm256_set1_ps((float)*zp),
                 top = _mm256_set1_ps(255.0f);
    for (int k = 0; k < body; k += 8) {
        __m256 q = _mm256_add_ps(_mm256_sub_ps(_mm256_add_ps(_mm256_mul_ps(_mm256_loadu_ps(x + k), vinv), magic), magic), fz);
        __m256i c = _mm256_cvttps_epi32(_mm256_min_ps(_mm256_max_ps(q, zero), top));
        c = _mm256_packus_epi16(_mm256_packus_epi32(c, c), c); /* bytes 0-3 of each 128-bit lane */
        uint32_t w[2] = {(uint32_t)_mm256_extract_epi32(c, 0), (uint32_t)_mm256_extract_epi32(c, 4)};
        memcpy(u + k, w, 8);
    }
    for (int k = body; k < K; k++) u[k] = code_of(x[k], inv, (float)*zp);
    for (int k = K; k < Kp; k++) u[k] = 0;
}
#endif

void emb_int8_gemm_kernels_quantize_row(emb_int8_gemm_path p, const float *x, int K, int Kp, uint8_t *u, float *sa, int32_t *zp) {
#if I8_X86
    if (p == EMB_I8_AVX512_VNNI) {
        quantize_row_avx512(x, K, Kp, u, sa, zp);
        return;
    }
    if (p == EMB_I8_AVX_VNNI || p == EMB_I8_AVX2) {
        quantize_row_avx2(x, K, Kp, u, sa, zp);
        return;
    }
#endif
    (void)p;
    quantize_row_c(x, K, Kp, u, sa, zp);
}
// clang-format on
