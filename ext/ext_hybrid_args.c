/* embed_hybrid's errors ("embed_hybrid: ...") and arguments: the two table names, the query, k
 * and the options JSON, each checked; and the keyword side's FTS5 query. */
#include "ext_hybrid.h"
#include "base/utf8.h"
#include <cjson/cJSON.h>
#include <math.h>
#include <stdarg.h>
#include <string.h>

/* Sets "embed_hybrid: ..." as the error; returns SQLITE_ERROR (SQLITE_NOMEM without memory). */
int hy_fail(hybrid_vtab *v, const char *fmt, ...) {
    va_list ap;
    va_start(ap, fmt);
    int rc = ext_vtab_verror(&v->base, HY_FN, fmt, ap);
    va_end(ap);
    return rc;
}

/* "<what> must be <kind>, not <the value>". */
int hy_type_fail(hybrid_vtab *v, const char *what, const char *kind, sqlite3_value *val) {
    char *got = ext_describe_value(val);
    int rc = got ? hy_fail(v, "%s must be %s, not %s", what, kind, got) : SQLITE_NOMEM;
    sqlite3_free(got);
    return rc;
}

int hy_name_arg(hybrid_vtab *v, sqlite3_value *val, const char *what, const char **out) {
    if (sqlite3_value_type(val) == SQLITE_NULL)
        return hy_fail(v, "the %s name is NULL: " HY_SIGNATURE " needs the names of both tables", what);
    if (sqlite3_value_type(val) != SQLITE_TEXT) {
        char *w = sqlite3_mprintf("the %s name", what);
        int rc = w ? hy_type_fail(v, w, "text", val) : SQLITE_NOMEM;
        sqlite3_free(w);
        return rc;
    }
    *out = (const char *)sqlite3_value_text(val);
    if (!*out) return SQLITE_NOMEM;
    if ((int)strlen(*out) != sqlite3_value_bytes(val))
        return hy_fail(v, "the %s name contains a NUL character", what);
    return SQLITE_OK;
}

int hy_k_arg(hybrid_vtab *v, sqlite3_value *val, sqlite3_int64 *k) {
    int t = sqlite3_value_type(val);
    double d = sqlite3_value_double(val);
    if (t == SQLITE_INTEGER) *k = sqlite3_value_int64(val);
    else if (t == SQLITE_FLOAT && d == floor(d) && d >= 1 && d < 9e18) *k = (sqlite3_int64)d;
    else return hy_type_fail(v, "k", "a positive integer", val);
    return *k >= 1 ? SQLITE_OK : hy_type_fail(v, "k", "a positive integer", val);
}

/* The query as text: numbers as SQLite converts them (as FTS5 and embed_index take them). */
int hy_query_arg(hybrid_vtab *v, sqlite3_value *val, const char **q, int *len) {
    if (sqlite3_value_type(val) == SQLITE_BLOB)
        return hy_fail(v,
                       "the query must be text, not a blob (write CAST(x AS TEXT) if its bytes are UTF-8 text)");
    *q = (const char *)sqlite3_value_text(val);
    *len = sqlite3_value_bytes(val);
    if (!*q) return SQLITE_NOMEM;
    size_t bad;
    if (!emb_utf8_valid(*q, (size_t)*len, &bad))
        return hy_fail(v, "the query is not valid UTF-8 (at byte %lld)", (long long)bad);
    if ((int)strlen(*q) != *len) return hy_fail(v, "the query contains a NUL character");
    return SQLITE_OK;
}

/* "option "<key>" must be <what>, not <its JSON>". */
static int option_fail(hybrid_vtab *v, const cJSON *item, const char *what) {
    char *got = ext_json_text(item);
    int rc = got ? hy_fail(v, "option \"%s\" must be %s, not %s", item->string, what, got) : SQLITE_NOMEM;
    sqlite3_free(got);
    return rc;
}

static int finite_number(const cJSON *j) { return cJSON_IsNumber(j) && isfinite(j->valuedouble); }

