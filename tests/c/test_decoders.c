/* The decoder embedders against Hugging Face's references (tests/fixtures/models3/refs/qwen3-tiny.json
 * and gemma3-tiny.json, schema golden-ref/3, made with transformers 5.17): every hidden state of
 * every case from the references' input_ids (no tokenizer), the long cases' last_hidden_state,
 * the padded batch's real rows; the Qwen3ForCausalLM save and transformers 4's configs giving the
 * same model; int8 and bf16 weights near float32; the masks as emb_encoder_attention_bias shows
 * them; bad settings refused by name. Run from the repo root. */
#include "check.h"
#include "ref_compare.h"
#include "nn/encoder.h"
#include "base/emb_json.h"
#include <cjson/cJSON.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#define M3 FIXTURES "/models3/"
#define TOL 1e-5

static char tmpdir[64];

/* The case's input_ids (malloc'ed), *T their count. */
static int32_t *case_ids(const cJSON *cs, int *T) {
    const cJSON *a = cJSON_GetObjectItem(cs, "input_ids");
    *T = cJSON_GetArraySize(a);
    int32_t *ids = malloc(sizeof(int32_t) * (size_t)(*T > 0 ? *T : 1));
    int i = 0;
    for (const cJSON *v = a ? a->child : NULL; v; v = v->next) ids[i++] = (int32_t)v->valueint;
    return ids;
}

/* One forward pass of a whole sequence up to layer n into a new buffer (NULL on error). */
static float *run(const emb_encoder *e, emb_workspace *ws, const int32_t *ids, int T, int n,
                  char err[EMB_ERR_LEN]) {
    float *out = malloc(sizeof(float) * (size_t)T * emb_encoder_get_config(e)->dims.hidden);
    int32_t len = T;
    if (out && emb_encoder_forward(e, ws, 1, T, ids, NULL, &len, n, out, err) == 0) return out;
    free(out);
    return NULL;
}

/* Every hidden state of one case (a long one: its last_hidden_state) within TOL. */
static double hidden_states(const emb_encoder *e, emb_workspace *ws, const char *name, const char *cid,
                            const cJSON *cs) {
    char err[EMB_ERR_LEN] = "";
    const cJSON *hs = cJSON_GetObjectItem(cs, "hidden_states");
    int T, H = emb_encoder_get_config(e)->dims.hidden, L = emb_encoder_get_config(e)->dims.layers;
    int32_t *ids = case_ids(cs, &T);
    double worst = 0;
    const cJSON *layer = cJSON_IsArray(hs) ? hs->child : NULL;
    CHECK(!layer || cJSON_GetArraySize(hs) == L + 1, "%s %s: %d hidden states", name, cid, cJSON_GetArraySize(hs));
    for (int l = 0; layer && l <= L; l++, layer = layer->next) {
        float *out = run(e, ws, ids, T, l, err);
        double d = out ? diff2(layer, out, T, H) : INFINITY;
        CHECK(d <= TOL, "%s %s: hidden_states[%d] max error %.3g %s", name, cid, l, d, err);
        worst = worse(worst, d);
        free(out);
    }
    float *out = run(e, ws, ids, T, L, err);
    double d = out ? diff2(cJSON_GetObjectItem(cs, "last_hidden_state"), out, T, H) : INFINITY;
    CHECK(d <= TOL, "%s %s: last_hidden_state (%d tokens) max error %.3g %s", name, cid, T, d, err);
    free(out);
    free(ids);
    return worse(worst, d);
}

/* batches.batch4, padded as the folder says (Qwen3: on the left): our batch pads on the right,
 * and each sequence's real rows must be the references' (transformers' float32 run). */
