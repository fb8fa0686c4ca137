/* Encoder parity against the golden references (tests/fixtures/models/refs: BERT and DistilBERT;
 * tests/fixtures/models2/refs: XLM-RoBERTa, BERT, NomicBERT, JinaBERT v2, ModernBERT), plus
 * load errors, sentence-transformers config and pooling. Run from the repo root. */
#include "check.h"
#include "nn/encoder.h"
#include "nn/encoder_internal.h" /* steps_only */
#include "base/file.h"
#include "nn/encoder_config.h"
#include "sqlite-embed/pooling.h"
#include "sqlite-embed/vec.h"
#include "nn/safetensors.h"
#include "model/sbert_config.h"
#include <cblas.h>
#include <cjson/cJSON.h>
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <pthread.h>
#include <unistd.h>

static const char *MODELS[] = {"bert-tiny-uncased",       "bert-tiny-prefixed",         "bert-tiny-f16",
                               "distilbert-tiny-uncased", "distilbert-tiny-sinusoidal", "minilm-tiny-st"};
#define N_MODELS 6
/* the second set (schema bert-golden-ref/2): every value within 1e-5 */
static const char *MODELS2[] = {"xlmr-tiny",       "xlmr-tiny-st",      "bert-unigram-tiny",
                                "nomic-bert-tiny", "jina-bert-v2-tiny", "modernbert-tiny"};
#define N_MODELS2 6

static double worst_all = 0;

/* The larger of two errors, NaN if either is: a NaN output is the worst error and stays so
 * (a plain "larger" test let the next finite error replace it). */
static double worse(double m, double d) { return isnan(m) || isnan(d) ? NAN : d > m ? d : m; }

/* max |ref - x| over a JSON array of n numbers; INFINITY if the shape differs */
static double diff1(const cJSON *a, const float *x, int n) {
    if (!cJSON_IsArray(a) || cJSON_GetArraySize(a) != n) return INFINITY;
    double m = 0;
    int i = 0;
    for (const cJSON *v = a->child; v; v = v->next, i++) {
        double d = fabs(v->valuedouble - (double)x[i]);
        m = worse(m, d);
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
        m = worse(m, d);
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
        m = worse(m, d);
    }
    return m;
}

static cJSON *load_json(const char *path) {
    char *txt, err[EMB_ERR_LEN];
    size_t len;
    if (emb_read_file(path, 64u << 20, &txt, &len, err)) {
        fprintf(stderr, "%s\n", err);
        return NULL;
    }
    cJSON *j = cJSON_ParseWithLength(txt, len);
    free(txt);
    return j;
}

/* set: "models" or "models2"; tol: the largest error allowed for F32 weights (F16: 1e-3) */
static void parity(const char *set, const char *model, double tol) {
    char dir[512], refp[512], err[EMB_ERR_LEN];
    snprintf(dir, sizeof dir, FIXTURES "/%s/%s", set, model);
    snprintf(refp, sizeof refp, FIXTURES "/%s/refs/%s.json", set, model);
    cJSON *ref = load_json(refp);
    CHECK(ref != NULL, "%s: cannot read %s", model, refp);
    if (!ref) return;
    emb_encoder *enc = NULL;
    int rc = emb_encoder_load(dir, &enc, err);
    CHECK(rc == 0, "%s: load failed: %s", model, err);
    if (rc) {
        cJSON_Delete(ref);
        return;
    }
    const emb_encoder_info *in = emb_encoder_get_info(enc);
    const emb_encoder_config *cfg = emb_encoder_get_config(enc);
    const char *dtype = cJSON_GetObjectItem(ref, "weights_dtype")->valuestring;
    if (strcmp(dtype, "F16") == 0) tol = 1e-3;
    int H = cfg->dims.hidden, L = cfg->dims.layers;
    const cJSON *maxpos = cJSON_GetObjectItem(ref, "max_position_embeddings"); /* absent in the second set */
    CHECK(strcmp(cfg->arch_name, cJSON_GetObjectItem(ref, "arch")->valuestring) == 0 &&
              H == cJSON_GetObjectItem(ref, "hidden_size")->valueint &&
              L == cJSON_GetObjectItem(ref, "num_layers")->valueint &&
              cfg->dims.heads == cJSON_GetObjectItem(ref, "num_heads")->valueint &&
              cfg->dims.intermediate == cJSON_GetObjectItem(ref, "intermediate_size")->valueint &&
              cfg->dims.vocab_size == cJSON_GetObjectItem(ref, "vocab_size")->valueint &&
              (!maxpos || cfg->dims.max_positions == maxpos->valueint) && strcmp(in->weight_type, dtype) == 0 &&
              strcmp(in->tensor_prefix, cJSON_GetObjectItem(ref, "tensor_prefix")->valuestring) == 0 &&
              in->has_pooler == cJSON_IsTrue(cJSON_GetObjectItem(ref, "has_pooler")) &&
              fabs(cfg->ln_eps - cJSON_GetObjectItem(ref, "layer_norm_eps")->valuedouble) <=
                  1e-7 * cfg->ln_eps, /* as float */
          "%s: info does not match the reference (arch %s hidden %d layers %d prefix '%s' type %s)", model,
          cfg->arch_name, H, L, in->tensor_prefix, in->weight_type);
    if (cfg->arch == EMB_ARCH_DISTILBERT)
        CHECK(cfg->sinusoidal == cJSON_IsTrue(cJSON_GetObjectItem(ref, "sinusoidal_pos_embds")),
              "%s: sinusoidal flag", model);
    CHECK(emb_encoder_word_row(enc, -1, NULL) == NULL &&
              emb_encoder_word_row(enc, cfg->dims.vocab_size, NULL) == NULL &&
              emb_encoder_position_row(enc, emb_encoder_max_tokens(enc)) == NULL &&
              (cfg->dims.type_vocab > 0 || emb_encoder_type_row(enc, 0) == NULL),
          "%s: out-of-range rows must be NULL", model);
    /* models with positions in attention have no position rows */
    int has_pos = cJSON_GetObjectItem(cJSON_GetObjectItem(ref, "cases")->child, "position_embeddings") != NULL;
    CHECK(has_pos == (emb_encoder_position_row(enc, 0) != NULL),
          "%s: a position row exactly where the reference has one", model);

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
                  get_ints(cJSON_GetObjectItem(cs, "token_type_ids"), tt, T) == 0,
              "%s/%s: ids", model, cid);

