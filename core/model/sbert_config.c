#include "model/sbert_config.h"
#include "base/emb_json.h"
#include "base/file.h"
#include <stdio.h>
#include <string.h>

static int ends_with(const char *s, const char *suf) {
    size_t a = strlen(s), b = strlen(suf);
    return a >= b && strcmp(s + a - b, suf) == 0;
}

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

/* The modules of modules.json (a JSON array): the Transformer's folder into c, whether there is
 * a Pooling module and its folder (pool_path, 128 bytes), a Normalize module. */
static int read_modules(const cJSON *mods, emb_sbert_config *c, int *have_pool, char *pool_path,
                        char err[EMB_ERR_LEN]) {
    if (!cJSON_IsArray(mods)) return emb_fail(err, "modules.json: not a JSON array");
    for (const cJSON *m = mods->child; m; m = m->next) {
        const cJSON *ty = cJSON_GetObjectItemCaseSensitive(m, "type");
        const cJSON *pa = cJSON_GetObjectItemCaseSensitive(m, "path");
        if (!cJSON_IsString(ty)) return emb_fail(err, "modules.json: a module has no \"type\" string");
        const char *p = cJSON_IsString(pa) ? pa->valuestring : "";
        if (!safe_rel_path(p))
            return emb_fail(err, "modules.json: module path '%.60s' is not a plain relative folder", p);
        if (ends_with(ty->valuestring, ".Transformer") || strcmp(ty->valuestring, "Transformer") == 0) {
            snprintf(c->transformer_path, sizeof c->transformer_path, "%s", p);
        } else if (ends_with(ty->valuestring, ".Pooling") || strcmp(ty->valuestring, "Pooling") == 0) {
            snprintf(pool_path, 128, "%s", p);
            *have_pool = 1;
        } else if (ends_with(ty->valuestring, ".Normalize") || strcmp(ty->valuestring, "Normalize") == 0) {
            c->normalize = 1;
        } else {
            return emb_fail(
                err, "modules.json: module type '%.80s' is not supported (only Transformer, Pooling, Normalize)",
                ty->valuestring);
        }
    }
    if (!*have_pool)
        return emb_fail(
            err, "modules.json: no Pooling module (token-level sentence-transformers models are not supported)");
    return 0;
}

/* The Pooling module's config.json, label (its path in the folder) as read: one mode of cls, mean, max. */
static int read_pool_modes(const cJSON *pool, const char *label, emb_sbert_config *c, char err[EMB_ERR_LEN]) {
    if (!cJSON_IsObject(pool)) return emb_fail(err, "%.100s: not a JSON object", label);
    static const char *keys[] = {"pooling_mode_cls_token",           "pooling_mode_mean_tokens",
                                 "pooling_mode_max_tokens",          "pooling_mode_mean_sqrt_len_tokens",
                                 "pooling_mode_weightedmean_tokens", "pooling_mode_lasttoken"};
    int on[6], n_on = 0;
    for (int i = 0; i < 6; i++) {
        const cJSON *j = cJSON_GetObjectItemCaseSensitive(pool, keys[i]);
        if (j && !cJSON_IsBool(j) && !cJSON_IsNull(j))
            return emb_fail(err, "%.100s: key '%s' is not a boolean", label, keys[i]);
        on[i] = cJSON_IsTrue(j);
        n_on += on[i];
    }
    if (n_on == 0) return emb_fail(err, "%.100s: no pooling mode is enabled", label);
    if (n_on > 1)
        return emb_fail(err, "%.100s: several pooling modes at once (concatenated vectors) are not supported",
                        label);
    for (int i = 3; i < 6; i++)
        if (on[i])
            return emb_fail(err, "%.100s: pooling mode '%s' is not supported (only cls, mean, max)", label,
                            keys[i]);
    c->pool = on[0] ? EMB_POOL_CLS : on[1] ? EMB_POOL_MEAN : EMB_POOL_MAX;
    const cJSON *d = cJSON_GetObjectItemCaseSensitive(pool, "word_embedding_dimension");
    int64_t dim = 0;
    if (d && !cJSON_IsNull(d) && emb_json_int(d, 1, 1 << 20, &dim))
        return emb_fail(err, "%.100s: key 'word_embedding_dimension' is not a positive integer", label);
    c->pooling_dim = (int)dim;
    return 0;
}

static int read_pooling(const char *dir, const char *pool_path, emb_sbert_config *c, char err[EMB_ERR_LEN]) {
    char path[4096], label[160];
    cJSON *pool;
    snprintf(label, sizeof label, "%.100s%sconfig.json", pool_path, *pool_path ? "/" : "");
    if (emb_path_join(path, sizeof path, dir, label, err) || load_json(path, &pool, err)) return -1;
    if (!pool)
        return emb_fail(err, "%.100s: missing (modules.json lists a Pooling module at '%.60s')", label, pool_path);
    int rc = read_pool_modes(pool, label, c, err);
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
    char path[4096], pool_path[128] = "";
    cJSON *mods;
    if (emb_path_join(path, sizeof path, dir, "modules.json", err) || load_json(path, &mods, err)) return -1;
    if (!mods) { /* not a sentence-transformers folder */
        *out = c;
        return 0;
    }
    c.present = 1;
    int have_pool = 0;
    int rc = read_modules(mods, &c, &have_pool, pool_path, err);
    cJSON_Delete(mods);
    if (rc == 0) rc = read_pooling(dir, pool_path, &c, err);
    if (rc == 0) rc = read_sentence_bert(dir, &c, err);
    if (rc == 0) *out = c;
    return rc;
}
