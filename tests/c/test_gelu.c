/* GELU (core/gelu.h, and emb_gelu_of of encoder_kernels.h, the path of CPUs without AVX-512)
 * against x Phi(x) from libm's erfc in double, on 2^21 + 1 evenly spaced points of [-12, 12]
 * and on special values: within 3e-6 relatively wherever |GELU(x)| > 1e-6 (the erf in double
 * used before left 0.14 there, 1 + erf(x) cancelling for negative x), and within 5e-7
 * absolutely everywhere; NaN stays NaN, +inf gives +inf and -inf NaN (-inf * 0, as in PyTorch).
 * Every length from 1 to 130 runs the vector loop and its masked tail: each value the same bits
 * as in the long run. The exp of AVX-512 kernels (vexp512.h, attention's softmax) against libm's
 * exp in double: within 2 float ulps over [-87, 88], NaN kept, exp(-inf) below 1e-37, exp(0)
 * exactly 1; AVX2's (vexp256.h) likewise. The quick GELU of int8 and bf16 weights (emb_gelu_quick, emb_gelu_quick_of): within
 * 1e-6 absolutely on the same points, the same special values and lengths. */
#include "check.h"
#include "base/simd.h"
#include "math/encoder_kernels.h"
#include "math/gelu.h"
#include <math.h>
#include <stdlib.h>
#include <string.h>
#if defined(__x86_64__) && defined(__GNUC__)
#include "math/vexp512.h"

/* the worst error of y = exp(x) in float ulps against libm's exp in double, and where */
static double worst_ulps(const float *x, const float *y, int n, float *at) {
    double worst = 0;
    for (int i = 0; i < n; i++) {
        double want = exp((double)x[i]), ulp = nextafterf((float)want, INFINITY) - (float)want;
        double e = fabs(y[i] - want) / ulp;
        if (e > worst) worst = e, *at = x[i];
    }
    return worst;
}

EMB_T_AVX512_FMA static void vexp_of(const float *x, float *y, int n) {
    for (int i = 0; i < n; i += 16) {
        __mmask16 m = n - i >= 16 ? (__mmask16)0xFFFF : (__mmask16)((1u << (n - i)) - 1u);
        _mm512_mask_storeu_ps(y + i, m, emb_vexp512(_mm512_maskz_loadu_ps(m, x + i)));
    }
}

static void check_vexp(void) {
    if (!emb_vexp512_supported()) {
        CHECK_SKIP("emb_vexp512: the kernel set is %s, not avx512, so it is never called",
                   emb_simd_name(emb_simd()));
        return;
    }
    enum { N = 1 << 20 };
    float *x = malloc(sizeof(float) * N), *y = malloc(sizeof(float) * N);
    for (int i = 0; i < N; i++) x[i] = (float)(-87.0 + 175.0 * i / (N - 1));
    vexp_of(x, y, N);
    float at = 0;
    double worst = worst_ulps(x, y, N, &at);
    CHECK(worst <= 2.0, "emb_vexp512: %.2f ulps off at x = %.9g", worst, at);
    float sx[3] = {NAN, -INFINITY, 0.0f}, sy[3];
    vexp_of(sx, sy, 3);
    CHECK(isnan(sy[0]) && sy[1] >= 0 && sy[1] < 1e-37f && sy[2] == 1.0f,
          "emb_vexp512: exp(NaN) %g, exp(-inf) %g, exp(0) %g", sy[0], sy[1], sy[2]);
    free(x);
    free(y);
}
#include "math/vexp256.h"
EMB_T_AVX2_FMA static void vexp256_of(const float *x, float *y, int n) {
    for (int i = 0; i < n; i += 8) {
        float in[8] = {0}, out[8];
        memcpy(in, x + i, sizeof(float) * (size_t)(n - i < 8 ? n - i : 8));
        __m256 v = _mm256_loadu_ps(in);
        emb_vexp256_n(&v, 1);
        _mm256_storeu_ps(out, v);
        memcpy(y + i, out, sizeof(float) * (size_t)(n - i < 8 ? n - i : 8));
    }
}
/* emb_vexp256 (AVX2's softmax and GELU) on the same points: within 2 ulps, NaN kept, exp(-inf)
 * below 1e-37 (a subnormal, as scalef gives), exp(0) exactly 1 */
static void check_vexp256(void) {
    if (!__builtin_cpu_supports("avx2") || !__builtin_cpu_supports("fma")) {
        CHECK_SKIP("emb_vexp256: this CPU has no AVX2 with FMA, so it is never called");
        return;
    }
    enum { N = 1 << 20 };
    float *x = malloc(sizeof(float) * N), *y = malloc(sizeof(float) * N);
    for (int i = 0; i < N; i++) x[i] = (float)(-87.0 + 175.0 * i / (N - 1));
    vexp256_of(x, y, N);
    float at = 0;
    double worst = worst_ulps(x, y, N, &at);
    CHECK(worst <= 2.0, "emb_vexp256: %.2f ulps off at x = %.9g", worst, at);
    float sx[4] = {NAN, -INFINITY, 0.0f, -88.0f}, sy[4];
    vexp256_of(sx, sy, 4);
    CHECK(isnan(sy[0]) && sy[1] > 0 && sy[1] < 1e-37f && sy[2] == 1.0f && sy[3] == sy[1],
          "emb_vexp256: exp(NaN) %g, exp(-inf) %g, exp(0) %g, exp(-88) %g", sy[0], sy[1], sy[2], sy[3]);
    free(x);
    free(y);
}
#else
static void check_vexp(void) { CHECK_SKIP("emb_vexp512: not x86-64, so it is not built"); }
static void check_vexp256(void) { CHECK_SKIP("emb_vexp256: not x86-64, so it is not built"); }
#endif