static double batch(const emb_encoder *e, emb_workspace *ws, const char *name, const cJSON *b) {
    char err[EMB_ERR_LEN] = "";
    const cJSON *ids_j = cJSON_GetObjectItem(b, "input_ids"), *mask = cJSON_GetObjectItem(b, "attention_mask");
    int B = cJSON_GetArraySize(ids_j), T = cJSON_GetArraySize(ids_j->child),
        H = emb_encoder_get_config(e)->dims.hidden;
    if (B > 8) return INFINITY;
    int32_t *ids = calloc((size_t)B * T, sizeof(int32_t)), lens[8] = {0}, first[8] = {0};
    float *out = malloc(sizeof(float) * (size_t)B * T * H);
    const cJSON *r = ids_j->child, *m = mask->child;
    for (int i = 0; i < B; i++, r = r->next, m = m->next) {
        int t = 0, k = 0;
        for (const cJSON *v = r->child, *mv = m->child; v; v = v->next, mv = mv->next, t++) {
            if (!mv->valueint) continue;
            if (!k) first[i] = t;
            ids[(size_t)i * T + k++] = (int32_t)v->valueint;
        }
        lens[i] = k;
    }
    int rc = emb_encoder_forward(e, ws, B, T, ids, NULL, lens, emb_encoder_get_config(e)->dims.layers, out, err);
    double worst = rc ? INFINITY : 0;
    r = cJSON_GetObjectItem(b, "last_hidden_state_float32")->child;
    for (int i = 0; rc == 0 && i < B; i++, r = r->next) {
        const cJSON *row = cJSON_GetArrayItem(r, first[i]); /* the real rows, from the first */
        double m2 = 0;
        int t = 0;
        for (; t < lens[i] && row; t++, row = row->next) {
            int j = 0;
            for (const cJSON *v = row->child; v; v = v->next, j++)
                m2 = worse(m2, fabs(v->valuedouble - out[((size_t)i * T + t) * H + j]));
        }
        worst = worse(worst, t == lens[i] ? m2 : INFINITY);
    }
    CHECK(worst <= TOL, "%s batch4 (%d x %d, padded %s): real rows' max error %.3g %s", name, B, T,
          cJSON_GetObjectItem(b, "padding_side")->valuestring, worst, err);
    free(ids);
    free(out);
    return worst;
}

/* int8 and bf16 weights (bf16 where the CPU has it): every token's cosine to float32 above 0.99. */
static void packed(const char *dir, const char *name, const int32_t *ids, int T, const float *f32) {
    char err[EMB_ERR_LEN];
    for (int k = 0; k < 2; k++) {
        emb_encoder *e;
        if (emb_encoder_load(dir, &e, err)) return;
        int H = emb_encoder_get_config(e)->dims.hidden, L = emb_encoder_get_config(e)->dims.layers;
        if (emb_encoder_set_weights(e, k ? EMB_WEIGHTS_BF16 : EMB_WEIGHTS_INT8, err)) {
            if (k) CHECK_SKIP("%s bf16 weights: %s", name, err);
            else CHECK(0, "%s int8 weights: %s", name, err);
            emb_encoder_free(e);
            continue;
        }
        emb_workspace *ws = emb_workspace_new();
        float *out = run(e, ws, ids, T, L, err);
        double low = out ? 1 : -1;
        for (int t = 0; out && t < T; t++) {
            double ab = 0, aa = 0, bb = 0;
            for (int d = 0; d < H; d++) {
                ab += (double)out[t * H + d] * f32[t * H + d];
                aa += (double)out[t * H + d] * out[t * H + d];
                bb += (double)f32[t * H + d] * f32[t * H + d];
            }
            low = fmin(low, ab / sqrt(aa * bb));
        }
        CHECK(low > 0.99, "%s %s weights: lowest token cosine to float32 %.5f %s", name, k ? "bf16" : "int8", low,
              out ? "" : err);
        free(out);
        emb_workspace_free(ws);
        emb_encoder_free(e);
    }
}

static int copy_file(const char *from, const char *to) {
    FILE *f = fopen(from, "rb"), *g = f ? fopen(to, "wb") : NULL;
    char buf[1 << 16];
    size_t n;
    int ok = g != NULL;
    while (ok && (n = fread(buf, 1, sizeof buf, f)) > 0) ok = fwrite(buf, 1, n, g) == n;
    if (f) fclose(f);
    if (g) ok = fclose(g) == 0 && ok;
    return ok ? 0 : -1;
}

