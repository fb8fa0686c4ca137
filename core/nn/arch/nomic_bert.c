/* NomicBERT (model_type "nomic_bert", contrastors' NomicBertModel): word rows and token types,
 * emb_ln; post-norm layers with rotary positions, a fused Wqkv and a gated MLP
 * fc2(fc11(x) * act(fc12(x))), biases as config.json says; no pooler. */
#include "nn/arch/arch.h"
#include <stdlib.h>
#include <string.h>

static const char *const SIZES[EMB_ARCH_N_KEYS] = {"n_embd",      "n_layer",    "n_head",          "n_inner",
                                                   "n_positions", "vocab_size", "type_vocab_size", "pad_token_id"};

/* The settings contrastors has and this encoder does not build: each refused by name. */
static int refuse_unbuilt(const cJSON *root, const char *file, char err[EMB_ERR_LEN]) {
    int interleaved, prenorm, parallel, rms, causal;
    if (emb_arch_read_bool(root, "rotary_emb_interleaved", 0, file, &interleaved, err) ||
        emb_arch_read_bool(root, "prenorm", 0, file, &prenorm, err) ||
        emb_arch_read_bool(root, "parallel_block", 0, file, &parallel, err) ||
        emb_arch_read_bool(root, "use_rms_norm", 0, file, &rms, err) ||
        emb_arch_read_bool(root, "causal", 0, file, &causal, err))
        return -1;
    const cJSON *scaling = cJSON_GetObjectItemCaseSensitive(root, "rotary_scaling_factor");
    const cJSON *scale_base = cJSON_GetObjectItemCaseSensitive(root, "rotary_emb_scale_base");
    const cJSON *moe = cJSON_GetObjectItemCaseSensitive(root, "moe_every_n_layers");
    return emb_arch_refuse_if(interleaved, file, "nomic_bert rotary_emb_interleaved", err) ||
           emb_arch_refuse_if(prenorm, file, "nomic_bert prenorm", err) ||
           emb_arch_refuse_if(parallel, file, "nomic_bert parallel_block", err) ||
           emb_arch_refuse_if(rms, file, "nomic_bert use_rms_norm", err) ||
           emb_arch_refuse_if(causal, file, "nomic_bert causal attention", err) ||
           emb_arch_refuse_if(scaling && !cJSON_IsNull(scaling), file,
                              "nomic_bert rotary_scaling_factor (dynamic NTK)", err) ||
           emb_arch_refuse_if(scale_base && !cJSON_IsNull(scale_base), file,
                              "nomic_bert rotary_emb_scale_base (xPos)", err) ||
           emb_arch_refuse_if(moe && !cJSON_IsNull(moe) && !(cJSON_IsNumber(moe) && moe->valuedouble == 0), file,
                              "nomic_bert mixture of experts (moe_every_n_layers)", err);
}

static int read_nomic(const cJSON *root, const char *file, const char *type, emb_encoder_config *c,
                      char err[EMB_ERR_LEN]) {
    (void)type;
    c->arch = EMB_ARCH_NOMIC_BERT;
    c->arch_name = "nomic_bert";
    c->norm_bias = 1;
    if (emb_arch_read_ints(root, file, SIZES, c, err) ||
        emb_arch_read_eps(root, "layer_norm_epsilon", 1e-5, file, c, err))
        return -1;
    const char *act;
    if (emb_arch_read_string(root, "activation_function", "swiglu", file, &act, err)) return -1;
    if (strcmp(act, "swiglu") == 0) c->act = EMB_ACT_SILU;
    else if (strcmp(act, "geglu") == 0) c->act = EMB_ACT_GELU;
    else
        return emb_fail(err, "%s: nomic_bert activation_function '%.40s' is not supported (swiglu, geglu)", file,
                        act);
    c->gated = 1;
    if (emb_arch_read_bool(root, "qkv_proj_bias", 1, file, &c->qkv_bias, err) ||
        emb_arch_read_bool(root, "mlp_fc1_bias", 1, file, &c->ffn_in_bias, err) ||
        emb_arch_read_bool(root, "mlp_fc2_bias", 1, file, &c->ffn_out_bias, err) ||
        refuse_unbuilt(root, file, err))
        return -1;
    c->out_bias = c->qkv_bias; /* out_proj is built with qkv_proj_bias */
    double fraction;
    if (emb_arch_read_number(root, "rotary_emb_base", 10000, 1, 1e12, file, &c->rope_theta, err) ||
        emb_arch_read_number(root, "rotary_emb_fraction", 0, 0, 1, file, &fraction, err))
        return -1;
    if (fraction == 0)
        return emb_fail(err, "%s: nomic_bert with absolute positions (rotary_emb_fraction 0) is not supported",
                        file);
    c->rope_theta_local = c->rope_theta;
    return emb_arch_rope_dims(file, c, fraction, err);
}

