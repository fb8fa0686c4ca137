/* See random_model.h. */
#include "random_model.h"
#include "nn/safetensors.h"
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

static uint64_t rs;
static uint32_t draw(void) {
    rs ^= rs << 13;
    rs ^= rs >> 7;
    rs ^= rs << 17;
    return (uint32_t)(rs >> 32);
}
static float urand(float a) { return ((float)draw() / 4294967296.0f * 2.0f - 1.0f) * a; }

static int write_text(const char *dir, const char *name, const char *text) {
    char path[1024];
    snprintf(path, sizeof path, "%s/%s", dir, name);
    FILE *f = fopen(path, "w");
    if (!f) return -1;
    fputs(text, f);
    return fclose(f);
}

static int copy_file(const char *from_dir, const char *to_dir, const char *name) {
    char a[1024], b[1024];
    snprintf(a, sizeof a, "%s/%s", from_dir, name);
    snprintf(b, sizeof b, "%s/%s", to_dir, name);
    FILE *in = fopen(a, "rb"), *out = fopen(b, "wb");
    if (!in || !out) {
        if (in) fclose(in);
        if (out) fclose(out);
        return -1;
    }
    char buf[65536];
    size_t got;
    while ((got = fread(buf, 1, sizeof buf, in)) > 0) fwrite(buf, 1, got, out);
    fclose(in);
    return fclose(out);
}

static int write_tokenizer(const char *dir, int H) {
    const char *src = "tests/fixtures/models/minilm-tiny-st";
    char path[1024], pool[256];
    snprintf(path, sizeof path, "%s/1_Pooling", dir);
    mkdir(path, 0755);
    snprintf(pool, sizeof pool, "{\"word_embedding_dimension\": %d, \"pooling_mode_mean_tokens\": true}", H);
    if (write_text(dir, "1_Pooling/config.json", pool) || copy_file(src, dir, "modules.json") ||
        copy_file(src, dir, "sentence_bert_config.json") || copy_file(src, dir, "tokenizer.json") ||
        copy_file(src, dir, "tokenizer_config.json") || copy_file(src, dir, "vocab.txt") ||
        copy_file(src, dir, "special_tokens_map.json")) {
        fprintf(stderr,
                "random model: cannot copy the tokenizer files of %s into %s (run from the repository root)\n",
                src, dir);
        return -1;
    }
    return 0;
}

/* Tensor list of one checkpoint, in the order the weights are drawn (which fixes their values);
 * written in name order. */
typedef struct {
    emb_safetensors_write_tensor *t;
    char (*names)[96];
    int n, cap;
} tensor_list;

static void add(tensor_list *tl, const char *name, int64_t a, int64_t b) {
    if (tl->n == tl->cap) return; /* sized by the caller; never reached */
    emb_safetensors_write_tensor *t = &tl->t[tl->n];
    snprintf(tl->names[tl->n], 96, "%s", name);
    t->name = tl->names[tl->n];
    t->dtype = EMB_DT_F32;
    t->ndim = b ? 2 : 1;
    t->shape[0] = a;
    t->shape[1] = b;
    tl->n++;
}
/* layer l's "PREFIX.weight" [out, in] (in 0: a 1-D norm gain [out]) and, with bias, "PREFIX.bias" [out];
 * prefix holds the layer's %d */
static void add_w(tensor_list *tl, const char *prefix, int l, int64_t out, int64_t in, int bias) {
    char fmt[96], name[96];
    snprintf(fmt, sizeof fmt, "%s.weight", prefix);
    snprintf(name, sizeof name, fmt, l);
    add(tl, name, out, in);
    if (!bias) return;
    snprintf(fmt, sizeof fmt, "%s.bias", prefix);
    snprintf(name, sizeof name, fmt, l);
    add(tl, name, out, 0);
}

static void bert_tensors(tensor_list *tl, int H, int L, int FF, int V, int P) {
    add(tl, "embeddings.word_embeddings.weight", V, H);
    add(tl, "embeddings.position_embeddings.weight", P, H);
    add(tl, "embeddings.token_type_embeddings.weight", 2, H);
    add_w(tl, "embeddings.LayerNorm", 0, H, 0, 1);
    for (int l = 0; l < L; l++) {
        add_w(tl, "encoder.layer.%d.attention.self.query", l, H, H, 1);
        add_w(tl, "encoder.layer.%d.attention.self.key", l, H, H, 1);
        add_w(tl, "encoder.layer.%d.attention.self.value", l, H, H, 1);
        add_w(tl, "encoder.layer.%d.attention.output.dense", l, H, H, 1);
        add_w(tl, "encoder.layer.%d.attention.output.LayerNorm", l, H, 0, 1);
        add_w(tl, "encoder.layer.%d.intermediate.dense", l, FF, H, 1);
        add_w(tl, "encoder.layer.%d.output.dense", l, H, FF, 1);
        add_w(tl, "encoder.layer.%d.output.LayerNorm", l, H, 0, 1);
    }
}