/* A new folder in tmpdir with src's weights and src's file cfg as its config.json (removed by
 * remove_copy); NULL when it could not be made. */
static const char *make_copy(const char *src, const char *cfg, char *dir, size_t cap) {
    char a[512], b[512];
    snprintf(dir, cap, "%s/cXXXXXX", tmpdir);
    if (!mkdtemp(dir)) return NULL;
    snprintf(a, sizeof a, "%s/%s", src, cfg);
    snprintf(b, sizeof b, "%s/config.json", dir);
    if (copy_file(a, b)) return NULL;
    snprintf(a, sizeof a, "%s/model.safetensors", src);
    snprintf(b, sizeof b, "%s/model.safetensors", dir);
    return copy_file(a, b) ? NULL : dir;
}
static void remove_copy(const char *dir) {
    char p[512];
    snprintf(p, sizeof p, "%s/config.json", dir);
    unlink(p);
    snprintf(p, sizeof p, "%s/model.safetensors", dir);
    unlink(p);
    rmdir(dir);
}

/* The same weights under another folder's spelling (transformers 4's config, Qwen3ForCausalLM's
 * "model." names): the same fingerprint and the same last_hidden_state, bit for bit. */
static void same_model(const emb_encoder *e, emb_workspace *ws, const char *dir, const char *what,
                       const cJSON *cs) {
    char err[EMB_ERR_LEN] = "";
    emb_encoder *o;
    int T, L = emb_encoder_get_config(e)->dims.layers, H = emb_encoder_get_config(e)->dims.hidden;
    int32_t *ids = case_ids(cs, &T);
    float *a = run(e, ws, ids, T, L, err), *b = NULL;
    int rc = emb_encoder_load(dir, &o, err);
    if (rc == 0) b = run(o, ws, ids, T, L, err);
    CHECK(rc == 0 && a && b && emb_encoder_fingerprint(o) == emb_encoder_fingerprint(e) &&
              memcmp(a, b, sizeof(float) * (size_t)T * H) == 0,
          "%s: the same model (fingerprint, last_hidden_state) %s", what, err);
    if (rc == 0) emb_encoder_free(o);
    free(a);
    free(b);
    free(ids);
}

/* The references' cases, batch, spellings and packed weights of one model. */
static void model(const char *ref_file, const char *dir, const char *name, const char *arch) {
    char err[EMB_ERR_LEN];
    cJSON *ref = NULL;
    emb_encoder *e = NULL;
    if (emb_json_read_file(ref_file, 64u << 20, &ref, err) || emb_encoder_load(dir, &e, err)) {
        CHECK(0, "%s: load: %s", name, err);
        cJSON_Delete(ref);
        return;
    }
    CHECK(strcmp(emb_encoder_get_config(e)->arch_name, arch) == 0, "%s read as %s (%s)", name, arch,
          emb_encoder_get_config(e)->arch_name);
    emb_workspace *ws = emb_workspace_new();
    double worst = 0;
    int n = 0, longs = 0;
    const cJSON *first = NULL;
    for (const cJSON *cs = cJSON_GetObjectItem(ref, "cases")->child; cs; cs = cs->next, n++) {
        worst = worse(worst, hidden_states(e, ws, name, cs->string, cs));
        longs += strcmp(cJSON_GetObjectItem(cs, "kind")->valuestring, "long") == 0;
        if (!first && strcmp(cs->string, "left_phone") == 0) first = cs;
    }
    CHECK(n >= 24 && longs >= 1 && first, "%s: %d cases, %d long", name, n, longs);
    double bw = batch(e, ws, name, cJSON_GetObjectItem(cJSON_GetObjectItem(ref, "batches"), "batch4"));
    char copy[128];
    if (first && make_copy(dir, "config.transformers4.json", copy, sizeof copy)) {
        same_model(e, ws, copy, "transformers 4's config.json", first);
        remove_copy(copy);
    }
    if (first) {
        int T, L = emb_encoder_get_config(e)->dims.layers;
        int32_t *ids = case_ids(first, &T);
        float *f32 = run(e, ws, ids, T, L, err);
        if (f32) packed(dir, name, ids, T, f32);
        free(f32);
        free(ids);
    }
    printf("%s: %d cases, max abs error vs reference %.3g, batch4 real rows %.3g (tolerance %.0e), fingerprint "
           "%016llx\n",
           name, n, worst, bw, TOL, (unsigned long long)emb_encoder_fingerprint(e));
    if (strcmp(arch, "qwen3") == 0 && first)
        same_model(e, ws, M3 "qwen3-tiny-causallm", "Qwen3ForCausalLM", first);
    emb_workspace_free(ws);
    emb_encoder_free(e);
    cJSON_Delete(ref);
}

