#include "sqlite-embed/pooling.h"
#include <math.h>
#include <string.h>

static const char *const NAMES[EMB_POOL_MODES] = {"mean",         "cls",      "max", "mean_sqrt_len_tokens",
                                                  "weightedmean", "lasttoken"};

/* Sums of rows first .. end - 1, row t weighted by (t + 1) when weighted, divided by div. */
static void sum_rows(const float *hidden, int H, int first, int end, int weighted, double div, float *out) {
    for (int i = 0; i < H; i++) {
        double s = 0;
        for (int t = first; t < end; t++) s += hidden[(size_t)t * H + i] * (weighted ? t + 1.0 : 1.0);
        out[i] = (float)(s / div);
    }
}

void emb_pool_from(const float *hidden, int T, int H, int first, int len, emb_pool_mode mode, float *out) {
    if (len > T) len = T;
    if (first < 0) first = 0;
    if (len <= first) {
        memset(out, 0, (size_t)H * sizeof *out);
        return;
    }
    int n = len - first;
    switch (mode) {
    case EMB_POOL_CLS: memcpy(out, hidden + (size_t)first * H, (size_t)H * sizeof *out); break;
    case EMB_POOL_LAST_TOKEN: memcpy(out, hidden + (size_t)(len - 1) * H, (size_t)H * sizeof *out); break;
    case EMB_POOL_MAX:
        memcpy(out, hidden + (size_t)first * H, (size_t)H * sizeof *out);
        for (int t = first + 1; t < len; t++) {
            const float *r = hidden + (size_t)t * H;
            for (int i = 0; i < H; i++) out[i] = r[i] > out[i] ? r[i] : out[i];
        }
        break;
    case EMB_POOL_MEAN_SQRT_LEN: sum_rows(hidden, H, first, len, 0, sqrt((double)n), out); break;
    case EMB_POOL_WEIGHTED_MEAN: {
        /* the weights first + 1 .. len sum to n (first + 1 + len) / 2 */
        sum_rows(hidden, H, first, len, 1, (double)n * (first + 1 + len) / 2.0, out);
        break;
    }
    case EMB_POOL_MEAN:
    default: sum_rows(hidden, H, first, len, 0, n, out); break;
    }
}

void emb_pool(const float *hidden, int T, int H, int len, emb_pool_mode mode, float *out) {
    emb_pool_from(hidden, T, H, 0, len, mode, out);
}

const char *emb_pool_mode_name(emb_pool_mode m) { return (unsigned)m < EMB_POOL_MODES ? NAMES[m] : "mean"; }

int emb_pool_mode_parse(const char *s, emb_pool_mode *out) {
    if (!s) return -1;
    for (int i = 0; i < EMB_POOL_MODES; i++)
        if (strcmp(s, NAMES[i]) == 0) {
            *out = (emb_pool_mode)i;
            return 0;
        }
    return -1;
}
