/* GGUF "nomic-bert" (NomicBertModel as convert_hf_to_gguf.py writes it: nomic-embed-text v1 and
 * v1.5): keys nomic-bert.embedding_length, block_count, attention.head_count, feed_forward_length,
 * context_length (the converter writes the trained 2048, not config.json's 8192),
 * attention.layer_norm_epsilon, rope.freq_base (rotary_emb_base), attention.causal (must be false),
 * rope.dimension_count where written (else the whole head rotates, as the converter requires);
 * the vocabulary and token-type sizes from the tables' rows; biases where their tensors are (the
 * converter writes none). The tensors keep contrastors' layout: one fused blk.N.attn_qkv (Wqkv),
 * ffn_up = fc11, ffn_gate = fc12 (SwiGLU: fc2(fc11(x) * silu(fc12(x)))), ffn_down = fc2. */
#include "nn/gguf/gguf_arch.h"
#include <stdio.h>

static const emb_gguf_name_pair TOP[] = {{"token_embd", "embeddings.word_embeddings"},
                                         {"token_types", "embeddings.token_type_embeddings"},
                                         {"token_embd_norm", "emb_ln"}},
                                LAYER[] = {{"attn_qkv", "attn.Wqkv"},     {"attn_output", "attn.out_proj"},
                                           {"attn_output_norm", "norm1"}, {"ffn_up", "mlp.fc11"},
                                           {"ffn_gate", "mlp.fc12"},      {"ffn_down", "mlp.fc2"},
                                           {"layer_output_norm", "norm2"}};

static const char *has(const emb_gguf *g, const char *name) {
    return emb_gguf_find_tensor(g, name) ? "true" : "false";
}

/* The first layer's fused and gated weights against the keys, named as the file names them. */
static int check_rows(const emb_gguf *g, int64_t H, int64_t FF, const char *label, char err[EMB_ERR_LEN]) {
    static const char *const names[] = {"blk.0.attn_qkv.weight", "blk.0.ffn_up.weight", "blk.0.ffn_gate.weight"};
    const int64_t want[] = {3 * H, FF, FF};
    for (int i = 0; i < 3; i++) {
        int64_t rows = emb_gguf_rows_of(g, names[i]);
        if (rows != want[i])
            return emb_fail(err, "%s: tensor '%s' has %lld rows, not %lld (nomic-bert.%s)", label, names[i],
                            (long long)rows, (long long)want[i],
                            i ? "feed_forward_length" : "embedding_length x 3");
    }
    return 0;
}

static int config(const emb_gguf *g, const char *label, emb_encoder_config *cfg, char err[EMB_ERR_LEN]) {
    int64_t H, L, NH, FF, ctx, rot = 0, causal = 0;
    double eps = 1e-12, theta = 10000;
    if (emb_gguf_meta_int(g, "nomic-bert.embedding_length", 1, 65536, label, &H, err) ||
        emb_gguf_meta_int(g, "nomic-bert.block_count", 1, EMB_ENCODER_MAX_LAYERS, label, &L, err) ||
        emb_gguf_meta_int(g, "nomic-bert.attention.head_count", 1, 65536, label, &NH, err) ||
        emb_gguf_meta_int(g, "nomic-bert.feed_forward_length", 1, 1 << 20, label, &FF, err) ||
        emb_gguf_meta_int(g, "nomic-bert.context_length", 1, 1 << 24, label, &ctx, err) ||
        emb_gguf_meta_number(g, "nomic-bert.attention.layer_norm_epsilon", label, &eps, err) ||
        emb_gguf_meta_number(g, "nomic-bert.rope.freq_base", label, &theta, err))
        return -1;
    if (emb_gguf_find(g, "nomic-bert.rope.dimension_count") &&
        emb_gguf_meta_int(g, "nomic-bert.rope.dimension_count", 1, 65536, label, &rot, err))
        return -1;
    const emb_gguf_kv *c = emb_gguf_find(g, "nomic-bert.attention.causal");
    if (c && (emb_gguf_kv_int(c, &causal) || causal))
        return emb_fail(err, "%s: nomic-bert.attention.causal is set: a causal NomicBERT is not supported", label);
    if (emb_gguf_find(g, "nomic-bert.rope.scaling.type"))
        return emb_fail(err, "%s: nomic-bert.rope.scaling.type is set: scaled rotary positions are not supported",
                        label);
    int64_t vocab = emb_gguf_rows_of(g, "token_embd.weight"), types = emb_gguf_rows_of(g, "token_types.weight");
    if (!vocab) return emb_fail(err, "%s: no 2-D tensor 'token_embd.weight'", label);
    if (H % NH)
        return emb_fail(err, "%s: nomic-bert.embedding_length %lld is not a multiple of the %lld heads", label,
                        (long long)H, (long long)NH);
    if (check_rows(g, H, FF, label, err)) return -1;
    char json[768];
    snprintf(json, sizeof json,
             "{\"model_type\":\"nomic_bert\",\"n_embd\":%lld,\"n_layer\":%lld,\"n_head\":%lld,\"n_inner\":%lld,"
             "\"n_positions\":%lld,\"type_vocab_size\":%lld,\"vocab_size\":%lld,\"layer_norm_epsilon\":%.17g,"
             "\"activation_function\":\"swiglu\",\"rotary_emb_base\":%.17g,\"rotary_emb_fraction\":%.17g,"
             "\"qkv_proj_bias\":%s,\"mlp_fc1_bias\":%s,\"mlp_fc2_bias\":%s}",
             (long long)H, (long long)L, (long long)NH, (long long)FF, (long long)ctx,
             (long long)(types ? types : 1), (long long)vocab, eps, theta,
             rot ? (double)rot / (double)(H / NH) : 1.0, has(g, "blk.0.attn_qkv.bias"),
             has(g, "blk.0.ffn_up.bias"), has(g, "blk.0.ffn_down.bias"));
    return emb_gguf_config_parse(json, "nomic-bert", label, cfg, err);
}

#define N_OF(a) (sizeof a / sizeof *a)
const emb_gguf_arch emb_gguf_arch_nomic_bert = {.arch = "nomic-bert",
                                                .top = TOP,
                                                .n_top = N_OF(TOP),
                                                .layer = LAYER,
                                                .n_layer = N_OF(LAYER),
                                                .layer_fmt = "encoder.layers.%d.%s.%s",
                                                .config = config};