#define CMP(q, dval)                                                                                              \
    do {                                                                                                          \
        double d = (dval);                                                                                        \
        if (d > worst) worst = d;                                                                                 \
        CHECK(d <= tol, "%s/%s: %s max abs error %.3g > %.g", model, cid, q, d, tol);                             \
    } while (0)
        for (int t = 0; t < T; t++) {
            const float *r = emb_encoder_word_row(enc, ids[t], rows + (size_t)t * H);
            memmove(rows + (size_t)t * H, r, sizeof(float) * H); /* r may be that row */
        }
        CMP("word_embeddings", diff2(cJSON_GetObjectItem(cs, "word_embeddings"), rows, T, H));
        if (has_pos) {
            for (int t = 0; t < T; t++) {
                const float *r = emb_encoder_position_row(enc, t);
                memcpy(rows + (size_t)t * H, r, sizeof(float) * H);
            }
            CMP("position_embeddings", diff2(cJSON_GetObjectItem(cs, "position_embeddings"), rows, T, H));
        }
        if (cJSON_GetObjectItem(cs, "token_type_embeddings")) {
            for (int t = 0; t < T; t++) {
                const float *r = emb_encoder_type_row(enc, tt[t]);
                memcpy(rows + (size_t)t * H, r, sizeof(float) * H);
            }
            CMP("token_type_embeddings", diff2(cJSON_GetObjectItem(cs, "token_type_embeddings"), rows, T, H));
        }
        rc = emb_encoder_forward(enc, ws, 1, T, ids, tt, &len, 0, hs, err);
        CHECK(rc == 0, "%s/%s: forward(0) failed: %s", model, cid, err);
        CMP("embeddings_output", diff2(cJSON_GetObjectItem(cs, "embeddings_output"), hs, T, H));
        /* the first set holds every layer, the second the first ones only (layers[L-1], before
         * ModernBERT's final norm, is not in it) */
        const cJSON *layers = cJSON_GetObjectItem(cs, "layers");
        const cJSON *lr = layers ? layers->child : NULL;
        int n_ref_layers = cJSON_GetArraySize(layers);
        CHECK(n_ref_layers == L || (strcmp(set, "models2") == 0 && n_ref_layers >= 1 && n_ref_layers < L),
              "%s/%s: %d reference layers", model, cid, n_ref_layers);
        for (int l = 1; l <= L; l++, lr = lr ? lr->next : NULL) {
            rc = emb_encoder_forward(enc, ws, 1, T, ids, tt, &len, l, hs, err);
            CHECK(rc == 0, "%s/%s: forward(%d) failed: %s", model, cid, l, err);
            char q[32];
            snprintf(q, sizeof q, "layers[%d]", l - 1);
            if (lr) CMP(q, diff2(lr, hs, T, H));
        }
        CMP("last_hidden_state", diff2(cJSON_GetObjectItem(cs, "last_hidden_state"), hs, T, H));
        emb_pool(hs, T, H, T, EMB_POOL_MEAN, pooled[0]);
        emb_pool(hs, T, H, T, EMB_POOL_CLS, pooled[1]);
        memcpy(pooled[2], pooled[0], sizeof(float) * H);
        emb_vec_normalize(pooled[2], pooled[2], (size_t)H);
        CMP("pooled_mean", diff1(cJSON_GetObjectItem(cs, "pooled_mean"), pooled[0], H));
        CMP("pooled_cls", diff1(cJSON_GetObjectItem(cs, "pooled_cls"), pooled[1], H));
        CMP("pooled_mean_normalized", diff1(cJSON_GetObjectItem(cs, "pooled_mean_normalized"), pooled[2], H));
        if (in->has_pooler) {
            float po[4096];
            CHECK(emb_encoder_pooler(enc, pooled[1], po) == 0, "%s: pooler", model);
            CMP("pooler_output", diff1(cJSON_GetObjectItem(cs, "pooler_output"), po, H));
        }
        free(ids);
        free(tt);
        free(hs);
        free(rows);
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
        const cJSON *ri = cJSON_GetObjectItem(bt, "input_ids")->child,
                    *rt = cJSON_GetObjectItem(bt, "token_type_ids")->child;
        for (int b = 0; b < B; b++, ri = ri->next, rt = rt->next) {
            get_ints(ri, ids + (size_t)b * P, P);
            get_ints(rt, tt + (size_t)b * P, P);
        }
        rc = emb_encoder_forward(enc, ws, B, P, ids, tt, lens, L, hs, err);
        CHECK(rc == 0, "%s/%s: batched forward failed: %s", model, cid, err);
        double dv = 0, dpad = 0, dm = 0, dc = 0, dn = 0, dun = 0;
        const cJSON *lhs = cJSON_GetObjectItem(bt, "last_hidden_state")->child;
        const cJSON *pm = cJSON_GetObjectItem(bt, "pooled_mean")->child,
                    *pc = cJSON_GetObjectItem(bt, "pooled_cls")->child,
                    *pn = cJSON_GetObjectItem(bt, "pooled_mean_normalized")->child;
        for (int b = 0; b < B; b++, lhs = lhs->next, pm = pm->next, pc = pc->next, pn = pn->next) {
            const float *x = hs + (size_t)b * P * H;
            double v = diff2(lhs, x, lens[b], H);
            dv = worse(dv, v);
            /* padded rows, as HF computes them */
            const cJSON *r = lhs->child;
            for (int t = 0; t < P; t++, r = r->next)
                if (t >= lens[b]) {
                    v = diff1(r, x + (size_t)t * H, H);
                    dpad = worse(dpad, v);
                }
            float p[3][4096];
            emb_pool(x, P, H, lens[b], EMB_POOL_MEAN, p[0]);
            emb_pool(x, P, H, lens[b], EMB_POOL_CLS, p[1]);
            memcpy(p[2], p[0], sizeof(float) * H);
            emb_vec_normalize(p[2], p[2], (size_t)H);
            v = diff1(pm, p[0], H);
            dm = worse(dm, v);
            v = diff1(pc, p[1], H);
            dc = worse(dc, v);
            v = diff1(pn, p[2], H);
            dn = worse(dn, v);
            int32_t l1 = lens[b];
            rc = emb_encoder_forward(enc, ws, 1, l1, ids + (size_t)b * P, tt + (size_t)b * P, &l1, L, one, err);
            CHECK(rc == 0, "%s/%s: unbatched forward failed: %s", model, cid, err);
            v = maxdiff(one, x, (size_t)l1 * H);
            dun = worse(dun, v);
            float q[4096];
            emb_pool(one, l1, H, l1, EMB_POOL_MEAN, q);
            v = maxdiff(q, p[0], (size_t)H);
            dun = worse(dun, v);
        }
        CMP("batch last_hidden_state (valid positions)", dv);
        CMP("batch last_hidden_state (padded positions)", dpad);
        CMP("batch pooled_mean", dm);
        CMP("batch pooled_cls", dc);
        CMP("batch pooled_mean_normalized", dn);
        CHECK(dun <= 1e-5, "%s/%s: batched vs unbatched differ by %.3g", model, cid, dun);
        printf("  %s/%s: batched vs unbatched max abs %.3g\n", model, cid, dun);
        free(ids);
        free(tt);
        free(lens);
        free(hs);
        free(one);
    }
#undef CMP
    printf("%-28s %-11s %2d cases, max abs error vs reference %.3g (tolerance %.0e), fingerprint %016llx\n", model,
           cfg->arch_name, ncases, worst, tol, (unsigned long long)emb_encoder_fingerprint(enc));
    if (worst > worst_all) worst_all = worst;
    emb_workspace_free(ws);
    emb_encoder_free(enc);
    cJSON_Delete(ref);
}

/* ------------------------------------------------------------------ synthetic models */

static char tmpdir[256];
static uint32_t rng = 12345;
static uint32_t rnd(void) {
    rng = rng * 1664525u + 1013904223u;
    return rng >> 8;
}

static void write_text(const char *dir, const char *name, const char *text) {
    char p[1024];
    snprintf(p, sizeof p, "%s/%s", dir, name);
    FILE *f = fopen(p, "wb");
    if (!f) {
        perror(p);
        return;
    }
    fputs(text, f);
    fclose(f);
}
static void mkdir_p(const char *d) { mkdir(d, 0755); }
static char *subdir(const char *name) {
    static char buf[8][512];
    static int k;
    char *b = buf[k++ & 7];
    snprintf(b, 512, "%s/%s", tmpdir, name);
    mkdir_p(b);
    return b;
}

