/* Architectures beyond BERT (parity with the golden references is in test_encoder.c and
 * test_mpnet.c): config.json of architectures not built (DeBERTa, T5) and of settings not built refused
 * with messages naming them; ALiBi slopes and rotary tables against independent formulas;
 * RoBERTa's position ids around a padding token; masked-LM saves with their prefixes and head
 * tensors; sliding-window padding far past a text. Run from the repo root. */
#include "check.h"
#include "nn/encoder.h"
#include "nn/encoder_config.h"
#include "base/emb_json.h"
#include "base/file.h"
#include "nn/relpos.h"
#include "nn/safetensors.h"
#include <cjson/cJSON.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

/* The larger error, a NaN e ignored as fmax ignores it. Loops of fmax reductions stop GCC 12's
 * aarch64 vectorizer (internal compiler error in vect_transform_reduction; make check-arm64). */
static double worse(double worst, double e) { return e > worst ? e : worst; }

static char tmpdir[256];

static void write_text(const char *path, const char *text) {
    FILE *f = fopen(path, "wb");
    if (!f) {
        perror(path);
        return;
    }
    fputs(text, f);
    fclose(f);
}

/* A folder holding only config.json: the encoder must refuse it naming what it is. */
static void refused_folder(const char *name, const char *config, const char *want1, const char *want2) {
    char dir[512], path[600], err[EMB_ERR_LEN];
    snprintf(dir, sizeof dir, "%s/%s", tmpdir, name);
    mkdir(dir, 0755);
    snprintf(path, sizeof path, "%s/config.json", dir);
    write_text(path, config);
    emb_encoder *e = NULL;
    int rc = emb_encoder_load(dir, &e, err);
    CHECK(rc != 0 && e == NULL && strncmp(err, "config.json: ", 13) == 0 && strstr(err, want1) &&
              strstr(err, want2),
          "%s refused naming '%s' and '%s': %s", name, want1, want2, rc ? err : "(loaded)");
    unlink(path);
    rmdir(dir);
}

static void refusals(void) {
    /* item 5 of issue 12, with configs as the hub's checkpoints have them (abridged) */
    refused_folder(
        "deberta-v3",
        "{\"model_type\":\"deberta-v2\",\"architectures\":[\"DebertaV2ForMaskedLM\"],"
        "\"hidden_size\":768,\"num_hidden_layers\":12,\"num_attention_heads\":12,\"intermediate_size\":3072,"
        "\"max_position_embeddings\":512,\"vocab_size\":128100,\"relative_attention\":true,"
        "\"position_buckets\":256,\"pos_att_type\":[\"p2c\",\"c2p\"],\"position_biased_input\":false}",
        "deberta-v2", "DeBERTa");
    refused_folder("deberta",
                   "{\"model_type\":\"deberta\",\"hidden_size\":768,\"num_hidden_layers\":12,"
                   "\"num_attention_heads\":12,\"intermediate_size\":3072,\"max_position_embeddings\":512,"
                   "\"vocab_size\":50265,\"relative_attention\":true}",
                   "'deberta'", "DeBERTa");
    refused_folder("t5",
                   "{\"model_type\":\"t5\",\"architectures\":[\"T5EncoderModel\"],\"d_model\":512,"
                   "\"num_layers\":6,\"num_heads\":8,\"d_ff\":2048,\"vocab_size\":32128,"
                   "\"relative_attention_num_buckets\":32}",
                   "'t5'", "T5");
    refused_folder("other", "{\"model_type\":\"electra\"}", "electra", "supported: bert, distilbert, roberta");
    refused_folder("other-listed", "{\"model_type\":\"electra\"}", "electra",
                   "mpnet, qwen3, gemma3_text, JinaBERT v2)");
}

