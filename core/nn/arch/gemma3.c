/* Gemma3 text (model_type "gemma3_text": transformers' Gemma3TextModel, as EmbeddingGemma with
 * use_bidirectional_attention): token rows times sqrt(hidden); RMSNorm x / rms * (1 + w); sandwich
 * blocks h + post_norm(block(pre_norm(h))) for attention and MLP; q_norm / k_norm per head;
 * grouped-query attention scaled by query_pre_attn_scalar^-0.5, each layer full or sliding
 * (layer_types, or transformers 4's sliding_window_pattern) with its own rotary base; GeGLU with
 * GELU's tanh form; the final norm. Causal unless use_bidirectional_attention. */
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
                                                   NULL};

static void set_local(emb_encoder_config *c, int l) { c->local_layers[l / 8] |= (unsigned char)(1u << (l % 8)); }

/* Which layers slide: layer_types (transformers 5), else every layer but each pattern-th
 * (sliding_window_pattern, saved as _sliding_window_pattern by transformers 5; default 6). */
static int read_layer_types(const cJSON *root, const char *file, emb_encoder_config *c, char err[EMB_ERR_LEN]) {
    const cJSON *lt = cJSON_GetObjectItemCaseSensitive(root, "layer_types");
    c->global_every = -1;
    if (lt && !cJSON_IsNull(lt)) {
        if (!cJSON_IsArray(lt) || cJSON_GetArraySize(lt) != c->dims.layers)
            return emb_fail(err, "%s: key 'layer_types' is not a list of %d entries", file, c->dims.layers);
        int l = 0;
        for (const cJSON *t = lt->child; t; t = t->next, l++) {
            int full = cJSON_IsString(t) && strcmp(t->valuestring, "full_attention") == 0;
            if (!full && !(cJSON_IsString(t) && strcmp(t->valuestring, "sliding_attention") == 0))
                return emb_fail(
                    err, "%s: key 'layer_types': entry %d is not \"full_attention\" or \"sliding_attention\"",
                    file, l);
            if (!full) set_local(c, l);
        }
        return 0;
    }
    int pattern;
    const char *key = cJSON_GetObjectItemCaseSensitive(root, "sliding_window_pattern") ? "sliding_window_pattern"
                                                                                       : "_sliding_window_pattern";
    if (emb_arch_read_int(root, key, 6, 1, EMB_ENCODER_MAX_LAYERS, file, &pattern, err)) return -1;
    for (int l = 0; l < c->dims.layers; l++)
        if ((l + 1) % pattern) set_local(c, l);
    return 0;
}

/* The two rotary bases: rope_parameters per layer type (transformers 5), else rope_theta and
 * rope_local_base_freq (4; Gemma3TextConfig's defaults 1e6 and 1e4). */
static int read_rope(const cJSON *root, const char *file, emb_encoder_config *c, char err[EMB_ERR_LEN]) {
    if (emb_arch_read_number(root, "rope_theta", 1e6, 1, 1e12, file, &c->rope_theta, err) ||
        emb_arch_read_number(root, "rope_local_base_freq", 1e4, 1, 1e12, file, &c->rope_theta_local, err) ||
        emb_arch_decoder_no_scaling(root, file, err))
        return -1;
    const cJSON *rp = cJSON_GetObjectItemCaseSensitive(root, "rope_parameters");
    if (!rp || cJSON_IsNull(rp)) return 0;
    if (!cJSON_IsObject(rp)) return emb_fail(err, "%s: key 'rope_parameters' is not an object", file);
    char where[2][96];
    snprintf(where[0], sizeof where[0], "%s: rope_parameters.full_attention", file);
    snprintf(where[1], sizeof where[1], "%s: rope_parameters.sliding_attention", file);
    return emb_arch_read_rope_entry(cJSON_GetObjectItemCaseSensitive(rp, "full_attention"), where[0],
                                    &c->rope_theta, err) ||
                   emb_arch_read_rope_entry(cJSON_GetObjectItemCaseSensitive(rp, "sliding_attention"), where[1],
                                            &c->rope_theta_local, err)
               ? -1
               : 0;
}

