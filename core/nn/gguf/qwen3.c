/* GGUF "qwen3" (Qwen3Model / Qwen3ForCausalLM as convert_hf_to_gguf.py writes them): keys
 * qwen3.embedding_length, block_count, attention.head_count, head_count_kv, key_length,
 * feed_forward_length, context_length, attention.layer_norm_rms_epsilon, rope.freq_base; the
 * vocabulary from token_embd's rows; attention biases when blk.0.attn_q.bias is there. */
#include "nn/gguf/gguf_arch.h"
#include <stdio.h>

static const emb_gguf_name_pair TOP[] = {{"token_embd", "embed_tokens"}, {"output_norm", "norm"}},
                                LAYER[] = {
                                    {"attn_norm", "input_layernorm"},    {"attn_q", "self_attn.q_proj"},
                                    {"attn_k", "self_attn.k_proj"},      {"attn_v", "self_attn.v_proj"},
                                    {"attn_output", "self_attn.o_proj"}, {"attn_q_norm", "self_attn.q_norm"},
                                    {"attn_k_norm", "self_attn.k_norm"}, {"ffn_norm", "post_attention_layernorm"},
                                    {"ffn_gate", "mlp.gate_proj"},       {"ffn_up", "mlp.up_proj"},
                                    {"ffn_down", "mlp.down_proj"}};

static int config(const emb_gguf *g, const char *label, emb_encoder_config *cfg, char err[EMB_ERR_LEN]) {
    int64_t H, L, NH, KV, HD, FF, ctx;
    double eps = 1e-6, theta = 1e6;
    if (emb_gguf_meta_int(g, "qwen3.embedding_length", 1, 65536, label, &H, err) ||
        emb_gguf_meta_int(g, "qwen3.block_count", 1, EMB_ENCODER_MAX_LAYERS, label, &L, err) ||
        emb_gguf_meta_int(g, "qwen3.attention.head_count", 1, 65536, label, &NH, err) ||
        emb_gguf_meta_int(g, "qwen3.attention.head_count_kv", 1, 65536, label, &KV, err) ||
        emb_gguf_meta_int(g, "qwen3.attention.key_length", 1, 4096, label, &HD, err) ||
        emb_gguf_meta_int(g, "qwen3.feed_forward_length", 1, 1 << 20, label, &FF, err) ||
        emb_gguf_meta_int(g, "qwen3.context_length", 1, 1 << 24, label, &ctx, err) ||
        emb_gguf_meta_number(g, "qwen3.attention.layer_norm_rms_epsilon", label, &eps, err) ||
        emb_gguf_meta_number(g, "qwen3.rope.freq_base", label, &theta, err))
        return -1;
    int64_t vocab = emb_gguf_rows_of(g, "token_embd.weight");
    if (!vocab) return emb_fail(err, "%s: no 2-D tensor 'token_embd.weight'", label);
    char json[640];
    snprintf(
        json, sizeof json,
        "{\"model_type\":\"qwen3\",\"hidden_size\":%lld,\"num_hidden_layers\":%lld,\"num_attention_heads\":%lld,"
        "\"num_key_value_heads\":%lld,\"head_dim\":%lld,\"intermediate_size\":%lld,"
        "\"max_position_embeddings\":%lld,\"vocab_size\":%lld,\"rms_norm_eps\":%.17g,\"rope_theta\":%.17g,"
        "\"hidden_act\":\"silu\",\"attention_bias\":%s}",
        (long long)H, (long long)L, (long long)NH, (long long)KV, (long long)HD, (long long)FF, (long long)ctx,
        (long long)vocab, eps, theta, emb_gguf_find_tensor(g, "blk.0.attn_q.bias") ? "true" : "false");
    return emb_gguf_config_parse(json, "qwen3", label, cfg, err);
}

#define N_OF(a) (sizeof a / sizeof *a)
const emb_gguf_arch emb_gguf_arch_qwen3 = {"qwen3", TOP, N_OF(TOP), LAYER, N_OF(LAYER), "layers.%d.%s.%s", config};