/* The masks as emb_encoder_attention_bias shows them: Qwen3's causal one; Gemma3's bidirectional
 * window |i - j| < 8 / 2 + 1 in its sliding layers (1 and 2), none in its full layer 3. */
static void masks(void) {
    char err[EMB_ERR_LEN] = "";
    emb_encoder *q = NULL, *g = NULL;
    float o[4][4];
    int ok = emb_encoder_load(M3 "qwen3-tiny-st", &q, err) == 0 &&
             emb_encoder_attention_bias(q, 1, 0, 1, o[0], err) == 0 &&
             emb_encoder_attention_bias(q, 2, 7, 0, o[1], err) == 0;
    CHECK(ok && isinf(o[0][0]) && o[0][0] < 0 && o[1][3] == 0, "qwen3: a key after the query is hidden %s", err);
    ok = emb_encoder_load(M3 "gemma3-tiny-st", &g, err) == 0 &&
         emb_encoder_attention_bias(g, 1, 10, 14, o[0], err) == 0 &&
         emb_encoder_attention_bias(g, 2, 15, 10, o[1], err) == 0 &&
         emb_encoder_attention_bias(g, 3, 0, 1000, o[2], err) == 0 &&
         emb_encoder_attention_bias(g, 1, 14, 10, o[3], err) == 0;
    CHECK(ok && o[0][0] == 0 && isinf(o[1][2]) && o[2][1] == 0 && o[3][0] == 0,
          "gemma3: sliding layers see |i - j| <= 4 both ways, the full layer everything %s", err);
    CHECK(g && emb_encoder_attention_bias(g, 0, 0, 1, o[0], err) != 0, "gemma3: layer 0 refused (layers differ)");
    emb_encoder_free(q);
    emb_encoder_free(g);
}

#define QWEN                                                                                                      \
    "{\"model_type\":\"qwen3\",\"hidden_size\":32,\"num_hidden_layers\":2,\"num_attention_heads\":4,"             \
    "\"intermediate_size\":96,\"max_position_embeddings\":64,\"vocab_size\":100"
#define GEMMA                                                                                                     \
    "{\"model_type\":\"gemma3_text\",\"hidden_size\":32,\"num_hidden_layers\":3,\"num_attention_heads\":4,"       \
    "\"num_key_value_heads\":1,\"head_dim\":16,\"intermediate_size\":64,\"max_position_embeddings\":64,"          \
    "\"vocab_size\":100"

