/* A cross-encoder's classification head (classifier.h): config.json's settings, the head's
 * tensors copied as float32 from the encoder's open weight files, and the head applied to one
 * sequence in double precision (a few H x H products per sequence: nothing next to the encoder). */
#include "nn/classifier.h"
#include "base/emb_json.h"
#include "base/file.h"
#include "nn/gguf_quant.h"
#include <cjson/cJSON.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <xxhash.h>

typedef enum { HEAD_BERT, HEAD_ROBERTA, HEAD_MODERNBERT } head_kind;
typedef enum { ACT_NONE, ACT_IDENTITY, ACT_SIGMOID, ACT_TANH } score_act;
typedef enum { DENSE_GELU, DENSE_GELU_TANH, DENSE_RELU, DENSE_SILU, DENSE_TANH } dense_act;

struct emb_classifier {
    head_kind kind;
    const char *arch; /* the architecture's name, a literal */
    int labels, H;
    int mean_pool; /* ModernBERT "classifier_pooling": "mean" */
    dense_act act; /* ModernBERT "classifier_activation" */
    score_act score;
    float eps; /* ModernBERT head.norm */
    float *dense_w, *dense_b, *norm_g, *norm_b, *out_w, *out_b; /* NULL: absent (a bias of 0, no norm) */
    uint64_t fingerprint;
};

static const struct {
    const char *name;
    head_kind kind;
    emb_arch arch;
} KNOWN[] = {
    {"BertForSequenceClassification", HEAD_BERT, EMB_ARCH_BERT},
    {"RobertaForSequenceClassification", HEAD_ROBERTA, EMB_ARCH_ROBERTA},
    {"XLMRobertaForSequenceClassification", HEAD_ROBERTA, EMB_ARCH_ROBERTA},
    {"ModernBertForSequenceClassification", HEAD_MODERNBERT, EMB_ARCH_MODERNBERT},
};
#define N_KNOWN (sizeof KNOWN / sizeof *KNOWN)

/* The ForSequenceClassification entry of "architectures": its index in KNOWN, -2 none, -1 error. */
static int find_architecture(const cJSON *root, char err[EMB_ERR_LEN]) {
    const cJSON *archs = cJSON_GetObjectItemCaseSensitive(root, "architectures");
    const cJSON *a;
    if (!cJSON_IsArray(archs)) return -2;
    cJSON_ArrayForEach(a, archs) {
        const char *s = cJSON_IsString(a) ? a->valuestring : "";
        if (!strstr(s, "ForSequenceClassification")) continue;
        for (size_t k = 0; k < N_KNOWN; k++)
            if (strcmp(s, KNOWN[k].name) == 0) return (int)k;
        return emb_fail(err,
                        "config.json: architecture '%.80s' is not a supported cross-encoder (supported: "
                        "BertForSequenceClassification, RobertaForSequenceClassification, "
                        "XLMRobertaForSequenceClassification, ModernBertForSequenceClassification)",
                        s);
    }
    return -2;
}

/* num_labels as transformers' PretrainedConfig sets it: id2label's size, else "num_labels", else 2. */
static int read_labels(const cJSON *root, int *labels, char err[EMB_ERR_LEN]) {
    const cJSON *id2label = cJSON_GetObjectItemCaseSensitive(root, "id2label");
    const cJSON *n = cJSON_GetObjectItemCaseSensitive(root, "num_labels");
    int64_t v = 2;
    if (cJSON_IsObject(id2label)) v = cJSON_GetArraySize(id2label);
    else if (n && !cJSON_IsNull(n) && emb_json_int(n, 1, 1 << 20, &v))
        return emb_fail(err, "config.json: 'num_labels' must be a whole number from 1");
    if (v < 1) return emb_fail(err, "config.json: 'id2label' is empty");
    *labels = (int)v;
    return 0;
}

/* What a JSON value is, for a message about a setting of the wrong kind. */
static const char *json_kind(const cJSON *j) {
    if (cJSON_IsString(j)) return "a string";
    if (cJSON_IsNumber(j)) return "a number";
    if (cJSON_IsBool(j)) return "a boolean";
    if (cJSON_IsArray(j)) return "an array";
    if (cJSON_IsObject(j)) return "an object";
    return "null";
}

