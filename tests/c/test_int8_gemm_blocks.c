/* int8 products of block weights (core/math/int8_gemm.h: GGUF Q8_0 rows, a scale per channel and
 * block of 32 inputs): against double-precision sums of the dequantized values, sa (u - zp) times
 * d q, computed here from the raw Q8_0 bytes (the f16 scales decoded here from their bits);
 * the same bits on every kernel set this CPU runs and on 1 or 2 threads; codes of -128; float rows
 * quantized per channel beside Q8_0 rows in one weight; refusals. */
#include "check.h"
#include "math/int8_gemm.h"
#include <float.h>
#include <math.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

static unsigned long long rng_state = 0x2545F4914F6CDD1Dull;
static uint64_t next_u64(void) { return check_rng(&rng_state); }
static double uniform(void) { return (double)(next_u64() >> 11) / 4503599627370496.0 - 1.0; } /* [-1, 1) */
static int rand_int(int lo, int hi) { return lo + (int)(next_u64() % (uint64_t)(hi - lo + 1)); }

/* An f16 scale's bits: normal numbers of either sign from 2^-14 to about 2^-3 (llama.cpp's scales
 * are max|w| / 127), sometimes 0. */
static uint16_t random_f16(void) {
    if (rand_int(0, 40) == 0) return 0;
    return (uint16_t)(rand_int(0, 1) << 15 | rand_int(1, 12) << 10 | rand_int(0, 1023));
}
/* The f16's value, decoded here: 2^(e - 15) (1 + m / 1024), or 2^-14 m / 1024 when e = 0. */
static double f16_value(uint16_t h) {
    int s = h >> 15, e = h >> 10 & 31, m = h & 1023;
    double v = e ? ldexp(1.0 + m / 1024.0, e - 15) : ldexp(m / 1024.0, -14);
    return s ? -v : v;
}

/* N rows of K / 32 Q8_0 blocks: random scales, codes from -128 to 127. */
static unsigned char *random_q8_0(int N, int K) {
    size_t bytes = (size_t)N * (size_t)(K / 32) * 34;
    unsigned char *q = malloc(bytes);
    for (size_t i = 0; i < bytes; i += 34) {
        uint16_t h = random_f16();
        q[i] = (unsigned char)(h & 255), q[i + 1] = (unsigned char)(h >> 8);
        for (int j = 0; j < 32; j++) q[i + 2 + j] = (unsigned char)(int8_t)rand_int(-128, 127);
    }
    return q;
}
static double q8_value(const unsigned char *q, int K, int n, int k) {
    const unsigned char *b = q + ((size_t)n * (size_t)(K / 32) + (size_t)(k / 32)) * 34;
    return f16_value((uint16_t)(b[0] | b[1] << 8)) * (int8_t)b[2 + k % 32];
}

typedef struct {
    int M, N, K;
} shape;
/* N below, at and past 16 and 32 (17, 45: ragged last panels, past AVX2's 8-channel half), M 1 to 7
 * (the 6-row tiles, AVX-VNNI's 3 and AVX2's 2), K one block, two, and 129 (the 4096 + 32 of a wide
 * layer); the last shapes past 512 KB of codes (rows in chunks) */
static const shape shapes[] = {{1, 1, 32},    {2, 16, 32},    {3, 17, 64},     {4, 45, 64},
                               {5, 33, 4128}, {6, 64, 96},    {7, 100, 32},    {1, 5, 4128},
                               {13, 50, 160}, {29, 131, 256}, {70, 160, 4096}, {9, 1, 64}};
#define NSHAPES (sizeof shapes / sizeof shapes[0])

static int paths_seen[EMB_I8_NPATHS];

