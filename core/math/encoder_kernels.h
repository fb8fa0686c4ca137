/* What the forward pass's element-wise kernels share (encoder_rows.c, encoder_attention.c): the
 * exp and GELU they use. Each kernel is built for AVX-512, AVX2 and baseline x86-64 and chosen by
 * emb_simd() (EMB_SIMD_DEFINE, base/simd.h); without -ftrapping-math the clamps and selects
 * if-convert, so the loops vectorize on every target. A file brackets its kernels with
 * EMB_KERNELS_BEGIN / EMB_KERNELS_END, and emb_expf and emb_gelu_of are compiled under the
 * same options so that they inline into them. Internal to the encoder's files. */
#ifndef EMBED_ENCODER_KERNELS_H
#define EMBED_ENCODER_KERNELS_H
#include "base/simd.h"
#include <stdint.h>

#ifdef __clang__ /* "omp simd" is a hint; clang warns where it cannot follow it (e.g. at -O0/-O1) */
#pragma clang diagnostic ignored "-Wpass-failed"
#endif
#if defined(__GNUC__) && !defined(__clang__)
#define EMB_KERNELS_BEGIN _Pragma("GCC push_options") _Pragma("GCC optimize(\"no-trapping-math\")")
#define EMB_KERNELS_END _Pragma("GCC pop_options")
#else
#define EMB_KERNELS_BEGIN
#define EMB_KERNELS_END
#endif

/* The polynomials of emb_expf and emb_gelu_of, highest power first, for them and for their
 * AVX-512 forms (vexp512.h, gelu.c): Cephes' expf on [-ln 2 / 2, ln 2 / 2], and Numerical
 * Recipes' erfcc fit P(t) (erfc(z) = t exp(-z^2 + P(t)), t = 1 / (1 + z / 2)). */
#define EMB_EXP_POLY                                                                                              \
    1.9875691500E-4f, 1.3981999507E-3f, 8.3334519073E-3f, 4.1665795894E-2f, 1.6666665459E-1f, 5.0000001201E-1f
#define EMB_ERFC_POLY                                                                                             \
    0.17087277f, -0.82215223f, 1.48851587f, -1.13520398f, 0.27886807f, -0.18628806f, 0.09678418f, 0.37409196f,    \
        1.00002368f, -1.26551223f
/* Abramowitz and Stegun 7.1.28: erf(z) = 1 - 1 / Q(z)^16 for z >= 0, |error| <= 3e-7 */
#define EMB_ERF_AS28_POLY                                                                                         \
    0.0000430638f, 0.0002765672f, 0.0001520143f, 0.0092705272f, 0.0422820123f, 0.0705230784f, 1.0f

EMB_KERNELS_BEGIN
/* exp for x <= 88 (Cephes polynomial, ~1 ulp; clamped below at -87 where the result is < 2e-38) */
static inline float emb_expf(float x) {
    x = x < -87.0f ? -87.0f : x;
    x = x > 88.0f ? 88.0f : x;
    float n = (x * 1.44269504088896341f + 12582912.0f) - 12582912.0f; /* round to nearest */
    float r = x - n * 0.693359375f;
    r = r - n * -2.12194440e-4f;
    static const float c[] = {EMB_EXP_POLY};
    float p = c[0];
#pragma GCC unroll 6
    for (int i = 1; i < 6; i++) p = p * r + c[i];
    float y = p * (r * r) + r + 1.0f;
    union {
        int32_t i;
        float f;
    } u;
    int32_t ni = n == n ? (int32_t)n : 0; /* NaN: y is NaN already; the shift must stay defined */
    u.i = (ni + 127) << 23;
    return y * u.f;
}

/* GELU, x Phi(x), with Phi from erfc so that negative x lose nothing to cancellation (1 + erf(x)
 * near 0): erfc(z) = t exp(-z^2 + P(t)), t = 1 / (1 + z / 2), the Chebyshev fit of Numerical
 * Recipes' erfcc (relative error < 1.2e-7). In float the result is within 2.4e-6 of the exact
 * GELU, relatively, wherever |GELU(x)| > 1e-6, and within 4e-7 absolutely everywhere (test_gelu). */
static inline float emb_gelu_of(float x) {
    float z = (x < 0 ? -x : x) * 0.70710678118654752f;
    float t = 1.0f / (1.0f + 0.5f * z);
    static const float c[] = {EMB_ERFC_POLY};
    float p = c[0];
#pragma GCC unroll 10
    for (int i = 1; i < 10; i++) p = p * t + c[i];
    float h = 0.5f * t * emb_expf(p - z * z); /* Phi(-|x|) = erfc(z) / 2 */
    return x * (x >= 0 ? 1.0f - h : h);
}

/* GELU for activations that are quantized to 8 bits (or rounded to bf16) next: Phi from
 * Abramowitz and Stegun's 7.1.28, no exp, within 1e-6 of the exact GELU absolutely (test_gelu):
 * about a ten-thousandth of an int8 code step there (a row's range / 255). z is bounded so that
 * Q^16 stays finite; from z = 10, where erfc(z) is 0 in float, h is 0, as in emb_gelu_of (which
 * makes -inf give NaN there too). */
static inline float emb_gelu_quick_of(float x) {
    float z = (x < 0 ? -x : x) * 0.70710678118654752f;
    float zc = z < 10.0f ? z : 10.0f;
    static const float c[] = {EMB_ERF_AS28_POLY};
    float q = c[0];
#pragma GCC unroll 7
    for (int i = 1; i < 7; i++) q = q * zc + c[i];
    float r = 1.0f / q;
    r = r * r;
    r = r * r;
    r = r * r;
    float h = z < 10.0f ? 0.5f * (r * r) : 0.0f; /* Phi(-|x|) = (1 - erf(z)) / 2 */
    return x * (x >= 0 ? 1.0f - h : h);
}

/* GELU's tanh approximation (PyTorch's gelu(approximate="tanh"), Gemma's gelu_pytorch_tanh):
 * x (1 + tanh(u)) / 2 = x / (1 + exp(-2u)), u = sqrt(2 / pi) (x + 0.044715 x^3), which has no
 * cancellation near 0 and saturates cleanly (emb_expf clamps). */
static inline float emb_gelu_tanh_of(float x) {
    float u = 0.7978845608028654f * (x + 0.044715f * x * x * x);
    return x / (1.0f + emb_expf(-2.0f * u));
}
EMB_KERNELS_END
#endif
