/* See random_model.h. */
#include "random_model.h"
#include "safetensors.h"
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

static uint64_t rs;
static float urand(float a) {
    rs ^= rs << 13;
    rs ^= rs >> 7;
    rs ^= rs << 17;
    return ((float)(uint32_t)(rs >> 32) / 4294967296.0f * 2.0f - 1.0f) * a;
}

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
        fprintf(stderr, "random model: cannot copy the tokenizer files of %s into %s (run from the repository root)\n", src, dir);
        return -1;
    }
    return 0;
}

int bench_random_model_write(const char *dir, int H, int L, int NH, int FF, int with_tokenizer) {
    const int V = 30522, P = 512;
    char cfg[1024], path[1024], err[EMB_ERR_LEN];
    rs = 0x9E3779B97F4A7C15ull;
    mkdir(dir, 0755);
    snprintf(cfg, sizeof cfg,
             "{\"architectures\":[\"BertModel\"],\"model_type\":\"bert\",\"hidden_size\":%d,"
             "\"num_hidden_layers\":%d,\"num_attention_heads\":%d,\"intermediate_size\":%d,"
             "\"max_position_embeddings\":%d,\"type_vocab_size\":2,\"vocab_size\":%d,"
             "\"layer_norm_eps\":1e-12,\"hidden_act\":\"gelu\",\"pad_token_id\":0}", H, L, NH, FF, P, V);
    if (write_text(dir, "config.json", cfg)) {
        fprintf(stderr, "random model: cannot write %s/config.json\n", dir);
        return -1;
    }
    if (with_tokenizer && write_tokenizer(dir, H)) return -1;
    int n = 5 + 16 * L, k = 0;
    emb_safetensors_write_tensor *t = calloc((size_t)n, sizeof *t);
    char(*names)[96] = calloc((size_t)n, 96);
    if (!t || !names) {
        free(t);
        free(names);
        return -1;
    }
#define T2(nm, a, b) do { snprintf(names[k], 96, "%s", nm); t[k].name = names[k]; t[k].dtype = EMB_DT_F32; \
        t[k].ndim = (b) ? 2 : 1; t[k].shape[0] = a; t[k].shape[1] = b; k++; } while (0)
    T2("embeddings.word_embeddings.weight", V, H);
    T2("embeddings.position_embeddings.weight", P, H);
    T2("embeddings.token_type_embeddings.weight", 2, H);
    T2("embeddings.LayerNorm.weight", H, 0);
    T2("embeddings.LayerNorm.bias", H, 0);
    for (int l = 0; l < L; l++) {
        char b[96];
#define TL(fmt, a, c) do { snprintf(b, sizeof b, fmt, l); T2(b, a, c); } while (0)
        TL("encoder.layer.%d.attention.self.query.weight", H, H); TL("encoder.layer.%d.attention.self.query.bias", H, 0);
        TL("encoder.layer.%d.attention.self.key.weight", H, H); TL("encoder.layer.%d.attention.self.key.bias", H, 0);
        TL("encoder.layer.%d.attention.self.value.weight", H, H); TL("encoder.layer.%d.attention.self.value.bias", H, 0);
        TL("encoder.layer.%d.attention.output.dense.weight", H, H); TL("encoder.layer.%d.attention.output.dense.bias", H, 0);
        TL("encoder.layer.%d.attention.output.LayerNorm.weight", H, 0); TL("encoder.layer.%d.attention.output.LayerNorm.bias", H, 0);
        TL("encoder.layer.%d.intermediate.dense.weight", FF, H); TL("encoder.layer.%d.intermediate.dense.bias", FF, 0);
        TL("encoder.layer.%d.output.dense.weight", H, FF); TL("encoder.layer.%d.output.dense.bias", H, 0);
        TL("encoder.layer.%d.output.LayerNorm.weight", H, 0); TL("encoder.layer.%d.output.LayerNorm.bias", H, 0);
    }
#undef TL
#undef T2
    int oom = 0, rc = 0;
    for (int i = 0; i < n && !oom; i++) {
        size_t cnt = (size_t)t[i].shape[0] * (t[i].ndim == 2 ? (size_t)t[i].shape[1] : 1);
        float *d = malloc(cnt * sizeof(float));
        if (!d) {
            oom = 1;
            break;
        }
        int lnw = strstr(t[i].name, "LayerNorm.weight") != NULL;
        float a = t[i].ndim == 2 ? (strstr(t[i].name, "embeddings") ? 0.05f : 1.7f / sqrtf((float)t[i].shape[1])) : 0.02f;
        for (size_t j = 0; j < cnt; j++) d[j] = lnw ? 1.0f + urand(0.05f) : urand(a);
        t[i].data = d;
    }
    snprintf(path, sizeof path, "%s/model.safetensors", dir);
    if (oom) fprintf(stderr, "random model: out of memory\n");
    else if ((rc = emb_safetensors_write(path, t, n, 0, err)) != 0) fprintf(stderr, "random model: %s\n", err);
    if (oom) rc = -1;
    for (int i = 0; i < n; i++) free((void *)t[i].data);
    free(t);
    free(names);
    return rc;
}