/* nomic-ai's NomicBertModel (modeling_hf_nomic_bert.py): fc11 is multiplied by silu(fc12). */
static void nomic_tensors(tensor_list *tl, int H, int L, int FF, int V) {
    add(tl, "embeddings.word_embeddings.weight", V, H);
    add(tl, "embeddings.token_type_embeddings.weight", 2, H);
    add_w(tl, "emb_ln", 0, H, 0, 1);
    for (int l = 0; l < L; l++) {
        add_w(tl, "encoder.layers.%d.attn.Wqkv", l, 3 * H, H, 0);
        add_w(tl, "encoder.layers.%d.attn.out_proj", l, H, H, 0);
        add_w(tl, "encoder.layers.%d.norm1", l, H, 0, 1);
        add_w(tl, "encoder.layers.%d.mlp.fc11", l, FF, H, 0);
        add_w(tl, "encoder.layers.%d.mlp.fc12", l, FF, H, 0);
        add_w(tl, "encoder.layers.%d.mlp.fc2", l, H, FF, 0);
        add_w(tl, "encoder.layers.%d.norm2", l, H, 0, 1);
    }
}

/* transformers' ModernBertModel: layer 0 has no attn_norm (Identity); Wi is [2I, H], its first
 * half activated. */
static void modernbert_tensors(tensor_list *tl, int H, int L, int FF, int V) {
    add(tl, "embeddings.tok_embeddings.weight", V, H);
    add(tl, "embeddings.norm.weight", H, 0);
    for (int l = 0; l < L; l++) {
        if (l > 0) add_w(tl, "layers.%d.attn_norm", l, H, 0, 0);
        add_w(tl, "layers.%d.attn.Wqkv", l, 3 * H, H, 0);
        add_w(tl, "layers.%d.attn.Wo", l, H, H, 0);
        add_w(tl, "layers.%d.mlp_norm", l, H, 0, 0);
        add_w(tl, "layers.%d.mlp.Wi", l, 2 * FF, H, 0);
        add_w(tl, "layers.%d.mlp.Wo", l, H, FF, 0);
    }
    add(tl, "final_norm.weight", H, 0);
}

/* transformers' MPNetModel: BERT's layer layout, the bias table at encoder level. */
static void mpnet_tensors(tensor_list *tl, int H, int L, int NH, int FF, int V) {
    add(tl, "embeddings.word_embeddings.weight", V, H);
    add(tl, "embeddings.position_embeddings.weight", 514, H);
    add_w(tl, "embeddings.LayerNorm", 0, H, 0, 1);
    for (int l = 0; l < L; l++) {
        add_w(tl, "encoder.layer.%d.attention.attn.q", l, H, H, 1);
        add_w(tl, "encoder.layer.%d.attention.attn.k", l, H, H, 1);
        add_w(tl, "encoder.layer.%d.attention.attn.v", l, H, H, 1);
        add_w(tl, "encoder.layer.%d.attention.attn.o", l, H, H, 1);
        add_w(tl, "encoder.layer.%d.attention.LayerNorm", l, H, 0, 1);
        add_w(tl, "encoder.layer.%d.intermediate.dense", l, FF, H, 1);
        add_w(tl, "encoder.layer.%d.output.dense", l, H, FF, 1);
        add_w(tl, "encoder.layer.%d.output.LayerNorm", l, H, 0, 1);
    }
    add(tl, "encoder.relative_attention_bias.weight", 32, NH);
}

