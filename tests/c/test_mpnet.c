/* MPNet against Hugging Face's references (tests/fixtures/models3/refs/mpnet-tiny.json, schema
 * golden-ref/3, made with transformers 5.17): the tokenizer's ids, tokens and offsets (and
 * sentence-transformers' ids cut at 384), every hidden state of every case within 1e-5, the long
 * case cut at 512 ids, the padded batch; the relative-position bias against the bucket formula
 * written here in double; int8 and bf16 weights near float32. Run from the repo root. */
#include "check.h"
#include "ref_compare.h"
#include "nn/encoder.h"
#include "base/emb_json.h"
#include "nn/safetensors.h"
#include "text/tokenizer.h"
#include <cjson/cJSON.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define DIR FIXTURES "/models3/mpnet-tiny-st"
#define TOL 1e-5

static int get_ints(const cJSON *a, int32_t *out, int n) {
    if (!cJSON_IsArray(a) || cJSON_GetArraySize(a) < n) return -1;
    int i = 0;
    for (const cJSON *v = a->child; v && i < n; v = v->next) out[i++] = (int32_t)v->valueint;
    return 0;
}

/* The tokenizer: ids (the long case: the first 512), then tokens and offsets of the others, and
 * sentence-transformers' ids (max_seq_length 384) of every case. */
static void tokens(const emb_tokenizer *tk, const char *cid, const cJSON *cs) {
    char err[EMB_ERR_LEN];
    emb_encoding enc;
    emb_encoding_init(&enc);
    const char *text = cJSON_GetObjectItem(cs, "text")->valuestring;
    const cJSON *want = cJSON_GetObjectItem(cs, "input_ids");
    int n = cJSON_GetArraySize(want), ok = emb_tokenize(tk, text, strlen(text), NULL, 0, 0, &enc, err) == 0;
    int is_long = strcmp(cJSON_GetObjectItem(cs, "kind")->valuestring, "long") == 0;
    ok = ok && (is_long ? (int)enc.n >= n : (int)enc.n == n);
    const cJSON *id = want->child, *tok = cJSON_GetObjectItem(cs, "tokens")->child,
                *off = cJSON_GetObjectItem(cs, "offsets")->child;
    for (int i = 0; ok && i < n; i++, id = id->next, tok = tok->next, off = off->next) {
        ok = enc.tok[i].id == id->valueint;
        size_t len;
        const char *s = emb_tokenizer_token(tk, enc.tok[i].id, &len);
        ok = ok && s && len == strlen(tok->valuestring) && memcmp(s, tok->valuestring, len) == 0;
        int start = enc.tok[i].start < 0 ? 0 : enc.tok[i].start, end = enc.tok[i].end < 0 ? 0 : enc.tok[i].end;
        ok = ok && start == off->child->valueint && end == off->child->next->valueint;
    }
    CHECK(ok, "%s: ids, tokens and offsets equal Hugging Face's (%zu tokens)", cid, enc.n);
    const cJSON *st = cJSON_GetObjectItem(cs, "st_document_ids");
    n = cJSON_GetArraySize(st);
    ok = emb_tokenize(tk, text, strlen(text), NULL, 0, 384, &enc, err) == 0 && (int)enc.n == n;
    id = st->child;
    for (int i = 0; ok && i < n; i++, id = id->next) ok = enc.tok[i].id == id->valueint;
    CHECK(ok, "%s: sentence-transformers' ids (cut at 384)", cid);
    emb_encoding_free(&enc);
}

/* Every hidden state of one case (the long one: its last_hidden_state) within TOL. */
static double hidden_states(const emb_encoder *e, emb_workspace *ws, const char *cid, const cJSON *cs) {
    char err[EMB_ERR_LEN];
    const cJSON *ids_j = cJSON_GetObjectItem(cs, "input_ids"), *hs = cJSON_GetObjectItem(cs, "hidden_states");
    int T = cJSON_GetArraySize(ids_j), H = emb_encoder_get_config(e)->dims.hidden,
        L = emb_encoder_get_config(e)->dims.layers;
    int32_t *ids = malloc(sizeof(int32_t) * (size_t)T), len = T;
    float *out = malloc(sizeof(float) * (size_t)T * H);
    get_ints(ids_j, ids, T);
    double worst = 0;
    const cJSON *layer = cJSON_IsArray(hs) ? hs->child : NULL;
    CHECK(!layer || cJSON_GetArraySize(hs) == L + 1, "%s: %d hidden states", cid, cJSON_GetArraySize(hs));
    for (int l = 0; layer && l <= L; l++, layer = layer->next) {
        int rc = emb_encoder_forward(e, ws, 1, T, ids, NULL, &len, l, out, err);
        double d = rc ? INFINITY : diff2(layer, out, T, H);
        CHECK(d <= TOL, "%s: hidden_states[%d] max error %.3g: %s", cid, l, d, rc ? err : "");
        worst = worse(worst, d);
    }
    int rc = emb_encoder_forward(e, ws, 1, T, ids, NULL, &len, L, out, err);
    double d = rc ? INFINITY : diff2(cJSON_GetObjectItem(cs, "last_hidden_state"), out, T, H);
    CHECK(d <= TOL, "%s: last_hidden_state (%d tokens) max error %.3g: %s", cid, T, d, rc ? err : "");
    free(ids);
    free(out);
    return worse(worst, d);
}

