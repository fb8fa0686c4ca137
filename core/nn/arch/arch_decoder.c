/* What the decoder stacks' files share (arch.h: qwen3.c, gemma3.c): the attention's shape
 * (grouped-query heads of head_dim), the refusal of rope scaling, and the tensors of a layer as
 * transformers' Llama-style models name them (self_attn.q_proj ... mlp.down_proj), with the
 * RMSNorm weights made the forward pass's (Gemma's 1 + w). */
#include "nn/arch/arch.h"
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

int emb_arch_decoder_shape(const cJSON *root, const char *file, int dflt_head_dim, emb_encoder_config *c,
                           char err[EMB_ERR_LEN]) {
    int NH = c->dims.heads;
    if (emb_arch_read_int(root, "num_key_value_heads", NH, 1, NH, file, &c->kv_heads, err)) return -1;
    if (NH % c->kv_heads != 0)
        return emb_fail(err, "%s: key 'num_key_value_heads': %d does not divide num_attention_heads %d", file,
                        c->kv_heads, NH);
    if (dflt_head_dim == 0) {
        if (c->dims.hidden % NH != 0)
            return emb_fail(err, "%s: key 'head_dim' is absent and hidden_size %d is not a multiple of %d heads",
                            file, c->dims.hidden, NH);
        dflt_head_dim = c->dims.hidden / NH;
    }
    if (emb_arch_read_int(root, "head_dim", dflt_head_dim, 1, 4096, file, &c->head_dim, err)) return -1;
    if (c->head_dim % 2)
        return emb_fail(err, "%s: key 'head_dim': %d is odd (rotary positions pair its halves)", file,
                        c->head_dim);
    c->pos_kind = EMB_POS_ROTARY;
    c->rope_dims = c->head_dim;
    c->gated = c->pre_norm = c->decoder = 1;
    return 0;
}

int emb_arch_decoder_no_scaling(const cJSON *root, const char *file, char err[EMB_ERR_LEN]) {
    const cJSON *rs = cJSON_GetObjectItemCaseSensitive(root, "rope_scaling");
    if (!rs || cJSON_IsNull(rs)) return 0;
    if (!cJSON_IsObject(rs)) return emb_fail(err, "%s: key 'rope_scaling' is not an object", file);
    char where[96];
    snprintf(where, sizeof where, "%s: rope_scaling", file);
    double unused = 0;
    const cJSON *type = cJSON_GetObjectItemCaseSensitive(rs, "rope_type");
    if (!type) type = cJSON_GetObjectItemCaseSensitive(rs, "type"); /* older files' spelling */
    if (type && cJSON_IsString(type) && strcmp(type->valuestring, "default") != 0)
        return emb_fail(err, "%s: rope_type '%.40s' is not supported (only \"default\")", where,
                        type->valuestring);
    return emb_arch_read_rope_entry(rs, where, &unused, err);
}

/* An RMSNorm weight of n values (the name's %d: layer l); unit_offset: a copy holding 1 + w,
 * as Gemma's norm multiplies by it (in float32, as transformers does). */
static int norm_weight(emb_encoder *e, const char *fmt, int l, int64_t n, int unit_offset, const float **out,
                       char err[EMB_ERR_LEN]) {
    const float *w;
    if (emb_arch_layer_tensor(e, fmt, l, n, -1, &w, err)) return -1;
    *out = w;
    if (!unit_offset) return 0;
    float *g = malloc((size_t)n * sizeof(float));
    if (!g || emb_arch_own(e, g)) {
        free(g);
        return emb_fail(err, "out of memory");
    }
    for (int64_t i = 0; i < n; i++) g[i] = 1.0f + w[i];
    *out = g;
    return 0;
}

/* "layers.%d." + name + ".weight" */
static const char *layer_name(char *buf, size_t cap, const char *name) {
    snprintf(buf, cap, "layers.%%d.%s.weight", name);
    return buf;
}

