/* int8 products (core/int8_gemm.h): the exact int32 products of every kernel set this CPU runs
 * against sums computed here in 64-bit integers from the codes; the float results the same bit
 * for bit on every set and on 1 or 2 threads; dequantized results within the bound that the
 * rounding of the codes allows (derived below), against double-precision products of the float
 * inputs; odd shapes, strides, bias, accumulation, non-finite input and refusals. */
#include "check.h"
#if defined(__x86_64__) && defined(__GNUC__)
#include <cpuid.h>
#endif
#include "math/int8_gemm.h"
#include <float.h>
#include <math.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

static unsigned long long rng_state = 0x9E3779B97F4A7C15ull;
static uint64_t next_u64(void) { return check_rng(&rng_state); }
static double uniform(void) { return (double)(next_u64() >> 11) / 4503599627370496.0 - 1.0; } /* [-1, 1) */
static int rand_int(int lo, int hi) { return lo + (int)(next_u64() % (uint64_t)(hi - lo + 1)); }

typedef struct {
    int M, N, K;
} shape;
/* K not a multiple of 4 or 64 (nor of 16: K = 44 leaves 12 codes past the last 16), N not a
 * multiple of 16 or 64 (N = 45 ends on 13 channels, past AVX2's 8-channel half), M = 1 and M past
 * the 6-row and 5-row tiles */
static const shape shapes[] = {{1, 1, 1},     {1, 17, 5},   {2, 16, 4},      {7, 33, 63},    {5, 64, 64},
                               {13, 50, 130}, {6, 65, 257}, {16, 384, 384},  {23, 131, 99},  {1, 1152, 384},
                               {37, 200, 3},  {11, 45, 44}, {130, 33, 6001}, {61, 200, 2701}};
/* the last two: rows outside panels (codes of the panels within 512 KB), rows in blocks of 48
 * (AVX2: its widened rows in chunks of 20) */
#define NSHAPES (sizeof shapes / sizeof shapes[0])

static int n_paths_checked;

/* Codes given directly: P[m][n] = sum_k (u - zp) q, from the definition, on every set. */
static void test_exact_products(void) {
    char err[EMB_ERR_LEN];
    for (size_t s = 0; s < NSHAPES; s++) {
        int M = shapes[s].M, N = shapes[s].N, K = shapes[s].K, ldu = K + 3;
        uint8_t *u = malloc((size_t)M * ldu);
        int8_t *q = malloc((size_t)N * K);
        float *sa = malloc((size_t)M * sizeof *sa), *sw = malloc((size_t)N * sizeof *sw);
        int32_t *zp = malloc((size_t)M * sizeof *zp), *P = malloc((size_t)M * N * sizeof *P);
        int64_t *ref = malloc((size_t)M * N * sizeof *ref);
        for (int i = 0; i < M * ldu; i++) u[i] = (uint8_t)rand_int(0, 255);
        for (int i = 0; i < N * K; i++) q[i] = (int8_t)rand_int(-127, 127);
        if (s == 0) u[0] = 255, q[0] = -127; /* the extremes */
        for (int m = 0; m < M; m++) sa[m] = 1.0f, zp[m] = rand_int(0, 255);
        for (int n = 0; n < N; n++) sw[n] = 1.0f;
        for (int m = 0; m < M; m++)
            for (int n = 0; n < N; n++) {
                int64_t t = 0;
                for (int k = 0; k < K; k++)
                    t += (int64_t)((int)u[(size_t)m * ldu + k] - zp[m]) * q[(size_t)n * K + k];
                ref[(size_t)m * N + n] = t;
            }
        emb_int8_gemm_weights *w = emb_int8_gemm_weights_pack_codes(q, sw, N, K, err);
        emb_int8_gemm_act a = EMB_I8_ACT_INIT;
        CHECK(w && emb_int8_gemm_act_set_codes(&a, u, ldu, sa, zp, M, K) == 0, "shape %zu: pack", s);
        if (!w) continue;
        int codes_ok = 1;
        for (int n = 0; n < N; n++)
            for (int k = 0; k < K; k++) codes_ok &= emb_int8_gemm_weights_code(w, n, k) == q[(size_t)n * K + k];
        CHECK(codes_ok, "shape %zu: packed codes read back", s);
        for (int p = 0; p < EMB_I8_NPATHS; p++) {
            if (!emb_int8_gemm_path_supported((emb_int8_gemm_path)p)) continue;
            n_paths_checked++;
            memset(P, 0x55, (size_t)M * N * sizeof *P);
            emb_int8_gemm_s32((emb_int8_gemm_path)p, &a, w, P, N);
            int bad = 0;
            for (int i = 0; i < M * N && !bad; i++)
                if (P[i] != ref[i]) {
                    bad = 1;
                    CHECK(0, "%s %dx%dx%d: P[%d][%d] = %d, expected %lld",
                          emb_int8_gemm_path_name((emb_int8_gemm_path)p), M, N, K, i / N, i % N, P[i],
                          (long long)ref[i]);
                }
            CHECK(!bad, "%s %dx%dx%d exact", emb_int8_gemm_path_name((emb_int8_gemm_path)p), M, N, K);
        }
        emb_int8_gemm_weights_free(w);
        emb_int8_gemm_act_free(&a);
        free(u), free(q), free(sa), free(sw), free(zp), free(P), free(ref);
    }
}