static const char *BERT_CFG =
    "{\"model_type\":\"bert\",\"hidden_size\":8,\"num_hidden_layers\":2,\"num_attention_heads\":2,"
    "\"intermediate_size\":16,\"max_position_embeddings\":16,\"type_vocab_size\":2,\"vocab_size\":20,"
    "\"layer_norm_eps\":1e-12,\"hidden_act\":\"gelu\"}";

enum { O_DTYPE_F32, O_DTYPE_BF16, O_DTYPE_F16, O_DTYPE_I32 };
typedef struct {
    int dtype; /* for all tensors, or only `only` if set */
    const char *only; /* tensor (suffix) that gets dtype */
    int misalign;
    const char *prefix;
    const char *skip; /* suffix of a tensor left out */
    const char *reshape; /* suffix of a 2-D tensor written with half its columns */
    int shards; /* 0: model.safetensors; 2: two shards + index */
    int extra_head; /* add cls.predictions.bias */
} synth_opts;

static uint16_t f32_to_f16_exact(float f) { /* for values exactly representable, normal or zero */
    uint32_t u;
    memcpy(&u, &f, 4);
    if ((u & 0x7fffffffu) == 0) return (uint16_t)(u >> 16);
    uint32_t sign = (u >> 16) & 0x8000u, exp = (u >> 23) & 0xff, man = u & 0x7fffff;
    return (uint16_t)(sign | ((exp - 112) << 10) | (man >> 13));
}

/* Writes a 2-layer BERT (H=8, heads=2, I=16, vocab 20, 16 positions) with weights k/256,
 * exactly representable in F16 and BF16, so every dtype variant holds the same values. */
static int write_synth(const char *dir, const synth_opts *o) {
    const int H = 8, FF = 16, V = 20, P = 16, L = 2;
    char names[64][128];
    int64_t shapes[64][2];
    int n = 0;
#define ADD(nm, a, b)                                                                                             \
    do {                                                                                                          \
        snprintf(names[n], 128, "%s", nm);                                                                        \
        shapes[n][0] = a;                                                                                         \
        shapes[n][1] = b;                                                                                         \
        n++;                                                                                                      \
    } while (0)
    ADD("embeddings.word_embeddings.weight", V, H);
    ADD("embeddings.position_embeddings.weight", P, H);
    ADD("embeddings.token_type_embeddings.weight", 2, H);
    ADD("embeddings.LayerNorm.weight", H, -1);
    ADD("embeddings.LayerNorm.bias", H, -1);
    for (int l = 0; l < L; l++) {
        char b[128];
#define ADDL(fmt, a, c)                                                                                           \
    do {                                                                                                          \
        snprintf(b, sizeof b, fmt, l);                                                                            \
        ADD(b, a, c);                                                                                             \
    } while (0)
        ADDL("encoder.layer.%d.attention.self.query.weight", H, H);
        ADDL("encoder.layer.%d.attention.self.query.bias", H, -1);
        ADDL("encoder.layer.%d.attention.self.key.weight", H, H);
        ADDL("encoder.layer.%d.attention.self.key.bias", H, -1);
        ADDL("encoder.layer.%d.attention.self.value.weight", H, H);
        ADDL("encoder.layer.%d.attention.self.value.bias", H, -1);
        ADDL("encoder.layer.%d.attention.output.dense.weight", H, H);
        ADDL("encoder.layer.%d.attention.output.dense.bias", H, -1);
        ADDL("encoder.layer.%d.attention.output.LayerNorm.weight", H, -1);
        ADDL("encoder.layer.%d.attention.output.LayerNorm.bias", H, -1);
        ADDL("encoder.layer.%d.intermediate.dense.weight", FF, H);
        ADDL("encoder.layer.%d.intermediate.dense.bias", FF, -1);
        ADDL("encoder.layer.%d.output.dense.weight", H, FF);
        ADDL("encoder.layer.%d.output.dense.bias", H, -1);
        ADDL("encoder.layer.%d.output.LayerNorm.weight", H, -1);
        ADDL("encoder.layer.%d.output.LayerNorm.bias", H, -1);
#undef ADDL
    }
    ADD("pooler.dense.weight", H, H);
    ADD("pooler.dense.bias", H, -1);
    if (o->extra_head) ADD("cls.predictions.bias", V, -1);
#undef ADD
    emb_safetensors_write_tensor wt[64];
    char full[64][160];
    void *bufs[64];
    int m = 0;
    uint32_t saved = rng;
    rng = 777; /* same values for every variant */
    for (int i = 0; i < n; i++) {
        size_t cnt = (size_t)shapes[i][0] * (size_t)(shapes[i][1] < 0 ? 1 : shapes[i][1]);
        float *f = malloc(cnt * sizeof(float));
        int is_ln_w = strstr(names[i], "LayerNorm.weight") != NULL;
        for (size_t k = 0; k < cnt; k++) {
            int v = (int)(rnd() % 129) - 64;
            f[k] = is_ln_w ? 1.0f + v / 128.0f : v / 256.0f * (strstr(names[i], "embeddings") ? 4.0f : 1.0f);
        }
        if (o->skip && strcmp(o->skip, names[i]) == 0) {
            free(f);
            continue;
        }
        int dt = (!o->only || strcmp(o->only, names[i]) == 0) ? o->dtype : O_DTYPE_F32;
        emb_safetensors_write_tensor *t = &wt[m];
        snprintf(full[m], sizeof full[m], "%.20s%.120s",
                 o->prefix && strncmp(names[i], "cls.", 4) ? o->prefix : "", names[i]);
        t->name = full[m];
        t->ndim = shapes[i][1] < 0 ? 1 : 2;
        t->shape[0] = shapes[i][0];
        t->shape[1] = shapes[i][1];
        if (o->reshape && strcmp(o->reshape, names[i]) == 0) t->shape[1] /= 2, cnt /= 2;
        if (dt == O_DTYPE_F32) {
            t->dtype = EMB_DT_F32;
            bufs[m] = f;
        } else if (dt == O_DTYPE_I32) {
            t->dtype = EMB_DT_I32;
            bufs[m] = f;
        } else {
            uint16_t *h = malloc(cnt * 2);
            for (size_t k = 0; k < cnt; k++) {
                uint32_t u;
                memcpy(&u, &f[k], 4);
                h[k] = dt == O_DTYPE_BF16 ? (uint16_t)(u >> 16) : f32_to_f16_exact(f[k]);
            }
            free(f);
            t->dtype = dt == O_DTYPE_BF16 ? EMB_DT_BF16 : EMB_DT_F16;
            bufs[m] = h;
        }
        t->data = bufs[m];
        m++;
    }
    rng = saved;
    char err[EMB_ERR_LEN], p[1024];
    int rc = 0;
    write_text(dir, "config.json", BERT_CFG);
    if (o->shards) {
        int half = m / 2;
        snprintf(p, sizeof p, "%s/model-00001-of-00002.safetensors", dir);
        rc |= emb_safetensors_write(p, wt, half, o->misalign, err);
        snprintf(p, sizeof p, "%s/model-00002-of-00002.safetensors", dir);
        rc |= emb_safetensors_write(p, wt + half, m - half, o->misalign, err);
        size_t cap = 16384, len = 0;
        char *idx = malloc(cap);
        len += (size_t)snprintf(idx + len, cap - len, "{\"metadata\":{\"total_size\":0},\"weight_map\":{");
        for (int i = 0; i < m; i++)
            len += (size_t)snprintf(idx + len, cap - len, "%s\"%s\":\"model-0000%d-of-00002.safetensors\"",
                                    i ? "," : "", wt[i].name, i < half ? 1 : 2);
        snprintf(idx + len, cap - len, "}}");
        write_text(dir, "model.safetensors.index.json", idx);
        free(idx);
    } else {
        snprintf(p, sizeof p, "%s/model.safetensors", dir);
        rc = emb_safetensors_write(p, wt, m, o->misalign, err);
    }
    for (int i = 0; i < m; i++) free(bufs[i]);
    if (rc) fprintf(stderr, "write_synth: %s\n", err);
    return rc;
}

