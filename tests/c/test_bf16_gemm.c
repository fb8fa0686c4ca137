/* bfloat16 products (core/bf16_gemm.h): the rounding against bit patterns worked out by hand;
 * packed weights equal to the rounded inputs; products against double-precision sums of the
 * rounded values; the C loop and the vector kernels of the set in use (AVX512_BF16, or AVX2 widening
 * bf16 to float32) the same bit
 * for bit, on 1 and 2 threads; bias and accumulation; odd shapes; refusals. */
#include "check.h"
#include "math/bf16_gemm.h"
#include <float.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

static unsigned long long rng_state = 0x2545F4914F6CDD1Dull;
static uint64_t next_u64(void) { return check_rng(&rng_state); }
static float uniform(void) { return (float)((double)(next_u64() >> 11) / 4503599627370496.0 - 1.0); }

static float from_bits(uint32_t u) {
    float x;
    memcpy(&x, &u, 4);
    return x;
}

static void rounding(void) {
    static const struct {
        uint32_t in;
        uint16_t out;
        const char *why;
    } cases[] = {
        {0x3f800000u, 0x3f80, "1.0 exactly"},
        {0x3f808000u, 0x3f80, "a tie rounds to the even 0x3f80"},
        {0x3f818000u, 0x3f82, "a tie rounds to the even 0x3f82"},
        {0x3f808001u, 0x3f81, "above the tie rounds up"},
        {0x3f807fffu, 0x3f80, "below the tie rounds down"},
        {0xbf818000u, 0xbf82, "negative tie"},
        {0x7f7fffffu, 0x7f80, "the largest float rounds up to infinity"},
        {0x7f800000u, 0x7f80, "infinity"},
        {0x00400000u, 0x0000, "a denormal becomes zero"},
        {0x80000001u, 0x8000, "a negative denormal becomes -0"},
        {0x00800000u, 0x0080, "the smallest normal stays"},
        {0x7f800001u, 0x7fc0, "a signalling NaN becomes quiet"},
    };
    for (size_t i = 0; i < sizeof cases / sizeof *cases; i++) {
        uint16_t got = emb_bf16_round(from_bits(cases[i].in));
        CHECK(got == cases[i].out, "round %08x: %04x, want %04x (%s)", cases[i].in, got, cases[i].out,
              cases[i].why);
    }
    CHECK(emb_bf16_to_float(0x3f82) == 1.015625f && emb_bf16_to_float(0xc000) == -2.0f, "back to float");
}

typedef struct {
    int M, N, K;
} shape;
static const shape shapes[] = {{1, 1, 1},     {1, 17, 5},     {2, 16, 4},    {7, 33, 63},    {6, 64, 64},
                               {13, 50, 131}, {16, 384, 384}, {23, 131, 99}, {1, 1152, 384}, {100, 70, 1500}};
#define NSHAPES (sizeof shapes / sizeof shapes[0])

static void products(void) {
    char err[EMB_ERR_LEN];
    emb_bf16_kernels best = emb_bf16_kernels_default();
    printf("bf16 kernels: %s; compared with the C loop:", emb_bf16_kernels_name(emb_bf16_kernels_default()));
    for (int k = 1; k < EMB_BF16_NKERNELS; k++)
        if (emb_bf16_kernels_supported((emb_bf16_kernels)k))
            printf(" %s", emb_bf16_kernels_name((emb_bf16_kernels)k));
    printf("\n");
    for (size_t s = 0; s < NSHAPES; s++) {
        int M = shapes[s].M, N = shapes[s].N, K = shapes[s].K, lda = K + 3, ldc = N + 5;
        float *A = malloc(sizeof(float) * (size_t)M * lda), *W = malloc(sizeof(float) * (size_t)N * K);
        float *bias = malloc(sizeof(float) * (size_t)N), *C0 = malloc(sizeof(float) * (size_t)M * ldc);
        float *C1 = malloc(sizeof(float) * (size_t)M * ldc), *C2 = malloc(sizeof(float) * (size_t)M * ldc);
        for (int i = 0; i < M * lda; i++) A[i] = uniform() * 4;
        for (int i = 0; i < N * K; i++) W[i] = uniform() * 0.1f;
        for (int i = 0; i < N; i++) bias[i] = uniform();
        for (int i = 0; i < M * ldc; i++) C0[i] = C1[i] = C2[i] = uniform();
        emb_bf16w *w = emb_bf16w_pack(W, N, K, K, err);
        emb_bf16_act a = {0};
        CHECK(w && emb_bf16_convert(A, lda, M, K, &a) == 0, "shape %zu: pack: %s", s, w ? "" : err);
        if (!w) continue;
        int packed_ok = 1;
        for (int n = 0; n < N; n++)
            for (int k = 0; k < K; k++)
                packed_ok &= emb_bf16w_value(w, n, k) == emb_bf16_to_float(emb_bf16_round(W[(size_t)n * K + k]));
        CHECK(packed_ok, "shape %zu: every packed weight is its input rounded", s);
        /* C = C + A W^T + bias on the C loop, against sums in double of the rounded values */
        emb_bf16_gemm_path(EMB_BF16_C, &a, w, bias, 1.0f, C1, ldc);
        double worst = 0;
        for (int m = 0; m < M; m++)
            for (int n = 0; n < N; n++) {
                double t = 0, mag = 0;
                for (int k = 0; k < K; k++) {
                    double p = (double)emb_bf16_to_float(emb_bf16_round(A[(size_t)m * lda + k])) *
                               emb_bf16_to_float(emb_bf16_round(W[(size_t)n * K + k]));
                    t += p;
                    mag += fabs(p);
                }
                double want = (double)C0[(size_t)m * ldc + n] + t + bias[n];
                double e = fabs(C1[(size_t)m * ldc + n] - want) / (mag + 1 + fabs(want));
                worst = e > worst ? e : worst;
            }
        CHECK(worst < 1e-6 * (1 + K / 64), "shape %zu (%d x %d x %d): float32 sums of bf16 products (%.2g)", s, M,
              N, K, worst);
        /* every vector kernel this CPU runs under EMBED_SIMD's cap (AVX2 and AVX-512F widen bf16) */
        for (int k = 1; k < EMB_BF16_NKERNELS; k++) {
            if (!emb_bf16_kernels_supported((emb_bf16_kernels)k)) continue;
            memcpy(C2, C0, sizeof(float) * (size_t)M * ldc);
            emb_bf16_gemm_path((emb_bf16_kernels)k, &a, w, bias, 1.0f, C2, ldc);
            CHECK(memcmp(C1, C2, sizeof(float) * (size_t)M * ldc) == 0, "shape %zu: %s = the C loop, bit for bit",
                  s, emb_bf16_kernels_name((emb_bf16_kernels)k));
        }
        /* beta 0, no bias: the product alone; then the same split over two threads */
        emb_bf16_gemm_path(best, &a, w, NULL, 0.0f, C1, ldc);
        emb_workers *two = emb_workers_new(1);
        int rc = emb_bf16_gemm(A, lda, M, w, NULL, 0.0f, C2, ldc, &a, two);
        emb_workers_free(two);
        CHECK(rc == 0 && memcmp(C1, C2, sizeof(float) * (size_t)M * ldc) == 0,
              "shape %zu: two threads, the same bits", s);
        emb_bf16_act_free(&a);
        emb_bf16w_free(w);
        free(A), free(W), free(bias), free(C0), free(C1), free(C2);
    }
}

