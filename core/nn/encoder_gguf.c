/* See encoder_gguf.h. The names and keys are those llama.cpp's convert_hf_to_gguf.py writes for
 * BertModel and Qwen3Model (tests/references/gguf_bert.py and gguf_decoder.py write the same):
 * the {arch}.* hyper-parameters, then per architecture a table of tensor names both ways (BERT's
 * token_embd / position_embd / token_types / token_embd_norm and blk.N.attn_q|k|v|output ...,
 * Qwen3's token_embd, output_norm and blk.N.attn_norm, attn_q_norm, ffn_gate ...); ggml's
 * dimensions are the reverse of Hugging Face's. */
#include "nn/encoder_gguf.h"
#include "nn/gguf.h"
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

int emb_gguf_path(const char *path) {
    size_t n = strlen(path);
    return n >= 5 && strcasecmp(path + n - 5, ".gguf") == 0;
}

typedef struct {
    const char *gguf, *hf;
} name_pair;

/* An architecture as GGUF files name it: its tensors' names both ways, its config writer. */
typedef struct {
    const char *arch;
    const name_pair *top;
    size_t n_top;
    const name_pair *layer;
    size_t n_layer;
    const char *layer_fmt; /* Hugging Face's name of layer %d's part %s, kind %s */
} gguf_arch;

static const name_pair BERT_TOP[] = {{"token_embd", "embeddings.word_embeddings"},
                                     {"position_embd", "embeddings.position_embeddings"},
                                     {"token_types", "embeddings.token_type_embeddings"},
                                     {"token_embd_norm", "embeddings.LayerNorm"}},
                       BERT_LAYER[] = {{"attn_q", "attention.self.query"},
                                       {"attn_k", "attention.self.key"},
                                       {"attn_v", "attention.self.value"},
                                       {"attn_output", "attention.output.dense"},
                                       {"attn_output_norm", "attention.output.LayerNorm"},
                                       {"ffn_up", "intermediate.dense"},
                                       {"ffn_down", "output.dense"},
                                       {"layer_output_norm", "output.LayerNorm"}},
                       QWEN3_TOP[] = {{"token_embd", "embed_tokens"}, {"output_norm", "norm"}},
                       QWEN3_LAYER[] = {
                           {"attn_norm", "input_layernorm"},    {"attn_q", "self_attn.q_proj"},
                           {"attn_k", "self_attn.k_proj"},      {"attn_v", "self_attn.v_proj"},
                           {"attn_output", "self_attn.o_proj"}, {"attn_q_norm", "self_attn.q_norm"},
                           {"attn_k_norm", "self_attn.k_norm"}, {"ffn_norm", "post_attention_layernorm"},
                           {"ffn_gate", "mlp.gate_proj"},       {"ffn_up", "mlp.up_proj"},
                           {"ffn_down", "mlp.down_proj"}};
#define N_OF(a) (sizeof a / sizeof *a)
static const gguf_arch ARCHS[] = {
    {"bert", BERT_TOP, N_OF(BERT_TOP), BERT_LAYER, N_OF(BERT_LAYER), "encoder.layer.%d.%s.%s"},
    {"qwen3", QWEN3_TOP, N_OF(QWEN3_TOP), QWEN3_LAYER, N_OF(QWEN3_LAYER), "layers.%d.%s.%s"},
};

/* The Hugging Face name of a GGUF tensor ("blk.3.attn_q.bias" -> "encoder.layer.3.attention.self.query.bias"),
 * or 0 when the model has none (the lm_head's "output.weight", anything the converter adds). */