/* A string setting of config.json: absent or null gives dflt; any other kind is an error. */
static int string_setting(const cJSON *root, const char *key, const char *dflt, const char **out,
                          char err[EMB_ERR_LEN]) {
    const cJSON *v = cJSON_GetObjectItemCaseSensitive(root, key);
    *out = dflt;
    if (!v || cJSON_IsNull(v)) return 0;
    if (!cJSON_IsString(v)) return emb_fail(err, "config.json: %s must be a string, not %s", key, json_kind(v));
    *out = v->valuestring;
    return 0;
}

/* The sentence-transformers CrossEncoder's activation ("torch.nn.modules.activation.Sigmoid"). */
static int read_activation(const cJSON *root, score_act *out, char err[EMB_ERR_LEN]) {
    const cJSON *st = cJSON_GetObjectItemCaseSensitive(root, "sentence_transformers");
    const cJSON *fn = cJSON_IsObject(st) ? cJSON_GetObjectItemCaseSensitive(st, "activation_fn") : NULL;
    if (!fn || cJSON_IsNull(fn))
        fn = cJSON_GetObjectItemCaseSensitive(root, "sbert_ce_default_activation_function");
    *out = ACT_NONE;
    if (!fn || cJSON_IsNull(fn)) return 0; /* the caller picks sentence-transformers' default */
    if (!cJSON_IsString(fn))
        return emb_fail(err,
                        "config.json: the cross-encoder's activation_fn must be a string such as "
                        "\"torch.nn.modules.activation.Sigmoid\", not %s",
                        json_kind(fn));
    const char *s = fn->valuestring, *last = strrchr(s, '.');
    last = last ? last + 1 : s;
    if (strncmp(s, "torch.", 6) == 0) {
        if (strcmp(last, "Sigmoid") == 0) *out = ACT_SIGMOID;
        else if (strcmp(last, "Identity") == 0) *out = ACT_IDENTITY;
        else if (strcmp(last, "Tanh") == 0) *out = ACT_TANH;
    }
    if (*out != ACT_NONE) return 0;
    return emb_fail(err,
                    "config.json: the cross-encoder's activation '%.100s' is not supported (torch's Sigmoid, "
                    "Identity or Tanh)",
                    s);
}

/* ModernBERT's head settings: classifier_pooling, classifier_activation (ACT2FN's names). */
static int read_modernbert(const cJSON *root, emb_classifier *c, int *dense_bias, char err[EMB_ERR_LEN]) {
    const cJSON *bias = cJSON_GetObjectItemCaseSensitive(root, "classifier_bias");
    const char *p, *a;
    if (string_setting(root, "classifier_pooling", "cls", &p, err) ||
        string_setting(root, "classifier_activation", "gelu", &a, err))
        return -1;
    if (strcmp(p, "cls") != 0 && strcmp(p, "mean") != 0)
        return emb_fail(err, "config.json: classifier_pooling '%.40s' is not \"cls\" or \"mean\"", p);
    c->mean_pool = strcmp(p, "mean") == 0;
    static const struct {
        const char *name;
        dense_act act;
    } acts[] = {{"gelu", DENSE_GELU},          {"gelu_python", DENSE_GELU},
                {"gelu_new", DENSE_GELU_TANH}, {"gelu_pytorch_tanh", DENSE_GELU_TANH},
                {"relu", DENSE_RELU},          {"silu", DENSE_SILU},
                {"swish", DENSE_SILU},         {"tanh", DENSE_TANH}};
    size_t k = 0;
    while (k < sizeof acts / sizeof *acts && strcmp(acts[k].name, a) != 0) k++;
    if (k == sizeof acts / sizeof *acts)
        return emb_fail(err, "config.json: classifier_activation '%.40s' is not supported", a);
    c->act = acts[k].act;
    *dense_bias = cJSON_IsTrue(bias);
    return 0;
}

/* "[2]", "[1, 32]": a shape as a message shows it, cut to fit cap. */
static void shape_text(char *buf, size_t cap, int nd, const int64_t *shape) {
    size_t o = 0;
    buf[0] = '\0';
    for (int i = 0; i < nd && o < cap; i++)
        o += (size_t)snprintf(buf + o, cap - o, "%s%lld", i ? ", " : "[", (long long)shape[i]);
    if (o < cap) snprintf(buf + o, cap - o, nd ? "]" : "[]");
}

/* A copy as float32 of tensor name, [d0] (d1 < 0) or [d0, d1]; absent: NULL when optional.
 * gguf: the name the GGUF file gives it (messages say that one), and a [1, d1] matrix may be
 * stored as [d1] (ggml's writer drops a trailing dimension of 1, as llama-quantize's files do). */
