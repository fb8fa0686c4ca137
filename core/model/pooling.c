#include "sqlite-embed/pooling.h"
#include <string.h>

void emb_pool(const float *hidden, int T, int H, int len, emb_pool_mode mode, float *out) {
    if (len > T) len = T;
    if (len <= 0) {
        memset(out, 0, (size_t)H * sizeof *out);
        return;
    }
    switch (mode) {
    case EMB_POOL_CLS: memcpy(out, hidden, (size_t)H * sizeof *out); break;
    case EMB_POOL_MAX:
        memcpy(out, hidden, (size_t)H * sizeof *out);
        for (int t = 1; t < len; t++) {
            const float *r = hidden + (size_t)t * H;
            for (int i = 0; i < H; i++) out[i] = r[i] > out[i] ? r[i] : out[i];
        }
        break;
    case EMB_POOL_MEAN:
    default:
        for (int i = 0; i < H; i++) {
            double s = 0;
            for (int t = 0; t < len; t++) s += hidden[(size_t)t * H + i];
            out[i] = (float)(s / len);
        }
        break;
    }
}

const char *emb_pool_mode_name(emb_pool_mode m) {
    return m == EMB_POOL_CLS ? "cls" : m == EMB_POOL_MAX ? "max" : "mean";
}

int emb_pool_mode_parse(const char *s, emb_pool_mode *out) {
    if (!s) return -1;
    if (strcmp(s, "mean") == 0) *out = EMB_POOL_MEAN;
    else if (strcmp(s, "cls") == 0) *out = EMB_POOL_CLS;
    else if (strcmp(s, "max") == 0) *out = EMB_POOL_MAX;
    else return -1;
    return 0;
}