/* The largest sums int32 must hold: u = 255, zp = 0, q = +-127 over EMB_I8_MAX_K inputs. */
static void test_int32_range(void) {
    char err[EMB_ERR_LEN];
    const int K = EMB_I8_MAX_K;
    uint8_t *u = malloc(K);
    int8_t *q = malloc(2 * (size_t)K);
    memset(u, 255, K);
    for (int k = 0; k < K; k++) q[k] = 127, q[K + k] = -127;
    float one[2] = {1, 1};
    int32_t zp = 0, P[2];
    emb_int8_gemm_weights *w = emb_int8_gemm_weights_pack_codes(q, one, 2, K, err);
    emb_int8_gemm_act a = EMB_I8_ACT_INIT;
    CHECK(w && emb_int8_gemm_act_set_codes(&a, u, K, one, &zp, 1, K) == 0, "pack at the largest K");
    for (int p = 0; w && p < EMB_I8_NPATHS; p++) {
        if (!emb_int8_gemm_path_supported((emb_int8_gemm_path)p)) continue;
        emb_int8_gemm_s32((emb_int8_gemm_path)p, &a, w, P, 2);
        CHECK(P[0] == 255 * 127 * K && P[1] == -255 * 127 * K, "%s: %d %d at K = %d",
              emb_int8_gemm_path_name((emb_int8_gemm_path)p), P[0], P[1], K);
    }
    emb_int8_gemm_weights_free(w);
    emb_int8_gemm_act_free(&a);
    free(u), free(q);
}

/* Float inputs: a = sa (u - zp) + ea, w = sw q + ew with |ea| <= sa / 2 and |ew| <= sw / 2
 * (rounding to nearest), so a.w - a^.w^ = a.ew + ea.w^ and
 *   |C - a.w| <= sw / 2 sum|a| + sa / 2 sum|w^|  (+ the float rounding of scale, product and
 * sums: a few units in the last place of sum|a^ w^| + |bias| + |C0|). */