#define NPOINTS ((1 << 21) + 1)

static double gelu_ref(float x) { return 0.5 * (double)x * erfc(-(double)x / sqrt(2.0)); }

/* worst relative error where |ref| > 1e-6, and worst absolute error, of y against x */
static void errors(const float *x, const float *y, size_t n, double *rel, double *abs_err, float *at) {
    *rel = *abs_err = 0;
    *at = 0;
    for (size_t i = 0; i < n; i++) {
        double ref = gelu_ref(x[i]), e = fabs((double)y[i] - ref);
        if (e > *abs_err) *abs_err = e;
        if (fabs(ref) > 1e-6 && e / fabs(ref) > *rel) {
            *rel = e / fabs(ref);
            *at = x[i];
        }
    }
}

/* One GELU, its vector form and its scalar form: on the grid x within max_rel relatively where
 * |GELU| > 1e-6 (max_rel < 0: not checked) and within max_abs absolutely; every length of 1..130
 * the long run's bits; the special values: NaN and -inf give NaN, +inf gives +inf, the rest within
 * |ref| * sp_rel + sp_abs with the reference's sign (or 0 where zero_any_sign). */
typedef struct {
    const char *name, *name_of;
    void (*vec)(float *, size_t);
    float (*of)(float);
    double max_rel, max_abs, sp_rel, sp_abs;
    int zero_any_sign;
} gelu_form;

static void check_form(const gelu_form *f, const float *x, const float *special, size_t ns) {
    float *y = malloc(sizeof(float) * NPOINTS), *z = malloc(sizeof(float) * NPOINTS);
    memcpy(y, x, sizeof(float) * NPOINTS);
    f->vec(y, NPOINTS);
    for (int i = 0; i < NPOINTS; i++) z[i] = f->of(x[i]);
    double rel, abs_err;
    float at;
    const float *outs[2] = {y, z};
    const char *names[2] = {f->name, f->name_of};
    for (int k = 0; k < 2; k++) {
        errors(x, outs[k], NPOINTS, &rel, &abs_err, &at);
        if (f->max_rel >= 0) CHECK(rel <= f->max_rel, "%s: relative error %.3g at x = %.9g", names[k], rel, at);
        CHECK(abs_err <= f->max_abs, "%s: absolute error %.3g", names[k], abs_err);
    }

    int differ = 0;
    float part[130];
    for (int n = 1; n <= 130; n++) {
        int from = (n * 7919) % (NPOINTS - 130);
        memcpy(part, x + from, sizeof(float) * n);
        f->vec(part, (size_t)n);
        differ += memcmp(part, y + from, sizeof(float) * n) != 0;
    }
    CHECK(differ == 0, "%s over 1..130 values: %d lengths differ from the long run", f->name, differ);

    float *out = malloc(sizeof(float) * ns);
    memcpy(out, special, sizeof(float) * ns);
    f->vec(out, ns);
    for (size_t i = 0; i < ns; i++) {
        float s = special[i], got = out[i], of = f->of(s);
        int ok;
        if (isnan(s) || s == -INFINITY) ok = isnan(got) && isnan(of);
        else if (s == INFINITY) ok = got == INFINITY && of == INFINITY;
        else {
            double ref = gelu_ref(s), tol = fabs(ref) * f->sp_rel + f->sp_abs;
            ok = fabs(got - ref) <= tol && fabs(of - ref) <= tol &&
                 ((f->zero_any_sign && got == 0) || signbit(got) == signbit((float)ref));
        }
        CHECK(ok, "GELU(%g): %s %g, %s %g, want %g", s, f->name, got, f->name_of, of, gelu_ref(s));
    }
    free(out);
    free(y);
    free(z);
}

static float gelu_of(float x) { return emb_gelu_of(x); }
static float gelu_quick_of(float x) { return emb_gelu_quick_of(x); }

int main(void) {
    check_vexp();
    check_vexp256();
    float *x = malloc(sizeof(float) * NPOINTS);
    for (int i = 0; i < NPOINTS; i++) x[i] = (float)(-12.0 + 24.0 * i / (NPOINTS - 1));
    float special[] = {0.0f,   -0.0f,    1e-30f,    -1e-30f, 1e-45f, 3e38f,
                       -3e38f, INFINITY, -INFINITY, NAN,     -20.0f, 20.0f};
    size_t ns = sizeof special / sizeof special[0];
    const gelu_form exact = {"emb_gelu", "emb_gelu_of", emb_gelu, gelu_of, 3e-6, 5e-7, 3e-6, 1e-37, 0};
    const gelu_form quick = {
        "emb_gelu_quick", "emb_gelu_quick_of", emb_gelu_quick, gelu_quick_of, -1, 1e-6, 0, 1e-6, 1};
    check_form(&exact, x, special, ns);
    check_form(&quick, x, special, ns);
    free(x);
    return check_report();
}
