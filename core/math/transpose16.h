/* A 16 x 16 float transpose in AVX-512F registers, for the kernels that turn rows into columns
 * (sgemm_bcast's packing and tiles, nn_gemm's transpose of the keys), and the block transpose
 * built on it. Include only on x86-64 with GCC or clang. Internal to the encoder's files. */
#ifndef EMBED_TRANSPOSE16_H
#define EMBED_TRANSPOSE16_H
#include <immintrin.h>

/* r[i] lane j -> r[j] lane i. */
__attribute__((target("avx512f"))) static inline void emb_transpose16(__m512 *r) {
    __m512 t[16];
    for (int i = 0; i < 8; i++) {
        t[2 * i] = _mm512_unpacklo_ps(r[2 * i], r[2 * i + 1]);
        t[2 * i + 1] = _mm512_unpackhi_ps(r[2 * i], r[2 * i + 1]);
    }
    for (int i = 0; i < 4; i++) {
        r[4 * i] = _mm512_shuffle_ps(t[4 * i], t[4 * i + 2], 0x44);
        r[4 * i + 1] = _mm512_shuffle_ps(t[4 * i], t[4 * i + 2], 0xEE);
        r[4 * i + 2] = _mm512_shuffle_ps(t[4 * i + 1], t[4 * i + 3], 0x44);
        r[4 * i + 3] = _mm512_shuffle_ps(t[4 * i + 1], t[4 * i + 3], 0xEE);
    }
    for (int i = 0; i < 4; i++) {
        t[i] = _mm512_shuffle_f32x4(r[i], r[i + 4], 0x88);
        t[i + 4] = _mm512_shuffle_f32x4(r[i], r[i + 4], 0xDD);
        t[i + 8] = _mm512_shuffle_f32x4(r[i + 8], r[i + 12], 0x88);
        t[i + 12] = _mm512_shuffle_f32x4(r[i + 8], r[i + 12], 0xDD);
    }
    for (int i = 0; i < 8; i++) {
        r[i] = _mm512_shuffle_f32x4(t[i], t[i + 8], 0x88);
        r[i + 8] = _mm512_shuffle_f32x4(t[i], t[i + 8], 0xDD);
    }
}

/* T[d * ldt + n] = X[n * ldx + d] for d < D and n < width, X's rows past `rows` read as zeros
 * (rows <= width; T's columns past width untouched), 16 x 16 blocks at a time. */
__attribute__((target("avx512f"))) static inline void
emb_transpose_rows(int rows, int width, int D, const float *X, int ldx, float *T, int ldt) {
    for (int n0 = 0; n0 < width; n0 += 16) {
        int wn = width - n0 < 16 ? width - n0 : 16;
        __mmask16 nm = (__mmask16)((1u << wn) - 1u);
        for (int d0 = 0; d0 < D; d0 += 16) {
            int dn = D - d0 < 16 ? D - d0 : 16;
            __mmask16 dm = (__mmask16)((1u << dn) - 1u);
            __m512 r[16];
            for (int i = 0; i < 16; i++)
                r[i] = n0 + i < rows ? _mm512_maskz_loadu_ps(dm, X + (size_t)(n0 + i) * ldx + d0)
                                     : _mm512_setzero_ps();
            emb_transpose16(r);
            for (int i = 0; i < dn; i++) _mm512_mask_storeu_ps(T + (size_t)(d0 + i) * ldt + n0, nm, r[i]);
        }
    }
}
#endif