/* forward a fixed 2-sequence batch through the synthetic model */
static int synth_run(const char *dir, float out[2 * 6 * 8], uint64_t *fp, char err[EMB_ERR_LEN],
                     emb_encoder_info *info) {
    emb_encoder *e;
    if (emb_encoder_load(dir, &e, err)) return -1;
    int32_t ids[12] = {2, 5, 7, 9, 3, 0, 2, 11, 19, 3, 0, 0}, tt[12] = {0, 0, 0, 1, 1, 0, 0, 0, 0, 0, 0, 0},
            lens[2] = {5, 4};
    emb_workspace *ws = emb_workspace_new();
    int rc = emb_encoder_forward(e, ws, 2, 6, ids, tt, lens, 2, out, err);
    if (fp) *fp = emb_encoder_fingerprint(e);
    if (info) *info = *emb_encoder_get_info(e);
    emb_workspace_free(ws);
    emb_encoder_free(e);
    return rc;
}

static int load_fails_with(const char *dir, const char *needle1, const char *needle2, char err[EMB_ERR_LEN]) {
    emb_encoder *e = NULL;
    err[0] = 0;
    int rc = emb_encoder_load(dir, &e, err);
    if (rc == 0) {
        emb_encoder_free(e);
        snprintf(err, EMB_ERR_LEN, "(loaded without error)");
        return 0;
    }
    if (e != NULL) return 0;
    return strstr(err, needle1) && (!needle2 || strstr(err, needle2));
}

static void synthetic_tests(void) {
    char err[EMB_ERR_LEN];
    float ref[96], out[96];
    uint64_t fp0, fp;
    emb_encoder_info info;
    synth_opts o = {0};
    char *d = subdir("f32");
    CHECK(write_synth(d, &o) == 0 && synth_run(d, ref, &fp0, err, &info) == 0, "synthetic F32 model: %s", err);
    CHECK(info.converted_bytes == 0 && strcmp(info.weight_type, "F32") == 0 && info.n_files == 1,
          "synthetic F32: used in place (converted %zu bytes, type %s)", info.converted_bytes, info.weight_type);
    o.misalign = 2;
    d = subdir("f32_misaligned");
    CHECK(write_synth(d, &o) == 0 && synth_run(d, out, &fp, err, &info) == 0, "misaligned F32: %s", err);
    CHECK(maxdiff(out, ref, 96) == 0 && fp == fp0 && info.converted_bytes > 0,
          "misaligned F32 copied, same results and fingerprint");
    o.misalign = 0;
    o.dtype = O_DTYPE_BF16;
    d = subdir("bf16");
    CHECK(write_synth(d, &o) == 0 && synth_run(d, out, &fp, err, &info) == 0, "BF16: %s", err);
    CHECK(maxdiff(out, ref, 96) == 0 && fp == fp0 && strcmp(info.weight_type, "BF16") == 0,
          "BF16 equals F32 (same values), type %s", info.weight_type);
    o.dtype = O_DTYPE_F16;
    d = subdir("f16");
    CHECK(write_synth(d, &o) == 0 && synth_run(d, out, &fp, err, &info) == 0, "F16: %s", err);
    CHECK(maxdiff(out, ref, 96) == 0 && fp == fp0 && strcmp(info.weight_type, "F16") == 0,
          "F16 equals F32 (same values)");
    o.only = "encoder.layer.0.intermediate.dense.weight";
    d = subdir("mixed");
    CHECK(write_synth(d, &o) == 0 && synth_run(d, out, &fp, err, &info) == 0 &&
              strcmp(info.weight_type, "mixed") == 0 && maxdiff(out, ref, 96) == 0,
          "mixed F32/F16: %s", err);
    o = (synth_opts){0};
    o.shards = 2;
    d = subdir("sharded");
    CHECK(write_synth(d, &o) == 0 && synth_run(d, out, &fp, err, &info) == 0, "sharded: %s", err);
    CHECK(maxdiff(out, ref, 96) == 0 && fp == fp0 && info.n_files == 2, "sharded equals single file (%d files)",
          info.n_files);
    o = (synth_opts){0};
    o.prefix = "bert.";
    o.extra_head = 1;
    d = subdir("prefixed");
    CHECK(write_synth(d, &o) == 0 && synth_run(d, out, &fp, err, &info) == 0, "prefixed: %s", err);
    CHECK(maxdiff(out, ref, 96) == 0 && fp == fp0 && strcmp(info.tensor_prefix, "bert.") == 0,
          "prefixed + head tensor equals plain");

    /* load errors */
    o = (synth_opts){0};
    o.skip = "encoder.layer.1.output.dense.bias";
    d = subdir("missing");
    write_synth(d, &o);
    CHECK(load_fails_with(d, "missing tensor 'encoder.layer.1.output.dense.bias'", "model.safetensors", err),
          "missing tensor: %s", err);
    o.prefix = "bert.";
    d = subdir("missing_prefixed");
    write_synth(d, &o);
    CHECK(load_fails_with(d, "missing tensor 'bert.encoder.layer.1.output.dense.bias'", NULL, err),
          "missing prefixed tensor: %s", err);
    o = (synth_opts){0};
    o.skip = "embeddings.word_embeddings.weight";
    d = subdir("missing_word");
    write_synth(d, &o);
    CHECK(load_fails_with(d, "embeddings.word_embeddings.weight", "missing", err), "missing word embeddings: %s",
          err);
    o = (synth_opts){0};
    o.reshape = "encoder.layer.1.attention.self.query.weight";
    d = subdir("wrong_shape");
    write_synth(d, &o);
    CHECK(load_fails_with(d,
                          "tensor 'encoder.layer.1.attention.self.query.weight' has shape [8,4], expected [8,8]",
                          "model.safetensors", err),
          "wrong shape: %s", err);
    o = (synth_opts){0};
    o.dtype = O_DTYPE_I32;
    o.only = "embeddings.LayerNorm.bias";
    d = subdir("wrong_dtype");
    write_synth(d, &o);
    CHECK(load_fails_with(d, "embeddings.LayerNorm.bias", "I32", err), "integer dtype: %s", err);
    o = (synth_opts){0};
    o.shards = 2;
    d = subdir("shard_missing");
    write_synth(d, &o);
    {
        char p[1024];
        snprintf(p, sizeof p, "%s/model-00002-of-00002.safetensors", d);
        unlink(p);
    }
    CHECK(load_fails_with(d, "model-00002-of-00002.safetensors", "cannot open", err), "missing shard: %s", err);
    write_text(d, "model.safetensors.index.json", "{\"weight_map\":{\"a\":\"../../etc/passwd.safetensors\"}}");
    CHECK(load_fails_with(d, "model.safetensors.index.json", "shard name", err),
          "shard path escaping the folder: %s", err);
    write_text(d, "model.safetensors.index.json", "{\"weight_map\":[");
    CHECK(load_fails_with(d, "model.safetensors.index.json", NULL, err), "broken index: %s", err);

    /* config errors */
    d = subdir("cfg");
    o = (synth_opts){0};
    write_synth(d, &o);
    write_text(
        d, "config.json",
        "{\"model_type\":\"bert\",\"num_hidden_layers\":2,\"num_attention_heads\":2,\"intermediate_size\":16,"
        "\"max_position_embeddings\":16,\"vocab_size\":20}");
    CHECK(load_fails_with(d, "config.json", "missing key 'hidden_size'", err), "missing hidden_size: %s", err);
    write_text(d, "config.json",
               "{\"model_type\":\"distilbert\",\"dim\":8,\"n_heads\":2,\"hidden_dim\":16,"
               "\"max_position_embeddings\":16,\"vocab_size\":20}");
    CHECK(load_fails_with(d, "config.json", "missing key 'n_layers'", err), "missing n_layers: %s", err);
    write_text(d, "config.json", "{\"model_type\":\"gpt2\",\"n_embd\":8}");
    CHECK(load_fails_with(d, "config.json", "'gpt2'", err), "gpt2: %s", err);
    write_text(d, "config.json", "{\"hidden_size\":8}");
    CHECK(load_fails_with(d, "config.json", "model_type", err), "no model_type: %s", err);
    write_text(d, "config.json", "{\"model_type\":\"bert\",");
    CHECK(load_fails_with(d, "config.json", "JSON", err), "broken config JSON: %s", err);
    write_text(d, "config.json",
               "{\"model_type\":\"bert\",\"hidden_size\":9,\"num_hidden_layers\":2,\"num_attention_heads\":2,"
               "\"intermediate_size\":16,\"max_position_embeddings\":16,\"vocab_size\":20}");
    CHECK(load_fails_with(d, "config.json", "multiple", err), "hidden not a multiple of heads: %s", err);
    write_text(
        d, "config.json",
        "{\"model_type\":\"bert\",\"hidden_size\":8,\"num_hidden_layers\":2,\"num_attention_heads\":2,"
        "\"intermediate_size\":16,\"max_position_embeddings\":16,\"vocab_size\":20,\"hidden_act\":\"relu\"}");
    CHECK(load_fails_with(d, "config.json", "'relu'", err), "unsupported activation: %s", err);
    write_text(d, "config.json",
               "{\"model_type\":\"bert\",\"hidden_size\":8,\"num_hidden_layers\":2,\"num_attention_heads\":2,"
               "\"intermediate_size\":16,\"max_position_embeddings\":16,\"vocab_size\":20,\"position_embedding_"
               "type\":\"relative_key\"}");
    CHECK(load_fails_with(d, "config.json", "relative_key", err), "relative positions: %s", err);
    write_text(d, "config.json",
               "{\"model_type\":\"bert\",\"hidden_size\":8,\"num_hidden_layers\":3,\"num_attention_heads\":2,"
               "\"intermediate_size\":16,\"max_position_embeddings\":16,\"vocab_size\":20}");
    CHECK(load_fails_with(d, "missing tensor 'encoder.layer.2.", NULL, err), "more layers than stored: %s", err);
    write_text(d, "config.json",
               "{\"model_type\":\"bert\",\"hidden_size\":8,\"num_hidden_layers\":2,\"num_attention_heads\":2,"
               "\"intermediate_size\":16,\"max_position_embeddings\":16,\"vocab_size\":30522}");
    CHECK(load_fails_with(d, "embeddings.word_embeddings.weight' has shape [20,8], expected [30522,8]", NULL, err),
          "vocab mismatch: %s", err);
    d = subdir("empty");
    CHECK(load_fails_with(d, "config.json", "cannot open", err), "no config.json: %s", err);
    write_text(d, "config.json", BERT_CFG);
    CHECK(load_fails_with(d, "model.safetensors", NULL, err), "no weights: %s", err);

    /* forward argument errors */
    d = subdir("f32");
    emb_encoder *e;
    if (emb_encoder_load(d, &e, err) == 0) {
        emb_workspace *ws = emb_workspace_new();
        float o2[17 * 8];
        int32_t ids[17] = {0}, tt[17] = {0}, len = 3;
        CHECK(emb_encoder_forward(e, ws, 1, 17, ids, tt, &len, 2, o2, err) != 0 && strstr(err, "17 tokens"),
              "too many tokens: %s", err);
        ids[1] = 20;
        CHECK(emb_encoder_forward(e, ws, 1, 3, ids, tt, &len, 2, o2, err) != 0 && strstr(err, "token id 20"),
              "bad id: %s", err);
        ids[1] = 1;
        tt[2] = 2;
        CHECK(emb_encoder_forward(e, ws, 1, 3, ids, tt, &len, 2, o2, err) != 0 && strstr(err, "type id 2"),
              "bad type id: %s", err);
        tt[2] = 0;
        CHECK(emb_encoder_forward(e, ws, 1, 3, ids, tt, &len, 3, o2, err) != 0 && strstr(err, "layer 3"),
              "bad layer: %s", err);
        len = 0;
        CHECK(emb_encoder_forward(e, ws, 1, 3, ids, tt, &len, 2, o2, err) != 0 && strstr(err, "length 0"),
              "empty sequence: %s", err);
        len = 3;
        CHECK(emb_encoder_forward(e, ws, 1, 3, ids, NULL, &len, 2, o2, err) == 0, "NULL type ids: %s", err);
        emb_workspace_free(ws);
        emb_encoder_free(e);
    }
}