/* Bad settings, each refused with the key named. */
static void refusals(void) {
    static const char *const BAD[][2] = {
        {QWEN ",\"num_key_value_heads\":3}", "config.json: key 'num_key_value_heads': 3 does not divide"},
        {QWEN ",\"num_key_value_heads\":8}", "config.json: key 'num_key_value_heads'"},
        {QWEN ",\"head_dim\":15}", "config.json: key 'head_dim': 15 is odd"},
        {"{\"model_type\":\"qwen3\",\"hidden_size\":30,\"num_hidden_layers\":2,\"num_attention_heads\":4,"
         "\"intermediate_size\":96,\"max_position_embeddings\":64,\"vocab_size\":100}",
         "config.json: key 'head_dim' is absent"},
        {QWEN ",\"rope_parameters\":{\"rope_type\":\"yarn\",\"rope_theta\":1e6,\"factor\":4}}",
         "config.json: rope_parameters: rope_type 'yarn' is not supported"},
        {QWEN ",\"rope_scaling\":{\"type\":\"linear\",\"factor\":2}}",
         "config.json: rope_scaling: rope_type 'linear' is not supported"},
        {QWEN ",\"use_sliding_window\":true}", "config.json: key 'use_sliding_window'"},
        {QWEN ",\"layer_types\":[\"full_attention\",\"sliding_attention\"]}", "config.json: key 'layer_types'"},
        {QWEN ",\"hidden_act\":\"gelu\"}", "config.json: key 'hidden_act': 'gelu' is not supported"},
        {GEMMA ",\"sliding_window\":0}", "config.json: key 'sliding_window'"},
        {GEMMA ",\"layer_types\":[\"sliding_attention\",\"full_attention\"]}", "config.json: key 'layer_types'"},
        {GEMMA ",\"rope_parameters\":{\"full_attention\":{\"rope_type\":\"linear\",\"factor\":8}}}",
         "config.json: rope_parameters.full_attention: rope_type 'linear'"},
        {GEMMA ",\"hidden_activation\":\"relu\"}", "config.json: key 'hidden_activation'"},
    };
    for (size_t i = 0; i < sizeof BAD / sizeof *BAD; i++) {
        char err[EMB_ERR_LEN] = "";
        emb_encoder_config c;
        int rc = emb_encoder_config_parse(BAD[i][0], strlen(BAD[i][0]), "config.json", &c, err);
        CHECK(rc != 0 && strstr(err, BAD[i][1]), "refused with \"%s\": %s", BAD[i][1], rc ? err : "(accepted)");
    }
    /* Gemma3 without use_bidirectional_attention: causal, its window the W - 1 keys before */
    const char *causal = GEMMA ",\"sliding_window\":8,\"attn_logit_softcapping\":50}";
    char err[EMB_ERR_LEN] = "";
    emb_encoder_config c;
    int rc = emb_encoder_config_parse(causal, strlen(causal), "config.json", &c, err);
    CHECK(rc == 0 && c.causal && c.half_window == 7 && c.attn_softcap == 50 && c.kv_heads == 1 &&
              emb_encoder_config_layer_is_local(&c, 0) && emb_encoder_config_layer_is_local(&c, 2),
          "gemma3 causal: window 7 back, soft cap, layers 1-3 sliding (pattern 6) %s", err);
}

/* A checkpoint without layer 1's q_norm: the tensor named. */
static void missing_tensor(void) {
    char dir[128], path[512], err[EMB_ERR_LEN] = "";
    if (!make_copy(M3 "qwen3-tiny-st", "config.json", dir, sizeof dir)) {
        CHECK(0, "temporary copy");
        return;
    }
    snprintf(path, sizeof path, "%s/model.safetensors", dir);
    FILE *f = fopen(path, "r+b");
    char head[8192] = {0};
    size_t n = f ? fread(head, 1, sizeof head - 1, f) : 0;
    char *at = n > 8 ? strstr(head + 8, "\"layers.1.self_attn.q_norm.weight\"") : NULL;
    if (at) { /* the same length: the header's offsets stay right */
        memcpy(at + 1, "layers.1.self_attn.q_nrm_.weight", 32);
        fseek(f, 0, SEEK_SET);
        fwrite(head, 1, n, f);
    }
    if (f) fclose(f);
    emb_encoder *e = NULL;
    int rc = emb_encoder_load(dir, &e, err);
    CHECK(at && rc != 0 && strstr(err, "missing tensor 'layers.1.self_attn.q_norm.weight'"),
          "a missing q_norm is named: %s", rc ? err : "(loaded)");
    emb_encoder_free(e);
    remove_copy(dir);
}

/* Qwen3's long inputs: the tiny model's config with Qwen3-Embedding's 32,768 positions. The
 * mask is causal, so the first 64 rows of a 32,768-token pass are a 64-token pass's; the
 * workspace grows in proportion to the tokens (attention's scores bounded per head), so four
 * times the tokens take at most about four times the memory; one position more is refused. */
