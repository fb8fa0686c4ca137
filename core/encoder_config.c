#include "encoder_config.h"
#include "emb_json.h"
#include "file.h"
#include <float.h>
#include <math.h>
#include <stddef.h>
#include <stdlib.h>
#include <string.h>

/* An integer key of config.json, by its BERT and its DistilBERT name (NULL: not read): the int
 * of emb_encoder_config it fills, its range, and its value when absent (or null) if it may be. */
typedef struct {
    const char *name[2]; /* by emb_arch */
    size_t offset;
    int lo, hi;
    int optional, dflt;
} int_key;

#define DIM(field) offsetof(emb_encoder_config, dims.field)
#define BIG (1 << 20)

/* In the order they are checked (the first bad one is the error). */
static const int_key INT_KEYS[] = {
    {{"hidden_size", "dim"}, DIM(hidden), 1, 65536, 0, 0},
    {{"num_hidden_layers", "n_layers"}, DIM(layers), 1, 1024, 0, 0},
    {{"num_attention_heads", "n_heads"}, DIM(heads), 1, 4096, 0, 0},
    {{"intermediate_size", "hidden_dim"}, DIM(intermediate), 1, 1 << 18, 0, 0},
    {{"max_position_embeddings", "max_position_embeddings"}, DIM(max_positions), 1, BIG, 0, 0},
    {{"vocab_size", "vocab_size"}, DIM(vocab_size), 1, 1 << 24, 0, 0},
    {{"type_vocab_size", NULL}, DIM(type_vocab), 1, BIG, 1, 2},
    {{"pad_token_id", "pad_token_id"}, offsetof(emb_encoder_config, pad_token_id), 0, 1 << 24, 1, 0},
};

/* The integer keys of c->arch into c. */
static int read_ints(const cJSON *root, const char *file, emb_encoder_config *c, char err[EMB_ERR_LEN]) {
    for (size_t i = 0; i < sizeof INT_KEYS / sizeof *INT_KEYS; i++) {
        const int_key *k = &INT_KEYS[i];
        const char *key = k->name[c->arch];
        if (!key) continue;
        int *out = (int *)(void *)((char *)c + k->offset);
        const cJSON *j = cJSON_GetObjectItemCaseSensitive(root, key);
        int64_t v;
        if (!j || cJSON_IsNull(j)) {
            if (!k->optional) return emb_fail(err, "%s: missing key '%s'", file, key);
            *out = k->dflt;
        } else if (emb_json_int(j, k->lo, k->hi, &v) == 0) {
            *out = (int)v;
        } else if (cJSON_IsNumber(j) && j->valuedouble == floor(j->valuedouble)) {
            return emb_fail(err, "%s: key '%s' = %.15g is out of range [%d, %d]", file, key, j->valuedouble, k->lo,
                            k->hi);
        } else {
            return emb_fail(err, "%s: key '%s' is not an integer", file, key);
        }
    }
    return 0;
}

/* The activation named by key (absent: "gelu"), which must be gelu. */
static int read_activation(const cJSON *root, const char *key, const char *file, char err[EMB_ERR_LEN]) {
    const cJSON *a = cJSON_GetObjectItemCaseSensitive(root, key);
    if (a && !cJSON_IsString(a)) return emb_fail(err, "%s: key '%s' is not a string", file, key);
    const char *act = a ? a->valuestring : "gelu";
    if (strcmp(act, "gelu") != 0)
        return emb_fail(err, "%s: activation '%.40s' is not supported (only \"gelu\", exact erf)", file, act);
    return 0;
}

static int read_bert(const cJSON *root, const char *file, emb_encoder_config *c, char err[EMB_ERR_LEN]) {
    c->arch = EMB_ARCH_BERT;
    c->arch_name = "bert";
    if (read_ints(root, file, c, err)) return -1;
    const cJSON *eps = cJSON_GetObjectItemCaseSensitive(root, "layer_norm_eps");
    c->ln_eps = 1e-12f;
    if (eps && !cJSON_IsNull(eps)) {
        /* at least float's smallest normal: a smaller one would round to 0 and divide by it */
        if (!cJSON_IsNumber(eps) || !(eps->valuedouble >= FLT_MIN) || eps->valuedouble > 1)
            return emb_fail(err, "%s: key 'layer_norm_eps' is not a positive number (from 1.2e-38 to 1)", file);
        c->ln_eps = (float)eps->valuedouble;
    }
    const cJSON *pe = cJSON_GetObjectItemCaseSensitive(root, "position_embedding_type");
    if (pe && !cJSON_IsNull(pe) && !(cJSON_IsString(pe) && strcmp(pe->valuestring, "absolute") == 0))
        return emb_fail(err, "%s: position_embedding_type '%.40s' is not supported (only \"absolute\")", file,
                        cJSON_IsString(pe) ? pe->valuestring : "?");
    return read_activation(root, "hidden_act", file, err);
}