/* Settings within a supported architecture that are not built: refused, never run wrongly. */
static void refused_settings(void) {
    static const char *NOMIC = "{\"model_type\":\"nomic_bert\",\"n_embd\":32,\"n_layer\":2,\"n_head\":4,\"n_"
                               "inner\":64,\"n_positions\":128,"
                               "\"vocab_size\":100%s}"; /* without rotary_emb_fraction: absolute positions */
    static const char *MODERN =
        "{\"model_type\":\"modernbert\",\"hidden_size\":32,\"num_hidden_layers\":2,\"num_attention_heads\":4,"
        "\"intermediate_size\":48,\"max_position_embeddings\":128,\"vocab_size\":100%s}";
    static const char *BERTLIKE =
        "{\"model_type\":\"%s\",\"hidden_size\":32,\"num_hidden_layers\":2,\"num_attention_heads\":4,"
        "\"intermediate_size\":64,\"max_position_embeddings\":16,\"vocab_size\":100%s}";
    struct {
        const char *fmt, *type, *extra, *want;
    } cases[] = {
        {NOMIC, NULL, ",\"rotary_emb_fraction\":1.0,\"rotary_emb_interleaved\":true", "rotary_emb_interleaved"},
        {NOMIC, NULL, ",\"rotary_emb_fraction\":1.0,\"prenorm\":true", "prenorm"},
        {NOMIC, NULL, ",\"rotary_emb_fraction\":1.0,\"rotary_scaling_factor\":2.0", "rotary_scaling_factor"},
        {NOMIC, NULL, ",\"rotary_emb_fraction\":1.0,\"moe_every_n_layers\":2", "mixture of experts"},
        {NOMIC, NULL, ",\"rotary_emb_fraction\":1.0,\"activation_function\":\"gelu\"",
         "activation_function 'gelu'"},
        {NOMIC, NULL, "", "absolute positions"},
        {NOMIC, NULL, ",\"rotary_emb_fraction\":0.1", "rotary dimensions"}, /* 0 of a head of 8 */
        {MODERN, NULL, ",\"layer_types\":[\"full_attention\"]", "layer_types has 1 entries for 2 layers"},
        {MODERN, NULL, ",\"layer_types\":[\"full_attention\",\"chunked\"]", "layer_types[1]"},
        {MODERN, NULL, ",\"layer_types\":\"full_attention\"", "'layer_types' is not a list"},
        {MODERN, NULL, ",\"rope_parameters\":{\"full_attention\":{\"rope_type\":\"yarn\",\"factor\":4}}",
         "rope_parameters.full_attention: rope_type 'yarn' is not supported"},
        {MODERN, NULL, ",\"rope_parameters\":{\"rope_type\":\"linear\",\"rope_theta\":1e4}",
         "rope_parameters: rope_type 'linear'"},
        {MODERN, NULL, ",\"rope_parameters\":{\"sliding_attention\":{\"rope_theta\":\"1e4\"}}",
         "sliding_attention: key 'rope_theta'"},
        {MODERN, NULL, ",\"rope_parameters\":[1]", "'rope_parameters' is not an object"},
        {MODERN, NULL, ",\"hidden_activation\":\"silu\"", "activation 'silu'"},
        {MODERN, NULL, ",\"local_attention\":127.5", "must be integers"},
        {BERTLIKE, "bert", ",\"position_embedding_type\":\"alibi\",\"feed_forward_type\":\"glu\"",
         "feed_forward_type 'glu'"},
        {BERTLIKE, "bert", ",\"position_embedding_type\":\"relative_key\"", "relative_key"},
        {BERTLIKE, "xlm-roberta", ",\"position_embedding_type\":\"alibi\"", "'alibi' is not supported"},
        {BERTLIKE, "roberta", ",\"pad_token_id\":15", "no position rows"},
    };
    for (size_t i = 0; i < sizeof cases / sizeof *cases; i++) {
        char json[1024], err[EMB_ERR_LEN];
        if (cases[i].type) snprintf(json, sizeof json, cases[i].fmt, cases[i].type, cases[i].extra);
        else snprintf(json, sizeof json, cases[i].fmt, cases[i].extra);
        emb_encoder_config c;
        int rc = emb_encoder_config_parse(json, strlen(json), "config.json", &c, err);
        CHECK(rc != 0 && strncmp(err, "config.json: ", 13) == 0 && strstr(err, cases[i].want),
              "setting %zu refused naming '%s': %s", i, cases[i].want, rc ? err : "(accepted)");
    }
    /* and what the supported ones read */
    char json[1024], err[EMB_ERR_LEN];
    emb_encoder_config c;
    snprintf(json, sizeof json, NOMIC,
             ",\"rotary_emb_fraction\":0.5,\"rotary_emb_base\":1000,\"qkv_proj_bias\":false");
    int rc = emb_encoder_config_parse(json, strlen(json), "config.json", &c, err);
    CHECK(rc == 0 && c.arch == EMB_ARCH_NOMIC_BERT && c.pos_kind == EMB_POS_ROTARY && c.rope_dims == 4 &&
              c.rope_theta == 1000 && c.gated && c.act == EMB_ACT_SILU && !c.qkv_bias && !c.out_bias &&
              c.ffn_in_bias && c.ln_eps == 1e-5f && c.dims.type_vocab == 2,
          "nomic_bert config read: %s", rc ? err : "");
    snprintf(json, sizeof json, MODERN, "");
    rc = emb_encoder_config_parse(json, strlen(json), "config.json", &c, err);
    CHECK(rc == 0 && c.pre_norm && c.gated && c.rope_theta == 160000 && c.rope_theta_local == 160000 &&
              c.half_window == 64 && c.global_every == 3 && !c.norm_bias && !c.qkv_bias &&
              c.dims.type_vocab == 0 && !emb_encoder_config_layer_is_local(&c, 0) &&
              emb_encoder_config_layer_is_local(&c, 1) && !emb_encoder_config_layer_is_local(&c, 3),
          "modernbert defaults (transformers' ModernBertConfig): %s", rc ? err : "");
    snprintf(json, sizeof json, BERTLIKE, "roberta", "");
    rc = emb_encoder_config_parse(json, strlen(json), "config.json", &c, err);
    CHECK(rc == 0 && c.arch == EMB_ARCH_ROBERTA && strcmp(c.arch_name, "roberta") == 0 && c.pad_token_id == 1 &&
              c.pos_offset == 2,
          "roberta without pad_token_id: padding_idx 1 (RobertaConfig's default): %s", rc ? err : "");
}

