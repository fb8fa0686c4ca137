#include "model/sbert_config.h"
#include "base/emb_json.h"
#include "base/file.h"
#include <stdio.h>
#include <string.h>

/* Parse a JSON file; *root NULL (and 0 returned) if it does not exist. */
static int load_json(const char *path, cJSON **root, char err[EMB_ERR_LEN]) {
    *root = NULL;
    if (!emb_path_exists(path)) return 0;
    return emb_json_read_file(path, EMB_CONFIG_MAX_BYTES, root, err);
}

static int safe_rel_path(const char *p) {
    if (p[0] == '/' || strstr(p, "..")) return 0;
    return strlen(p) < 100;
}

/* The module kinds of modules.json; a type is known by its last component, so that every
 * spelling from sentence_transformers.models.X (2.x-5.x) to sentence-transformers 6's
 * sentence_transformers.base.modules.x.X is read. */
typedef enum {
    MOD_TRANSFORMER,
    MOD_STATIC,
    MOD_POOLING,
    MOD_DENSE,
    MOD_NORMALIZE,
    MOD_DROPOUT,
    MOD_OTHER
} mod_kind;

static mod_kind module_kind(const char *type) {
    static const char *const NAMES[] = {"Transformer", "StaticEmbedding", "Pooling",
                                        "Dense",       "Normalize",       "Dropout"};
    const char *dot = strrchr(type, '.');
    const char *last = dot ? dot + 1 : type;
    for (int i = 0; i < MOD_OTHER; i++)
        if (strcmp(last, NAMES[i]) == 0) return (mod_kind)i;
    return MOD_OTHER;
}

/* State while reading the modules in order. */
typedef struct {
    int have_input, have_pool, pending_norm;
    char pool_path[EMB_SBERT_PATH];
} mod_state;

static int add_module(mod_kind k, const char *type, const char *p, emb_sbert_config *c, mod_state *s,
                      char err[EMB_ERR_LEN]) {
    int first = !s->have_input && !s->have_pool && c->n_dense == 0 && !s->pending_norm;
    switch (k) {
    case MOD_TRANSFORMER:
    case MOD_STATIC:
        if (!first) return emb_fail(err, "modules.json: module '%.80s' must come first (the input module)", type);
        snprintf(c->transformer_path, sizeof c->transformer_path, "%s", p);
        c->input_static = k == MOD_STATIC;
        s->have_input = 1;
        return 0;
    case MOD_POOLING:
        if (c->input_static)
            return emb_fail(err, "modules.json: a StaticEmbedding makes the sentence vector itself (no Pooling)");
        if (!s->have_input || s->have_pool || c->n_dense || s->pending_norm)
            return emb_fail(err, "modules.json: the Pooling module at '%.60s' must follow the input module", p);
        snprintf(s->pool_path, sizeof s->pool_path, "%s", p);
        s->have_pool = 1;
        return 0;
    case MOD_DENSE:
        if (c->n_dense == EMB_SBERT_MAX_DENSE)
            return emb_fail(err, "modules.json: more than %d Dense modules", EMB_SBERT_MAX_DENSE);
        snprintf(c->dense_path[c->n_dense], EMB_SBERT_PATH, "%s", p);
        c->normalize_before[c->n_dense++] = s->pending_norm;
        s->pending_norm = 0;
        return 0;
    case MOD_NORMALIZE: s->pending_norm = 1; return 0;
    case MOD_DROPOUT: return 0; /* the identity when embedding */
    default:
        return emb_fail(
            err,
            "modules.json: module type '%.80s' is not supported (Transformer, StaticEmbedding, Pooling, "
            "Dense, Normalize, Dropout)",
            type);
    }
}