/* batches.batch4: four texts padded at the right, as transformers computed them (padded rows too). */
static void batch(const emb_encoder *e, emb_workspace *ws, const cJSON *b) {
    char err[EMB_ERR_LEN];
    const cJSON *ids_j = cJSON_GetObjectItem(b, "input_ids"), *mask = cJSON_GetObjectItem(b, "attention_mask");
    int B = cJSON_GetArraySize(ids_j), T = cJSON_GetArraySize(ids_j->child),
        H = emb_encoder_get_config(e)->dims.hidden;
    int32_t *ids = malloc(sizeof(int32_t) * (size_t)B * T), lens[8] = {0};
    float *out = malloc(sizeof(float) * (size_t)B * T * H);
    const cJSON *r = ids_j->child, *m = mask->child;
    for (int i = 0; i < B && i < 8; i++, r = r->next, m = m->next) {
        get_ints(r, ids + (size_t)i * T, T);
        for (const cJSON *v = m->child; v; v = v->next) lens[i] += v->valueint;
    }
    int rc = B <= 8 ? emb_encoder_forward(e, ws, B, T, ids, NULL, lens, emb_encoder_get_config(e)->dims.layers,
                                          out, err)
                    : -1;
    double worst = rc ? INFINITY : 0;
    r = cJSON_GetObjectItem(b, "last_hidden_state")->child;
    for (int i = 0; rc == 0 && i < B; i++, r = r->next)
        worst = worse(worst, diff2(r, out + (size_t)i * T * H, T, H));
    CHECK(strcmp(cJSON_GetObjectItem(b, "padding_side")->valuestring, "right") == 0 && worst <= TOL,
          "batch4 (%d x %d, padded rows included): max error %.3g: %s", B, T, worst, rc ? err : "");
    free(ids);
    free(out);
}

/* transformers' relative_position_bucket, written again in double: key - query = rel. */
static int bucket(long rel) {
    long n = -rel;
    int ret = n < 0 ? 16 : 0;
    n = labs(n);
    if (n < 8) return ret + (int)n;
    int large = 8 + (int)(log(n / 8.0) / log(128.0 / 8.0) * 8.0);
    return ret + (large < 15 ? large : 15);
}

/* The bias every layer adds, against the table in the file and the formula above. */
static void bias(const emb_encoder *e) {
    char err[EMB_ERR_LEN];
    emb_safetensors *sf;
    if (emb_safetensors_open(DIR "/model.safetensors", 1, &sf, err)) {
        CHECK(0, "%s", err);
        return;
    }
    const float *w =
        (const float *)(const void *)emb_safetensors_find(sf, "encoder.relative_attention_bias.weight")->data;
    double worst = 0;
    int ok = 1, max = emb_encoder_max_tokens(e);
    static const int64_t pos[] = {0, 1, 7, 8, 11, 12, 15, 16, 17, 31, 32, 63, 64, 90, 91, 127, 128, 300, 511};
    int np = sizeof pos / sizeof *pos;
    for (int a = 0; a < np; a++)
        for (int b = 0; b < np; b++) {
            float out[4], layer2[4];
            ok &= emb_encoder_attention_bias(e, 0, pos[a], pos[b], out, err) == 0 &&
                  emb_encoder_attention_bias(e, 2, pos[a], pos[b], layer2, err) == 0 &&
                  !memcmp(out, layer2, sizeof out);
            for (int h = 0; h < 4; h++) worst = worse(worst, fabs(out[h] - w[bucket(pos[b] - pos[a]) * 4 + h]));
        }
    CHECK(ok && worst == 0 && max == 512, "attention bias of 19 x 19 positions: the bucket's row (%.3g): %s",
          worst, ok ? "" : err);
    emb_safetensors_close(sf);
}