static int head_tensor_named(emb_classifier *c, const emb_encoder *e, XXH3_state_t *h, const char *name,
                             const char *gguf, int64_t d0, int64_t d1, int optional, float **out,
                             char err[EMB_ERR_LEN]) {
    const char *file = "";
    const emb_safetensors_tensor *t = emb_encoder_file_tensor(e, name, &file);
    const char *shown = gguf ? gguf : name;
    *out = NULL;
    if (!t) return optional ? 0 : emb_fail(err, "%s: missing tensor '%s' of %s", c->arch, shown, c->arch);
    int nd = d1 < 0 ? 1 : 2;
    int row = gguf && nd == 2 && d0 == 1 && t->ndim == 1 && t->shape[0] == d1;
    if (!row && (t->ndim != nd || t->shape[0] != d0 || (nd == 2 && t->shape[1] != d1))) {
        char got[128], want[64];
        int64_t w[2] = {d0, d1};
        shape_text(got, sizeof got, t->ndim, t->shape);
        shape_text(want, sizeof want, nd, w);
        return emb_fail(err, "%.60s: tensor '%s' has shape %s, expected %s (%s %d)", file, shown, got, want,
                        gguf ? "labels" : "num_labels", c->labels);
    }
    size_t n = (size_t)d0 * (size_t)(nd == 2 ? d1 : 1);
    float *p = malloc(n * sizeof(float) + 1);
    if (!p) return emb_fail(err, "out of memory");
    if (emb_tensor_to_f32(t, n, p)) {
        free(p);
        return emb_fail(err, "%.60s: tensor '%s' has dtype %s, expected F32, F16 or BF16", file, shown,
                        emb_dtype_name(t->dtype));
    }
    XXH3_64bits_update(h, name, strlen(name) + 1);
    XXH3_64bits_update(h, p, n * sizeof(float));
    *out = p;
    return 0;
}

static int head_tensor(emb_classifier *c, const emb_encoder *e, XXH3_state_t *h, const char *name, int64_t d0,
                       int64_t d1, int optional, float **out, char err[EMB_ERR_LEN]) {
    return head_tensor_named(c, e, h, name, NULL, d0, d1, optional, out, err);
}

static int load_tensors(emb_classifier *c, const emb_encoder *e, int dense_bias, XXH3_state_t *h,
                        char err[EMB_ERR_LEN]) {
    const emb_encoder_config *cfg = emb_encoder_get_config(e);
    int64_t H = c->H, L = c->labels;
    switch (c->kind) {
    case HEAD_BERT:
        if (!emb_encoder_get_info(e)->has_pooler)
            return emb_fail(err, "%s: missing tensor 'bert.pooler.dense.weight' (its pooler)", c->arch);
        return head_tensor(c, e, h, "classifier.weight", L, H, 0, &c->out_w, err) ||
               head_tensor(c, e, h, "classifier.bias", L, -1, 0, &c->out_b, err);
    case HEAD_ROBERTA:
        return head_tensor(c, e, h, "classifier.dense.weight", H, H, 0, &c->dense_w, err) ||
               head_tensor(c, e, h, "classifier.dense.bias", H, -1, 0, &c->dense_b, err) ||
               head_tensor(c, e, h, "classifier.out_proj.weight", L, H, 0, &c->out_w, err) ||
               head_tensor(c, e, h, "classifier.out_proj.bias", L, -1, 0, &c->out_b, err);
    case HEAD_MODERNBERT:
        c->eps = cfg->ln_eps;
        return head_tensor(c, e, h, "head.dense.weight", H, H, 0, &c->dense_w, err) ||
               (dense_bias && head_tensor(c, e, h, "head.dense.bias", H, -1, 0, &c->dense_b, err)) ||
               head_tensor(c, e, h, "head.norm.weight", H, -1, 0, &c->norm_g, err) ||
               (cfg->norm_bias && head_tensor(c, e, h, "head.norm.bias", H, -1, 0, &c->norm_b, err)) ||
               head_tensor(c, e, h, "classifier.weight", L, H, 0, &c->out_w, err) ||
               head_tensor(c, e, h, "classifier.bias", L, -1, 0, &c->out_b, err);
    }
    return 0;
}

