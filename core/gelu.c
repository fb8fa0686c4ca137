/* See gelu.h. */
#include "gelu.h"
#include "encoder_kernels.h"

EMB_KERNELS_BEGIN
EMB_CLONES
void emb_gelu(float *y, size_t n) {
#pragma omp simd
    for (size_t i = 0; i < n; i++) {
        double x = (double)y[i];
        y[i] = (float)(0.5 * x * (1.0 + emb_erf(x * 0.70710678118654752440)));
    }
}
EMB_KERNELS_END