/* ALiBi slopes: BLOOM's and JinaBERT's values, written out; rotary tables and rotations
 * against the formulas in double. */
static void relpos(void) {
    float s[12];
    emb_relpos_alibi_slopes(4, s);
    CHECK(s[0] == 0.25f && s[1] == 0.0625f && s[2] == 0.015625f && s[3] == 0.00390625f, "ALiBi slopes of 4 heads");
    emb_relpos_alibi_slopes(12, s); /* 8 heads' 2^-1..2^-8, then 16 heads' odd powers of 2^-0.5 */
    double want12[12] = {0.5,
                         0.25,
                         0.125,
                         0.0625,
                         0.03125,
                         0.015625,
                         0.0078125,
                         0.00390625,
                         0.70710678118654752,
                         0.35355339059327376,
                         0.17677669529663688,
                         0.08838834764831844};
    double worst = 0;
    for (int i = 0; i < 12; i++) worst = worse(worst, fabs(s[i] - want12[i]) / want12[i]);
    CHECK(worst < 1e-7, "ALiBi slopes of 12 heads: worst relative error %.3g", worst);

    enum { ROT = 8, NPOS = 700 };
    static float tab[NPOS * ROT];
    emb_relpos_rope_table(160000.0, ROT, NPOS, tab);
    worst = 0;
    for (int p = 0; p < NPOS; p += 97)
        for (int i = 0; i < ROT / 2; i++) {
            double a = p / pow(160000.0, 2.0 * i / ROT);
            worst = worse(worst, fabs(tab[p * ROT + i] - cos(a)));
            worst = worse(worst, fabs(tab[p * ROT + ROT / 2 + i] - sin(a)));
        }
    CHECK(worst < 1e-7, "rotary table: cos and sin of p * 160000^(-2i/8), worst error %.3g", worst);
    /* a rotation keeps the norm; the dot product of rotated q and k depends on m - n only */
    float q[ROT] = {0.3f, -1.2f, 0.5f, 2.0f, -0.7f, 0.1f, 1.5f, -0.4f},
          k[ROT] = {1.1f, 0.2f, -0.9f, 0.6f, 0.3f, -1.4f, 0.8f, 0.05f};
    double dots[3];
    int ms[3][2] = {{5, 2}, {105, 102}, {650, 647}};
    for (int t = 0; t < 3; t++) {
        float a[ROT], b[ROT];
        memcpy(a, q, sizeof a);
        memcpy(b, k, sizeof b);
        emb_relpos_rope_rotate(a, tab + ms[t][0] * ROT, ROT);
        emb_relpos_rope_rotate(b, tab + ms[t][1] * ROT, ROT);
        double d = 0, na = 0, nq = 0;
        for (int i = 0; i < ROT; i++)
            d += (double)a[i] * b[i], na += (double)a[i] * a[i], nq += (double)q[i] * q[i];
        dots[t] = d;
        CHECK(fabs(na - nq) < 1e-5, "rotation keeps the norm (%g vs %g)", na, nq);
    }
    CHECK(fabs(dots[0] - dots[1]) < 1e-5 && fabs(dots[0] - dots[2]) < 1e-5,
          "q.k after rotation depends on m - n only: %.7f %.7f %.7f", dots[0], dots[1], dots[2]);
    /* the pair of dimension 0 is (0, ROT/2): rotating e_0 by angle a gives cos a e_0 + sin a e_4 */
    float e0[ROT] = {1, 0, 0, 0, 0, 0, 0, 0};
    emb_relpos_rope_rotate(e0, tab + 3 * ROT, ROT);
    CHECK(fabs(e0[0] - cos(3.0)) < 1e-7 && fabs(e0[4] - sin(3.0)) < 1e-7 && e0[1] == 0 && e0[2] == 0 && e0[3] == 0,
          "rotate-half pairs i with i + d/2: (%g, %g)", e0[0], e0[4]);
}

