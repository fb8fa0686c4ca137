/* The arithmetic peak of one core, the ceiling the encoder figures are read against: AVX-512 and
 * AVX2 (256-bit) float32 fused multiply-adds (GFLOP/s, a multiply-add counts 2) and VNNI int8 dot products
 * (vpdpbusd, GOPS likewise), and AVX2's exact int8 step (vpmaddwd + vpaddd), each in 12 independent chains so that latency hides behind
 * throughput. Best of 3 runs of about 0.3 s each (one kind after the other). Then the ratio that
 * bounds int8 over float32 on AVX2 without VNNI, the multiply-adds a second of vpmaddwd + vpaddd
 * over those of 256-bit FMA, from the best of 100 short runs of each in alternation.
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
 * that int8 weights can gain over float32 on such a CPU where the products are compute-bound.
 * Written in assembly, 12 chains in ymm0-11 (each product takes its accumulator as an operand):
 * in C with loop-invariant operands GCC computed one vpmaddwd a step for all 12 chains, which is
 * what this measured before, and with arrays of accumulators it stored them every step. */
/* clang-format lays these lines out differently at each pass: they keep their own layout */
// clang-format off
#define MADD_CHAIN(i) "vpmaddwd %%ymm15, %%ymm" #i ", %%ymm12\n\tvpaddd %%ymm12, %%ymm" #i ", %%ymm" #i "\n\t"
#define MADD_STEP \
    MADD_CHAIN(0) MADD_CHAIN(1) MADD_CHAIN(2) MADD_CHAIN(3) MADD_CHAIN(4) MADD_CHAIN(5) \
    MADD_CHAIN(6) MADD_CHAIN(7) MADD_CHAIN(8) MADD_CHAIN(9) MADD_CHAIN(10) MADD_CHAIN(11)
// clang-format on
__attribute__((target("avx2"), noinline)) static double madd256_chains(long steps) {
    int v[8];
    __asm__ volatile("vpxor %%xmm0, %%xmm0, %%xmm0\n\t" /* accumulators 0..11 start at 0, w = 3 */
                     "vmovdqa %%ymm0, %%ymm1\n\tvmovdqa %%ymm0, %%ymm2\n\tvmovdqa %%ymm0, %%ymm3\n\t"
                     "vmovdqa %%ymm0, %%ymm4\n\tvmovdqa %%ymm0, %%ymm5\n\tvmovdqa %%ymm0, %%ymm6\n\t"
                     "vmovdqa %%ymm0, %%ymm7\n\tvmovdqa %%ymm0, %%ymm8\n\tvmovdqa %%ymm0, %%ymm9\n\t"
                     "vmovdqa %%ymm0, %%ymm10\n\tvmovdqa %%ymm0, %%ymm11\n\t"
                     "mov $3, %%eax\n\tvmovd %%eax, %%xmm15\n\tvpbroadcastw %%xmm15, %%ymm15\n\t"
                     "1:\n\t" MADD_STEP "dec %[n]\n\tjnz 1b\n\t"
                     "vpaddd %%ymm1, %%ymm0, %%ymm0\n\tvmovdqu %%ymm0, %[v]\n\tvzeroupper"
                     : [n] "+r"(steps), [v] "=m"(v)
                     :
                     : "eax", "xmm0", "xmm1", "xmm2", "xmm3", "xmm4", "xmm5", "xmm6", "xmm7", "xmm8", "xmm9",
                       "xmm10", "xmm11", "xmm12", "xmm15", "cc");
    return (double)v[0] + v[7];
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

/* vpmaddwd + vpaddd over 256-bit FMA in multiply-adds, the two alternated in short runs (a shared
 * machine's speed moves between one kind's runs and the other's): the best of each. */
static double madd_over_fma(void) {
    double best_f = 0, best_m = 0;
    for (int r = 0; r < 100; r++) {
        double t = bench_now();
        sink += fma256_chains(STEPS / 20);
        double f = (double)(STEPS / 20) * CHAINS * 8 / (bench_now() - t);
        t = bench_now();
        sink += madd256_chains(STEPS / 20);
        double m = (double)(STEPS / 20) * CHAINS * 16 / (bench_now() - t);
        best_f = f > best_f ? f : best_f;
        best_m = m > best_m ? m : best_m;
    }
    return best_m / best_f;
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
    if (__builtin_cpu_supports("avx2") && __builtin_cpu_supports("fma")) {
        double r = madd_over_fma();
        printf("multiply-adds a second, vpmaddwd + vpaddd over 256-bit FMA, alternated: %.2fx\n"
               "RESULT madd256_over_fma256 %.2f\n",
               r, r);
    }
    return 0;
}
#else
int main(void) {
    printf("bench_peak: x86-64 only\n");
    return 0;
}
#endif
