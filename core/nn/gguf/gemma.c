/* GGUF "gemma-embedding" (EmbeddingGemma: Gemma3TextModel with bidirectional attention, as
 * convert_hf_to_gguf.py's EmbeddingGemma class writes it): keys gemma-embedding.embedding_length,
 * block_count, attention.head_count, head_count_kv, key_length, feed_forward_length,
 * context_length, attention.layer_norm_rms_epsilon, attention.sliding_window (the config's own
 * value), attention.sliding_window_pattern (every n-th layer full; absent: 6, llama.cpp's
 * default), rope.freq_base (full layers) and rope.freq_base_swa (sliding ones; absent: 1e4, as
 * llama.cpp); the vocabulary from token_embd's rows. llama.cpp scales the queries by
 * key_length^-0.5 (the file has no query_pre_attn_scalar); the converter stores every RMSNorm
 * weight as 1 + w, which the forward pass uses as it is (norm_weights_shifted). The
 * sentence-transformers Dense layers (dense_2.weight, dense_3.weight) are the model's, not the
 * encoder's: core/model/model_gguf.c reads them. */
#include "nn/gguf/gguf_arch.h"
#include <stdio.h>
#include <string.h>

static const emb_gguf_name_pair TOP[] = {{"token_embd", "embed_tokens"}, {"output_norm", "norm"}},
                                LAYER[] = {{"attn_norm", "input_layernorm"},
                                           {"attn_q", "self_attn.q_proj"},
                                           {"attn_k", "self_attn.k_proj"},
                                           {"attn_v", "self_attn.v_proj"},
                                           {"attn_output", "self_attn.o_proj"},
                                           {"attn_q_norm", "self_attn.q_norm"},
                                           {"attn_k_norm", "self_attn.k_norm"},
                                           {"post_attention_norm", "post_attention_layernorm"},
                                           {"ffn_norm", "pre_feedforward_layernorm"},
                                           {"ffn_gate", "mlp.gate_proj"},
                                           {"ffn_up", "mlp.up_proj"},
                                           {"ffn_down", "mlp.down_proj"},
                                           {"post_ffw_norm", "post_feedforward_layernorm"}};

#define KEY(k) "gemma-embedding." k

/* The layers' kinds as layer_types: from an integer period (llama.cpp's set_swa_pattern: layer l
 * slides unless l % period == period - 1) or an array of one bool per layer (true: sliding). */
static int layer_types(const emb_gguf *g, int64_t L, const char *label, char *out, size_t cap,
                       char err[EMB_ERR_LEN]) {
    const emb_gguf_kv *kv = emb_gguf_find(g, KEY("attention.sliding_window_pattern"));
    int64_t period = 6;
    int per_layer = kv && kv->type == EMB_GGUF_ARRAY;
    if (per_layer && ((kv->elem_type != EMB_GGUF_BOOL && kv->elem_type != EMB_GGUF_U8) || kv->n != (uint64_t)L))
        return emb_fail(err, "%s: key '" KEY("attention.sliding_window_pattern") "' is not %lld booleans", label,
                        (long long)L);
    if (kv && !per_layer && (emb_gguf_kv_int(kv, &period) || period < 1 || period > EMB_ENCODER_MAX_LAYERS))
        return emb_fail(err, "%s: key '" KEY("attention.sliding_window_pattern") "' is not a period from 1 to %d",
                        label, EMB_ENCODER_MAX_LAYERS);
    size_t n = (size_t)snprintf(out, cap, "[");
    for (int64_t l = 0; l < L && n < cap; l++) {
        int sliding = per_layer ? kv->value[l] != 0 : l % period < period - 1;
        n += (size_t)snprintf(out + n, cap - n, "%s\"%s_attention\"", l ? "," : "", sliding ? "sliding" : "full");
    }
    if (n + 2 > cap) return emb_fail(err, "%s: too many layers", label);
    strcat(out, "]");
    return 0;
}