/* Corrupted and truncated copies of a real checkpoint. */
static unsigned char *slurp(const char *path, size_t *n) {
    char *t, err[EMB_ERR_LEN];
    if (emb_read_file(path, 64u << 20, &t, n, err)) return NULL;
    return (unsigned char *)t;
}
static void put(const char *dir, const unsigned char *b, size_t n) {
    char p[1024];
    snprintf(p, sizeof p, "%s/model.safetensors", dir);
    FILE *f = fopen(p, "wb");
    fwrite(b, 1, n, f);
    fclose(f);
}

static void corrupt_tests(void) {
    char err[EMB_ERR_LEN];
    size_t n;
    unsigned char *orig = slurp(FIXTURES "/models/bert-tiny-uncased/model.safetensors", &n);
    CHECK(orig != NULL, "read bert-tiny-uncased");
    if (!orig) return;
    char *d = subdir("corrupt");
    char *cfg;
    size_t cl;
    emb_read_file(FIXTURES "/models/bert-tiny-uncased/config.json", 1 << 20, &cfg, &cl, err);
    write_text(d, "config.json", cfg);
    free(cfg);
    unsigned char *b = malloc(n);
    uint64_t hl = 0;
    for (int i = 7; i >= 0; i--) hl = hl << 8 | orig[i];

    put(d, orig, n / 2);
    CHECK(load_fails_with(d, "model.safetensors", "outside the data section", err), "truncated to half: %s", err);
    put(d, orig, 5);
    CHECK(load_fails_with(d, "model.safetensors", "too short", err), "truncated to 5 bytes: %s", err);
    put(d, orig, 100);
    CHECK(load_fails_with(d, "model.safetensors", "past the end", err), "truncated inside the header: %s", err);
    put(d, orig, 8 + hl);
    CHECK(load_fails_with(d, "model.safetensors", "outside the data section", err), "header only: %s", err);
    memcpy(b, orig, n);
    b[5] = 1;
    put(d, b, n);
    CHECK(load_fails_with(d, "model.safetensors", "exceeds the limit", err), "huge header length: %s", err);
    memcpy(b, orig, n);
    b[8] = 'x';
    put(d, b, n);
    CHECK(load_fails_with(d, "model.safetensors", "not a JSON object", err), "header not an object: %s", err);
    memcpy(b, orig, n);
    char *colon = memchr(b + 8 + hl / 2, ':', hl / 2);
    *colon = ';';
    put(d, b, n);
    CHECK(load_fails_with(d, "model.safetensors", "not valid JSON", err), "broken header JSON: %s", err);
    memcpy(b, orig, n);
    char *f32 = memmem(b + 8, hl, "\"F32\"", 5);
    f32[3] = '3';
    put(d, b, n);
    CHECK(load_fails_with(d, "model.safetensors", "unknown dtype 'F33'", err), "unknown dtype: %s", err);
    memcpy(b, orig, n);
    char *sh = memmem(b + 8, hl, "[512,32]", 8);
    if (!sh) sh = memmem(b + 8, hl, "[512, 32]", 9);
    CHECK(sh != NULL, "position shape in header");
    if (sh) {
        sh[1] = '6'; /* 612 x 32 no longer matches the offsets */
        put(d, b, n);
        CHECK(load_fails_with(d, "position_embeddings", "data_offsets span", err), "shape vs offsets: %s", err);
    }
    /* random byte flips in the header and in the data: a clean error or a clean load, never a crash */
    int ok = 1, loaded = 0, failed = 0;
    uint32_t saved = rng;
    rng = 99;
    for (int it = 0; it < 300; it++) {
        memcpy(b, orig, n);
        int flips = 1 + (int)(rnd() % 4);
        for (int k = 0; k < flips; k++) {
            size_t pos = it % 3 == 2 ? rnd() % n : 8 + rnd() % hl;
            b[pos] ^= (unsigned char)(1u << (rnd() % 8));
        }
        put(d, b, n);
        emb_encoder *e = NULL;
        err[0] = 0;
        if (emb_encoder_load(d, &e, err) == 0) {
            loaded++;
            emb_encoder_free(e);
        } else {
            failed++;
            if (!err[0]) ok = 0;
        }
    }
    rng = saved;
    CHECK(ok, "every failed load of a corrupted file has a message");
    printf("corrupted copies: %d failed cleanly, %d loaded (flips in data or harmless header bytes)\n", failed,
           loaded);
    free(b);
    free(orig);
}

