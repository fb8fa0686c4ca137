/* ModernBERT (model_type "modernbert", transformers' ModernBertModel): token rows and a norm, no
 * positions added; pre-norm layers (no attn_norm in layer 0) with rotary positions of a global
 * and a local base, sliding-window attention on the local layers, fused Wqkv, GeGLU Wi = [input |
 * gate], Wo; a final norm. config.json as transformers 4 writes it (global_rope_theta,
 * local_rope_theta, global_attn_every_n_layers) or 5 (rope_parameters, layer_types). */
#include "nn/arch/arch.h"
#include <math.h>
#include <stdio.h>
#include <string.h>

static const char *const SIZES[EMB_ARCH_N_KEYS] = {"hidden_size",
                                                   "num_hidden_layers",
                                                   "num_attention_heads",
                                                   "intermediate_size",
                                                   "max_position_embeddings",
                                                   "vocab_size",
                                                   NULL,
                                                   "pad_token_id"};

/* The two rotary bases: rope_parameters (transformers 5) per layer type, or one entry for both
 * (its standardize_rope_params copies a flat one to each type), the older keys as defaults
 * (transformers 5's: 160000 and 10000); else global_rope_theta and local_rope_theta. */
static int read_thetas(const cJSON *root, const char *file, emb_encoder_config *c, char err[EMB_ERR_LEN]) {
    const cJSON *rp = cJSON_GetObjectItemCaseSensitive(root, "rope_parameters");
    int v5 = rp && !cJSON_IsNull(rp);
    if (emb_arch_read_number(root, "global_rope_theta", 160000, 1, 1e12, file, &c->rope_theta, err) ||
        emb_arch_read_number(root, "local_rope_theta", v5 ? 10000 : c->rope_theta, 1, 1e12, file,
                             &c->rope_theta_local, err))
        return -1;
    if (!v5) return 0;
    if (!cJSON_IsObject(rp)) return emb_fail(err, "%s: key 'rope_parameters' is not an object", file);
    const cJSON *full = cJSON_GetObjectItemCaseSensitive(rp, "full_attention");
    const cJSON *sliding = cJSON_GetObjectItemCaseSensitive(rp, "sliding_attention");
    char where[2][96];
    snprintf(where[0], sizeof where[0], "%s: rope_parameters.full_attention", file);
    snprintf(where[1], sizeof where[1], "%s: rope_parameters.sliding_attention", file);
    if (!full && !sliding) {
        snprintf(where[0], sizeof where[0], "%s: rope_parameters", file);
        if (emb_arch_read_rope_entry(rp, where[0], &c->rope_theta, err)) return -1;
        c->rope_theta_local = c->rope_theta;
        return 0;
    }
    return emb_arch_read_rope_entry(full, where[0], &c->rope_theta, err) ||
           emb_arch_read_rope_entry(sliding, where[1], &c->rope_theta_local, err);
}

static void set_local(emb_encoder_config *c, int l, int local) {
    if (local) c->local_layers[l / 8] |= (unsigned char)(1u << (l % 8));
}

/* Every layer l with l % n == 0 global, the others local: whether the flags say so. */
static int has_period(const emb_encoder_config *c, int n) {
    for (int l = 0; l < c->dims.layers; l++)
        if (((c->local_layers[l / 8] >> (l % 8)) & 1) != (l % n != 0)) return 0;
    return 1;
}

/* layer_types (transformers 5): each layer's kind. global_every stays the period it follows (the
 * file's global_attn_every_n_layers first, so the fingerprint is the older spelling's), or -1. */
static int read_layer_types(const cJSON *lt, const char *file, int every, emb_encoder_config *c,
                            char err[EMB_ERR_LEN]) {
    if (!cJSON_IsArray(lt)) return emb_fail(err, "%s: key 'layer_types' is not a list", file);
    int n = cJSON_GetArraySize(lt);
    if (n != c->dims.layers)
        return emb_fail(err, "%s: layer_types has %d entries for %d layers", file, n, c->dims.layers);
    int l = 0;
    for (const cJSON *t = lt->child; t; t = t->next, l++) {
        int full = cJSON_IsString(t) && strcmp(t->valuestring, "full_attention") == 0;
        if (!full && !(cJSON_IsString(t) && strcmp(t->valuestring, "sliding_attention") == 0))
            return emb_fail(err, "%s: layer_types[%d] is not \"full_attention\" or \"sliding_attention\"", file,
                            l);
        set_local(c, l, !full);
    }
    c->global_every = -1;
    if (has_period(c, every)) c->global_every = every;
    for (int p = 1; p <= c->dims.layers && c->global_every < 0; p++)
        if (has_period(c, p)) c->global_every = p;
    return 0;
}