static int config(const emb_gguf *g, const char *label, emb_encoder_config *cfg, char err[EMB_ERR_LEN]) {
    int64_t H, L, NH, KV, HD, FF, ctx, W;
    double eps = 1e-6, theta = 1e4, theta_swa = 1e4; /* llama.cpp's defaults when absent */
    if (emb_gguf_meta_int(g, KEY("embedding_length"), 1, 65536, label, &H, err) ||
        emb_gguf_meta_int(g, KEY("block_count"), 1, EMB_ENCODER_MAX_LAYERS, label, &L, err) ||
        emb_gguf_meta_int(g, KEY("attention.head_count"), 1, 65536, label, &NH, err) ||
        emb_gguf_meta_int(g, KEY("attention.head_count_kv"), 1, 65536, label, &KV, err) ||
        emb_gguf_meta_int(g, KEY("attention.key_length"), 1, 4096, label, &HD, err) ||
        emb_gguf_meta_int(g, KEY("feed_forward_length"), 1, 1 << 20, label, &FF, err) ||
        emb_gguf_meta_int(g, KEY("context_length"), 1, 1 << 24, label, &ctx, err) ||
        emb_gguf_meta_int(g, KEY("attention.sliding_window"), 1, 1 << 24, label, &W, err) ||
        emb_gguf_meta_number(g, KEY("attention.layer_norm_rms_epsilon"), label, &eps, err) ||
        emb_gguf_meta_number(g, KEY("rope.freq_base"), label, &theta, err) ||
        emb_gguf_meta_number(g, KEY("rope.freq_base_swa"), label, &theta_swa, err))
        return -1;
    int64_t VL = HD;
    const emb_gguf_kv *vl = emb_gguf_find(g, KEY("attention.value_length"));
    if (vl && (emb_gguf_kv_int(vl, &VL) || VL != HD))
        return emb_fail(err, "%s: key '" KEY("attention.value_length") "' differs from key_length %lld", label,
                        (long long)HD);
    const char *s;
    size_t n;
    if (emb_gguf_kv_string(emb_gguf_find(g, KEY("rope.scaling.type")), &s, &n) == 0 &&
        !(n == 4 && memcmp(s, "none", 4) == 0))
        return emb_fail(err, "%s: rope scaling '%.*s' is not supported (only none)", label, (int)(n > 40 ? 40 : n),
                        s);
    int64_t vocab = emb_gguf_rows_of(g, "token_embd.weight");
    if (!vocab) return emb_fail(err, "%s: no 2-D tensor 'token_embd.weight'", label);
    char types[EMB_ENCODER_MAX_LAYERS * 22 + 8], json[EMB_ENCODER_MAX_LAYERS * 22 + 1024];
    if (layer_types(g, L, label, types, sizeof types, err)) return -1;
    snprintf(json, sizeof json,
             "{\"model_type\":\"gemma3_text\",\"hidden_size\":%lld,\"num_hidden_layers\":%lld,"
             "\"num_attention_heads\":%lld,\"num_key_value_heads\":%lld,\"head_dim\":%lld,"
             "\"intermediate_size\":%lld,\"max_position_embeddings\":%lld,\"vocab_size\":%lld,"
             "\"rms_norm_eps\":%.17g,\"rope_theta\":%.17g,\"rope_local_base_freq\":%.17g,"
             "\"sliding_window\":%lld,\"layer_types\":%s,\"query_pre_attn_scalar\":%lld,"
             "\"use_bidirectional_attention\":true,\"hidden_activation\":\"gelu_pytorch_tanh\"}",
             (long long)H, (long long)L, (long long)NH, (long long)KV, (long long)HD, (long long)FF,
             (long long)ctx, (long long)vocab, eps, theta, theta_swa, (long long)W, types, (long long)HD);
    if (emb_gguf_config_parse(json, "gemma-embedding", label, cfg, err)) return -1;
    cfg->norm_weights_shifted = 1;
    return 0;
}

#define N_OF(a) (sizeof a / sizeof *a)
const emb_gguf_arch emb_gguf_arch_gemma = {"gemma-embedding", TOP,   N_OF(TOP), LAYER, N_OF(LAYER),
                                           "layers.%d.%s.%s", config};