static void test_against_reference(void) {
    char err[EMB_ERR_LEN];
    for (size_t s = 0; s < NSHAPES; s++) {
        int M = shapes[s].M, N = shapes[s].N, K = shapes[s].K, ldu = K + 5, ldc = N + 3, nb = K / 32;
        unsigned char *q = random_q8_0(N, K);
        uint8_t *u = malloc((size_t)M * ldu);
        float *sa = malloc((size_t)M * sizeof *sa), *bias = malloc((size_t)N * sizeof *bias);
        int32_t *zp = malloc((size_t)M * sizeof *zp);
        float *C0 = malloc((size_t)M * ldc * sizeof *C0), *C = malloc((size_t)M * ldc * sizeof *C),
              *C1 = malloc((size_t)M * ldc * sizeof *C1);
        for (int i = 0; i < M * ldu; i++) u[i] = (uint8_t)rand_int(0, 255);
        for (int m = 0; m < M; m++) sa[m] = (float)(0.001 + 0.05 * fabs(uniform())), zp[m] = rand_int(0, 255);
        for (int n = 0; n < N; n++) bias[n] = (float)uniform();
        for (int i = 0; i < M * ldc; i++) C0[i] = (float)uniform();
        if (s == 0) { /* the extremes: u = 255 against -128 and 127 */
            for (int k = 0; k < K; k++) u[k] = 255, q[2 + k] = (unsigned char)(k % 2 ? 127 : -128);
        }
        emb_int8_gemm_weights *w = emb_int8_gemm_weights_pack_blocks(q, N, K, err);
        emb_int8_gemm_act a = EMB_I8_ACT_INIT;
        CHECK(w && emb_int8_gemm_act_set_codes(&a, u, ldu, sa, zp, M, K) == 0, "%dx%dx%d: pack (%s)", M, N, K,
              w ? "" : err);
        if (!w) continue;
        int read_ok = emb_int8_gemm_weights_blocks(w) && emb_int8_gemm_weights_n(w) == N;
        for (int n = 0; n < N; n++)
            for (int k = 0; k < K; k++)
                read_ok &= emb_int8_gemm_weights_code(w, n, k) *
                               (double)emb_int8_gemm_weights_block_scale(w, n, k / 32) ==
                           q8_value(q, K, n, k);
        CHECK(read_ok, "%dx%dx%d: codes and scales read back as the file's", M, N, K);
        CHECK(emb_int8_gemm_weights_bytes(w) >= (size_t)N * K + (size_t)N * nb * 4 &&
                  emb_int8_gemm_weights_bytes(w) <= (size_t)(N + 15) / 16 * 16 * ((size_t)K * 36 / 32 + 4) + 256,
              "%dx%dx%d: %zu bytes, 36 / 32 a weight", M, N, K, emb_int8_gemm_weights_bytes(w));
        for (int beta = 0; beta < 2; beta++)
            for (int with_bias = 0; with_bias < 2; with_bias++) {
                const float *bs = with_bias ? bias : NULL;
                memcpy(C, C0, (size_t)M * ldc * sizeof *C);
                CHECK(emb_int8_gemm_q_path(EMB_I8_SCALAR, &a, w, bs, (float)beta, C, ldc) == 0, "scalar product");
                int within = 1, pad_ok = 1;
                double worst = 0;
                for (int m = 0; m < M; m++) {
                    for (int n = 0; n < N; n++) {
                        double exact = 0, mag = 0, corr = 0;
                        for (int b = 0; b < nb; b++) {
                            double pb = 0, cb = 0;
                            for (int k = 32 * b; k < 32 * b + 32; k++) {
                                double wv = q8_value(q, K, n, k);
                                exact += ((int)u[(size_t)m * ldu + k] - zp[m]) * (double)sa[m] * wv;
                                pb += u[(size_t)m * ldu + k] * wv;
                                cb += wv;
                            }
                            mag += fabs(pb);
                            corr += fabs(cb);
                        }
                        double c0 = beta ? C0[(size_t)m * ldc + n] : 0.0, bn = bs ? bias[n] : 0.0;
                        double want = c0 + exact + bn;
                        /* float roundings: nb fma, wcorr, zp wcorr, the difference, sa, bias, C */
                        double bound = FLT_EPSILON * ((nb + 3) * sa[m] * (mag + zp[m] * corr) +
                                                      2 * (fabs(c0) + fabs(bn) + fabs(want))) +
                                       1e-30;
                        double e = fabs(C[(size_t)m * ldc + n] - want);
                        within &= e <= bound;
                        worst = e / bound > worst ? e / bound : worst;
                    }
                    for (int n = N; n < ldc; n++) pad_ok &= C[(size_t)m * ldc + n] == C0[(size_t)m * ldc + n];
                }
                CHECK(within, "%dx%dx%d beta %d bias %d: error up to %.3f of the bound", M, N, K, beta, with_bias,
                      worst);
                CHECK(pad_ok, "%dx%dx%d: columns past N untouched", M, N, K);
                for (int p = 1; p < EMB_I8_NPATHS; p++) {
                    if (!emb_int8_gemm_path_supported((emb_int8_gemm_path)p)) continue;
                    paths_seen[p] = 1;
                    memcpy(C1, C0, (size_t)M * ldc * sizeof *C1);
                    emb_int8_gemm_q_path((emb_int8_gemm_path)p, &a, w, bs, (float)beta, C1, ldc);
                    CHECK(!memcmp(C, C1, (size_t)M * ldc * sizeof *C),
                          "%s %dx%dx%d beta %d bias %d: scalar's bits",
                          emb_int8_gemm_path_name((emb_int8_gemm_path)p), M, N, K, beta, with_bias);
                }
            }
        emb_int8_gemm_weights_free(w);
        emb_int8_gemm_act_free(&a);
        free(q), free(u), free(sa), free(bias), free(zp), free(C0), free(C), free(C1);
    }
}