/* The modules of modules.json (a JSON array), in order, into c and s. */
static int read_modules(const cJSON *mods, emb_sbert_config *c, mod_state *s, char err[EMB_ERR_LEN]) {
    if (!cJSON_IsArray(mods)) return emb_fail(err, "modules.json: not a JSON array");
    for (const cJSON *m = mods->child; m; m = m->next) {
        const cJSON *ty = cJSON_GetObjectItemCaseSensitive(m, "type");
        const cJSON *pa = cJSON_GetObjectItemCaseSensitive(m, "path");
        if (!cJSON_IsString(ty)) return emb_fail(err, "modules.json: a module has no \"type\" string");
        const char *p = cJSON_IsString(pa) ? pa->valuestring : "";
        if (!safe_rel_path(p))
            return emb_fail(err, "modules.json: module path '%.60s' is not a plain relative folder", p);
        if (add_module(module_kind(ty->valuestring), ty->valuestring, p, c, s, err)) return -1;
    }
    c->normalize = s->pending_norm;
    if (!s->have_input) return emb_fail(err, "modules.json: no Transformer or StaticEmbedding module");
    if (!s->have_pool && !c->input_static)
        return emb_fail(
            err, "modules.json: no Pooling module (token-level sentence-transformers models are not supported)");
    return 0;
}

/* sentence-transformers 6's "pooling_mode": a name, or a list of one name (several are
 * concatenated vectors, not built). */
static int read_mode_name(const cJSON *pm, const char *label, emb_sbert_config *c, char err[EMB_ERR_LEN]) {
    if (cJSON_IsArray(pm)) {
        if (cJSON_GetArraySize(pm) != 1)
            return emb_fail(err, "%.100s: several pooling modes at once (concatenated vectors) are not supported",
                            label);
        pm = pm->child;
    }
    if (!cJSON_IsString(pm) || emb_pool_mode_parse(pm->valuestring, &c->pool))
        return emb_fail(err,
                        "%.100s: key 'pooling_mode' is not one of \"cls\", \"max\", \"mean\", "
                        "\"mean_sqrt_len_tokens\", \"weightedmean\", \"lasttoken\"",
                        label);
    return 0;
}

/* The pooling_mode_* booleans of sentence-transformers 2.x-5.x; none set means mean, as
 * sentence-transformers 6 reads them. */
static int read_mode_booleans(const cJSON *pool, const char *label, emb_sbert_config *c, char err[EMB_ERR_LEN]) {
    static const char *const KEYS[EMB_POOL_MODES] = {
        "pooling_mode_mean_tokens",          "pooling_mode_cls_token",           "pooling_mode_max_tokens",
        "pooling_mode_mean_sqrt_len_tokens", "pooling_mode_weightedmean_tokens", "pooling_mode_lasttoken"};
    int n_on = 0;
    c->pool = EMB_POOL_MEAN;
    for (int i = 0; i < EMB_POOL_MODES; i++) {
        const cJSON *j = cJSON_GetObjectItemCaseSensitive(pool, KEYS[i]);
        if (j && !cJSON_IsBool(j) && !cJSON_IsNull(j))
            return emb_fail(err, "%.100s: key '%s' is not a boolean", label, KEYS[i]);
        if (cJSON_IsTrue(j)) {
            c->pool = (emb_pool_mode)i;
            n_on++;
        }
    }
    if (n_on > 1)
        return emb_fail(err, "%.100s: several pooling modes at once (concatenated vectors) are not supported",
                        label);
    return 0;
}