/* Everything of c from config.json (root) and the files; the caller frees c on failure. */
static int load(emb_classifier *c, const cJSON *root, int k, const emb_encoder *e, char err[EMB_ERR_LEN]) {
    const emb_encoder_config *cfg = emb_encoder_get_config(e);
    c->kind = KNOWN[k].kind;
    c->arch = KNOWN[k].name;
    c->H = cfg->dims.hidden;
    if (cfg->arch != KNOWN[k].arch)
        return emb_fail(err, "config.json: %s, but the encoder is '%s'", c->arch, cfg->arch_name);
    int dense_bias = 0;
    if (read_labels(root, &c->labels, err) || read_activation(root, &c->score, err) ||
        (c->kind == HEAD_MODERNBERT && read_modernbert(root, c, &dense_bias, err)))
        return -1;
    XXH3_state_t *h = XXH3_createState();
    if (!h) return emb_fail(err, "out of memory");
    XXH3_64bits_reset(h);
    int64_t settings[] = {c->kind, c->labels, c->mean_pool, c->act, c->score, dense_bias};
    XXH3_64bits_update(h, settings, sizeof settings);
    int rc = load_tensors(c, e, dense_bias, h, err);
    c->fingerprint = XXH3_64bits_digest(h);
    XXH3_freeState(h);
    return rc;
}

int emb_classifier_load(const char *dir, const emb_encoder *e, emb_classifier **out, char err[EMB_ERR_LEN]) {
    *out = NULL;
    char path[4096];
    cJSON *root;
    if (emb_path_join(path, sizeof path, dir, "config.json", err) ||
        emb_json_read_file(path, EMB_CONFIG_MAX_BYTES, &root, err))
        return -1;
    int k = find_architecture(root, err), rc = k == -1 ? -1 : 0;
    if (k >= 0) {
        emb_classifier *c = calloc(1, sizeof *c);
        rc = c ? load(c, root, k, e, err) : emb_fail(err, "out of memory");
        if (rc) emb_classifier_free(c);
        else *out = c;
    }
    cJSON_Delete(root);
    return rc;
}

/* The head's tensors of a GGUF reranker, under encoder_gguf's names (gguf/bert.c): cls as
 * classifier.dense, cls.output as classifier.out_proj; biases optional, as llama.cpp has them. */
static int load_gguf_tensors(emb_classifier *c, const emb_encoder *e, XXH3_state_t *h, char err[EMB_ERR_LEN]) {
    int64_t H = c->H, L = c->labels;
    if (!emb_encoder_file_tensor(e, "classifier.out_proj.weight", NULL))
        return emb_fail(err,
                        "%s: no tensor 'cls.output.weight': a reranker needs its output layer (llama.cpp's "
                        "cls.output, Hugging Face's classifier.out_proj or BERT's classifier)",
                        c->arch);
    if (!emb_encoder_file_tensor(e, "classifier.dense.weight", NULL))
        return emb_fail(err,
                        "%s: no tensor 'cls.weight': the head's dense layer (XLM-R's classifier.dense, BERT's "
                        "pooler.dense) is missing; llama.cpp's converter leaves BERT's pooler out, and without it "
                        "the scores are not the model's",
                        c->arch);
    return head_tensor_named(c, e, h, "classifier.dense.weight", "cls.weight", H, H, 0, &c->dense_w, err) ||
           head_tensor_named(c, e, h, "classifier.dense.bias", "cls.bias", H, -1, 1, &c->dense_b, err) ||
           head_tensor_named(c, e, h, "classifier.out_proj.weight", "cls.output.weight", L, H, 0, &c->out_w,
                             err) ||
           head_tensor_named(c, e, h, "classifier.out_proj.bias", "cls.output.bias", L, -1, 1, &c->out_b, err);
}

int emb_classifier_load_gguf(const emb_encoder *e, const char *arch, int labels, emb_classifier **out,
                             char err[EMB_ERR_LEN]) {
    *out = NULL;
    emb_classifier *c = calloc(1, sizeof *c);
    XXH3_state_t *h = XXH3_createState();
    if (!c || !h) {
        free(c);
        XXH3_freeState(h);
        return emb_fail(err, "out of memory");
    }
    c->kind = HEAD_ROBERTA; /* out(tanh(dense(h[0]))): RoBERTa's head, and BERT's with its pooler as dense */
    c->arch = arch;
    c->labels = labels;
    c->H = emb_encoder_get_config(e)->dims.hidden;
    XXH3_64bits_reset(h);
    int64_t settings[] = {c->kind, c->labels, 0, 0, c->score, 0, 'g'};
    XXH3_64bits_update(h, settings, sizeof settings);
    int rc = load_gguf_tensors(c, e, h, err);
    c->fingerprint = XXH3_64bits_digest(h);
    XXH3_freeState(h);
    if (rc) emb_classifier_free(c);
    else *out = c;
    return rc;
}