static int read_option(hybrid_vtab *v, const cJSON *item, hybrid_options *o) {
    const char *key = item->string;
    if (strcmp(key, "rrf_k") == 0) {
        if (!finite_number(item) || item->valuedouble <= 0) return option_fail(v, item, "a number above 0");
        o->rrf_k = item->valuedouble;
    } else if (strcmp(key, "weights") == 0) {
        const cJSON *wv = cJSON_GetArrayItem(item, 0), *wt = cJSON_GetArrayItem(item, 1);
        if (!cJSON_IsArray(item) || cJSON_GetArraySize(item) != 2 || !finite_number(wv) || !finite_number(wt) ||
            wv->valuedouble < 0 || wt->valuedouble < 0)
            return option_fail(v, item, "[vector weight, text weight], two numbers of 0 or more");
        if (wv->valuedouble == 0 && wt->valuedouble == 0)
            return hy_fail(v, "option \"weights\" must not be both 0 (a weight of 0 leaves that side out)");
        o->weight[HY_SIDE_VECTOR] = wv->valuedouble;
        o->weight[HY_SIDE_TEXT] = wt->valuedouble;
    } else if (strcmp(key, "depth") == 0) {
        double d = item->valuedouble;
        if (!finite_number(item) || d != floor(d) || d < 1 || d > HY_MAX_DEPTH)
            return option_fail(v, item, "an integer from 1 to 100000");
        o->depth = (sqlite3_int64)d;
    } else if (strcmp(key, "fts_query") == 0) {
        if (!cJSON_IsString(item)) return option_fail(v, item, "a text (an FTS5 query)");
        sqlite3_free(o->fts_query);
        if (!(o->fts_query = sqlite3_mprintf("%s", item->valuestring))) return SQLITE_NOMEM;
    } else if (strcmp(key, "rerank") == 0) {
        if (!cJSON_IsString(item)) return option_fail(v, item, "a text (the name of a cross-encoder model)");
        sqlite3_free(o->rerank);
        if (!(o->rerank = sqlite3_mprintf("%s", item->valuestring))) return SQLITE_NOMEM;
    } else if (strcmp(key, "rerank_depth") == 0) {
        double d = item->valuedouble;
        if (!finite_number(item) || d != floor(d) || d < 1 || d > HY_MAX_DEPTH)
            return option_fail(v, item, "an integer from 1 to 100000");
        o->rerank_depth = (sqlite3_int64)d;
    } else {
        return hy_fail(v, "unknown option \"%s\" (known: rrf_k, weights, depth, fts_query, rerank, rerank_depth)",
                       key);
    }
    return SQLITE_OK;
}

/* options: NULL, or a JSON object {"rrf_k": 60, "weights": [1, 1], "depth": 100, "fts_query": "...",
 * "rerank": "model", "rerank_depth": 50}. */
int hy_options_arg(hybrid_vtab *v, sqlite3_value *val, hybrid_options *o) {
    o->rrf_k = 60;
    o->weight[HY_SIDE_VECTOR] = o->weight[HY_SIDE_TEXT] = 1;
    o->depth = 100;
    o->fts_query = o->rerank = NULL;
    o->rerank_depth = HY_RERANK_DEPTH;
    if (!val || sqlite3_value_type(val) == SQLITE_NULL) return SQLITE_OK;
    if (sqlite3_value_type(val) != SQLITE_TEXT) return hy_type_fail(v, "options", "JSON text", val);
    const char *json = (const char *)sqlite3_value_text(val);
    if (!json) return SQLITE_NOMEM;
    cJSON *root;
    char *err;
    if (ext_json_object(json, sqlite3_value_bytes(val),
                        "{\"rrf_k\": 60, \"weights\": [1, 1], \"depth\": 100, "
                        "\"fts_query\": \"bus NEAR late\"}",
                        &root, &err)) {
        int rc = err ? hy_fail(v, "%s", err) : SQLITE_NOMEM;
        sqlite3_free(err);
        return rc;
    }
    int rc = SQLITE_OK;
    for (const cJSON *item = root->child; item && rc == SQLITE_OK; item = item->next) rc = read_option(v, item, o);
    cJSON_Delete(root);
    return rc;
}

void hy_options_free(hybrid_options *o) {
    sqlite3_free(o->fts_query);
    sqlite3_free(o->rerank);
    o->fts_query = o->rerank = NULL;
}

/* The FTS5 query of plain words: the query split on spaces, tabs and line breaks, each word an
 * FTS5 string ("word", an inner " doubled), joined by OR. *out is NULL when there is no word. */
int hy_keyword_query(sqlite3 *db, const char *q, char **out) {
    static const char space[] = " \t\n\r\f\v";
    sqlite3_str *s = sqlite3_str_new(db);
    for (q += strspn(q, space); *q; q += strspn(q, space)) {
        size_t n = strcspn(q, space);
        if (sqlite3_str_length(s)) sqlite3_str_appendall(s, " OR ");
        sqlite3_str_appendchar(s, 1, '"');
        for (const char *end = q + n; q < end; q++) {
            if (*q == '"') sqlite3_str_appendchar(s, 1, '"');
            sqlite3_str_appendchar(s, 1, *q);
        }
        sqlite3_str_appendchar(s, 1, '"');
    }
    int rc = sqlite3_str_errcode(s);
    *out = sqlite3_str_finish(s);
    if (rc != SQLITE_OK) {
        sqlite3_free(*out);
        *out = NULL;
    }
    return rc;
}
