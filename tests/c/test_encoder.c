/* Encoder parity against the golden references (tests/fixtures/models/refs), plus
 * load errors, sentence-transformers config and pooling. Run from the repo root. */
#include "check.h"
#include "encoder.h"
#include "model_config.h"
#include "pooling.h"
#include "safetensors.h"
#include "st_config.h"
#include <cjson/cJSON.h>
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

static const char *MODELS[] = {"bert-tiny-uncased", "bert-tiny-prefixed", "bert-tiny-f16",
                                "distilbert-tiny-uncased", "distilbert-tiny-sinusoidal", "minilm-tiny-st"};
#define N_MODELS 6

static double worst_all = 0;

/* max |ref - x| over a JSON array of n numbers; INFINITY if the shape differs */
static double diff1(const cJSON *a, const float *x, int n) {
    if (!cJSON_IsArray(a) || cJSON_GetArraySize(a) != n) return INFINITY;
    double m = 0;
    int i = 0;
    for (const cJSON *v = a->child; v; v = v->next, i++) {
        double d = fabs(v->valuedouble - (double)x[i]);
        if (!(d <= m)) m = d; /* NaN propagates as "bad" */
    }
    return m;
}
/* [rows][n] JSON against rows of x with stride n; only the first `rows` rows of a */
static double diff2(const cJSON *a, const float *x, int rows, int n) {
    if (!cJSON_IsArray(a) || cJSON_GetArraySize(a) < rows) return INFINITY;
    double m = 0;
    const cJSON *r = a->child;
    for (int i = 0; i < rows; i++, r = r->next) {
        double d = diff1(r, x + (size_t)i * n, n);
        if (!(d <= m)) m = d;
    }
    return m;
}
static int get_ints(const cJSON *a, int32_t *out, int n) {
    if (!cJSON_IsArray(a) || cJSON_GetArraySize(a) != n) return -1;
    int i = 0;
    for (const cJSON *v = a->child; v; v = v->next) out[i++] = (int32_t)v->valueint;
    return 0;
}
static double maxdiff(const float *a, const float *b, size_t n) {
    double m = 0;
    for (size_t i = 0; i < n; i++) {
        double d = fabs((double)a[i] - b[i]);
        if (!(d <= m)) m = d;
    }
    return m;
}

static cJSON *load_json(const char *path) {
    char *txt, err[EMB_ERR_LEN];
    size_t len;
    if (emb_config_read_file(path, 64u << 20, &txt, &len, err)) { fprintf(stderr, "%s\n", err); return NULL; }
    cJSON *j = cJSON_ParseWithLength(txt, len);
    free(txt);
    return j;
}

