/* The arithmetic peak of one core, the ceiling the encoder figures are read against: AVX-512 and
 * AVX2 (256-bit) float32 fused multiply-adds (GFLOP/s, a multiply-add counts 2) and VNNI int8 dot products
 * (vpdpbusd, GOPS likewise), and AVX2's exact int8 step (vpmaddwd + vpaddd), each in 12 independent chains so that latency hides behind
 * throughput. Best of 3 runs of about 0.3 s each (one kind after the other).
 *   bench_peak */
#include "bench_clock.h"
#include <stdio.h>

#define STEPS 20000000L
#define CHAINS 12

#if defined(__x86_64__) && defined(__GNUC__)
#include <immintrin.h>

/* Returns a sum of the chains so that none is dropped. */
__attribute__((target("avx512f,fma"), noinline)) static double fma_chains(long steps) {
    __m512 acc[CHAINS], x = _mm512_set1_ps(0.999f), y = _mm512_set1_ps(1e-3f);
    for (int i = 0; i < CHAINS; i++) acc[i] = _mm512_set1_ps((float)i);
    for (long s = 0; s < steps; s++) {
#pragma GCC unroll 12
        for (int i = 0; i < CHAINS; i++) acc[i] = _mm512_fmadd_ps(acc[i], x, y);
        __asm__ volatile("" : "+v"(x)); /* x is not a constant to fold */
    }
    __m512 t = acc[0];
    for (int i = 1; i < CHAINS; i++) t = _mm512_add_ps(t, acc[i]);
    return _mm512_reduce_add_ps(t);
}

__attribute__((target("avx2,fma"), noinline)) static double fma256_chains(long steps) {
    __m256 acc[CHAINS], x = _mm256_set1_ps(0.999f), y = _mm256_set1_ps(1e-3f);
    for (int i = 0; i < CHAINS; i++) acc[i] = _mm256_set1_ps((float)i);
    for (long s = 0; s < steps; s++) {
#pragma GCC unroll 12
        for (int i = 0; i < CHAINS; i++) acc[i] = _mm256_fmadd_ps(acc[i], x, y);
        __asm__ volatile("" : "+x"(x));
    }
    __m256 t = acc[0];
    for (int i = 1; i < CHAINS; i++) t = _mm256_add_ps(t, acc[i]);
    float v[8];
    _mm256_storeu_ps(v, t);
    return (double)v[0] + v[1] + v[2] + v[3] + v[4] + v[5] + v[6] + v[7];
}

__attribute__((target("avx512f,avx512vnni"), noinline)) static double vnni_chains(long steps) {
    __m512i acc[CHAINS], u = _mm512_set1_epi8(3), w = _mm512_set1_epi8(-5);
    for (int i = 0; i < CHAINS; i++) acc[i] = _mm512_set1_epi32(i);
    for (long s = 0; s < steps; s++) {
#pragma GCC unroll 12
        for (int i = 0; i < CHAINS; i++) acc[i] = _mm512_dpbusd_epi32(acc[i], u, w);
        __asm__ volatile("" : "+v"(u));
    }
    __m512i t = acc[0];
    for (int i = 1; i < CHAINS; i++) t = _mm512_add_epi32(t, acc[i]);
    return _mm512_reduce_add_epi32(t);
}

/* The exact int8 product of AVX2 without VNNI: codes widened to int16, vpmaddwd (16 multiply-adds
 * into 8 int32 pair sums) and vpaddd onto the accumulator. Its rate over fma256's is the most
 * that int8 weights can gain over float32 on such a CPU where the products are compute-bound. */
__attribute__((target("avx2"), noinline)) static double madd256_chains(long steps) {
    __m256i acc[CHAINS], u = _mm256_set1_epi16(3), w = _mm256_set1_epi16(-5);
    for (int i = 0; i < CHAINS; i++) acc[i] = _mm256_set1_epi32(i);
    for (long s = 0; s < steps; s++) {
#pragma GCC unroll 12
        for (int i = 0; i < CHAINS; i++) acc[i] = _mm256_add_epi32(acc[i], _mm256_madd_epi16(u, w));
        __asm__ volatile("" : "+x"(u));
    }
    __m256i t = acc[0];
    for (int i = 1; i < CHAINS; i++) t = _mm256_add_epi32(t, acc[i]);
    int v[8];
    _mm256_storeu_si256((__m256i *)v, t);
    return (double)v[0] + v[1] + v[2] + v[3] + v[4] + v[5] + v[6] + v[7];
}

static volatile double sink;

/* The best of 3 runs of `run`, in GOPS: ops_per_step operations a step. */
static double best_rate(double (*run)(long), double ops_per_step) {
    double best = 0;
    for (int r = 0; r < 3; r++) {
        double t = bench_now();
        sink += run(STEPS);
        double g = (double)STEPS * ops_per_step / (bench_now() - t) / 1e9;
        best = g > best ? g : best;
    }
    return best;
}

int main(void) {
    __builtin_cpu_init();
    if (__builtin_cpu_supports("avx512f") && __builtin_cpu_supports("fma")) {
        double g = best_rate(fma_chains, CHAINS * 16 * 2);
        printf("one core, AVX-512 float32 FMA: %.1f GFLOP/s\nRESULT peak_fma_gflops %.1f\n", g, g);
    } else printf("one core: no AVX-512F with FMA\n");
    if (__builtin_cpu_supports("avx2") && __builtin_cpu_supports("fma")) {
        double g = best_rate(fma256_chains, CHAINS * 8 * 2);
        printf("one core, AVX2 (256-bit) float32 FMA: %.1f GFLOP/s\nRESULT peak_fma256_gflops %.1f\n", g, g);
    } else printf("one core: no AVX2 with FMA\n");
    if (__builtin_cpu_supports("avx512f") && __builtin_cpu_supports("avx512vnni")) {
        double g = best_rate(vnni_chains, CHAINS * 64 * 2);
        printf("one core, AVX-512 VNNI vpdpbusd: %.1f GOPS\nRESULT peak_vnni_gops %.1f\n", g, g);
    } else printf("one core: no AVX-512 VNNI\n");
    if (__builtin_cpu_supports("avx2")) {
        double g = best_rate(madd256_chains, CHAINS * 16 * 2);
        printf("one core, AVX2 int16 vpmaddwd + vpaddd: %.1f GOPS\nRESULT peak_madd256_gops %.1f\n", g, g);
    } else printf("one core: no AVX2\n");
    return 0;
}
#else
int main(void) {
    printf("bench_peak: x86-64 only\n");
    return 0;
}
#endif