static int hf_name(const gguf_arch *a, const emb_gguf_tensor *t, char *out, size_t cap) {
    char name[64];
    snprintf(name, sizeof name, "%.*s", (int)t->name_len, t->name);
    char *kind = strrchr(name, '.');
    if (!kind || (strcmp(kind, ".weight") != 0 && strcmp(kind, ".bias") != 0)) return 0;
    *kind++ = 0;
    for (size_t i = 0; i < a->n_top; i++)
        if (strcmp(name, a->top[i].gguf) == 0) return snprintf(out, cap, "%s.%s", a->top[i].hf, kind) > 0;
    int layer, used = 0;
    if (sscanf(name, "blk.%d.%n", &layer, &used) != 1 || used == 0 || layer < 0) return 0;
    for (size_t i = 0; i < a->n_layer; i++)
        if (strcmp(name + used, a->layer[i].gguf) == 0)
            return snprintf(out, cap, a->layer_fmt, layer, a->layer[i].hf, kind) > 0;
    return 0;
}

static int cmp_name(const void *a, const void *b) {
    return strcmp(((const emb_safetensors_tensor *)a)->name, ((const emb_safetensors_tensor *)b)->name);
}

/* Bytes of float32 that the Q8_0 tensors take once widened. */
static size_t widened_bytes(const emb_gguf *g) {
    size_t n = 0;
    for (uint64_t i = 0; i < g->n_tensors; i++)
        if (g->tensors[i].type == EMB_GGML_Q8_0) n += (size_t)(g->tensors[i].bytes / 34) * 32 * sizeof(float);
    return n;
}

/* One tensor into the table: its name, dtype, shape (ggml's reversed) and data. */
static int add_tensor(const emb_gguf_tensor *t, const char *hf, float **wide, emb_safetensors_tensor *out,
                      const char *label, char err[EMB_ERR_LEN]) {
    memset(out, 0, sizeof *out);
    out->ndim = (int)t->n_dims;
    for (int d = 0; d < out->ndim; d++) out->shape[d] = t->ne[out->ndim - 1 - d];
    out->data = t->data;
    out->end = t->bytes;
    switch (t->type) {
    case EMB_GGML_F32: out->dtype = EMB_DT_F32; break;
    case EMB_GGML_F16: out->dtype = EMB_DT_F16; break;
    case EMB_GGML_BF16: out->dtype = EMB_DT_BF16; break;
    case EMB_GGML_Q8_0: { /* blocks of an f16 scale and 32 int8 codes: value = scale * code */
        size_t blocks = (size_t)(t->bytes / 34);
        emb_gguf_q8_0_to_f32(t->data, blocks, *wide);
        out->dtype = EMB_DT_F32;
        out->data = (const unsigned char *)*wide;
        out->end = blocks * 32 * sizeof(float);
        *wide += blocks * 32;
        break;
    }
    default:
        return emb_fail(err, "%s: tensor '%.*s' has type %s, which is not read yet (F32, F16, BF16 and Q8_0 are)",
                        label, (int)t->name_len, t->name, emb_ggml_type_name(t->type));
    }
    return (out->name = strdup(hf)) ? 0 : emb_fail(err, "out of memory");
}

static int tensor_table(const gguf_arch *a, const emb_gguf *g, emb_safetensors *sf, char err[EMB_ERR_LEN]) {
    size_t wide_bytes = widened_bytes(g);
    float *wide = NULL;
    if (wide_bytes && !(wide = sf->owned = malloc(wide_bytes))) return emb_fail(err, "out of memory");
    sf->h.tensors = calloc(g->n_tensors ? (size_t)g->n_tensors : 1, sizeof *sf->h.tensors);
    if (!sf->h.tensors) return emb_fail(err, "out of memory");
    for (uint64_t i = 0; i < g->n_tensors; i++) {
        char hf[160];
        if (!hf_name(a, &g->tensors[i], hf, sizeof hf)) continue;
        if (add_tensor(&g->tensors[i], hf, &wide, &sf->h.tensors[sf->h.n], sf->label, err)) return -1;
        sf->h.n++;
    }
    qsort(sf->h.tensors, (size_t)sf->h.n, sizeof *sf->h.tensors, cmp_name);
    return 0;
}