static void test_dequantized(void) {
    char err[EMB_ERR_LEN];
    for (size_t s = 0; s < NSHAPES; s++) {
        int M = shapes[s].M, N = shapes[s].N, K = shapes[s].K, lda = K + 1, ldc = N + 2;
        float *A = malloc((size_t)M * lda * sizeof *A), *W = malloc((size_t)N * K * sizeof *W);
        float *bias = malloc((size_t)N * sizeof *bias), *C0 = malloc((size_t)M * ldc * sizeof *C0);
        float *C = malloc((size_t)M * ldc * sizeof *C), *C1 = malloc((size_t)M * ldc * sizeof *C1);
        for (int i = 0; i < M * lda; i++) A[i] = (float)(uniform() * (i % 7 == 0 ? 4 : 1));
        for (int m = 0; m < M && K > 2; m++) A[(size_t)m * lda] = 0.0f; /* zero stays exact */
        for (int i = 0; i < N * K; i++) W[i] = (float)(0.05 * uniform());
        for (int n = 0; n < N; n++) bias[n] = (float)uniform();
        for (int i = 0; i < M * ldc; i++) C0[i] = (float)uniform();
        emb_int8_gemm_weights *w = emb_int8_gemm_weights_pack(W, N, K, K, err);
        emb_int8_gemm_act a = EMB_I8_ACT_INIT;
        CHECK(w && emb_int8_gemm_quantize_path(EMB_I8_SCALAR, A, lda, M, K, &a, NULL) == 0, "shape %zu: quantize",
              s);
        if (!w) continue;
        int scale_ok = 1;
        for (int m = 0; m < M; m++) { /* sa = (max - min) / 255 over the row and 0 */
            float lo = 0, hi = 0;
            for (int k = 0; k < K; k++) {
                float v = A[(size_t)m * lda + k];
                lo = v < lo ? v : lo, hi = v > hi ? v : hi;
            }
            scale_ok &= a.scale[m] == (hi - lo) / 255.0f;
        }
        CHECK(scale_ok, "%dx%dx%d: row scales (max - min) / 255", M, N, K);
        /* beta = 1 onto C0, with bias; the padding columns past N untouched */
        memcpy(C, C0, (size_t)M * ldc * sizeof *C);
        emb_int8_gemm_q_path(EMB_I8_SCALAR, &a, w, bias, 1.0f, C, ldc);
        int within = 1, pad_ok = 1, zp_ok = 1;
        double worst = 0;
        for (int m = 0; m < M; m++) {
            zp_ok &= a.zp[m] >= 0 && a.zp[m] <= 255 && (K <= 2 || a.u[(size_t)m * a.Kp] == a.zp[m]);
            for (int n = 0; n < N; n++) {
                double exact = 0, sum_a = 0, sum_w = 0, sum_aw = 0;
                float sw = emb_int8_gemm_weights_scale(w, n);
                for (int k = 0; k < K; k++) {
                    double av = A[(size_t)m * lda + k], wv = W[(size_t)n * K + k],
                           wq = sw * emb_int8_gemm_weights_code(w, n, k);
                    exact += av * wv;
                    sum_a += fabs(av);
                    sum_w += fabs(wq);
                    sum_aw += fabs(av) * fabs(wq);
                }
                double want = C0[(size_t)m * ldc + n] + exact + bias[n];
                double bound = sw / 2 * sum_a + a.scale[m] / 2 * sum_w +
                               4 * FLT_EPSILON * (2 * sum_aw + fabs(bias[n]) + fabs(C0[(size_t)m * ldc + n]));
                double e = fabs(C[(size_t)m * ldc + n] - want);
                if (e > bound) within = 0;
                if (e / bound > worst) worst = e / bound;
            }
            for (int n = N; n < ldc; n++) pad_ok &= C[(size_t)m * ldc + n] == C0[(size_t)m * ldc + n];
        }
        CHECK(within, "%dx%dx%d: error up to %.3f of the bound", M, N, K, worst);
        CHECK(pad_ok, "%dx%dx%d: columns past N untouched", M, N, K);
        CHECK(zp_ok, "%dx%dx%d: zero points in range, a zero input coded as the zero point", M, N, K);
        /* every set, beta 0 and 1, bias or none: the same codes and the same bits as the scalar set */
        for (int p = 1; p < EMB_I8_NPATHS; p++) {
            if (!emb_int8_gemm_path_supported((emb_int8_gemm_path)p)) continue;
            emb_int8_gemm_act ap = EMB_I8_ACT_INIT;
            CHECK(emb_int8_gemm_quantize_path((emb_int8_gemm_path)p, A, lda, M, K, &ap, NULL) == 0 &&
                      !memcmp(ap.u, a.u, (size_t)M * a.Kp) && !memcmp(ap.scale, a.scale, M * sizeof(float)) &&
                      !memcmp(ap.zp, a.zp, M * sizeof(int32_t)),
                  "%s %dx%dx%d: the scalar set's codes", emb_int8_gemm_path_name((emb_int8_gemm_path)p), M, N, K);
            emb_int8_gemm_act_free(&ap);
            for (int beta = 0; beta < 2; beta++) {
                const float *bs = beta ? bias : NULL;
                memcpy(C, C0, (size_t)M * ldc * sizeof *C);
                memcpy(C1, C0, (size_t)M * ldc * sizeof *C1);
                emb_int8_gemm_q_path(EMB_I8_SCALAR, &a, w, bs, (float)beta, C, ldc);
                emb_int8_gemm_q_path((emb_int8_gemm_path)p, &a, w, bs, (float)beta, C1, ldc);
                CHECK(!memcmp(C, C1, (size_t)M * ldc * sizeof *C), "%s %dx%dx%d beta %d: same bits as scalar",
                      emb_int8_gemm_path_name((emb_int8_gemm_path)p), M, N, K, beta);
            }
        }
        emb_int8_gemm_weights_free(w);
        emb_int8_gemm_act_free(&a);
        free(A), free(W), free(bias), free(C0), free(C), free(C1);
    }
}