static cJSON *load_json(const char *path) {
    cJSON *j = NULL;
    char err[EMB_ERR_LEN];
    if (emb_json_read_file(path, 64u << 20, &j, err)) fprintf(stderr, "%s\n", err);
    return j;
}

/* The ALiBi slopes the reference was computed with are ours. */
static void reference_slopes(void) {
    cJSON *ref = load_json(FIXTURES "/models2/refs/jina-bert-v2-tiny.json");
    const cJSON *sl = cJSON_GetObjectItem(cJSON_GetObjectItem(ref, "arch_params"), "alibi_slopes");
    float s[4];
    emb_relpos_alibi_slopes(4, s);
    int ok = cJSON_GetArraySize(sl) == 4, i = 0;
    for (const cJSON *v = sl ? sl->child : NULL; v && ok; v = v->next, i++) ok = v->valuedouble == s[i];
    CHECK(ok, "jina-bert-v2-tiny's arch_params.alibi_slopes are emb_relpos_alibi_slopes(4)");
    cJSON_Delete(ref);
}

/* RoBERTa's position ids skip a padding token inside the text (transformers counts non-padding
 * ids): ids 0 5 1 6 2 get rows 2 3 1 4 5. The embedding output, recomputed here in double from
 * the tables, must use those rows. */