/* int8 and bf16 weights (bf16 where the CPU has it): every token's cosine to float32 above 0.99. */
static void packed(const cJSON *cs, const float *f32, int T) {
    char err[EMB_ERR_LEN];
    for (int k = 0; k < 2; k++) {
        emb_encoder *e;
        if (emb_encoder_load(DIR, &e, err)) return;
        if (emb_encoder_set_weights(e, k ? EMB_WEIGHTS_BF16 : EMB_WEIGHTS_INT8, err)) {
            if (k) CHECK_SKIP("bf16 weights: %s", err);
            else CHECK(0, "int8 weights: %s", err);
            emb_encoder_free(e);
            continue;
        }
        int32_t ids[64], len = T;
        float out[64 * 32];
        get_ints(cJSON_GetObjectItem(cs, "input_ids"), ids, T);
        emb_workspace *ws = emb_workspace_new();
        int rc = emb_encoder_forward(e, ws, 1, T, ids, NULL, &len, 2, out, err);
        double low = rc ? -1 : 1;
        for (int t = 0; rc == 0 && t < T; t++) {
            double ab = 0, aa = 0, bb = 0;
            for (int d = 0; d < 32; d++) {
                ab += (double)out[t * 32 + d] * f32[t * 32 + d];
                aa += (double)out[t * 32 + d] * out[t * 32 + d];
                bb += (double)f32[t * 32 + d] * f32[t * 32 + d];
            }
            low = fmin(low, ab / sqrt(aa * bb));
        }
        CHECK(low > 0.99, "%s weights: lowest token cosine to float32 %.5f: %s", k ? "bf16" : "int8", low,
              rc ? err : "");
        emb_workspace_free(ws);
        emb_encoder_free(e);
    }
}

/* Settings MPNet's code does not follow are refused: fewer buckets than the 32 it computes. */
static void refusals(void) {
    const char *cfg =
        "{\"model_type\":\"mpnet\",\"hidden_size\":32,\"num_hidden_layers\":2,\"num_attention_heads\":4,"
        "\"intermediate_size\":64,\"max_position_embeddings\":514,\"vocab_size\":100,"
        "\"relative_attention_num_buckets\":16}";
    char err[EMB_ERR_LEN];
    emb_encoder_config c;
    int rc = emb_encoder_config_parse(cfg, strlen(cfg), "config.json", &c, err);
    CHECK(rc != 0 && strstr(err, "config.json: key 'relative_attention_num_buckets'"), "16 buckets refused: %s",
          rc ? err : "(accepted)");
}

int main(void) {
    char err[EMB_ERR_LEN];
    cJSON *ref = NULL;
    emb_encoder *e = NULL;
    emb_tokenizer *tk = NULL;
    if (emb_json_read_file(FIXTURES "/models3/refs/mpnet-tiny.json", 64u << 20, &ref, err) ||
        emb_encoder_load(DIR, &e, err) || emb_tokenizer_load(DIR, &tk, err)) {
        CHECK(0, "load: %s", err);
        return check_report();
    }
    const emb_encoder_config *c = emb_encoder_get_config(e);
    const emb_encoder_info *in = emb_encoder_get_info(e);
    CHECK(strcmp(c->arch_name, "mpnet") == 0 && c->pos_kind == EMB_POS_LEARNED && c->pos_offset == 2 &&
              c->dims.type_vocab == 0 && c->rel_buckets == 32 && strcmp(in->tensor_prefix, "") == 0 &&
              in->has_pooler,
          "mpnet-tiny-st read as MPNet (%s)", c->arch_name);
    emb_workspace *ws = emb_workspace_new();
    double worst = 0;
    int n = 0, longs = 0;
    const cJSON *left = NULL;
    for (const cJSON *cs = cJSON_GetObjectItem(ref, "cases")->child; cs; cs = cs->next, n++) {
        tokens(tk, cs->string, cs);
        worst = worse(worst, hidden_states(e, ws, cs->string, cs));
        longs += strcmp(cJSON_GetObjectItem(cs, "kind")->valuestring, "long") == 0;
        if (strcmp(cs->string, "left_phone") == 0) left = cs;
    }
    CHECK(n >= 24 && longs >= 1, "%d cases, %d long", n, longs);
    batch(e, ws, cJSON_GetObjectItem(cJSON_GetObjectItem(ref, "batches"), "batch4"));
    bias(e);
    if (left) {
        int T = cJSON_GetArraySize(cJSON_GetObjectItem(left, "input_ids"));
        int32_t ids[64], len = T;
        float f32[64 * 32];
        get_ints(cJSON_GetObjectItem(left, "input_ids"), ids, T);
        if (T <= 64 && emb_encoder_forward(e, ws, 1, T, ids, NULL, &len, 2, f32, err) == 0) packed(left, f32, T);
    }
    refusals();
    printf("mpnet-tiny-st: %d cases, max abs error vs reference %.3g (tolerance %.0e), fingerprint %016llx\n", n,
           worst, TOL, (unsigned long long)emb_encoder_fingerprint(e));
    emb_workspace_free(ws);
    emb_tokenizer_free(tk);
    emb_encoder_free(e);
    cJSON_Delete(ref);
    return check_report();
}
