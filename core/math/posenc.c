#include "sqlite-embed/posenc.h"
#include <math.h>

void emb_sinusoidal(double pos, size_t dim, double base, float *out) {
    for (size_t j = 0; j < dim; j++) {
        size_t two_i = j & ~(size_t)1; /* 2i for both the sine (even) and cosine (odd) slot */
        double angle = pos / pow(base, (double)two_i / (double)dim);
        out[j] = (float)((j & 1) ? cos(angle) : sin(angle));
    }
}