static int attention(emb_encoder *e, int l, int off, char err[EMB_ERR_LEN]) {
    const emb_encoder_config *c = &e->cfg;
    const int64_t H = c->dims.hidden, QW = emb_encoder_config_q_width(c), KW = emb_encoder_config_kv_width(c);
    emb_layer_weights *w = &e->L[l];
    return emb_arch_layer_tensor(e, "layers.%d.self_attn.q_proj.weight", l, QW, H, &w->wq, err) ||
                   emb_arch_layer_bias(e, "layers.%d.self_attn.q_proj.bias", l, QW, c->qkv_bias, &w->bq, err) ||
                   emb_arch_layer_tensor(e, "layers.%d.self_attn.k_proj.weight", l, KW, H, &w->wk, err) ||
                   emb_arch_layer_bias(e, "layers.%d.self_attn.k_proj.bias", l, KW, c->qkv_bias, &w->bk, err) ||
                   emb_arch_layer_tensor(e, "layers.%d.self_attn.v_proj.weight", l, KW, H, &w->wv, err) ||
                   emb_arch_layer_bias(e, "layers.%d.self_attn.v_proj.bias", l, KW, c->qkv_bias, &w->bv, err) ||
                   emb_arch_layer_tensor(e, "layers.%d.self_attn.o_proj.weight", l, H, QW, &w->wo, err) ||
                   emb_arch_layer_bias(e, "layers.%d.self_attn.o_proj.bias", l, H, c->out_bias, &w->bo, err) ||
                   norm_weight(e, "layers.%d.self_attn.q_norm.weight", l, c->head_dim, off, &w->q_norm, err) ||
                   norm_weight(e, "layers.%d.self_attn.k_norm.weight", l, c->head_dim, off, &w->k_norm, err)
               ? -1
               : 0;
}

int emb_arch_decoder_layer(emb_encoder *e, int l, const emb_arch_decoder_layout *d, char err[EMB_ERR_LEN]) {
    const emb_encoder_config *c = &e->cfg;
    const int64_t H = c->dims.hidden, FF = c->dims.intermediate;
    const int off = d->unit_offset;
    emb_layer_weights *w = &e->L[l];
    char n1[96], n2[96], n3[96];
    if (norm_weight(e, "layers.%d.input_layernorm.weight", l, H, off, &w->ln1_g, err) ||
        attention(e, l, off, err) ||
        norm_weight(e, layer_name(n1, sizeof n1, d->mlp_norm), l, H, off, &w->ln2_g, err) ||
        (d->post_attn && norm_weight(e, layer_name(n2, sizeof n2, d->post_attn), l, H, off, &w->post1_g, err)) ||
        (d->post_mlp && norm_weight(e, layer_name(n3, sizeof n3, d->post_mlp), l, H, off, &w->post2_g, err)) ||
        emb_arch_layer_tensor(e, "layers.%d.mlp.gate_proj.weight", l, FF, H, &w->w1, err) ||
        emb_arch_layer_tensor(e, "layers.%d.mlp.up_proj.weight", l, FF, H, &w->w1b, err) ||
        emb_arch_layer_tensor(e, "layers.%d.mlp.down_proj.weight", l, H, FF, &w->w2, err))
        return -1;
    w->b1 = w->b2 = e->zeros; /* act(gate) * up, then down: no biases */
    return 0;
}

int emb_arch_decoder_embeddings(emb_encoder *e, char err[EMB_ERR_LEN]) {
    const emb_encoder_config *c = &e->cfg;
    return emb_arch_get_word_table(e, "embed_tokens.weight", c->dims.vocab_size, c->dims.hidden, err);
}

int emb_arch_decoder_final_norm(emb_encoder *e, int unit_offset, char err[EMB_ERR_LEN]) {
    return norm_weight(e, "norm.weight", 0, e->cfg.dims.hidden, unit_offset, &e->final_g, err);
}
