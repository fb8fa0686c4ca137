/* config.json read through the description of its architecture (nn/arch/), found by
 * model_type (or, in old files, architectures[0]); the refusals of architectures not built. */
#include "nn/encoder_config.h"
#include "base/emb_json.h"
#include "base/file.h"
#include "nn/arch/arch.h"
#include <math.h>
#include <stdlib.h>
#include <string.h>

/* Architectures asked for by name that are not built, each with what it would need. */
static int refuse_known(const char *type, const char *file, char err[EMB_ERR_LEN]) {
    static const char *const KNOWN[][2] = {
        {"deberta", "DeBERTa (disentangled attention over relative positions)"},
        {"deberta-v2", "DeBERTa-v2/v3 (disentangled attention over relative positions)"},
        {"t5", "T5 (relative position buckets, encoder-decoder)"},
        {"mt5", "mT5 (relative position buckets, encoder-decoder)"},
        {"umt5", "UMT5 (relative position buckets, encoder-decoder)"},
    };
    for (size_t i = 0; i < sizeof KNOWN / sizeof *KNOWN; i++)
        if (strcmp(type, KNOWN[i][0]) == 0)
            return emb_fail(err, "%s: model_type '%s': %s is not supported (supported: %s)", file, type,
                            KNOWN[i][1], emb_arch_supported);
    return emb_fail(err, "%s: model_type '%.40s' is not supported (supported: %s)", file, type,
                    emb_arch_supported);
}

static int read_config(const cJSON *root, const char *file, emb_encoder_config *c, char err[EMB_ERR_LEN]) {
    if (!cJSON_IsObject(root)) return emb_fail(err, "%s: not a JSON object", file);
    const cJSON *mt = cJSON_GetObjectItemCaseSensitive(root, "model_type");
    const char *type = NULL;
    if (cJSON_IsString(mt)) {
        type = mt->valuestring;
    } else if (mt && !cJSON_IsNull(mt)) {
        return emb_fail(err, "%s: key 'model_type' is not a string", file);
    } else { /* old configs without model_type: infer from architectures[0] */
        const cJSON *ar = cJSON_GetObjectItemCaseSensitive(root, "architectures");
        const cJSON *a0 = cJSON_IsArray(ar) ? ar->child : NULL;
        if (cJSON_IsString(a0) && strncmp(a0->valuestring, "DistilBert", 10) == 0) type = "distilbert";
        else if (cJSON_IsString(a0) && strncmp(a0->valuestring, "Bert", 4) == 0) type = "bert";
        else return emb_fail(err, "%s: missing key 'model_type'", file);
    }
    const emb_arch_desc *d = emb_arch_for_type(type, root);
    if (!d) return refuse_known(type, file, err);
    if (d->read_config(root, file, type, c, err)) return -1;
    if (c->head_dim == 0 && c->dims.hidden % c->dims.heads != 0)
        return emb_fail(err, "%s: hidden size %d is not a multiple of the number of attention heads %d", file,
                        c->dims.hidden, c->dims.heads);
    /* the encoders' attention shape: every head its own keys, hidden / heads wide */
    if (c->head_dim == 0) c->head_dim = c->dims.hidden / c->dims.heads;
    if (c->kv_heads == 0) c->kv_heads = c->dims.heads;
    if (c->attn_scale == 0) c->attn_scale = (float)(1.0 / sqrt((double)c->head_dim));
    if (c->embed_scale == 0) c->embed_scale = 1.0f;
    return 0;
}

int emb_encoder_config_parse(const char *json, size_t len, const char *file, emb_encoder_config *out,
                             char err[EMB_ERR_LEN]) {
    emb_encoder_config c;
    memset(&c, 0, sizeof c);
    memset(out, 0, sizeof *out);
    c.act = EMB_ACT_GELU;
    cJSON *root = cJSON_ParseWithLength(json, len);
    int rc = read_config(root, file, &c, err);
    cJSON_Delete(root);
    if (rc == 0) *out = c;
    return rc;
}

int emb_encoder_config_load(const char *dir, emb_encoder_config *out, char err[EMB_ERR_LEN]) {
    char path[4096];
    if (emb_path_join(path, sizeof path, dir, "config.json", err)) return -1;
    char *txt;
    size_t len;
    if (emb_read_file(path, EMB_CONFIG_MAX_BYTES, &txt, &len, err)) return -1;
    int rc = emb_encoder_config_parse(txt, len, "config.json", out, err);
    free(txt);
    return rc;
}

const char *emb_pos_kind_name(emb_pos_kind k) {
    static const char *const NAMES[] = {"learned", "sinusoidal", "rotary", "alibi"};
    return NAMES[k];
}

int emb_encoder_config_layer_is_local(const emb_encoder_config *c, int l) {
    return l >= 0 && l < EMB_ENCODER_MAX_LAYERS && (c->local_layers[l / 8] >> (l % 8)) & 1;
}

size_t emb_encoder_config_linear_weights(const emb_encoder_config *c) {
    size_t H = (size_t)c->dims.hidden, FF = (size_t)c->dims.intermediate;
    size_t QW = (size_t)emb_encoder_config_q_width(c), KW = (size_t)emb_encoder_config_kv_width(c);
    return 2 * H * QW + 2 * H * KW + (size_t)(c->gated ? 3 : 2) * H * FF;
}