/* transformers' Qwen3Model and Gemma3TextModel: one layout (Gemma adds the sandwich norms). */
static void decoder_tensors(tensor_list *tl, int gemma, int H, int L, int NH, int KV, int HD, int FF, int V) {
    add(tl, "embed_tokens.weight", V, H);
    for (int l = 0; l < L; l++) {
        add_w(tl, "layers.%d.input_layernorm", l, H, 0, 0);
        add_w(tl, "layers.%d.self_attn.q_proj", l, (int64_t)NH * HD, H, 0);
        add_w(tl, "layers.%d.self_attn.k_proj", l, (int64_t)KV * HD, H, 0);
        add_w(tl, "layers.%d.self_attn.v_proj", l, (int64_t)KV * HD, H, 0);
        add_w(tl, "layers.%d.self_attn.o_proj", l, H, (int64_t)NH * HD, 0);
        add_w(tl, "layers.%d.self_attn.q_norm", l, HD, 0, 0);
        add_w(tl, "layers.%d.self_attn.k_norm", l, HD, 0, 0);
        add_w(tl, "layers.%d.post_attention_layernorm", l, H, 0, 0);
        if (gemma) {
            add_w(tl, "layers.%d.pre_feedforward_layernorm", l, H, 0, 0);
            add_w(tl, "layers.%d.post_feedforward_layernorm", l, H, 0, 0);
        }
        add_w(tl, "layers.%d.mlp.gate_proj", l, FF, H, 0);
        add_w(tl, "layers.%d.mlp.up_proj", l, FF, H, 0);
        add_w(tl, "layers.%d.mlp.down_proj", l, H, FF, 0);
    }
    add(tl, "norm.weight", H, 0);
}

/* Qwen3-Embedding-0.6B's and EmbeddingGemma-300m's configs, the sizes given (key and value
 * heads, head_dim and vocabulary fixed at theirs: random_model.h). */
static void decoder_config(char *cfg, size_t cap, bench_arch arch, int H, int L, int NH, int FF) {
    if (arch == BENCH_ARCH_QWEN3) {
        snprintf(cfg, cap,
                 "{\"architectures\":[\"Qwen3Model\"],\"model_type\":\"qwen3\",\"hidden_size\":%d,"
                 "\"num_hidden_layers\":%d,\"num_attention_heads\":%d,\"num_key_value_heads\":%d,"
                 "\"head_dim\":%d,\"intermediate_size\":%d,\"max_position_embeddings\":32768,"
                 "\"vocab_size\":%d,\"rms_norm_eps\":1e-06,\"hidden_act\":\"silu\",\"rope_theta\":1000000,"
                 "\"attention_bias\":false,\"use_sliding_window\":false,\"tie_word_embeddings\":true,"
                 "\"eos_token_id\":151643,\"pad_token_id\":151643}",
                 H, L, NH, BENCH_QWEN3_KV_HEADS, BENCH_QWEN3_HEAD_DIM, FF, BENCH_QWEN3_VOCAB);
        return;
    }
    int n = snprintf(cfg, cap,
                     "{\"architectures\":[\"Gemma3TextModel\"],\"model_type\":\"gemma3_text\",\"hidden_size\":%d,"
                     "\"num_hidden_layers\":%d,\"num_attention_heads\":%d,\"num_key_value_heads\":%d,"
                     "\"head_dim\":%d,\"intermediate_size\":%d,\"max_position_embeddings\":2048,"
                     "\"vocab_size\":%d,\"rms_norm_eps\":1e-06,\"hidden_activation\":\"gelu_pytorch_tanh\","
                     "\"query_pre_attn_scalar\":256,\"rope_theta\":1000000.0,\"rope_local_base_freq\":10000.0,"
                     "\"sliding_window\":%d,\"use_bidirectional_attention\":true,\"attention_bias\":false,"
                     "\"pad_token_id\":0,\"bos_token_id\":2,\"eos_token_id\":1,\"layer_types\":[",
                     H, L, NH, BENCH_GEMMA3_KV_HEADS, BENCH_GEMMA3_HEAD_DIM, FF, BENCH_GEMMA3_VOCAB,
                     BENCH_GEMMA3_WINDOW);
    for (int l = 0; l < L && n > 0 && (size_t)n < cap;
         l++) /* every 6th layer global, as sliding_window_pattern 6 */
        n += snprintf(cfg + n, cap - (size_t)n, "%s\"%s_attention\"", l ? "," : "",
                      (l + 1) % 6 ? "sliding" : "full");
    if (n > 0 && (size_t)n < cap) snprintf(cfg + n, cap - (size_t)n, "]}");
}