/* Two threads (every shape is past EMB_I8_PAR_MIN_MACS; split by rows alone from 48 rows, in two
 * tasks (128, 200 rows) or four (301), else by whole blocks of 4 panels, ragged at N's end, with
 * rows too below two panel tasks; by panels also a weight past 1 MB whose 128 rows fit one row
 * chunk) give the bits of one. */
static void test_threads(void) {
    char err[EMB_ERR_LEN];
    emb_workers *wk = emb_workers_new(1);
    CHECK(wk != NULL, "a helper thread");
    const shape big[] = {{128, 768, 384}, {200, 1152, 160}, {32, 3072, 384}, {301, 40, 2600},
                         {16, 64, 2600},  {20, 400, 384},   {47, 384, 384},  {128, 1540, 768}};
    for (size_t s = 0; s < sizeof big / sizeof big[0]; s++) {
        int M = big[s].M, N = big[s].N, K = big[s].K;
        CHECK((double)M * N * K >= EMB_I8_PAR_MIN_MACS, "%dx%dx%d is split", M, N, K);
        float *A = malloc((size_t)M * K * sizeof *A), *W = malloc((size_t)N * K * sizeof *W);
        float *C1 = malloc((size_t)M * N * sizeof *C1), *C2 = malloc((size_t)M * N * sizeof *C2);
        for (int i = 0; i < M * K; i++) A[i] = (float)uniform();
        for (int i = 0; i < N * K; i++) W[i] = (float)uniform();
        emb_int8_gemm_weights *w = emb_int8_gemm_weights_pack(W, N, K, K, err);
        emb_int8_gemm_act a1 = EMB_I8_ACT_INIT, a2 = EMB_I8_ACT_INIT;
        CHECK(w && emb_int8_gemm(A, K, M, w, NULL, 0.0f, C1, N, &a1, NULL) == 0 &&
                  emb_int8_gemm(A, K, M, w, NULL, 0.0f, C2, N, &a2, wk) == 0,
              "%dx%dx%d products", M, N, K);
        CHECK(w && !memcmp(C1, C2, (size_t)M * N * sizeof *C1), "%dx%dx%d: 2 threads, the bits of 1", M, N, K);
        emb_int8_gemm_weights_free(w);
        emb_int8_gemm_act_free(&a1);
        emb_int8_gemm_act_free(&a2);
        free(A), free(W), free(C1), free(C2);
    }
    emb_workers_free(wk);
}