void emb_classifier_free(emb_classifier *c) {
    if (!c) return;
    float *owned[] = {c->dense_w, c->dense_b, c->norm_g, c->norm_b, c->out_w, c->out_b};
    for (size_t i = 0; i < sizeof owned / sizeof *owned; i++) free(owned[i]);
    free(c);
}

int emb_classifier_labels(const emb_classifier *c) { return c->labels; }
const char *emb_classifier_architecture(const emb_classifier *c) { return c->arch; }
uint64_t emb_classifier_fingerprint(const emb_classifier *c) { return c->fingerprint; }

/* The activation in force: the folder's, else sentence-transformers' CrossEncoder default
 * (Sigmoid for one label, the logits for several). */
static score_act activation_of(const emb_classifier *c) {
    if (c->score != ACT_NONE) return c->score;
    return c->labels == 1 ? ACT_SIGMOID : ACT_IDENTITY;
}

const char *emb_classifier_activation(const emb_classifier *c) {
    static const char *const names[] = {NULL, "Identity", "Sigmoid", "Tanh"};
    return names[activation_of(c)];
}

/* out[n] = W x + b (W [n, k] row-major; b NULL: none), accumulated in double. */
static void affine(const float *W, const float *b, const float *x, int n, int k, float *out) {
    for (int i = 0; i < n; i++) {
        double s = b ? b[i] : 0.0;
        const float *w = W + (size_t)i * (size_t)k;
        for (int j = 0; j < k; j++) s += (double)w[j] * x[j];
        out[i] = (float)s;
    }
}

static double dense_activation(dense_act a, double x) {
    switch (a) {
    case DENSE_GELU: return 0.5 * x * (1.0 + erf(x / sqrt(2.0)));
    case DENSE_GELU_TANH: return 0.5 * x * (1.0 + tanh(sqrt(2.0 / M_PI) * (x + 0.044715 * x * x * x)));
    case DENSE_RELU: return x > 0 ? x : 0;
    case DENSE_SILU: return x / (1.0 + exp(-x));
    case DENSE_TANH: return tanh(x);
    }
    return x;
}

/* ModernBertPredictionHead: norm(act(dense(x))), x overwritten; y gets the result. */
static void modernbert_head(const emb_classifier *c, const float *x, float *y) {
    int H = c->H;
    affine(c->dense_w, c->dense_b, x, H, H, y);
    double mean = 0, var = 0;
    for (int i = 0; i < H; i++) {
        y[i] = (float)dense_activation(c->act, y[i]);
        mean += y[i];
    }
    mean /= H;
    for (int i = 0; i < H; i++) var += (y[i] - mean) * (y[i] - mean);
    double inv = 1.0 / sqrt(var / H + c->eps);
    for (int i = 0; i < H; i++)
        y[i] = (float)((y[i] - mean) * inv * c->norm_g[i] + (c->norm_b ? c->norm_b[i] : 0));
}

void emb_classifier_logits(const emb_classifier *c, const emb_encoder *e, const float *hidden, int len,
                           float *scratch, float *logits) {
    int H = c->H;
    float *x = scratch, *y = scratch + H;
    switch (c->kind) {
    case HEAD_BERT: emb_encoder_pooler(e, hidden, y); break;
    case HEAD_ROBERTA:
        affine(c->dense_w, c->dense_b, hidden, H, H, y);
        for (int i = 0; i < H; i++) y[i] = tanhf(y[i]);
        break;
    case HEAD_MODERNBERT:
        for (int i = 0; i < H; i++) {
            double s = 0;
            for (int t = 0; t < (c->mean_pool ? len : 1); t++) s += hidden[(size_t)t * (size_t)H + (size_t)i];
            x[i] = (float)(c->mean_pool ? s / len : s);
        }
        modernbert_head(c, x, y);
        break;
    }
    affine(c->out_w, c->out_b, y, c->labels, H, logits);
}

float emb_classifier_activate(const emb_classifier *c, float logit) {
    switch (activation_of(c)) {
    case ACT_SIGMOID: return (float)(1.0 / (1.0 + exp(-(double)logit)));
    case ACT_TANH: return tanhf(logit);
    default: return logit;
    }
}
