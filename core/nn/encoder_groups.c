/* A batch sorted by length, run as groups padded only to their own longest sequence: a batch
 * of 32 sentences whose lengths span 30 tokens is a fifth padding when padded whole, and the
 * padding rows cost as much as real ones in every product. */
#include "nn/encoder_internal.h"
#include "base/emb_common.h"
#include "math/sgemm_bcast.h"
#include <stdlib.h>
#include <string.h>

/* Rows the products compute for B sequences padded to T (their panels of 32 rows), plus
 * EMB_GROUP_COST rows for each forward pass's fixed work, so that a cut must save more than it
 * adds. */
static size_t group_rows(int B, int T) { return emb_sgemm_bcast_panel_floats(B * T, 1) + EMB_GROUP_COST; }

int emb_encoder_groups(const int32_t *lens, int B, int *starts) {
    if (B < 1) return 0;
    int sorted = 1;
    for (int b = 1; b < B; b++) sorted &= lens[b] >= lens[b - 1];
    /* cost[j]: the fewest rows for the first j sequences; from[j]: where their last group starts */
    size_t *cost = sorted ? malloc(sizeof(size_t) * ((size_t)B + 1)) : NULL;
    int *from = cost ? malloc(sizeof(int) * ((size_t)B + 1)) : NULL;
    if (!from) { /* not sorted (or no memory): one group */
        free(cost);
        starts[0] = 0;
        starts[1] = B;
        return 1;
    }
    cost[0] = 0;
    for (int j = 1; j <= B; j++) {
        int first = j > EMB_GROUP_MAX ? j - EMB_GROUP_MAX : 0;
        for (int i = first; i < j; i++) { /* the last group: sequences i..j-1, padded to lens[j - 1] */
            size_t c = cost[i] + group_rows(j - i, lens[j - 1]);
            if (i == first || c < cost[j]) cost[j] = c, from[j] = i;
        }
    }
    int n = 0;
    for (int j = B; j > 0; j = from[j]) n++;
    starts[n] = B;
    for (int j = B, g = n - 1; j > 0; j = from[j], g--) starts[g] = from[j];
    free(cost);
    free(from);
    return n;
}

int emb_encoder_forward_grouped(const emb_encoder *e, emb_workspace *ws, int B, int T, const int32_t *ids,
                                const int32_t *type_ids, const int32_t *lens, int n_layers, float *out,
                                char err[EMB_ERR_LEN]) {
    /* the whole batch checked once, as emb_encoder_forward checks it; the groups run unchecked */
    if (emb_encoder_check_batch(e, B, T, ids, type_ids, lens, n_layers, err)) return -1;
    int *starts = malloc(sizeof(int) * ((size_t)B + 1));
    if (!starts) return emb_fail(err, "out of memory");
    int ng = emb_encoder_groups(lens, B, starts);
    if (ng == 1) {
        free(starts);
        return emb_encoder_run_batch(e, ws, B, T, ids, type_ids, lens, n_layers, out, NULL, NULL, err);
    }
    size_t H = (size_t)emb_encoder_get_config(e)->dims.hidden;
    size_t cells = (size_t)B * (size_t)T;
    int32_t *g_ids = malloc(sizeof(int32_t) * cells), *g_types = type_ids ? malloc(sizeof(int32_t) * cells) : NULL;
    int rc = g_ids && (g_types || !type_ids) ? 0 : emb_fail(err, "out of memory");
    for (int g = 0; rc == 0 && g < ng; g++) {
        int b0 = starts[g], nb = starts[g + 1] - b0, Tg = lens[starts[g + 1] - 1];
        for (int b = 0; b < nb; b++) { /* the group's sequences, each cut to Tg tokens */
            memcpy(g_ids + (size_t)b * Tg, ids + (size_t)(b0 + b) * T, sizeof(int32_t) * (size_t)Tg);
            if (type_ids)
                memcpy(g_types + (size_t)b * Tg, type_ids + (size_t)(b0 + b) * T, sizeof(int32_t) * (size_t)Tg);
        }
        /* the group's rows go where its sequences' rows start (nb x Tg rows of its nb x T), then
         * spread out to T rows a sequence from the last row back (a row moves only forward) */
        float *o = out + (size_t)b0 * T * H;
        rc = emb_encoder_run_batch(e, ws, nb, Tg, g_ids, type_ids ? g_types : NULL, lens + b0, n_layers, o, NULL,
                                   NULL, err);
        for (int b = nb - 1; rc == 0 && b >= 0; b--) {
            float *dst = o + (size_t)b * T * H;
            memmove(dst, o + (size_t)b * Tg * H, sizeof(float) * (size_t)lens[b0 + b] * H);
            memset(dst + (size_t)lens[b0 + b] * H, 0, sizeof(float) * (size_t)(T - lens[b0 + b]) * H);
        }
    }
    free(starts);
    free(g_ids);
    free(g_types);
    return rc;
}