/* The window: a bidirectional layer sees |i - j| < W / 2 + 1 (transformers halves the file's
 * sliding_window for bidirectional models), a causal one the W - 1 keys before the query. */
static int read_attention(const cJSON *root, const char *file, emb_encoder_config *c, char err[EMB_ERR_LEN]) {
    int bidirectional, window;
    double scalar, softcap, final_cap;
    if (emb_arch_read_bool(root, "use_bidirectional_attention", 0, file, &bidirectional, err) ||
        emb_arch_read_int(root, "sliding_window", 4096, 1, 1 << 24, file, &window, err) ||
        emb_arch_read_number(root, "query_pre_attn_scalar", 256, 1e-6, 1e12, file, &scalar, err) ||
        emb_arch_read_number(root, "attn_logit_softcapping", 0, 1e-6, 1e12, file, &softcap, err) ||
        /* the language-model head's cap: no part of the hidden states */
        emb_arch_read_number(root, "final_logit_softcapping", 0, 1e-6, 1e12, file, &final_cap, err))
        return -1;
    c->causal = !bidirectional;
    c->half_window = bidirectional ? window / 2 : window - 1;
    c->attn_scale = (float)(1.0 / sqrt(scalar));
    c->attn_softcap = (float)softcap;
    return 0;
}

static int read_gemma3(const cJSON *root, const char *file, const char *type, emb_encoder_config *c,
                       char err[EMB_ERR_LEN]) {
    (void)type;
    c->arch = EMB_ARCH_GEMMA3_TEXT;
    c->arch_name = "gemma3_text";
    c->act = EMB_ACT_GELU_TANH;
    c->sandwich = 1;
    const char *act;
    int bias;
    if (emb_arch_read_ints(root, file, SIZES, c, err) ||
        emb_arch_read_eps(root, "rms_norm_eps", 1e-6, file, c, err) ||
        emb_arch_read_string(root, "hidden_activation", "gelu_pytorch_tanh", file, &act, err) ||
        emb_arch_read_bool(root, "attention_bias", 0, file, &bias, err))
        return -1;
    if (strcmp(act, "gelu_pytorch_tanh") != 0 && strcmp(act, "gelu_new") != 0)
        return emb_fail(err, "%s: key 'hidden_activation': '%.40s' is not supported (only \"gelu_pytorch_tanh\")",
                        file, act);
    c->qkv_bias = c->out_bias = bias;
    c->embed_scale = (float)sqrt((double)c->dims.hidden); /* hidden ** 0.5 as a float32 tensor */
    return emb_arch_decoder_shape(root, file, 256, c, err) || read_attention(root, file, c, err) ||
                   read_layer_types(root, file, c, err) || read_rope(root, file, c, err)
               ? -1
               : 0;
}

static const emb_arch_decoder_layout LAYOUT = {"pre_feedforward_layernorm", "post_attention_layernorm",
                                               "post_feedforward_layernorm", 1};

/* A GGUF file's norm weights hold 1 + w already (norm_weights_shifted): no offset then. */
static int load_layer(emb_encoder *e, int l, char err[EMB_ERR_LEN]) {
    emb_arch_decoder_layout d = LAYOUT;
    d.unit_offset = !e->cfg.norm_weights_shifted;
    return emb_arch_decoder_layer(e, l, &d, err);
}

static int load_head(emb_encoder *e, char err[EMB_ERR_LEN]) {
    return emb_arch_decoder_final_norm(e, !e->cfg.norm_weights_shifted, err);
}

static const char *const TYPES[] = {"gemma3_text", NULL};

const emb_arch_desc emb_arch_gemma3_text = {
    EMB_ARCH_GEMMA3_TEXT,        TYPES,      NULL,     read_gemma3, "embed_tokens.weight", "model.",
    emb_arch_decoder_embeddings, load_layer, load_head};