static void roberta_pad_inside(void) {
    char err[EMB_ERR_LEN];
    emb_encoder *e;
    if (emb_encoder_load(FIXTURES "/models2/xlmr-tiny", &e, err)) {
        CHECK(0, "load: %s", err);
        return;
    }
    emb_safetensors *sf;
    if (emb_safetensors_open(FIXTURES "/models2/xlmr-tiny/model.safetensors", 1, &sf, err)) {
        CHECK(0, "%s", err);
        return;
    }
    const float *pos =
        (const float *)(const void *)emb_safetensors_find(sf, "roberta.embeddings.position_embeddings.weight")
            ->data;
    const float *typ =
        (const float *)(const void *)emb_safetensors_find(sf, "roberta.embeddings.token_type_embeddings.weight")
            ->data;
    const float *g =
        (const float *)(const void *)emb_safetensors_find(sf, "roberta.embeddings.LayerNorm.weight")->data;
    const float *bb =
        (const float *)(const void *)emb_safetensors_find(sf, "roberta.embeddings.LayerNorm.bias")->data;
    enum { T = 5, H = 32 };
    int32_t ids[T] = {0, 5, 1, 6, 2}, rows[T] = {2, 3, 1, 4, 5}, len = T;
    float out[T * H];
    emb_workspace *ws = emb_workspace_new();
    int rc = emb_encoder_forward(e, ws, 1, T, ids, NULL, &len, 0, out, err);
    double worst = 0;
    for (int t = 0; t < T && rc == 0; t++) {
        float wbuf[H];
        const float *w = emb_encoder_word_row(e, ids[t], wbuf);
        double x[H], m = 0, v = 0;
        for (int i = 0; i < H; i++) x[i] = (double)w[i] + typ[i] + pos[(size_t)rows[t] * H + i], m += x[i] / H;
        for (int i = 0; i < H; i++) v += (x[i] - m) * (x[i] - m) / H;
        for (int i = 0; i < H; i++)
            worst = worse(worst, fabs((x[i] - m) / sqrt(v + 1e-5) * g[i] + bb[i] - out[t * H + i]));
    }
    CHECK(rc == 0 && worst < 1e-5, "xlmr-tiny: position rows 2 3 1 4 5 around a padding id: max error %.3g (%s)",
          worst, rc ? err : "");
    CHECK(emb_encoder_max_tokens(e) == 512 && emb_encoder_position_row(e, 511) != NULL &&
              emb_encoder_position_row(e, 512) == NULL,
          "xlmr-tiny: 514 position rows hold 512 tokens");
    emb_workspace_free(ws);
    emb_safetensors_close(sf);
    emb_encoder_free(e);
}

/* A copy of a golden model's weights with every name prefixed, plus task-head tensors. */
static int write_prefixed(const char *src, const char *dst, const char *prefix, const char *const *heads,
                          int nheads) {
    char path[600], err[EMB_ERR_LEN];
    snprintf(path, sizeof path, "%s/model.safetensors", src);
    emb_safetensors *sf;
    if (emb_safetensors_open(path, 1, &sf, err)) {
        fprintf(stderr, "%s\n", err);
        return -1;
    }
    int n = sf->h.n, m = 0;
    emb_safetensors_write_tensor *wt = calloc((size_t)n + (size_t)nheads, sizeof *wt);
    char(*names)[160] = calloc((size_t)n, sizeof *names);
    static const float head_values[4] = {1, 2, 3, 4};
    for (int i = 0; i < n; i++, m++) {
        const emb_safetensors_tensor *t = &sf->h.tensors[i];
        snprintf(names[i], sizeof names[i], "%s%s", prefix, t->name);
        wt[m].name = names[i];
        wt[m].dtype = t->dtype;
        wt[m].ndim = t->ndim;
        memcpy(wt[m].shape, t->shape, sizeof t->shape);
        wt[m].data = t->data;
    }
    for (int i = 0; i < nheads; i++, m++) {
        wt[m].name = heads[i];
        wt[m].dtype = EMB_DT_F32;
        wt[m].ndim = 1;
        wt[m].shape[0] = 4;
        wt[m].data = head_values;
    }
    mkdir(dst, 0755);
    snprintf(path, sizeof path, "%s/model.safetensors", dst);
    int rc = emb_safetensors_write(path, wt, m, 0, err);
    char cfg_src[600], cfg_dst[600], *txt;
    size_t len;
    snprintf(cfg_src, sizeof cfg_src, "%s/config.json", src);
    snprintf(cfg_dst, sizeof cfg_dst, "%s/config.json", dst);
    if (rc == 0 && emb_read_file(cfg_src, 1 << 20, &txt, &len, err) == 0) {
        write_text(cfg_dst, txt);
        free(txt);
    }
    free(wt);
    free(names);
    emb_safetensors_close(sf);
    return rc;
}