/* A metadata value that must be there: an integer in [lo, hi]. */
static int meta_int(const emb_gguf *g, const char *key, int64_t lo, int64_t hi, const char *label, int64_t *out,
                    char err[EMB_ERR_LEN]) {
    const emb_gguf_kv *kv = emb_gguf_find(g, key);
    if (!kv) return emb_fail(err, "%s: key '%s' is missing", label, key);
    if (emb_gguf_kv_int(kv, out) || *out < lo || *out > hi)
        return emb_fail(err, "%s: key '%s' is not an integer from %lld to %lld", label, key, (long long)lo,
                        (long long)hi);
    return 0;
}

/* The rows of a 2-D tensor (ggml's ne[1]), or 0 when absent or not 2-D. */
static int64_t rows_of(const emb_gguf *g, const char *name) {
    const emb_gguf_tensor *t = emb_gguf_find_tensor(g, name);
    return t && t->n_dims == 2 ? t->ne[1] : 0;
}

/* BERT's bert.* keys written out as BertModel's config.json. */
static int bert_config(const emb_gguf *g, const char *label, emb_encoder_config *cfg, char err[EMB_ERR_LEN]) {
    int64_t H, L, NH, FF, causal = 0;
    double eps = 1e-12;
    if (meta_int(g, "bert.embedding_length", 1, 65536, label, &H, err) ||
        meta_int(g, "bert.block_count", 1, EMB_ENCODER_MAX_LAYERS, label, &L, err) ||
        meta_int(g, "bert.attention.head_count", 1, 65536, label, &NH, err) ||
        meta_int(g, "bert.feed_forward_length", 1, 1 << 20, label, &FF, err))
        return -1;
    const emb_gguf_kv *e = emb_gguf_find(g, "bert.attention.layer_norm_epsilon");
    if (e && emb_gguf_kv_number(e, &eps))
        return emb_fail(err, "%s: key 'bert.attention.layer_norm_epsilon' is not a number", label);
    const emb_gguf_kv *c = emb_gguf_find(g, "bert.attention.causal");
    if (c && (emb_gguf_kv_int(c, &causal) || causal))
        return emb_fail(err, "%s: bert.attention.causal is set: a causal BERT is not supported", label);
    int64_t vocab = rows_of(g, "token_embd.weight"), pos = rows_of(g, "position_embd.weight"),
            types = rows_of(g, "token_types.weight");
    if (!vocab || !pos)
        return emb_fail(err, "%s: no 2-D tensor '%s'", label,
                        vocab ? "position_embd.weight" : "token_embd.weight");
    char json[512];
    snprintf(
        json, sizeof json,
        "{\"model_type\":\"bert\",\"hidden_size\":%lld,\"num_hidden_layers\":%lld,\"num_attention_heads\":%lld,"
        "\"intermediate_size\":%lld,\"max_position_embeddings\":%lld,\"type_vocab_size\":%lld,"
        "\"vocab_size\":%lld,\"layer_norm_eps\":%.17g,\"hidden_act\":\"gelu\"}",
        (long long)H, (long long)L, (long long)NH, (long long)FF, (long long)pos, (long long)(types ? types : 1),
        (long long)vocab, eps);
    char file[160];
    snprintf(file, sizeof file, "%s (its bert.* keys as config.json)", label);
    return emb_encoder_config_parse(json, strlen(json), file, cfg, err);
}

