/* LayerNorm down the columns of a 32-row panel (core/panel_norm.h) against the definition in
 * long double: each lane is one row, normed on its own. Rows differ in scale and offset (means
 * far from 0, where a float sum of squares would lose the variance), widths cover 1, odd and
 * model sizes, and a constant row normalises to the bias. Skipped, saying so, where the panels
 * do not exist: below the AVX-512 set (emb_sgemm_bcast_panels_supported). */
#include "check.h"
#include "base/simd.h"
#include "math/panel_norm.h"
#include "math/sgemm_bcast.h"
#include <math.h>
#include <stdlib.h>

static unsigned long long rng = 0x9E3779B97F4A7C15ull;
static double uniform(void) { return (double)(check_rng(&rng) >> 11) / 9007199254740992.0 * 2.0 - 1.0; }

static void run(int H, float eps) {
    float *panel = aligned_alloc(64, sizeof(float) * 32 * (size_t)H), *g = malloc(sizeof(float) * H),
          *b = malloc(sizeof(float) * H), *x = malloc(sizeof(float) * 32 * (size_t)H);
    for (int n = 0; n < H; n++) g[n] = (float)(1.0 + 0.5 * uniform()), b[n] = (float)(0.1 * uniform());
    for (int m = 0; m < 32; m++) {
        double offset = m % 4 == 0 ? 0.0 : m % 4 == 1 ? 1000.0 : m % 4 == 2 ? -3.5 : 20.0;
        double scale = m % 3 == 0 ? 1.0 : m % 3 == 1 ? 1e-2 : 30.0;
        for (int n = 0; n < H; n++) x[m * H + n] = m == 31 ? 2.5f : (float)(offset + scale * uniform());
    }
    for (int m = 0; m < 32; m++)
        for (int n = 0; n < H; n++) panel[n * 32 + m] = x[m * H + n];
    emb_panel_layernorm(panel, g, b, H, eps);
    int bad = 0;
    double worst = 0;
    for (int m = 0; m < 32; m++) {
        long double s = 0, v = 0;
        for (int n = 0; n < H; n++) s += x[m * H + n];
        long double mean = s / H;
        for (int n = 0; n < H; n++) v += (x[m * H + n] - mean) * (x[m * H + n] - mean);
        long double rstd = 1.0L / sqrtl(v / H + eps);
        for (int n = 0; n < H; n++) {
            long double y = (x[m * H + n] - mean) * rstd, want = y * g[n] + b[n];
            /* float rounding of x - mean, of y and of y * g + b */
            double err = fabs((double)(panel[n * 32 + m] - want));
            double tol = 4e-7 * (fabs((double)y * g[n]) + fabs(b[n])) + 1e-7;
            if (!(err <= tol)) bad++;
            if (err > worst) worst = err;
        }
    }
    CHECK(bad == 0, "LayerNorm of a 32 x %d panel (eps %g): %d values off, worst |error| %.3g", H, eps, bad,
          worst);
    free(panel), free(g), free(b), free(x);
}

int main(void) {
    if (!emb_sgemm_bcast_panels_supported()) { /* emb_sgemm_bcast_supported() is always 1 */
        CHECK_SKIP("LayerNorm of panels: the kernel set is %s, not avx512, so the encoder keeps its rows as rows",
                   emb_simd_name(emb_simd()));
        return check_report();
    }
    static const int widths[] = {1, 7, 64, 384, 768, 1000};
    for (size_t i = 0; i < sizeof widths / sizeof widths[0]; i++) {
        run(widths[i], 1e-12f);
        run(widths[i], 1e-5f);
    }
    return check_report();
}