/* A masked-LM save (prefix and head tensors) gives the reference's last_hidden_state. */
static void prefixed_save(const char *set, const char *model, const char *refname, const char *prefix,
                          const char *const *heads, int nheads) {
    char src[400], dst[300], refp[300], err[EMB_ERR_LEN];
    snprintf(src, sizeof src, FIXTURES "/%s/%s", set, model);
    snprintf(dst, sizeof dst, "%s/%s-prefixed", tmpdir, model);
    snprintf(refp, sizeof refp, FIXTURES "/%s/refs/%s.json", set, refname);
    if (write_prefixed(src, dst, prefix, heads, nheads)) {
        CHECK(0, "%s: cannot write the prefixed copy", model);
        return;
    }
    emb_encoder *e;
    int rc = emb_encoder_load(dst, &e, err);
    CHECK(rc == 0 && strcmp(emb_encoder_get_info(e)->tensor_prefix, prefix) == 0, "%s saved under '%s' loads: %s",
          model, prefix, rc ? err : "");
    if (rc) return;
    cJSON *ref = load_json(refp);
    const cJSON *cs = cJSON_GetObjectItem(cJSON_GetObjectItem(ref, "cases"), "left_phone");
    int T = cJSON_GetArraySize(cJSON_GetObjectItem(cs, "input_ids")), H = emb_encoder_get_config(e)->dims.hidden;
    int32_t ids[64], len = T;
    int i = 0;
    for (const cJSON *v = cJSON_GetObjectItem(cs, "input_ids")->child; v && i < 64; v = v->next)
        ids[i++] = v->valueint;
    float *hs = malloc(sizeof(float) * (size_t)T * H);
    emb_workspace *ws = emb_workspace_new();
    rc = emb_encoder_forward(e, ws, 1, T, ids, NULL, &len, emb_encoder_get_config(e)->dims.layers, hs, err);
    double worst = rc ? INFINITY : 0;
    const cJSON *r = cJSON_GetObjectItem(cs, "last_hidden_state")->child;
    for (int t = 0; t < T && r && rc == 0; t++, r = r->next) {
        int d = 0;
        for (const cJSON *v = r->child; v; v = v->next, d++)
            worst = worse(worst, fabs(v->valuedouble - hs[t * H + d]));
    }
    CHECK(worst <= 1e-5, "%s under '%s': last_hidden_state max error %.3g", model, prefix, worst);
    free(hs);
    emb_workspace_free(ws);
    cJSON_Delete(ref);
    emb_encoder_free(e);
    snprintf(src, sizeof src, "%s/model.safetensors", dst);
    unlink(src);
    snprintf(src, sizeof src, "%s/config.json", dst);
    unlink(src);
    rmdir(dst);
}

/* modernbert-tiny's config.json in transformers 5's spelling (rope_parameters per layer type,
 * layer_types) written into dir from the fixture's own values, with every layer's kind from
 * pattern when given ('f' full, 's' sliding), else from global_attn_every_n_layers. */
static int write_v5_config(const char *dir, const char *pattern) {
    cJSON *c = load_json(FIXTURES "/models2/modernbert-tiny/config.json");
    if (!c) return -1;
    double g = cJSON_GetObjectItem(c, "global_rope_theta")->valuedouble,
           l = cJSON_GetObjectItem(c, "local_rope_theta")->valuedouble;
    int every = cJSON_GetObjectItem(c, "global_attn_every_n_layers")->valueint,
        n = cJSON_GetObjectItem(c, "num_hidden_layers")->valueint;
    cJSON_DeleteItemFromObject(c, "global_rope_theta");
    cJSON_DeleteItemFromObject(c, "local_rope_theta");
    cJSON_DeleteItemFromObject(c, "global_attn_every_n_layers");
    cJSON *rp = cJSON_AddObjectToObject(c, "rope_parameters");
    cJSON *full = cJSON_AddObjectToObject(rp, "full_attention"),
          *sl = cJSON_AddObjectToObject(rp, "sliding_attention");
    cJSON_AddNumberToObject(full, "rope_theta", g);
    cJSON_AddStringToObject(full, "rope_type", "default");
    cJSON_AddNumberToObject(sl, "rope_theta", l);
    cJSON_AddStringToObject(sl, "rope_type", "default");
    cJSON *lt = cJSON_AddArrayToObject(c, "layer_types");
    for (int i = 0; i < n; i++) {
        int global = pattern ? pattern[i] == 'f' : i % every == 0;
        cJSON_AddItemToArray(lt, cJSON_CreateString(global ? "full_attention" : "sliding_attention"));
    }
    char path[600], *text = cJSON_Print(c);
    snprintf(path, sizeof path, "%s/config.json", dir);
    write_text(path, text);
    free(text);
    cJSON_Delete(c);
    return 0;
}