static int write_config(const char *dir, bench_arch arch, int H, int L, int NH, int FF) {
    char cfg[8192];
    if (arch == BENCH_ARCH_QWEN3 || arch == BENCH_ARCH_GEMMA3) decoder_config(cfg, sizeof cfg, arch, H, L, NH, FF);
    else if (arch == BENCH_ARCH_BERT)
        snprintf(cfg, sizeof cfg,
                 "{\"architectures\":[\"BertModel\"],\"model_type\":\"bert\",\"hidden_size\":%d,"
                 "\"num_hidden_layers\":%d,\"num_attention_heads\":%d,\"intermediate_size\":%d,"
                 "\"max_position_embeddings\":512,\"type_vocab_size\":2,\"vocab_size\":30522,"
                 "\"layer_norm_eps\":1e-12,\"hidden_act\":\"gelu\",\"pad_token_id\":0}",
                 H, L, NH, FF);
    else if (arch == BENCH_ARCH_NOMIC) /* nomic-embed-text-v1.5's keys that the forward pass depends on */
        snprintf(cfg, sizeof cfg,
                 "{\"architectures\":[\"NomicBertModel\"],\"model_type\":\"nomic_bert\",\"n_embd\":%d,"
                 "\"n_layer\":%d,\"n_head\":%d,\"n_inner\":%d,\"n_positions\":8192,\"max_trained_positions\":2048,"
                 "\"vocab_size\":30528,\"type_vocab_size\":2,\"layer_norm_epsilon\":1e-12,"
                 "\"activation_function\":\"swiglu\",\"rotary_emb_base\":1000,\"rotary_emb_fraction\":1.0,"
                 "\"rotary_emb_interleaved\":false,\"rotary_emb_scale_base\":null,\"rotary_scaling_factor\":null,"
                 "\"qkv_proj_bias\":false,\"mlp_fc1_bias\":false,\"mlp_fc2_bias\":false,\"prenorm\":false,"
                 "\"parallel_block\":false,\"use_rms_norm\":false,\"causal\":false,\"pad_token_id\":0}",
                 H, L, NH, FF);
    else if (arch == BENCH_ARCH_MPNET) /* all-mpnet-base-v2's */
        snprintf(cfg, sizeof cfg,
                 "{\"architectures\":[\"MPNetModel\"],\"model_type\":\"mpnet\",\"hidden_size\":%d,"
                 "\"num_hidden_layers\":%d,\"num_attention_heads\":%d,\"intermediate_size\":%d,"
                 "\"max_position_embeddings\":514,\"vocab_size\":30527,\"layer_norm_eps\":1e-05,"
                 "\"hidden_act\":\"gelu\",\"relative_attention_num_buckets\":32,\"pad_token_id\":1,"
                 "\"bos_token_id\":0,\"eos_token_id\":2}",
                 H, L, NH, FF);
    else /* ModernBERT-base's */
        snprintf(cfg, sizeof cfg,
                 "{\"architectures\":[\"ModernBertModel\"],\"model_type\":\"modernbert\",\"hidden_size\":%d,"
                 "\"num_hidden_layers\":%d,\"num_attention_heads\":%d,\"intermediate_size\":%d,"
                 "\"max_position_embeddings\":8192,\"vocab_size\":50368,\"norm_eps\":1e-05,\"norm_bias\":false,"
                 "\"hidden_activation\":\"gelu\",\"attention_bias\":false,\"mlp_bias\":false,"
                 "\"global_attn_every_n_layers\":3,\"local_attention\":128,\"global_rope_theta\":160000.0,"
                 "\"local_rope_theta\":10000.0,\"pad_token_id\":50283,\"bos_token_id\":50281,"
                 "\"eos_token_id\":50282,\"cls_token_id\":50281,\"sep_token_id\":50282}",
                 H, L, NH, FF);
    if (write_text(dir, "config.json", cfg)) {
        fprintf(stderr, "random model: cannot write %s/config.json\n", dir);
        return -1;
    }
    return 0;
}

static int by_name(const void *a, const void *b) {
    return strcmp(((const emb_safetensors_write_tensor *)a)->name,
                  ((const emb_safetensors_write_tensor *)b)->name);
}

/* Draws every tensor's values (weights uniform with std about 1/sqrt(fan-in), norm gains near 1,
 * biases small; with outliers, random_model.h's), then writes them in name order. gain_offset:
 * the norms compute x * (1 + w) (Gemma), so their gains are drawn near 0. */