/* Qwen3's qwen3.* keys written out as Qwen3Model's config.json. */
static int qwen3_config(const emb_gguf *g, const char *label, emb_encoder_config *cfg, char err[EMB_ERR_LEN]) {
    int64_t H, L, NH, KV, HD, FF, ctx;
    double eps = 1e-6, theta = 1e6;
    if (meta_int(g, "qwen3.embedding_length", 1, 65536, label, &H, err) ||
        meta_int(g, "qwen3.block_count", 1, EMB_ENCODER_MAX_LAYERS, label, &L, err) ||
        meta_int(g, "qwen3.attention.head_count", 1, 65536, label, &NH, err) ||
        meta_int(g, "qwen3.attention.head_count_kv", 1, 65536, label, &KV, err) ||
        meta_int(g, "qwen3.attention.key_length", 1, 4096, label, &HD, err) ||
        meta_int(g, "qwen3.feed_forward_length", 1, 1 << 20, label, &FF, err) ||
        meta_int(g, "qwen3.context_length", 1, 1 << 24, label, &ctx, err))
        return -1;
    const emb_gguf_kv *e = emb_gguf_find(g, "qwen3.attention.layer_norm_rms_epsilon"),
                      *r = emb_gguf_find(g, "qwen3.rope.freq_base");
    if ((e && emb_gguf_kv_number(e, &eps)) || (r && emb_gguf_kv_number(r, &theta)))
        return emb_fail(err, "%s: qwen3.attention.layer_norm_rms_epsilon or qwen3.rope.freq_base is not a number",
                        label);
    int64_t vocab = rows_of(g, "token_embd.weight");
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
    char file[160];
    snprintf(file, sizeof file, "%s (its qwen3.* keys as config.json)", label);
    return emb_encoder_config_parse(json, strlen(json), file, cfg, err);
}

int emb_gguf_file_open(const char *path, int use_mmap, emb_safetensors **sf, emb_gguf *g, char err[EMB_ERR_LEN]) {
    if (emb_safetensors_open_raw(path, use_mmap, sf, err)) return -1;
    if (emb_gguf_parse((*sf)->map, (*sf)->size, (*sf)->label, g, err) == 0) return 0;
    emb_safetensors_close(*sf);
    *sf = NULL;
    return -1;
}

int emb_gguf_expect(const emb_gguf *g, const char *key, const char *want, const char *label, const char *what,
                    char err[EMB_ERR_LEN]) {
    const char *v = NULL;
    size_t n = 0;
    if (emb_gguf_kv_string(emb_gguf_find(g, key), &v, &n)) return emb_fail(err, "%s: no %s string", label, key);
    if (n == strlen(want) && memcmp(v, want, n) == 0) return 0;
    return emb_fail(err, "%s: %s '%.*s' is not read from GGUF yet (%s is)", label, what, (int)(n > 40 ? 40 : n), v,
                    want);
}

int emb_encoder_gguf_open(const char *path, int use_mmap, emb_encoder_config *cfg, emb_safetensors **file,
                          char err[EMB_ERR_LEN]) {
    emb_safetensors *sf;
    emb_gguf g;
    *file = NULL;
    if (emb_gguf_file_open(path, use_mmap, &sf, &g, err)) return -1;
    const gguf_arch *a = NULL;
    const char *name = NULL;
    size_t n = 0;
    int rc = emb_gguf_kv_string(emb_gguf_find(&g, "general.architecture"), &name, &n)
                 ? emb_fail(err, "%s: no general.architecture string", sf->label)
                 : 0;
    for (size_t i = 0; rc == 0 && i < N_OF(ARCHS); i++)
        if (strlen(ARCHS[i].arch) == n && memcmp(ARCHS[i].arch, name, n) == 0) a = &ARCHS[i];
    if (rc == 0 && !a)
        rc = emb_fail(err, "%s: architecture '%.*s' is not read from GGUF yet (bert and qwen3 are)", sf->label,
                      (int)(n > 40 ? 40 : n), name);
    if (rc == 0)
        rc = a == &ARCHS[0] ? bert_config(&g, sf->label, cfg, err) : qwen3_config(&g, sf->label, cfg, err);
    if (rc == 0) rc = tensor_table(a, &g, sf, err);
    emb_gguf_free(&g);
    if (rc) {
        emb_safetensors_close(sf);
        return -1;
    }
    *file = sf;
    return 0;
}