/* Every reference case's last_hidden_state from encoder e: the worst error. */
static double modernbert_cases(const emb_encoder *e, const cJSON *ref) {
    emb_workspace *ws = emb_workspace_new();
    double worst = 0;
    int H = emb_encoder_get_config(e)->dims.hidden, L = emb_encoder_get_config(e)->dims.layers;
    for (const cJSON *cs = cJSON_GetObjectItem(ref, "cases")->child; cs; cs = cs->next) {
        int T = cJSON_GetObjectItem(cs, "seq_len")->valueint, i = 0, t = 0;
        int32_t *ids = malloc(sizeof(int32_t) * (size_t)T), len = T;
        float *hs = malloc(sizeof(float) * (size_t)T * H);
        for (const cJSON *v = cJSON_GetObjectItem(cs, "input_ids")->child; v && i < T; v = v->next)
            ids[i++] = v->valueint;
        char err[EMB_ERR_LEN];
        if (emb_encoder_forward(e, ws, 1, T, ids, NULL, &len, L, hs, err)) worst = INFINITY;
        for (const cJSON *r = cJSON_GetObjectItem(cs, "last_hidden_state")->child; r && t < T; r = r->next, t++) {
            int d = 0;
            for (const cJSON *v = r->child; v && d < H; v = v->next, d++)
                worst = worse(worst, fabs(v->valuedouble - hs[(size_t)t * H + d]));
        }
        free(ids);
        free(hs);
    }
    emb_workspace_free(ws);
    return worst;
}

/* transformers 5 writes ModernBERT's config with rope_parameters and layer_types: the same model
 * (the reference's hidden states, the older spelling's fingerprint); layer_types that follow no
 * period are read layer by layer and fingerprinted apart. */
static void modernbert_v5_spelling(void) {
    char dir[300], link[400], err[EMB_ERR_LEN];
    snprintf(dir, sizeof dir, "%s/modernbert-v5", tmpdir);
    snprintf(link, sizeof link, "%s/model.safetensors", dir);
    char *weights = realpath(FIXTURES "/models2/modernbert-tiny/model.safetensors", NULL);
    mkdir(dir, 0755);
    emb_encoder *old = NULL, *v5 = NULL, *odd = NULL;
    int rc = !weights || symlink(weights, link) || write_v5_config(dir, NULL) ||
             emb_encoder_load(FIXTURES "/models2/modernbert-tiny", &old, err) || emb_encoder_load(dir, &v5, err);
    CHECK(rc == 0, "modernbert in transformers 5's spelling loads: %s", rc ? err : "");
    if (rc == 0) {
        const emb_encoder_config *a = emb_encoder_get_config(old), *b = emb_encoder_get_config(v5);
        int same = a->rope_theta == b->rope_theta && a->rope_theta_local == b->rope_theta_local;
        for (int l = 0; l < a->dims.layers; l++)
            same &= emb_encoder_config_layer_is_local(a, l) == emb_encoder_config_layer_is_local(b, l);
        CHECK(same && emb_encoder_fingerprint(old) == emb_encoder_fingerprint(v5),
              "modernbert v5 spelling: the same bases, layer kinds and fingerprint as the older one");
        cJSON *ref = load_json(FIXTURES "/models2/refs/modernbert-tiny.json");
        double worst = ref ? modernbert_cases(v5, ref) : INFINITY;
        CHECK(worst <= 1e-5, "modernbert v5 spelling: every case's last_hidden_state within 1e-5 (%.3g)", worst);
        cJSON_Delete(ref);
    }
    rc = rc || write_v5_config(dir, "sffs") || emb_encoder_load(dir, &odd, err);
    CHECK(rc == 0 && emb_encoder_get_config(odd)->global_every == -1 &&
              emb_encoder_config_layer_is_local(emb_encoder_get_config(odd), 0) &&
              !emb_encoder_config_layer_is_local(emb_encoder_get_config(odd), 2) &&
              emb_encoder_config_layer_is_local(emb_encoder_get_config(odd), 3) &&
              emb_encoder_fingerprint(odd) != emb_encoder_fingerprint(old),
          "modernbert layer_types sliding, full, full, sliding: read layer by layer: %s", rc ? err : "");
    const char *flat = "{\"model_type\":\"modernbert\",\"hidden_size\":32,\"num_hidden_layers\":2,"
                       "\"num_attention_heads\":4,\"intermediate_size\":48,\"max_position_embeddings\":128,"
                       "\"vocab_size\":100,\"rope_parameters\":{\"rope_theta\":5e4,\"rope_type\":\"default\"}}";
    emb_encoder_config c;
    rc = emb_encoder_config_parse(flat, strlen(flat), "config.json", &c, err);
    CHECK(rc == 0 && c.rope_theta == 5e4 && c.rope_theta_local == 5e4 && c.global_every == 3,
          "modernbert flat rope_parameters: one base for both layer kinds: %s", rc ? err : "");
    emb_encoder_free(old);
    emb_encoder_free(v5);
    emb_encoder_free(odd);
    unlink(link);
    snprintf(link, sizeof link, "%s/config.json", dir);
    unlink(link);
    rmdir(dir);
    free(weights);
}