/* The window and which layers have it. */
static int read_layers(const cJSON *root, const char *file, emb_encoder_config *c, char err[EMB_ERR_LEN]) {
    double window, every;
    if (emb_arch_read_number(root, "local_attention", 128, 0, 1 << 20, file, &window, err) ||
        emb_arch_read_number(root, "global_attn_every_n_layers", 3, 1, 1024, file, &every, err))
        return -1;
    if (window != floor(window) || every != floor(every))
        return emb_fail(err, "%s: local_attention and global_attn_every_n_layers must be integers", file);
    c->half_window = (int)window / 2;
    const cJSON *lt = cJSON_GetObjectItemCaseSensitive(root, "layer_types");
    if (lt && !cJSON_IsNull(lt)) return read_layer_types(lt, file, (int)every, c, err);
    c->global_every = (int)every;
    for (int l = 0; l < c->dims.layers; l++) set_local(c, l, l % c->global_every != 0);
    return 0;
}

static int read_modernbert(const cJSON *root, const char *file, const char *type, emb_encoder_config *c,
                           char err[EMB_ERR_LEN]) {
    (void)type;
    c->arch = EMB_ARCH_MODERNBERT;
    c->arch_name = "modernbert";
    c->gated = 1;
    c->pre_norm = 1;
    if (emb_arch_read_ints(root, file, SIZES, c, err) || emb_arch_read_eps(root, "norm_eps", 1e-5, file, c, err) ||
        emb_arch_read_activation(root, "hidden_activation", file, err))
        return -1;
    int attn_bias, mlp_bias;
    if (emb_arch_read_bool(root, "norm_bias", 0, file, &c->norm_bias, err) ||
        emb_arch_read_bool(root, "attention_bias", 0, file, &attn_bias, err) ||
        emb_arch_read_bool(root, "mlp_bias", 0, file, &mlp_bias, err))
        return -1;
    c->qkv_bias = c->out_bias = attn_bias;
    c->ffn_in_bias = c->ffn_out_bias = mlp_bias;
    if (read_thetas(root, file, c, err) || read_layers(root, file, c, err)) return -1;
    return emb_arch_rope_dims(file, c, 1.0, err);
}

static int load_embeddings(emb_encoder *e, char err[EMB_ERR_LEN]) {
    return emb_arch_load_embeddings(e, "embeddings.tok_embeddings.weight", "embeddings.norm", err);
}

/* attn_norm (none in layer 0), fused Wqkv, Wo, mlp_norm, Wi = [input | gate], Wo */
static int load_layer(emb_encoder *e, int l, char err[EMB_ERR_LEN]) {
    const emb_encoder_config *c = &e->cfg;
    const int64_t H = c->dims.hidden, FF = c->dims.intermediate;
    emb_layer_weights *w = &e->L[l];
    const float *qkv, *qkv_b, *wi;
    if (l > 0 && (emb_arch_layer_tensor(e, "layers.%d.attn_norm.weight", l, H, -1, &w->ln1_g, err) ||
                  emb_arch_layer_bias(e, "layers.%d.attn_norm.bias", l, H, c->norm_bias, &w->ln1_b, err)))
        return -1;
    if (emb_arch_layer_tensor(e, "layers.%d.attn.Wqkv.weight", l, 3 * H, H, &qkv, err) ||
        emb_arch_layer_bias(e, "layers.%d.attn.Wqkv.bias", l, 3 * H, c->qkv_bias, &qkv_b, err) ||
        emb_arch_layer_tensor(e, "layers.%d.attn.Wo.weight", l, H, H, &w->wo, err) ||
        emb_arch_layer_bias(e, "layers.%d.attn.Wo.bias", l, H, c->out_bias, &w->bo, err) ||
        emb_arch_layer_tensor(e, "layers.%d.mlp_norm.weight", l, H, -1, &w->ln2_g, err) ||
        emb_arch_layer_bias(e, "layers.%d.mlp_norm.bias", l, H, c->norm_bias, &w->ln2_b, err) ||
        emb_arch_layer_tensor(e, "layers.%d.mlp.Wi.weight", l, 2 * FF, H, &wi, err) ||
        emb_arch_layer_bias(e, "layers.%d.mlp.Wi.bias", l, 2 * FF, c->ffn_in_bias, &w->b1, err) ||
        emb_arch_layer_tensor(e, "layers.%d.mlp.Wo.weight", l, H, FF, &w->w2, err) ||
        emb_arch_layer_bias(e, "layers.%d.mlp.Wo.bias", l, H, c->ffn_out_bias, &w->b2, err))
        return -1;
    emb_arch_split_qkv(e, w, qkv, qkv_b);
    w->w1 = wi; /* act(input) * gate */
    w->w1b = wi + FF * H;
    return 0;
}

static int load_head(emb_encoder *e, char err[EMB_ERR_LEN]) {
    return emb_arch_load_norm(e, "final_norm", &e->final_g, &e->final_b, err);
}

static const char *const TYPES[] = {"modernbert", NULL};

const emb_arch_desc emb_arch_modernbert = {
    EMB_ARCH_MODERNBERT, TYPES,      NULL,     read_modernbert, "embeddings.tok_embeddings.weight", "model.",
    load_embeddings,     load_layer, load_head};