static int fill_and_write(const char *dir, tensor_list *tl, unsigned flags, int gain_offset) {
    char path[1024], err[EMB_ERR_LEN];
    int oom = 0, rc = 0;
    for (int i = 0; i < tl->n && !oom; i++) {
        emb_safetensors_write_tensor *t = &tl->t[i];
        size_t cnt = (size_t)t->shape[0] * (t->ndim == 2 ? (size_t)t->shape[1] : 1);
        float *d = malloc(cnt * sizeof(float));
        if (!d) {
            oom = 1;
            break;
        }
        int gain = t->ndim == 1 && strstr(t->name, ".weight") != NULL;
        int emb = strstr(t->name, "embeddings") != NULL || strstr(t->name, "embed_tokens") != NULL;
        float a = t->ndim == 2 ? (emb ? 0.05f : 1.7f / sqrtf((float)t->shape[1])) : 0.02f;
        for (size_t j = 0; j < cnt; j++) d[j] = gain ? (gain_offset ? 0.0f : 1.0f) + urand(0.05f) : urand(a);
        if (gain && (flags & BENCH_MODEL_BIG_DIMS)) d[cnt / 3] = d[2 * cnt / 3 + 1] = 8.0f;
        if (t->ndim == 2 && !emb && (flags & BENCH_MODEL_BIG_WEIGHTS))
            for (size_t j = 0; j < cnt; j++)
                if ((draw() & 511) == 0) d[j] *= 6.0f;
        t->data = d;
    }
    qsort(tl->t, (size_t)tl->n, sizeof *tl->t, by_name);
    snprintf(path, sizeof path, "%s/model.safetensors", dir);
    if (oom) fprintf(stderr, "random model: out of memory\n");
    else if ((rc = emb_safetensors_write(path, tl->t, tl->n, 0, err)) != 0)
        fprintf(stderr, "random model: %s\n", err);
    for (int i = 0; i < tl->n; i++) free((void *)tl->t[i].data);
    return oom ? -1 : rc;
}

int bench_random_model_write_arch(const char *dir, bench_arch arch, int H, int L, int NH, int FF,
                                  int with_tokenizer) {
    return bench_random_model_write_flags(dir, arch, H, L, NH, FF, with_tokenizer, 0);
}

int bench_random_model_write_flags(const char *dir, bench_arch arch, int H, int L, int NH, int FF,
                                   int with_tokenizer, unsigned flags) {
    rs = 0x9E3779B97F4A7C15ull;
    mkdir(dir, 0755);
    if (with_tokenizer && arch != BENCH_ARCH_BERT) {
        fprintf(stderr, "random model: tokenizer files are only written for BERT\n");
        return -1;
    }
    if (write_config(dir, arch, H, L, NH, FF) || (with_tokenizer && write_tokenizer(dir, H))) return -1;
    tensor_list tl = {NULL, NULL, 0, 5 + 16 * L + 1};
    tl.t = calloc((size_t)tl.cap, sizeof *tl.t);
    tl.names = calloc((size_t)tl.cap, sizeof *tl.names);
    int rc = -1;
    if (tl.t && tl.names) {
        if (arch == BENCH_ARCH_BERT) bert_tensors(&tl, H, L, FF, 30522, 512);
        else if (arch == BENCH_ARCH_NOMIC) nomic_tensors(&tl, H, L, FF, 30528);
        else if (arch == BENCH_ARCH_MPNET) mpnet_tensors(&tl, H, L, NH, FF, 30527);
        else if (arch == BENCH_ARCH_QWEN3)
            decoder_tensors(&tl, 0, H, L, NH, BENCH_QWEN3_KV_HEADS, BENCH_QWEN3_HEAD_DIM, FF, BENCH_QWEN3_VOCAB);
        else if (arch == BENCH_ARCH_GEMMA3)
            decoder_tensors(&tl, 1, H, L, NH, BENCH_GEMMA3_KV_HEADS, BENCH_GEMMA3_HEAD_DIM, FF,
                            BENCH_GEMMA3_VOCAB);
        else modernbert_tensors(&tl, H, L, FF, 50368);
        rc = fill_and_write(dir, &tl, flags, arch == BENCH_ARCH_GEMMA3);
    } else {
        fprintf(stderr, "random model: out of memory\n");
    }
    free(tl.t);
    free(tl.names);
    return rc;
}

int bench_random_model_write(const char *dir, int H, int L, int NH, int FF, int with_tokenizer) {
    return bench_random_model_write_arch(dir, BENCH_ARCH_BERT, H, L, NH, FF, with_tokenizer);
}