/* DistilBERT with sinusoidal_pos_embds and no stored table: built as transformers builds it */
static void sinusoidal_fallback_test(void) {
    char err[EMB_ERR_LEN], path[1024];
    const char *src = FIXTURES "/models/distilbert-tiny-sinusoidal";
    emb_safetensors *st = NULL;
    snprintf(path, sizeof path, "%s/model.safetensors", src);
    if (emb_safetensors_open(path, 1, &st, err)) {
        CHECK(0, "%s", err);
        return;
    }
    emb_safetensors_write_tensor *wt = calloc((size_t)st->h.n, sizeof *wt);
    int m = 0;
    for (int i = 0; i < st->h.n; i++) {
        const emb_safetensors_tensor *t = &st->h.tensors[i];
        if (strcmp(t->name, "embeddings.position_embeddings.weight") == 0) continue;
        wt[m].name = t->name;
        wt[m].dtype = t->dtype;
        wt[m].ndim = t->ndim;
        memcpy(wt[m].shape, t->shape, sizeof t->shape);
        wt[m].data = t->data;
        m++;
    }
    char *d = subdir("sinusoidal_generated");
    snprintf(path, sizeof path, "%s/model.safetensors", d);
    int rc = emb_safetensors_write(path, wt, m, 0, err);
    free(wt);
    emb_safetensors_close(st);
    char *cfg;
    size_t cl;
    snprintf(path, sizeof path, "%s/config.json", src);
    emb_read_file(path, 1 << 20, &cfg, &cl, err);
    write_text(d, "config.json", cfg);
    free(cfg);
    emb_encoder *a = NULL, *b = NULL;
    rc |= emb_encoder_load(src, &a, err);
    rc |= emb_encoder_load(d, &b, err);
    CHECK(rc == 0, "sinusoidal fallback: %s", err);
    if (a && b) {
        double dm = 0;
        for (int p = 0; p < 512; p++) {
            double x = maxdiff(emb_encoder_position_row(a, p), emb_encoder_position_row(b, p), 32);
            dm = worse(dm, x);
        }
        CHECK(dm <= 2e-6, "generated sinusoidal table equals the stored one (max diff %.3g)", dm);
        printf("sinusoidal table built at load vs stored: max diff %.3g\n", dm);
        if (!emb_encoder_get_config(b)->sinusoidal) CHECK(0, "sinusoidal flag");
    }
    emb_encoder_free(a);
    emb_encoder_free(b);
}