/* Float activations quantized as the encoder quantizes them, on two threads and one: the same bits
 * (by rows, and by panels for a weight past 1 MB). */
static void test_threads(void) {
    char err[EMB_ERR_LEN];
    emb_workers *wk = emb_workers_new(1);
    const shape big[] = {{128, 384, 384}, {40, 1536, 1024}, {16, 3072, 384}};
    for (size_t s = 0; s < sizeof big / sizeof big[0]; s++) {
        int M = big[s].M, N = big[s].N, K = big[s].K;
        unsigned char *q = random_q8_0(N, K);
        float *A = malloc((size_t)M * K * sizeof *A), *C1 = malloc((size_t)M * N * sizeof *C1),
              *C2 = malloc((size_t)M * N * sizeof *C2);
        for (int i = 0; i < M * K; i++) A[i] = (float)uniform();
        emb_int8_gemm_weights *w = emb_int8_gemm_weights_pack_blocks(q, N, K, err);
        emb_int8_gemm_act a1 = EMB_I8_ACT_INIT, a2 = EMB_I8_ACT_INIT;
        CHECK(w && emb_int8_gemm(A, K, M, w, NULL, 0.0f, C1, N, &a1, NULL) == 0 &&
                  emb_int8_gemm(A, K, M, w, NULL, 0.0f, C2, N, &a2, wk) == 0,
              "%dx%dx%d products", M, N, K);
        CHECK(w && !memcmp(C1, C2, (size_t)M * N * sizeof *C1), "%dx%dx%d: 2 threads, the bits of 1", M, N, K);
        emb_int8_gemm_weights_free(w);
        emb_int8_gemm_act_free(&a1);
        emb_int8_gemm_act_free(&a2);
        free(q), free(A), free(C1), free(C2);
    }
    emb_workers_free(wk);
}

/* One weight from Q8_0 rows and float rows (a fused Q / K / V of mixed types): the float rows are
 * coded as emb_int8_gemm_weights_pack codes them, their scale in each block. */