/* The Pooling module's config.json, label (its path in the folder) as read. */
static int read_pool_config(const cJSON *pool, const char *label, emb_sbert_config *c, char err[EMB_ERR_LEN]) {
    if (!cJSON_IsObject(pool)) return emb_fail(err, "%.100s: not a JSON object", label);
    const cJSON *pm = cJSON_GetObjectItemCaseSensitive(pool, "pooling_mode");
    if (pm && !cJSON_IsNull(pm) ? read_mode_name(pm, label, c, err) : read_mode_booleans(pool, label, c, err))
        return -1;
    const cJSON *inc = cJSON_GetObjectItemCaseSensitive(pool, "include_prompt");
    if (inc && !cJSON_IsNull(inc) && !cJSON_IsBool(inc))
        return emb_fail(err, "%.100s: key 'include_prompt' is not a boolean", label);
    c->include_prompt = !cJSON_IsFalse(inc);
    static const char *const DIM_KEYS[2] = {"embedding_dimension", "word_embedding_dimension"};
    for (int i = 0; i < 2; i++) {
        const cJSON *d = cJSON_GetObjectItemCaseSensitive(pool, DIM_KEYS[i]);
        int64_t dim = 0;
        if (!d || cJSON_IsNull(d)) continue;
        if (emb_json_int(d, 1, 1 << 20, &dim))
            return emb_fail(err, "%.100s: key '%s' is not a positive integer", label, DIM_KEYS[i]);
        c->pooling_dim = (int)dim;
        break;
    }
    return 0;
}

static int read_pooling(const char *dir, const char *pool_path, emb_sbert_config *c, char err[EMB_ERR_LEN]) {
    char path[4096], label[160];
    cJSON *pool;
    snprintf(label, sizeof label, "%.100s%sconfig.json", pool_path, *pool_path ? "/" : "");
    if (emb_path_join(path, sizeof path, dir, label, err) || load_json(path, &pool, err)) return -1;
    if (!pool)
        return emb_fail(err, "%.100s: missing (modules.json lists a Pooling module at '%.60s')", label, pool_path);
    int rc = read_pool_config(pool, label, c, err);
    cJSON_Delete(pool);
    return rc;
}

/* sentence_bert_config.json, when present: max_seq_length, do_lower_case. */
static int read_sentence_bert(const char *dir, emb_sbert_config *c, char err[EMB_ERR_LEN]) {
    char path[4096];
    cJSON *sb;
    if (emb_path_join(path, sizeof path, dir, "sentence_bert_config.json", err) || load_json(path, &sb, err))
        return -1;
    if (!sb) return 0;
    int rc = 0;
    const cJSON *m = cJSON_GetObjectItemCaseSensitive(sb, "max_seq_length");
    const cJSON *l = cJSON_GetObjectItemCaseSensitive(sb, "do_lower_case");
    int64_t v = 0;
    if (!cJSON_IsObject(sb)) rc = emb_fail(err, "sentence_bert_config.json: not a JSON object");
    else if (m && !cJSON_IsNull(m) && emb_json_int(m, 1, 10000000, &v))
        rc = emb_fail(err, "sentence_bert_config.json: key 'max_seq_length' is not an integer from 1 to 10000000");
    else if (l && !cJSON_IsNull(l) && !cJSON_IsBool(l))
        rc = emb_fail(err, "sentence_bert_config.json: key 'do_lower_case' is not a boolean");
    else {
        c->max_seq_length = (int)v; /* 0: none given */
        c->do_lower_case = cJSON_IsTrue(l);
    }
    cJSON_Delete(sb);
    return rc;
}

int emb_sbert_config_load(const char *dir, emb_sbert_config *out, char err[EMB_ERR_LEN]) {
    emb_sbert_config c;
    memset(&c, 0, sizeof c);
    memset(out, 0, sizeof *out);
    c.pool = EMB_POOL_MEAN;
    c.include_prompt = 1;
    char path[4096];
    cJSON *mods;
    if (emb_path_join(path, sizeof path, dir, "modules.json", err) || load_json(path, &mods, err)) return -1;
    if (!mods) { /* not a sentence-transformers folder */
        *out = c;
        return 0;
    }
    c.present = 1;
    mod_state s;
    memset(&s, 0, sizeof s);
    int rc = read_modules(mods, &c, &s, err);
    cJSON_Delete(mods);
    if (rc == 0 && s.have_pool) rc = read_pooling(dir, s.pool_path, &c, err);
    if (rc == 0) rc = read_sentence_bert(dir, &c, err);
    if (rc == 0) *out = c;
    return rc;
}
