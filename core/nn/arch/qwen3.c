/* Qwen3 (model_type "qwen3": transformers' Qwen3Model, as Qwen3-Embedding; Qwen3ForCausalLM saves
 * under "model.", its lm_head tied or absent and never read): token rows; pre-norm layers of
 * RMSNorm (w * x / rms), q/k/v/o projections (biases as attention_bias says), q_norm and k_norm
 * per head before the rotary positions (rope_theta, transformers 4, or rope_parameters, 5),
 * grouped-query causal attention scaled by head_dim^-0.5, a SwiGLU MLP; the final norm. */
#include "nn/arch/arch.h"
#include <stdio.h>
#include <string.h>

static const char *const SIZES[EMB_ARCH_N_KEYS] = {"hidden_size",
                                                   "num_hidden_layers",
                                                   "num_attention_heads",
                                                   "intermediate_size",
                                                   "max_position_embeddings",
                                                   "vocab_size",
                                                   NULL,
                                                   NULL};

/* Sliding-window attention is refused: Qwen3-Embedding and the Qwen3 checkpoints have none. */
static int refuse_sliding(const cJSON *root, const char *file, char err[EMB_ERR_LEN]) {
    int sliding;
    if (emb_arch_read_bool(root, "use_sliding_window", 0, file, &sliding, err)) return -1;
    if (sliding)
        return emb_fail(err, "%s: key 'use_sliding_window': sliding-window attention is not supported for qwen3",
                        file);
    const cJSON *lt = cJSON_GetObjectItemCaseSensitive(root, "layer_types");
    if (!lt || cJSON_IsNull(lt)) return 0;
    if (!cJSON_IsArray(lt)) return emb_fail(err, "%s: key 'layer_types' is not a list", file);
    int l = 0;
    for (const cJSON *t = lt->child; t; t = t->next, l++)
        if (!cJSON_IsString(t) || strcmp(t->valuestring, "full_attention") != 0)
            return emb_fail(
                err, "%s: key 'layer_types': entry %d is not \"full_attention\" (qwen3 without a sliding window)",
                file, l);
    return 0;
}

/* rope_parameters (transformers 5) or rope_theta (4; Qwen3Config's default 10000). */
static int read_rope(const cJSON *root, const char *file, emb_encoder_config *c, char err[EMB_ERR_LEN]) {
    if (emb_arch_read_number(root, "rope_theta", 10000, 1, 1e12, file, &c->rope_theta, err) ||
        emb_arch_decoder_no_scaling(root, file, err))
        return -1;
    const cJSON *rp = cJSON_GetObjectItemCaseSensitive(root, "rope_parameters");
    char where[96];
    snprintf(where, sizeof where, "%s: rope_parameters", file);
    if (rp && !cJSON_IsNull(rp) && !cJSON_IsObject(rp))
        return emb_fail(err, "%s: key 'rope_parameters' is not an object", file);
    if (emb_arch_read_rope_entry(rp, where, &c->rope_theta, err)) return -1;
    c->rope_theta_local = c->rope_theta;
    return 0;
}

static int read_qwen3(const cJSON *root, const char *file, const char *type, emb_encoder_config *c,
                      char err[EMB_ERR_LEN]) {
    (void)type;
    c->arch = EMB_ARCH_QWEN3;
    c->arch_name = "qwen3";
    c->act = EMB_ACT_SILU;
    c->causal = 1;
    const char *act;
    int bias;
    if (emb_arch_read_ints(root, file, SIZES, c, err) ||
        emb_arch_read_eps(root, "rms_norm_eps", 1e-6, file, c, err) ||
        emb_arch_read_string(root, "hidden_act", "silu", file, &act, err) ||
        emb_arch_read_bool(root, "attention_bias", 0, file, &bias, err))
        return -1;
    if (strcmp(act, "silu") != 0)
        return emb_fail(err, "%s: key 'hidden_act': '%.40s' is not supported (only \"silu\")", file, act);
    c->qkv_bias = c->out_bias = bias;
    return emb_arch_decoder_shape(root, file, 0, c, err) || refuse_sliding(root, file, err) ||
                   read_rope(root, file, c, err)
               ? -1
               : 0;
}

static const emb_arch_decoder_layout LAYOUT = {"post_attention_layernorm", NULL, NULL, 0};

static int load_layer(emb_encoder *e, int l, char err[EMB_ERR_LEN]) {
    return emb_arch_decoder_layer(e, l, &LAYOUT, err);
}

static int load_head(emb_encoder *e, char err[EMB_ERR_LEN]) { return emb_arch_decoder_final_norm(e, 0, err); }

static const char *const TYPES[] = {"qwen3", NULL};

const emb_arch_desc emb_arch_qwen3 = {
    EMB_ARCH_QWEN3, TYPES,    NULL, read_qwen3, "embed_tokens.weight", "model.", emb_arch_decoder_embeddings,
    load_layer,     load_head};