/* A product large enough to be split over the threads; products below float32's normal range,
 * which both paths flush to zero; refusals. */
static void split_and_tiny(void) {
    enum { M = 200, N = 384, K = 384 };
    char err[EMB_ERR_LEN];
    float *A = malloc(sizeof(float) * M * K), *W = malloc(sizeof(float) * N * K);
    float *C1 = malloc(sizeof(float) * M * N), *C2 = malloc(sizeof(float) * M * N);
    for (int i = 0; i < M * K; i++) A[i] = uniform();
    for (int i = 0; i < N * K; i++) W[i] = uniform();
    emb_bf16w *w = emb_bf16w_pack(W, N, K, K, err);
    emb_bf16_act a = {0}, b = {0};
    emb_workers *two = emb_workers_new(1);
    CHECK((double)M * N * K >= EMB_BF16_PAR_MIN_MACS, "the product is split");
    int rc = emb_bf16_gemm(A, K, M, w, NULL, 0.0f, C1, N, &a, NULL) |
             emb_bf16_gemm(A, K, M, w, NULL, 0.0f, C2, N, &b, two);
    CHECK(rc == 0 && memcmp(C1, C2, sizeof(float) * M * N) == 0, "1 and 2 threads: the same bits");
    if (emb_bf16_fast()) {
        emb_bf16_gemm_path(EMB_BF16_C, &a, w, NULL, 0.0f, C2, N);
        CHECK(memcmp(C1, C2, sizeof(float) * M * N) == 0, "split %s = the C loop",
              emb_bf16_kernels_name(emb_bf16_kernels_default()));
    }
    float ta[2] = {1e-20f, -3e-20f}, tw[2 * 16], tc[16], td[16];
    for (int i = 0; i < 32; i++) tw[i] = 1e-20f * (float)(i + 1);
    emb_bf16w *tiny = emb_bf16w_pack(tw, 16, 2, 2, err);
    rc = emb_bf16_convert(ta, 2, 1, 2, &a) | emb_bf16_gemm_path(EMB_BF16_C, &a, tiny, NULL, 0.0f, tc, 16);
    for (int i = 0; i < 16; i++) CHECK(rc == 0 && tc[i] == 0, "C loop: a sum of products near 1e-40 is 0");
    for (int k = 1; k < EMB_BF16_NKERNELS; k++) {
        if (!emb_bf16_kernels_supported((emb_bf16_kernels)k)) continue;
        rc = emb_bf16_gemm_path((emb_bf16_kernels)k, &a, tiny, NULL, 0.0f, td, 16);
        int zeros = 1;
        for (int i = 0; i < 16; i++) zeros &= td[i] == 0;
        CHECK(rc == 0 && zeros, "%s: sums of products near 1e-40 are 0",
              emb_bf16_kernels_name((emb_bf16_kernels)k));
    }
    emb_bf16w_free(tiny);
    /* refusals */
    W[5] = (float)NAN;
    CHECK(!emb_bf16w_pack(W, N, K, K, err) && strstr(err, "row 0, column 5 is not a finite number"), "NaN: %s",
          err);
    emb_bf16w *narrow = emb_bf16w_pack(W + 6, 1, 7, 7, err);
    CHECK(narrow && emb_bf16_gemm_path(EMB_BF16_C, &a, narrow, NULL, 0.0f, C1, N) == -1, "Ks differ");
    CHECK(!emb_bf16w_new(0, 4, err) && emb_bf16_convert(A, 3, 1, 4, &a) == -1, "bad sizes");
    emb_bf16w_free(narrow);
    emb_workers_free(two);
    emb_bf16_act_free(&a);
    emb_bf16_act_free(&b);
    emb_bf16w_free(w);
    free(A), free(W), free(C1), free(C2);
}

int main(void) {
    rounding();
    products();
    split_and_tiny();
    return check_report();
}