/* In sliding-window layers, padding further than the window past a text's end has no real key
 * in its window; the text's own rows must not notice, and nothing may become NaN. */
static void window_past_padding(void) {
    char err[EMB_ERR_LEN];
    emb_encoder *e;
    if (emb_encoder_load(FIXTURES "/models2/modernbert-tiny", &e, err)) {
        CHECK(0, "load: %s", err);
        return;
    }
    enum { B = 2, T = 200, H = 32 };
    int32_t *ids = malloc(sizeof(int32_t) * B * T), lens[B] = {T, 3};
    for (int i = 0; i < B * T; i++) ids[i] = 3 + (i * 7919) % 50000;
    for (int t = 3; t < T; t++) ids[T + t] = 1; /* <pad> */
    float *out = malloc(sizeof(float) * B * T * H), one[3 * H];
    emb_workspace *ws = emb_workspace_new();
    int rc = emb_encoder_forward(e, ws, B, T, ids, NULL, lens, 4, out, err);
    int32_t l1 = 3;
    rc |= emb_encoder_forward(e, ws, 1, 3, ids + T, NULL, &l1, 4, one, err);
    double worst = 0;
    int finite = 1;
    for (int i = 0; i < 3 * H; i++) worst = worse(worst, fabs(one[i] - out[T * H + i]));
    for (int i = 0; i < B * T * H; i++) finite &= isfinite(out[i]) != 0;
    CHECK(rc == 0 && worst <= 1e-5 && finite,
          "modernbert: 3 tokens padded to 200: rows as alone (%.3g), all finite (%d): %s", worst, finite,
          rc ? err : "");
    emb_workspace_free(ws);
    free(ids);
    free(out);
    emb_encoder_free(e);
}

int main(void) {
    snprintf(tmpdir, sizeof tmpdir, "/tmp/test_architectures_XXXXXX");
    if (!mkdtemp(tmpdir)) {
        perror("mkdtemp");
        return 1;
    }
    refusals();
    refused_settings();
    relpos();
    reference_slopes();
    roberta_pad_inside();
    static const char *const MLM_HEADS[] = {"head.dense.weight", "head.norm.weight", "decoder.bias"};
    prefixed_save("models2", "modernbert-tiny", "modernbert-tiny", "model.", MLM_HEADS, 3);
    static const char *const BERT_HEADS[] = {"cls.predictions.bias", "cls.predictions.transform.dense.bias"};
    prefixed_save("models2", "jina-bert-v2-tiny", "jina-bert-v2-tiny", "bert.", BERT_HEADS, 2);
    static const char *const ROBERTA_HEADS[] = {"lm_head.bias", "lm_head.dense.bias"};
    prefixed_save("models2", "xlmr-tiny-st", "xlmr-tiny-st", "roberta.", ROBERTA_HEADS, 2);
    static const char *const MPNET_HEADS[] = {"lm_head.bias", "lm_head.dense.weight"}; /* MPNetForMaskedLM's */
    prefixed_save("models3", "mpnet-tiny-st", "mpnet-tiny", "mpnet.", MPNET_HEADS, 2);
    window_past_padding();
    modernbert_v5_spelling();
    rmdir(tmpdir);
    return check_report();
}