static void test_mixed_rows(void) {
    char err[EMB_ERR_LEN];
    enum { N1 = 20, N2 = 13, K = 96 };
    unsigned char *q = random_q8_0(N1, K);
    float W[N2 * K];
    for (int i = 0; i < N2 * K; i++) W[i] = (float)(0.05 * uniform());
    emb_int8_gemm_weights *w = emb_int8_gemm_weights_new_blocks(N1 + N2, K, err);
    emb_int8_gemm_weights *ref = emb_int8_gemm_weights_pack(W, N2, K, K, err);
    CHECK(w && ref && emb_int8_gemm_weights_set_rows_q8_0(w, 0, N1, q, err) == 0 &&
              emb_int8_gemm_weights_set_rows(w, N1, N2, W, K, err) == 0,
          "Q8_0 rows then float rows: %s", err);
    int same = w && ref;
    for (int n = 0; same && n < N2; n++)
        for (int k = 0; k < K; k++)
            same &= emb_int8_gemm_weights_code(w, N1 + n, k) == emb_int8_gemm_weights_code(ref, n, k) &&
                    emb_int8_gemm_weights_block_scale(w, N1 + n, k / 32) == emb_int8_gemm_weights_scale(ref, n);
    CHECK(same, "float rows: the per-channel codes, the channel's scale in every block");
    int first = 1;
    for (int n = 0; w && n < N1; n++)
        for (int k = 0; k < K; k++)
            first &=
                emb_int8_gemm_weights_code(w, n, k) * (double)emb_int8_gemm_weights_block_scale(w, n, k / 32) ==
                q8_value(q, K, n, k);
    CHECK(first, "the Q8_0 rows as written");
    emb_int8_gemm_weights_free(w);
    emb_int8_gemm_weights_free(ref);
    free(q);
}

static void test_refusals(void) {
    char err[EMB_ERR_LEN];
    err[0] = 0;
    CHECK(emb_int8_gemm_weights_new_blocks(4, 48, err) == NULL && strstr(err, "multiple of 32"), "K = 48: %s",
          err);
    unsigned char *q = random_q8_0(3, 64);
    q[34] = 0x00, q[35] = 0x7C; /* row 0, block 1: an infinite scale */
    CHECK(emb_int8_gemm_weights_pack_blocks(q, 3, 64, err) == NULL && strstr(err, "row 0, block 1"),
          "infinite scale: %s", err);
    q[35] = 0x7E; /* NaN */
    CHECK(emb_int8_gemm_weights_pack_blocks(q, 3, 64, err) == NULL && strstr(err, "not a finite"), "NaN scale: %s",
          err);
    q[35] = 0x3C; /* 1.0 */
    emb_int8_gemm_weights *w = emb_int8_gemm_weights_pack_blocks(q, 3, 64, err);
    emb_int8_gemm_act a = EMB_I8_ACT_INIT;
    float A[64], C[3] = {42, 42, 42};
    int32_t P[3];
    for (int k = 0; k < 64; k++) A[k] = (float)uniform();
    CHECK(w && emb_int8_gemm_quantize(A, 64, 1, 64, &a, NULL) == 0 &&
              emb_int8_gemm_s32(EMB_I8_SCALAR, &a, w, P, 3) == -1,
          "no int32 products of block weights");
    CHECK(w && emb_int8_gemm_weights_set_rows_q8_0(w, 2, 2, q, err) == -1 && strstr(err, "outside"),
          "rows past N: %s", err);
    emb_int8_gemm_weights *pc = emb_int8_gemm_weights_new(3, 64, err);
    CHECK(pc && emb_int8_gemm_weights_set_rows_q8_0(pc, 0, 1, q, err) == -1 && strstr(err, "per channel"),
          "Q8_0 rows into a per-channel weight: %s", err);
    emb_int8_gemm_act other = EMB_I8_ACT_INIT;
    CHECK(emb_int8_gemm_quantize(A, 64, 1, 32, &other, NULL) == 0 &&
              emb_int8_gemm_q(&other, w, NULL, 0, C, 3, NULL) == -1 && C[0] == 42.0f,
          "activations of another K refused, C untouched");
    emb_int8_gemm_weights_free(w);
    emb_int8_gemm_weights_free(pc);
    emb_int8_gemm_act_free(&a);
    emb_int8_gemm_act_free(&other);
    free(q);
}

int main(void) {
    test_against_reference();
    test_threads();
    test_mixed_rows();
    test_refusals();
    printf("kernel sets checked on this CPU: scalar");
    for (int p = 1; p < EMB_I8_NPATHS; p++)
        if (paths_seen[p]) printf(" %s", emb_int8_gemm_path_name((emb_int8_gemm_path)p));
    printf("\n");
    return check_report();
}