static void sbert_config_tests(void) {
    char err[EMB_ERR_LEN];
    emb_sbert_config c;
    int rc = emb_sbert_config_load(FIXTURES "/models/minilm-tiny-st", &c, err);
    CHECK(rc == 0 && c.present && c.pool == EMB_POOL_MEAN && c.normalize && c.max_seq_length == 128 &&
              !c.do_lower_case && c.pooling_dim == 48 && c.transformer_path[0] == 0,
          "minilm-tiny-st: rc %d present %d pool %d normalize %d max_seq_length %d (%s)", rc, c.present, c.pool,
          c.normalize, c.max_seq_length, rc ? err : "");
    rc = emb_sbert_config_load(FIXTURES "/models/bert-tiny-uncased", &c, err);
    CHECK(rc == 0 && !c.present && c.pool == EMB_POOL_MEAN && !c.normalize && c.max_seq_length == 0,
          "plain model: no st config");
    char *d = subdir("st");
    char *p1 = subdir("st/1_Pooling");
    (void)p1;
    write_text(
        d, "modules.json",
        "[{\"idx\":0,\"name\":\"0\",\"path\":\"\",\"type\":\"sentence_transformers.models.Transformer\"},"
        "{\"idx\":1,\"name\":\"1\",\"path\":\"1_Pooling\",\"type\":\"sentence_transformers.models.Pooling\"}]");
    write_text(
        d, "1_Pooling/config.json",
        "{\"word_embedding_dimension\":8,\"pooling_mode_cls_token\":true,\"pooling_mode_mean_tokens\":false}");
    rc = emb_sbert_config_load(d, &c, err);
    CHECK(rc == 0 && c.present && c.pool == EMB_POOL_CLS && !c.normalize && c.max_seq_length == 0,
          "cls pooling, no normalize: %s", rc ? err : "");
    write_text(d, "1_Pooling/config.json", "{\"pooling_mode_max_tokens\":true}");
    write_text(d, "sentence_bert_config.json", "{\"max_seq_length\":256,\"do_lower_case\":true}");
    rc = emb_sbert_config_load(d, &c, err);
    CHECK(rc == 0 && c.pool == EMB_POOL_MAX && c.max_seq_length == 256 && c.do_lower_case,
          "max pooling, lower case: %s", rc ? err : "");
    write_text(d, "1_Pooling/config.json", "{\"pooling_mode_mean_sqrt_len_tokens\":true}");
    rc = emb_sbert_config_load(d, &c, err);
    CHECK(rc == 0 && c.pool == EMB_POOL_MEAN_SQRT_LEN && c.include_prompt, "mean_sqrt_len: %s", rc ? err : "");
    /* sentence-transformers 6's spelling: one "pooling_mode" name, include_prompt, embedding_dimension */
    write_text(d, "1_Pooling/config.json",
               "{\"embedding_dimension\":8,\"pooling_mode\":\"lasttoken\",\"include_prompt\":false}");
    rc = emb_sbert_config_load(d, &c, err);
    CHECK(rc == 0 && c.pool == EMB_POOL_LAST_TOKEN && !c.include_prompt && c.pooling_dim == 8,
          "ST 6 pooling config: %s", rc ? err : "");
    write_text(d, "1_Pooling/config.json",
               "{\"pooling_mode\":[\"weightedmean\"],\"pooling_mode_cls_token\":true}");
    rc = emb_sbert_config_load(d, &c, err);
    CHECK(rc == 0 && c.pool == EMB_POOL_WEIGHTED_MEAN, "pooling_mode wins over the old booleans: %s",
          rc ? err : "");
    write_text(d, "1_Pooling/config.json", "{\"pooling_mode\":[\"mean\",\"max\"]}");
    rc = emb_sbert_config_load(d, &c, err);
    CHECK(rc != 0 && strstr(err, "several pooling modes"), "two ST 6 modes: %s", err);
    write_text(d, "1_Pooling/config.json", "{\"pooling_mode\":\"sum\"}");
    rc = emb_sbert_config_load(d, &c, err);
    CHECK(rc != 0 && strstr(err, "1_Pooling/config.json") && strstr(err, "pooling_mode"), "unknown mode: %s", err);
    write_text(d, "1_Pooling/config.json", "{\"pooling_mode_mean_tokens\":true,\"pooling_mode_max_tokens\":true}");
    rc = emb_sbert_config_load(d, &c, err);
    CHECK(rc != 0 && strstr(err, "several pooling modes"), "two modes: %s", err);
    write_text(d, "1_Pooling/config.json", "{\"pooling_mode_max_tokens\":false}");
    rc = emb_sbert_config_load(d, &c, err);
    CHECK(rc == 0 && c.pool == EMB_POOL_MEAN, "no mode set is mean, as sentence-transformers 6 reads it: %s",
          rc ? err : "");
    write_text(d, "1_Pooling/config.json", "{\"pooling_mode_mean_tokens\":true}");
    write_text(d, "sentence_bert_config.json", "{\"max_seq_length\":\"long\"}");
    rc = emb_sbert_config_load(d, &c, err);
    CHECK(rc != 0 && strstr(err, "sentence_bert_config.json") && strstr(err, "max_seq_length"),
          "bad max_seq_length: %s", err);
    write_text(d, "sentence_bert_config.json", "{}");
    write_text(d, "modules.json",
               "[{\"path\":\"\",\"type\":\"sentence_transformers.models.Transformer\"},"
               "{\"path\":\"1_Pooling\",\"type\":\"sentence_transformers.models.Pooling\"},"
               "{\"path\":\"2_Dense\",\"type\":\"sentence_transformers.models.Dense\"}]");
    rc = emb_sbert_config_load(d, &c, err);
    CHECK(rc == 0 && c.n_dense == 1 && strcmp(c.dense_path[0], "2_Dense") == 0, "Dense module listed: %s",
          rc ? err : "");
    write_text(d, "modules.json",
               "[{\"path\":\"\",\"type\":\"sentence_transformers.base.modules.transformer.Transformer\"},"
               "{\"path\":\"1_Pooling\",\"type\":\"sentence_transformers.models.Pooling\"},"
               "{\"path\":\"2_LSTM\",\"type\":\"sentence_transformers.models.LSTM\"}]");
    rc = emb_sbert_config_load(d, &c, err);
    CHECK(rc != 0 && strstr(err, "modules.json") && strstr(err, "LSTM"), "unknown module: %s", err);
    write_text(d, "modules.json",
               "[{\"path\":\"\",\"type\":\"sentence_transformers.models.Transformer\"},"
               "{\"path\":\"3_Pool\",\"type\":\"sentence_transformers.models.Pooling\"}]");
    rc = emb_sbert_config_load(d, &c, err);
    CHECK(rc != 0 && strstr(err, "3_Pool/config.json"), "missing pooling config: %s", err);
    write_text(d, "modules.json", "[{\"path\":\"../x\",\"type\":\"sentence_transformers.models.Pooling\"}]");
    rc = emb_sbert_config_load(d, &c, err);
    CHECK(rc != 0 && strstr(err, "modules.json"), "path escaping the folder: %s", err);
    write_text(d, "modules.json", "[{");
    rc = emb_sbert_config_load(d, &c, err);
    CHECK(rc != 0 && strstr(err, "modules.json"), "broken modules.json: %s", err);
}

static void pooling_tests(void) {
    float h[3 * 2] = {1, -2, 3, 5, -7, 1}, o[2];
    emb_pool(h, 3, 2, 2, EMB_POOL_MAX, o);
    CHECK(o[0] == 3 && o[1] == 5, "max over the first 2 rows");
    emb_pool(h, 3, 2, 3, EMB_POOL_MEAN, o);
    CHECK(fabsf(o[0] + 1.0f) < 1e-7f && fabsf(o[1] - 4.0f / 3) < 1e-7f, "mean over 3 rows");
    emb_pool(h, 3, 2, 3, EMB_POOL_CLS, o);
    CHECK(o[0] == 1 && o[1] == -2, "cls");
    emb_pool(h, 3, 2, 0, EMB_POOL_MEAN, o);
    CHECK(o[0] == 0 && o[1] == 0, "len 0 gives zeros");
    float z[3] = {0, 0, 0}, v[2] = {3, 4};
    emb_vec_normalize(z, z, 3);
    CHECK(z[0] == 0 && z[1] == 0 && z[2] == 0, "zero vector stays zero");
    emb_vec_normalize(v, v, 2);
    CHECK(fabsf(v[0] - 0.6f) < 1e-7f && fabsf(v[1] - 0.8f) < 1e-7f, "normalize [3,4]");
    emb_pool_mode m;
    CHECK(emb_pool_mode_parse("max", &m) == 0 && m == EMB_POOL_MAX && emb_pool_mode_parse("sum", &m) != 0 &&
              strcmp(emb_pool_mode_name(EMB_POOL_CLS), "cls") == 0,
          "pool mode names");
}

/* Two threads share one encoder, each with its own workspace; a workspace grown by a
 * large batch gives the same result on a small one. */