/* Rows of zeros, a NaN, an infinity; fused weights from parts; refusals. */
static void test_edges(void) {
    char err[EMB_ERR_LEN];
    enum { M = 4, N = 20, K = 9 };
    float A[M * K], W[N * K], C[M * N], bias[N];
    for (int i = 0; i < M * K; i++) A[i] = (float)uniform();
    for (int i = 0; i < N * K; i++) W[i] = (float)uniform();
    for (int n = 0; n < N; n++) bias[n] = (float)n;
    for (int k = 0; k < K; k++) A[k] = 0.0f; /* row 0: zeros */
    A[K + 3] = __builtin_nanf(""); /* row 1: NaN */
    A[2 * K + 5] = __builtin_inff(); /* row 2: infinity */
    emb_int8_gemm_weights *w = emb_int8_gemm_weights_pack(W, N, K, K, err);
    emb_int8_gemm_act a = EMB_I8_ACT_INIT;
    CHECK(w && emb_int8_gemm(A, K, M, w, bias, 0.0f, C, N, &a, NULL) == 0, "edges: product");
    int zero_ok = 1, nan_ok = 1, fine = 1;
    for (int n = 0; n < N; n++) {
        zero_ok &= C[n] == bias[n];
        nan_ok &= isnan(C[N + n]) && isnan(C[2 * N + n]);
        fine &= isfinite(C[3 * N + n]);
    }
    CHECK(zero_ok, "a row of zeros gives the bias exactly");
    CHECK(nan_ok, "a NaN or infinite input gives NaN results in its row");
    CHECK(fine, "other rows unaffected");

    /* one weight from two parts (Q and K side by side) equals the weight packed whole */
    emb_int8_gemm_weights *f = emb_int8_gemm_weights_new(N, K, err);
    CHECK(f && emb_int8_gemm_weights_set_rows(f, 0, 7, W, K, err) == 0 &&
              emb_int8_gemm_weights_set_rows(f, 7, N - 7, W + 7 * K, K, err) == 0,
          "packed in two parts");
    int same = f != NULL;
    for (int n = 0; f && n < N; n++) {
        same &= emb_int8_gemm_weights_scale(f, n) == emb_int8_gemm_weights_scale(w, n);
        for (int k = 0; k < K; k++)
            same &= emb_int8_gemm_weights_code(f, n, k) == emb_int8_gemm_weights_code(w, n, k);
    }
    CHECK(same, "two parts: the same codes and scales as one");
    CHECK(emb_int8_gemm_weights_bytes(w) >= (size_t)32 * 12 + 32 * 8, "bytes count the padded codes: %zu",
          emb_int8_gemm_weights_bytes(w));
    /* the largest |w| of a row is coded as +-127 with scale max / 127 */
    float amax = 0;
    int hit = 0;
    for (int k = 0; k < K; k++) amax = fabsf(W[k]) > amax ? fabsf(W[k]) : amax;
    for (int k = 0; k < K; k++) hit |= fabsf(W[k]) == amax && abs(emb_int8_gemm_weights_code(w, 0, k)) == 127;
    CHECK(hit && emb_int8_gemm_weights_scale(w, 0) == amax / 127.0f, "row 0: max |w| coded 127, scale %g",
          emb_int8_gemm_weights_scale(w, 0));

    err[0] = 0;
    CHECK(emb_int8_gemm_weights_set_rows(f, 15, 6, W, K, err) == -1 && strstr(err, "outside"), "rows past N: %s",
          err);
    W[3] = __builtin_inff();
    CHECK(emb_int8_gemm_weights_pack(W, N, K, K, err) == NULL &&
              strstr(err, "row 0, column 3 is not a finite number"),
          "infinite weight: %s", err);
    CHECK(emb_int8_gemm_weights_new(4, EMB_I8_MAX_K + 1, err) == NULL && strstr(err, "sizes must be"),
          "K too large: %s", err);
    CHECK(emb_int8_gemm_weights_new(0, 4, err) == NULL, "N = 0 refused");
    int8_t codes[4] = {1, -128, 3, 4};
    float one = 1;
    CHECK(emb_int8_gemm_weights_pack_codes(codes, &one, 1, 4, err) == NULL && strstr(err, "-128"), "code -128: %s",
          err);
    CHECK(emb_int8_gemm_quantize(A, K - 1, M, K, &a, NULL) == -1, "lda < K refused");
    emb_int8_gemm_act other = EMB_I8_ACT_INIT;
    C[0] = 42.0f;
    CHECK(emb_int8_gemm_quantize(A, K, M, K - 1, &other, NULL) == 0 &&
              emb_int8_gemm_q(&other, w, NULL, 0.0f, C, N, NULL) == -1 &&
              emb_int8_gemm_s32(EMB_I8_SCALAR, &other, w, (int32_t *)(void *)C, N) == -1 && C[0] == 42.0f,
          "activations of another K refused, C untouched");
    emb_int8_gemm_act_free(&other);
    emb_int8_gemm_weights_free(w);
    emb_int8_gemm_weights_free(f);
    emb_int8_gemm_act_free(&a);
}

/* EMBED_SIMD caps the int8 set as it caps every kernel (read once per process: checked in a
 * child): generic gives the C loop, avx2 the best of AVX2 and AVX-VNNI this CPU has, avx512 (or
 * nothing) the best of all. Under an emulator the child must run in it too: EMBED_TEST_RUNNER
 * names it (scripts/check_haswell.sh and check_arm64.sh set it to their qemu command). */
