/* What attention does, shown: the softmax weights of a sequence, taken from the forward pass
 * itself (emb_encoder_forward_capture), and the additive bias of a query and a key, from the
 * same rule the pass applies (emb_attention_bias_of). */
#include "nn/encoder_internal.h"
#include "nn/encoder_attention.h"
#include <stdlib.h>

static int check_layer(const emb_encoder_config *c, int layer, char err[EMB_ERR_LEN]) {
    if (layer >= 1 && layer <= c->dims.layers) return 0;
    return emb_fail(err,
                    "layer %d is out of range: the model has layers 1 to %d (layer 0, the embedding output, "
                    "has no attention)",
                    layer, c->dims.layers);
}

int emb_encoder_attention(const emb_encoder *e, emb_workspace *ws, int T, const int32_t *ids,
                          const int32_t *type_ids, const emb_attention_span *span, float *probs,
                          char err[EMB_ERR_LEN]) {
    const emb_encoder_config *c = &e->cfg;
    if (check_layer(c, span->first_layer, err) || check_layer(c, span->last_layer, err)) return -1;
    if (span->first_layer > span->last_layer)
        return emb_fail(err, "layers %d to %d: the first is after the last", span->first_layer, span->last_layer);
    int NH = c->dims.heads;
    if (span->first_head < 0 || span->last_head >= NH || span->first_head > span->last_head)
        return emb_fail(err, "heads %d to %d are out of range: the model has heads 0 to %d", span->first_head,
                        span->last_head, NH - 1);
    if (T < 1 || T > emb_encoder_max_tokens(e))
        return emb_fail(err, "%d tokens: expected 1 to the model's %d", T, emb_encoder_max_tokens(e));
    float *hidden = malloc((size_t)T * (size_t)c->dims.hidden * sizeof(float));
    if (!hidden) return emb_fail(err, "out of memory for %d tokens", T);
    int32_t len = T;
    int rc =
        emb_encoder_forward_capture(e, ws, 1, T, ids, type_ids, &len, span->last_layer, hidden, span, probs, err);
    free(hidden);
    return rc;
}

int emb_encoder_attention_bias(const emb_encoder *e, int layer, int64_t i, int64_t j, float *out,
                               char err[EMB_ERR_LEN]) {
    const emb_encoder_config *c = &e->cfg;
    int max = emb_encoder_max_tokens(e);
    if (layer != 0 && check_layer(c, layer, err)) return -1;
    if (i < 0 || i >= max || j < 0 || j >= max)
        return emb_fail(err, "positions %lld and %lld: each must be from 0 to %d", (long long)i, (long long)j,
                        max - 1);
    int local = 0;
    if (layer == 0) {
        for (int l = 0; l < c->dims.layers; l++)
            if (emb_encoder_config_layer_is_local(c, l))
                return emb_fail(err,
                                "the layers differ (layer %d has a sliding window, layer 1 does not): give a "
                                "layer from 1 to %d",
                                l + 1, c->dims.layers);
    } else {
        local = emb_encoder_config_layer_is_local(c, layer - 1);
    }
    for (int h = 0; h < c->dims.heads; h++) {
        out[h] = emb_attention_bias_causal(e->alibi_slopes ? e->alibi_slopes[h] : 0.0f,
                                           local ? c->half_window : -1, c->causal, i, j);
        if (e->rel_bias) /* MPNet's table, the same floats the pass adds */
            out[h] += e->rel_bias[(size_t)h * (2 * (size_t)e->rel_span - 1) + (size_t)(j - i + e->rel_span - 1)];
    }
    return 0;
}