static void parity(const char *model) {
    char dir[512], refp[512], err[EMB_ERR_LEN];
    snprintf(dir, sizeof dir, FIXTURES "/models/%s", model);
    snprintf(refp, sizeof refp, FIXTURES "/models/refs/%s.json", model);
    cJSON *ref = load_json(refp);
    CHECK(ref != NULL, "%s: cannot read %s", model, refp);
    if (!ref) return;
    emb_encoder *enc = NULL;
    int rc = emb_encoder_load(dir, &enc, err);
    CHECK(rc == 0, "%s: load failed: %s", model, err);
    if (rc) { cJSON_Delete(ref); return; }
    const emb_encoder_info *in = emb_encoder_get_info(enc);
    const char *dtype = cJSON_GetObjectItem(ref, "weights_dtype")->valuestring;
    double tol = strcmp(dtype, "F16") == 0 ? 1e-3 : 1e-4;
    int H = in->hidden, L = in->layers;
    int bert = strcmp(in->arch, "bert") == 0;
    CHECK(strcmp(in->arch, cJSON_GetObjectItem(ref, "arch")->valuestring) == 0 &&
          H == cJSON_GetObjectItem(ref, "hidden_size")->valueint &&
          L == cJSON_GetObjectItem(ref, "num_layers")->valueint &&
          in->heads == cJSON_GetObjectItem(ref, "num_heads")->valueint &&
          in->intermediate == cJSON_GetObjectItem(ref, "intermediate_size")->valueint &&
          in->vocab_size == cJSON_GetObjectItem(ref, "vocab_size")->valueint &&
          in->max_positions == cJSON_GetObjectItem(ref, "max_position_embeddings")->valueint &&
          strcmp(in->weight_type, dtype) == 0 &&
          strcmp(in->tensor_prefix, cJSON_GetObjectItem(ref, "tensor_prefix")->valuestring) == 0 &&
          in->has_pooler == cJSON_IsTrue(cJSON_GetObjectItem(ref, "has_pooler")) &&
          fabs(in->ln_eps - cJSON_GetObjectItem(ref, "layer_norm_eps")->valuedouble) < 1e-15,
          "%s: info does not match the reference (arch %s hidden %d layers %d prefix '%s' type %s)", model, in->arch, H, L,
          in->tensor_prefix, in->weight_type);
    if (!bert) CHECK(in->sinusoidal == cJSON_IsTrue(cJSON_GetObjectItem(ref, "sinusoidal_pos_embds")), "%s: sinusoidal flag", model);
    CHECK(emb_encoder_word_row(enc, -1) == NULL && emb_encoder_word_row(enc, in->vocab_size) == NULL &&
          emb_encoder_position_row(enc, in->max_positions) == NULL && (bert || emb_encoder_type_row(enc, 0) == NULL),
          "%s: out-of-range rows must be NULL", model);

    emb_workspace *ws = emb_workspace_new();
    double worst = 0;
    const cJSON *cases = cJSON_GetObjectItem(ref, "cases");
    int ncases = 0;
    for (const cJSON *cs = cases->child; cs; cs = cs->next, ncases++) {
        const char *cid = cs->string;
        int T = cJSON_GetObjectItem(cs, "seq_len")->valueint;
        int32_t *ids = malloc(sizeof(int32_t) * T), *tt = malloc(sizeof(int32_t) * T), len = T;
        float *hs = malloc(sizeof(float) * (size_t)T * H), *rows = malloc(sizeof(float) * (size_t)T * H);
        float pooled[3][4096];
        CHECK(get_ints(cJSON_GetObjectItem(cs, "input_ids"), ids, T) == 0 &&
              get_ints(cJSON_GetObjectItem(cs, "token_type_ids"), tt, T) == 0, "%s/%s: ids", model, cid);

#define CMP(q, dval) do { double d = (dval); if (d > worst) worst = d; \
        CHECK(d <= tol, "%s/%s: %s max abs error %.3g > %.g", model, cid, q, d, tol); } while (0)
        for (int t = 0; t < T; t++) { const float *r = emb_encoder_word_row(enc, ids[t]); memcpy(rows + (size_t)t * H, r, sizeof(float) * H); }
        CMP("word_embeddings", diff2(cJSON_GetObjectItem(cs, "word_embeddings"), rows, T, H));
        for (int t = 0; t < T; t++) { const float *r = emb_encoder_position_row(enc, t); memcpy(rows + (size_t)t * H, r, sizeof(float) * H); }
        CMP("position_embeddings", diff2(cJSON_GetObjectItem(cs, "position_embeddings"), rows, T, H));
        if (bert) {
            for (int t = 0; t < T; t++) { const float *r = emb_encoder_type_row(enc, tt[t]); memcpy(rows + (size_t)t * H, r, sizeof(float) * H); }
            CMP("token_type_embeddings", diff2(cJSON_GetObjectItem(cs, "token_type_embeddings"), rows, T, H));
        }
        rc = emb_encoder_forward(enc, ws, 1, T, ids, tt, &len, 0, hs, err);
        CHECK(rc == 0, "%s/%s: forward(0) failed: %s", model, cid, err);
        CMP("embeddings_output", diff2(cJSON_GetObjectItem(cs, "embeddings_output"), hs, T, H));
        const cJSON *layers = cJSON_GetObjectItem(cs, "layers");
        const cJSON *lr = layers ? layers->child : NULL;
        for (int l = 1; l <= L; l++, lr = lr ? lr->next : NULL) {
            rc = emb_encoder_forward(enc, ws, 1, T, ids, tt, &len, l, hs, err);
            CHECK(rc == 0, "%s/%s: forward(%d) failed: %s", model, cid, l, err);
            char q[32];
            snprintf(q, sizeof q, "layers[%d]", l - 1);
            CMP(q, diff2(lr, hs, T, H));
        }
        CMP("last_hidden_state", diff2(cJSON_GetObjectItem(cs, "last_hidden_state"), hs, T, H));
        emb_pool(hs, T, H, T, EMB_POOL_MEAN, pooled[0]);
        emb_pool(hs, T, H, T, EMB_POOL_CLS, pooled[1]);
        memcpy(pooled[2], pooled[0], sizeof(float) * H);
        emb_l2_normalize(pooled[2], H);
        CMP("pooled_mean", diff1(cJSON_GetObjectItem(cs, "pooled_mean"), pooled[0], H));
        CMP("pooled_cls", diff1(cJSON_GetObjectItem(cs, "pooled_cls"), pooled[1], H));
        CMP("pooled_mean_normalized", diff1(cJSON_GetObjectItem(cs, "pooled_mean_normalized"), pooled[2], H));
        if (in->has_pooler) {
            float po[4096];
            CHECK(emb_encoder_pooler(enc, pooled[1], po) == 0, "%s: pooler", model);
            CMP("pooler_output", diff1(cJSON_GetObjectItem(cs, "pooler_output"), po, H));
        }
        free(ids); free(tt); free(hs); free(rows);
    }
    CHECK(ncases >= 24, "%s: only %d cases", model, ncases);

    /* padded batches */
    const cJSON *batches = cJSON_GetObjectItem(ref, "batches");
    for (const cJSON *bt = batches->child; bt; bt = bt->next) {
        const char *cid = bt->string;
        int B = cJSON_GetArraySize(cJSON_GetObjectItem(bt, "seq_lens"));
        int P = cJSON_GetObjectItem(bt, "padded_len")->valueint;
        int32_t *ids = calloc((size_t)B * P, sizeof(int32_t)), *tt = calloc((size_t)B * P, sizeof(int32_t));
        int32_t *lens = calloc((size_t)B, sizeof(int32_t));
        float *hs = malloc(sizeof(float) * (size_t)B * P * H), *one = malloc(sizeof(float) * (size_t)P * H);
        get_ints(cJSON_GetObjectItem(bt, "seq_lens"), lens, B);
        const cJSON *ri = cJSON_GetObjectItem(bt, "input_ids")->child, *rt = cJSON_GetObjectItem(bt, "token_type_ids")->child;
        for (int b = 0; b < B; b++, ri = ri->next, rt = rt->next) {
            get_ints(ri, ids + (size_t)b * P, P);
            get_ints(rt, tt + (size_t)b * P, P);
        }
        rc = emb_encoder_forward(enc, ws, B, P, ids, tt, lens, L, hs, err);
        CHECK(rc == 0, "%s/%s: batched forward failed: %s", model, cid, err);
        double dv = 0, dpad = 0, dm = 0, dc = 0, dn = 0, dun = 0;
        const cJSON *lhs = cJSON_GetObjectItem(bt, "last_hidden_state")->child;
        const cJSON *pm = cJSON_GetObjectItem(bt, "pooled_mean")->child, *pc = cJSON_GetObjectItem(bt, "pooled_cls")->child,
                    *pn = cJSON_GetObjectItem(bt, "pooled_mean_normalized")->child;
        for (int b = 0; b < B; b++, lhs = lhs->next, pm = pm->next, pc = pc->next, pn = pn->next) {
            const float *x = hs + (size_t)b * P * H;
            double v = diff2(lhs, x, lens[b], H);
            if (v > dv) dv = v;
            /* padded rows, as HF computes them */
            const cJSON *r = lhs->child;
            for (int t = 0; t < P; t++, r = r->next)
                if (t >= lens[b]) { v = diff1(r, x + (size_t)t * H, H); if (!(v <= dpad)) dpad = v; }
            float p[3][4096];
            emb_pool(x, P, H, lens[b], EMB_POOL_MEAN, p[0]);
            emb_pool(x, P, H, lens[b], EMB_POOL_CLS, p[1]);
            memcpy(p[2], p[0], sizeof(float) * H);
            emb_l2_normalize(p[2], H);
            v = diff1(pm, p[0], H); if (!(v <= dm)) dm = v;
            v = diff1(pc, p[1], H); if (!(v <= dc)) dc = v;
            v = diff1(pn, p[2], H); if (!(v <= dn)) dn = v;
            /* unbatched run of the same sequence */
            int32_t l1 = lens[b];
            rc = emb_encoder_forward(enc, ws, 1, l1, ids + (size_t)b * P, tt + (size_t)b * P, &l1, L, one, err);
            CHECK(rc == 0, "%s/%s: unbatched forward failed: %s", model, cid, err);
            v = maxdiff(one, x, (size_t)l1 * H); if (!(v <= dun)) dun = v;
            float q[4096];
            emb_pool(one, l1, H, l1, EMB_POOL_MEAN, q);
            v = maxdiff(q, p[0], (size_t)H); if (!(v <= dun)) dun = v;
        }
        CMP("batch last_hidden_state (valid positions)", dv);
        CMP("batch last_hidden_state (padded positions)", dpad);
        CMP("batch pooled_mean", dm);
        CMP("batch pooled_cls", dc);
        CMP("batch pooled_mean_normalized", dn);
        CHECK(dun <= 1e-5, "%s/%s: batched vs unbatched differ by %.3g", model, cid, dun);
        printf("  %s/%s: batched vs unbatched max abs %.3g\n", model, cid, dun);
        free(ids); free(tt); free(lens); free(hs); free(one);
    }
#undef CMP
    printf("%-28s %2d cases, max abs error vs reference %.3g (tolerance %.0e), fingerprint %016llx\n", model, ncases, worst,
           tol, (unsigned long long)emb_encoder_fingerprint(enc));
    if (worst > worst_all) worst_all = worst;
    emb_workspace_free(ws);
    emb_encoder_free(enc);
    cJSON_Delete(ref);
}

int main(void) {
    for (int m = 0; m < N_MODELS; m++) parity(MODELS[m]);
    printf("max abs error over all models: %.3g\n", worst_all);
    return check_report();
}