typedef struct {
    const emb_encoder *e;
    float *out;
    int rc;
} thr_arg;
static void *thr_main(void *p) {
    thr_arg *a = p;
    emb_workspace *ws = emb_workspace_new();
    char err[EMB_ERR_LEN];
    int32_t ids[4 * 32], lens[4] = {32, 17, 9, 30};
    for (int i = 0; i < 4 * 32; i++) ids[i] = (i * 7919) % 30000;
    a->rc = 0;
    for (int it = 0; it < 20 && !a->rc; it++)
        a->rc = emb_encoder_forward(a->e, ws, 4, 32, ids, NULL, lens, 3, a->out, err);
    emb_workspace_free(ws);
    return NULL;
}
static void thread_tests(void) {
    char err[EMB_ERR_LEN];
    emb_encoder *e;
    if (emb_encoder_load(FIXTURES "/models/minilm-tiny-st", &e, err)) {
        CHECK(0, "load: %s", err);
        return;
    }
    const int H = 48, N = 4 * 32 * 48;
    float *solo = malloc(sizeof(float) * N), *o1 = malloc(sizeof(float) * N), *o2 = malloc(sizeof(float) * N);
    thr_arg a0 = {e, solo, 0}, a1 = {e, o1, 0}, a2 = {e, o2, 0};
    thr_main(&a0);
    pthread_t t1, t2;
    pthread_create(&t1, NULL, thr_main, &a1);
    pthread_create(&t2, NULL, thr_main, &a2);
    pthread_join(t1, NULL);
    pthread_join(t2, NULL);
    CHECK(a0.rc == 0 && a1.rc == 0 && a2.rc == 0 && memcmp(solo, o1, sizeof(float) * N) == 0 &&
              memcmp(solo, o2, sizeof(float) * N) == 0,
          "two threads with one shared encoder give the one-thread result");
    /* workspace reuse: big batch then small in one workspace == fresh workspace */
    emb_workspace *ws = emb_workspace_new(), *fresh = emb_workspace_new();
    int32_t ids[5] = {101, 2000, 3000, 4000, 102}, len = 5;
    float a[5 * 48], b[5 * 48];
    int32_t bids[4 * 32], blens[4] = {32, 32, 32, 32};
    for (int i = 0; i < 4 * 32; i++) bids[i] = i + 1000;
    int rc = emb_encoder_forward(e, ws, 4, 32, bids, NULL, blens, 3, solo, err);
    rc |= emb_encoder_forward(e, ws, 1, 5, ids, NULL, &len, 3, a, err);
    rc |= emb_encoder_forward(e, fresh, 1, 5, ids, NULL, &len, 3, b, err);
    CHECK(rc == 0 && memcmp(a, b, sizeof a) == 0, "reused workspace gives the same result");
    (void)H;
    /* a batch large enough for the helper threads (rows x hidden >= 16384), run as a model too
     * large for a split by sequences would run it, each step split over the threads: the same
     * result with 1 and with 2 OpenBLAS threads, and against the sequences one by one */
    {
        e->steps_only = 1;
        enum { B4 = 4, T4 = 160 };
        int32_t *ids4 = malloc(sizeof(int32_t) * B4 * T4), lens4[B4] = {160, 97, 131, 8};
        float *o_1 = malloc(sizeof(float) * B4 * T4 * 48), *o_2 = malloc(sizeof(float) * B4 * T4 * 48),
              *o_s = malloc(sizeof(float) * T4 * 48);
        for (int i = 0; i < B4 * T4; i++) ids4[i] = 1000 + (i * 7919) % 28000;
        int saved = openblas_get_num_threads();
        openblas_set_num_threads(1);
        emb_workspace *w1 = emb_workspace_new();
        rc = emb_encoder_forward(e, w1, B4, T4, ids4, NULL, lens4, 3, o_1, err);
        openblas_set_num_threads(2);
        rc |= emb_encoder_forward(e, w1, B4, T4, ids4, NULL, lens4, 3, o_2, err);
        double dmax = 0, dseq = 0;
        for (int b = 0; b < B4; b++) {
            double d1 = maxdiff(o_1 + (size_t)b * T4 * 48, o_2 + (size_t)b * T4 * 48, (size_t)lens4[b] * 48);
            dmax = worse(dmax, d1);
            int32_t l = lens4[b];
            rc |= emb_encoder_forward(e, w1, 1, l, ids4 + (size_t)b * T4, NULL, &l, 3, o_s, err);
            d1 = maxdiff(o_s, o_2 + (size_t)b * T4 * 48, (size_t)l * 48);
            dseq = worse(dseq, d1);
        }
        openblas_set_num_threads(saved);
        e->steps_only = 0;
        CHECK(rc == 0 && dmax <= 1e-5 && dseq <= 1e-5,
              "4 x 160 batch: 1 vs 2 threads differ by %.3g, batch vs single by %.3g (%s)", dmax, dseq,
              rc ? err : "");
        emb_workspace_free(w1);
        free(ids4);
        free(o_1);
        free(o_2);
        free(o_s);
    }
    /* a model this narrow runs a batch of 1,024 rows or more on one thread as sub-batches of whole
     * sequences (9 x 128: four of 2 and one of 1), and splits a batch by sequences over two
     * threads (9 x 128: 4 and 5; 3 x 50: 1 and 2, too few rows for sub-batches): every sequence,
     * its length and token types, as it is alone, with float32 and with int8 weights */
    for (int kind = 0; kind < 2; kind++) {
        enum { B9 = 9, T9 = 128 };
        int32_t *ids9 = malloc(sizeof(int32_t) * B9 * T9), *types9 = malloc(sizeof(int32_t) * B9 * T9);
        int32_t lens9[B9] = {128, 5, 77, 128, 128, 1, 64, 100, 33};
        float *o9 = malloc(sizeof(float) * B9 * T9 * 48), *o_s = malloc(sizeof(float) * T9 * 48);
        for (int i = 0; i < B9 * T9; i++) ids9[i] = 1000 + (i * 7919) % 28000, types9[i] = (i / 7) % 2;
        if (kind == 1 && emb_encoder_set_weights(e, EMB_WEIGHTS_INT8, err)) {
            CHECK(0, "int8 weights: %s", err);
            free(ids9);
            free(types9);
            free(o9);
            free(o_s);
            break;
        }
        const struct { int B, T, threads; } runs[] = {{B9, T9, 1}, {B9, T9, 2}, {3, 50, 2}};
        int saved = openblas_get_num_threads();
        emb_workspace *w9 = emb_workspace_new();
        for (int r = 0; r < 3; r++) {
            int B = runs[r].B, T = runs[r].T;
            int32_t lens[B9];
            for (int b = 0; b < B; b++) lens[b] = lens9[b] < T ? lens9[b] : T;
            openblas_set_num_threads(runs[r].threads);
            rc = emb_encoder_forward(e, w9, B, T, ids9, types9, lens, 3, o9, err);
            double dseq = 0;
            for (int b = 0; b < B && !rc; b++) {
                int32_t l = lens[b];
                rc |= emb_encoder_forward(e, w9, 1, l, ids9 + (size_t)b * T, types9 + (size_t)b * T, &l, 3, o_s,
                                          err);
                double d = maxdiff(o_s, o9 + (size_t)b * T * 48, (size_t)l * 48);
                if (d > dseq) dseq = d;
            }
            CHECK(rc == 0 && dseq <= 1e-5,
                  "%s %d x %d batch on %d thread(s): each sequence as alone (max diff %.3g) %s",
                  kind ? "int8" : "float32", B, T, runs[r].threads, dseq, rc ? err : "");
        }
        openblas_set_num_threads(saved);
        emb_workspace_free(w9);
        free(ids9);
        free(types9);
        free(o9);
        free(o_s);
    }
    emb_workspace_free(ws);
    emb_workspace_free(fresh);
    free(solo);
    free(o1);
    free(o2);
    emb_encoder_free(e);
}

static void rm_rf(const char *d) {
    char cmd[600];
    if (strncmp(d, "/tmp/", 5) == 0 && strlen(d) > 10) {
        snprintf(cmd, sizeof cmd, "rm -rf '%s'", d);
        if (system(cmd) != 0) fprintf(stderr, "could not remove %s\n", d);
    }
}

int main(void) {
    for (int m = 0; m < N_MODELS; m++) parity("models", MODELS[m], 1e-4);
    for (int m = 0; m < N_MODELS2; m++) parity("models2", MODELS2[m], 1e-5);
    printf("max abs error over all models: %.3g\n", worst_all);
    snprintf(tmpdir, sizeof tmpdir, "/tmp/test_encoder_XXXXXX");
    if (!mkdtemp(tmpdir)) {
        perror("mkdtemp");
        return 1;
    }
    synthetic_tests();
    corrupt_tests();
    sinusoidal_fallback_test();
    sbert_config_tests();
    pooling_tests();
    thread_tests();
    rm_rf(tmpdir);
    return check_report();
}