static void long_input(void) {
    enum { N = 32768, SHORT = 64, QUARTER = N / 4 };
    char dir[128], path[512], err[EMB_ERR_LEN] = "";
    if (!make_copy(M3 "qwen3-tiny-st", "config.json", dir, sizeof dir)) {
        CHECK(0, "temporary copy");
        return;
    }
    snprintf(path, sizeof path, "%s/config.json", dir);
    char cfg[4096] = {0};
    FILE *f = fopen(path, "r+b");
    size_t n = f ? fread(cfg, 1, sizeof cfg - 1, f) : 0;
    char *at = strstr(cfg, "\"max_position_embeddings\": 2048");
    if (at && n + 1 < sizeof cfg) { /* 2048 -> 32768: one byte longer */
        char *num = at + strlen("\"max_position_embeddings\": ");
        memmove(num + 5, num + 4, n - (size_t)(num + 4 - cfg) + 1);
        memcpy(num, "32768", 5);
        fseek(f, 0, SEEK_SET);
        fputs(cfg, f);
    }
    if (f) fclose(f);
    emb_encoder *e = NULL;
    emb_workspace *ws = emb_workspace_new();
    int32_t *ids = malloc(sizeof(int32_t) * (N + 1));
    for (int i = 0; i <= N; i++) ids[i] = (int32_t)((i * 7919u + 13u) % 50000u);
    int rc = at ? emb_encoder_load(dir, &e, err) : -1;
    CHECK(rc == 0 && emb_encoder_max_tokens(e) == N, "qwen3 with 32768 positions loads %s", err);
    if (rc == 0) {
        float *quarter = run(e, ws, ids, QUARTER, 2, err);
        size_t ws_quarter = emb_workspace_bytes(ws);
        float *all = run(e, ws, ids, N, 2, err), *head = run(e, ws, ids, SHORT, 2, err);
        size_t ws_all = emb_workspace_bytes(ws);
        int H = emb_encoder_get_config(e)->dims.hidden, finite = all != NULL;
        double d = INFINITY;
        if (all && head) {
            d = 0;
            for (int i = 0; i < SHORT * H; i++) d = worse(d, fabs((double)all[i] - head[i]));
        }
        for (size_t i = 0; finite && i < (size_t)N * H; i++) finite = isfinite(all[i]);
        CHECK(d <= TOL && finite, "32768 tokens: finite, the first %d rows those of a %d-token pass (%.3g) %s",
              SHORT, SHORT, d, err);
        CHECK(quarter && ws_all <= ws_quarter * 4.5, "workspace %zu bytes at %d tokens, %zu at %d: linear",
              ws_quarter, QUARTER, ws_all, N);
        int32_t len = N + 1;
        float *out = malloc(sizeof(float) * (size_t)(N + 1) * H);
        rc = emb_encoder_forward(e, ws, 1, N + 1, ids, NULL, &len, 2, out, err);
        CHECK(rc != 0 && strstr(err, "32769 tokens exceed the model's maximum of 32768"), "one more refused: %s",
              err);
        free(out);
        free(quarter);
        free(all);
        free(head);
    }
    free(ids);
    emb_workspace_free(ws);
    emb_encoder_free(e);
    remove_copy(dir);
}

int main(void) {
    snprintf(tmpdir, sizeof tmpdir, "/tmp/test_decoders_XXXXXX");
    if (!mkdtemp(tmpdir)) {
        perror("mkdtemp");
        return 1;
    }
    model(M3 "refs/qwen3-tiny.json", M3 "qwen3-tiny-st", "qwen3-tiny-st", "qwen3");
    model(M3 "refs/gemma3-tiny.json", M3 "gemma3-tiny-st", "gemma3-tiny-st", "gemma3_text");
    masks();
    refusals();
    missing_tensor();
    long_input();
    rmdir(tmpdir);
    return check_report();
}