static int load_embeddings(emb_encoder *e, char err[EMB_ERR_LEN]) {
    return emb_arch_load_embeddings(e, "embeddings.word_embeddings.weight", "emb_ln", err);
}

/* The gated MLP's two halves' biases side by side, in the order of the halves: [fc12 | fc11]. */
static int gate_biases(emb_encoder *e, int l, char err[EMB_ERR_LEN]) {
    const int64_t FF = e->cfg.dims.intermediate;
    const float *b12, *b11;
    float *b = malloc((size_t)(2 * FF) * sizeof(float));
    if (!b || emb_arch_own(e, b)) {
        free(b);
        return emb_fail(err, "out of memory");
    }
    if (emb_arch_layer_tensor(e, "encoder.layers.%d.mlp.fc12.bias", l, FF, -1, &b12, err) ||
        emb_arch_layer_tensor(e, "encoder.layers.%d.mlp.fc11.bias", l, FF, -1, &b11, err))
        return -1;
    memcpy(b, b12, (size_t)FF * sizeof(float));
    memcpy(b + FF, b11, (size_t)FF * sizeof(float));
    e->L[l].b1 = b;
    return 0;
}

/* fused Wqkv, out_proj, norm1, fc11 / fc12 / fc2, norm2 */
static int load_layer(emb_encoder *e, int l, char err[EMB_ERR_LEN]) {
    const emb_encoder_config *c = &e->cfg;
    const int64_t H = c->dims.hidden, FF = c->dims.intermediate;
    emb_layer_weights *w = &e->L[l];
    const float *qkv, *qkv_b;
    if (emb_arch_layer_tensor(e, "encoder.layers.%d.attn.Wqkv.weight", l, 3 * H, H, &qkv, err) ||
        emb_arch_layer_bias(e, "encoder.layers.%d.attn.Wqkv.bias", l, 3 * H, c->qkv_bias, &qkv_b, err) ||
        emb_arch_layer_tensor(e, "encoder.layers.%d.attn.out_proj.weight", l, H, H, &w->wo, err) ||
        emb_arch_layer_bias(e, "encoder.layers.%d.attn.out_proj.bias", l, H, c->out_bias, &w->bo, err) ||
        emb_arch_layer_tensor(e, "encoder.layers.%d.norm1.weight", l, H, -1, &w->ln1_g, err) ||
        emb_arch_layer_bias(e, "encoder.layers.%d.norm1.bias", l, H, c->norm_bias, &w->ln1_b, err) ||
        emb_arch_layer_tensor(e, "encoder.layers.%d.mlp.fc12.weight", l, FF, H, &w->w1, err) ||
        emb_arch_layer_tensor(e, "encoder.layers.%d.mlp.fc11.weight", l, FF, H, &w->w1b, err) ||
        emb_arch_layer_tensor(e, "encoder.layers.%d.mlp.fc2.weight", l, H, FF, &w->w2, err) ||
        emb_arch_layer_bias(e, "encoder.layers.%d.mlp.fc2.bias", l, H, c->ffn_out_bias, &w->b2, err) ||
        emb_arch_layer_tensor(e, "encoder.layers.%d.norm2.weight", l, H, -1, &w->ln2_g, err) ||
        emb_arch_layer_bias(e, "encoder.layers.%d.norm2.bias", l, H, c->norm_bias, &w->ln2_b, err))
        return -1;
    emb_arch_split_qkv(e, w, qkv, qkv_b);
    w->b1 = e->zeros;
    return c->ffn_in_bias ? gate_biases(e, l, err) : 0;
}

static const char *const TYPES[] = {"nomic_bert", NULL};

const emb_arch_desc emb_arch_nomic_bert = {EMB_ARCH_NOMIC_BERT,
                                           TYPES,
                                           NULL,
                                           read_nomic,
                                           "embeddings.word_embeddings.weight",
                                           "bert.",
                                           load_embeddings,
                                           load_layer,
                                           emb_arch_no_head};
