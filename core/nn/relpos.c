#include "nn/relpos.h"
#include <math.h>

/* start^(h+1), start = 2^(-2^-(log2(n) - 3)) = 2^(-8/n), for n a power of two */
static double pow2_slope(int n, int h) { return pow(2.0, -8.0 / n * (h + 1)); }

void emb_relpos_alibi_slopes(int n_heads, float *out) {
    int p = 1;
    while (p * 2 <= n_heads) p *= 2;
    for (int h = 0; h < p; h++) out[h] = (float)pow2_slope(p, h);
    for (int j = 0; p + j < n_heads; j++) out[p + j] = (float)pow2_slope(2 * p, 2 * j);
}

void emb_relpos_rope_angles(double theta, int rot, double pos, float *out) {
    int half = rot / 2;
    for (int i = 0; i < half; i++) {
        double a = pos * pow(theta, -2.0 * i / rot);
        out[i] = (float)cos(a);
        out[half + i] = (float)sin(a);
    }
}

void emb_relpos_rope_table(double theta, int rot, int n_pos, float *out) {
    for (int p = 0; p < n_pos; p++) emb_relpos_rope_angles(theta, rot, p, out + (long)p * rot);
}

void emb_relpos_rope_table_f32(double theta, int rot, int n_pos, float *out) {
    int half = rot / 2;
    for (int i = 0; i < half; i++) {
        float inv = 1.0f / powf((float)theta, (float)(2 * i) / (float)rot);
        for (int p = 0; p < n_pos; p++) {
            float a = inv * (float)p;
            out[(long)p * rot + i] = cosf(a);
            out[(long)p * rot + half + i] = sinf(a);
        }
    }
}

void emb_relpos_rope_rotate(float *x, const float *row, int rot) {
    int half = rot / 2;
    const float *c = row, *s = row + half;
    for (int i = 0; i < half; i++) {
        float x1 = x[i], x2 = x[i + half];
        x[i] = x1 * c[i] - x2 * s[i];
        x[i + half] = x2 * c[i] + x1 * s[i];
    }
}