static void test_env_path(const char *self) {
    static const char *const sets[] = {"generic", "avx2", "avx512"};
    const char *runner = getenv("EMBED_TEST_RUNNER");
    for (int s = 0; s < 3; s++) {
        char cmd[4096];
        snprintf(cmd, sizeof cmd, "EMBED_SIMD=%s %s '%s' --print-path", sets[s], runner ? runner : "", self);
        FILE *f = popen(cmd, "r");
        char got[64] = "";
        if (f) {
            if (!fgets(got, sizeof got, f)) got[0] = 0;
            pclose(f);
        }
        got[strcspn(got, "\n")] = 0;
        /* the best set at or below the cap, from the CPU's flags */
        int want = EMB_I8_SCALAR;
#if defined(__x86_64__) && defined(__GNUC__)
        __builtin_cpu_init();
        int avx2 =
            __builtin_cpu_supports("avx2") && __builtin_cpu_supports("fma") && __builtin_cpu_supports("popcnt");
        unsigned a = 0, b = 0, c = 0, d = 0;
        int vnni256 = avx2 && __get_cpuid_count(7, 1, &a, &b, &c, &d) && (a >> 4 & 1u);
        int avx512 = avx2 && __builtin_cpu_supports("avx512f") && __builtin_cpu_supports("avx512bw") &&
                     __builtin_cpu_supports("avx512vl") && __builtin_cpu_supports("avx512dq");
        if (s >= 1 && avx2) want = vnni256 ? EMB_I8_AVX_VNNI : EMB_I8_AVX2;
        if (s == 2 && avx512 && __builtin_cpu_supports("avx512vnni")) want = EMB_I8_AVX512_VNNI;
#endif
        CHECK(!strcmp(got, emb_int8_gemm_path_name((emb_int8_gemm_path)want)),
              "EMBED_SIMD=%s: int8 set %s, expected %s", sets[s], got,
              emb_int8_gemm_path_name((emb_int8_gemm_path)want));
    }
}

/* Halfway codes round to even on every set: a row spanning [-100, 155] (its first two values) has
 * scale 1 and zero point 100, so x is coded round(x) + 100 exactly, its ties to the even integer. */
static void test_ties(void) {
    enum { K = 40 };
    float A[K];
    uint8_t want[K];
    A[0] = -100.0f, want[0] = 0;
    A[1] = 155.0f, want[1] = 255;
    for (int k = 2; k < K; k++) {
        double x = -99.5 + 6.5 * (k - 2); /* -99.5, -93, -86.5, ...: every other one a tie */
        A[k] = (float)x;
        want[k] = (uint8_t)(nearbyint(x) + 100); /* libm in the default mode: to nearest, ties to even */
    }
    for (int p = 0; p < EMB_I8_NPATHS; p++) {
        if (!emb_int8_gemm_path_supported((emb_int8_gemm_path)p)) continue;
        emb_int8_gemm_act a = EMB_I8_ACT_INIT;
        int ok = emb_int8_gemm_quantize_path((emb_int8_gemm_path)p, A, K, 1, K, &a, NULL) == 0 &&
                 a.scale[0] == 1.0f && a.zp[0] == 100;
        for (int k = 0; ok && k < K; k++) ok = a.u[k] == want[k];
        CHECK(ok, "%s: ties to even (codes %d %d %d for %g %g %g)", emb_int8_gemm_path_name((emb_int8_gemm_path)p),
              a.u ? a.u[2] : -1, a.u ? a.u[3] : -1, a.u ? a.u[4] : -1, A[2], A[3], A[4]);
        emb_int8_gemm_act_free(&a);
    }
}

int main(int argc, char **argv) {
    if (argc > 1 && !strcmp(argv[1], "--print-path")) {
        printf("%s\n", emb_int8_gemm_path_name(emb_int8_gemm_path_default()));
        return 0;
    }
    test_exact_products();
    test_int32_range();
    test_dequantized();
    test_ties();
    test_threads();
    test_edges();
    test_env_path(argv[0]);
    printf("kernel sets checked on this CPU:");
    for (int p = 0; p < EMB_I8_NPATHS; p++)
        if (emb_int8_gemm_path_supported((emb_int8_gemm_path)p))
            printf(" %s", emb_int8_gemm_path_name((emb_int8_gemm_path)p));
    printf("\n");
    CHECK(n_paths_checked >= (int)NSHAPES, "at least the scalar set checked on every shape");
    return check_report();
}