static int read_distilbert(const cJSON *root, const char *file, emb_encoder_config *c, char err[EMB_ERR_LEN]) {
    c->arch = EMB_ARCH_DISTILBERT;
    c->arch_name = "distilbert";
    if (read_ints(root, file, c, err)) return -1; /* no token types: type_vocab stays 0 */
    c->ln_eps = 1e-12f; /* DistilBERT's LayerNorms are built with eps=1e-12 */
    const cJSON *s = cJSON_GetObjectItemCaseSensitive(root, "sinusoidal_pos_embds");
    if (s && !cJSON_IsNull(s) && !cJSON_IsBool(s))
        return emb_fail(err, "%s: key 'sinusoidal_pos_embds' is not a boolean", file);
    c->sinusoidal = cJSON_IsTrue(s);
    return read_activation(root, "activation", file, err);
}

static int read_config(const cJSON *root, const char *file, emb_encoder_config *c, char err[EMB_ERR_LEN]) {
    if (!cJSON_IsObject(root)) return emb_fail(err, "%s: not a JSON object", file);
    const cJSON *mt = cJSON_GetObjectItemCaseSensitive(root, "model_type");
    const char *type = NULL;
    if (cJSON_IsString(mt)) {
        type = mt->valuestring;
    } else if (mt && !cJSON_IsNull(mt)) {
        return emb_fail(err, "%s: key 'model_type' is not a string", file);
    } else { /* old configs without model_type: infer from architectures[0] */
        const cJSON *ar = cJSON_GetObjectItemCaseSensitive(root, "architectures");
        const cJSON *a0 = cJSON_IsArray(ar) ? ar->child : NULL;
        if (cJSON_IsString(a0) && strncmp(a0->valuestring, "DistilBert", 10) == 0) type = "distilbert";
        else if (cJSON_IsString(a0) && strncmp(a0->valuestring, "Bert", 4) == 0) type = "bert";
        else return emb_fail(err, "%s: missing key 'model_type'", file);
    }
    int rc;
    if (strcmp(type, "bert") == 0) rc = read_bert(root, file, c, err);
    else if (strcmp(type, "distilbert") == 0) rc = read_distilbert(root, file, c, err);
    else return emb_fail(err, "%s: model_type '%.40s' is not supported (supported: bert, distilbert)", file, type);
    if (rc) return rc;
    c->act = EMB_ACT_GELU;
    if (c->dims.hidden % c->dims.heads != 0)
        return emb_fail(err, "%s: hidden size %d is not a multiple of the number of attention heads %d", file,
                        c->dims.hidden, c->dims.heads);
    return 0;
}

int emb_encoder_config_parse(const char *json, size_t len, const char *file, emb_encoder_config *out,
                             char err[EMB_ERR_LEN]) {
    emb_encoder_config c;
    memset(&c, 0, sizeof c);
    memset(out, 0, sizeof *out);
    cJSON *root = cJSON_ParseWithLength(json, len);
    int rc = read_config(root, file, &c, err);
    cJSON_Delete(root);
    if (rc == 0) *out = c;
    return rc;
}

int emb_encoder_config_load(const char *dir, emb_encoder_config *out, char err[EMB_ERR_LEN]) {
    char path[4096];
    if (emb_path_join(path, sizeof path, dir, "config.json", err)) return -1;
    char *txt;
    size_t len;
    if (emb_read_file(path, EMB_CONFIG_MAX_BYTES, &txt, &len, err)) return -1;
    int rc = emb_encoder_config_parse(txt, len, "config.json", out, err);
    free(txt);
    return rc;
}
