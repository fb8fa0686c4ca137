#include "ext_util.h"
#include "base/utf8.h"
#include <cjson/cJSON.h>
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

const char *ext_type_name(int t) {
    switch (t) {
    case SQLITE_INTEGER: return "an integer";
    case SQLITE_FLOAT: return "a real";
    case SQLITE_TEXT: return "text";
    case SQLITE_BLOB: return "a blob";
    default: return "NULL";
    }
}

void ext_error_take(sqlite3_context *ctx, const char *fn, char *err) {
    if (err) ext_error(ctx, fn, "%s", err);
    else sqlite3_result_error_nomem(ctx);
    sqlite3_free(err);
}

void ext_error(sqlite3_context *ctx, const char *fn, const char *fmt, ...) {
    va_list ap;
    va_start(ap, fmt);
    char *msg = sqlite3_vmprintf(fmt, ap);
    va_end(ap);
    char *full = msg ? sqlite3_mprintf("%s: %s", fn, msg) : NULL;
    if (full) sqlite3_result_error(ctx, full, -1);
    else sqlite3_result_error_nomem(ctx);
    sqlite3_free(msg);
    sqlite3_free(full);
}

int ext_vtab_connect(sqlite3 *db, const char *schema, int risk, sqlite3_vtab **out) {
    int rc = sqlite3_declare_vtab(db, schema);
    if (rc != SQLITE_OK) return rc;
    *out = sqlite3_malloc(sizeof **out);
    if (!*out) return SQLITE_NOMEM;
    memset(*out, 0, sizeof **out);
    sqlite3_vtab_config(db, risk);
    return SQLITE_OK;
}

int ext_vtab_disconnect(sqlite3_vtab *vtab) {
    sqlite3_free(vtab);
    return SQLITE_OK;
}

int ext_vtab_verror(sqlite3_vtab *vtab, const char *fn, const char *fmt, va_list ap) {
    char *msg = sqlite3_vmprintf(fmt, ap);
    sqlite3_free(vtab->zErrMsg);
    vtab->zErrMsg = msg ? sqlite3_mprintf("%s: %s", fn, msg) : NULL;
    sqlite3_free(msg);
    return vtab->zErrMsg ? SQLITE_ERROR : SQLITE_NOMEM;
}

/* Parses JSON text into a float32 vector allocated with sqlite3_malloc. On failure *err is a
 * sqlite3_malloc'd message (without function name). */
static int ext_parse_json_vector(const char *json, int len, float **out, size_t *n, char **err) {
    *out = NULL;
    *n = 0;
    cJSON *root = cJSON_ParseWithLength(json, (size_t)len);
    if (!root || !cJSON_IsArray(root)) {
        cJSON_Delete(root);
        *err = sqlite3_mprintf("not a vector: expected a JSON array of numbers");
        return -1;
    }
    size_t count = (size_t)cJSON_GetArraySize(root);
    float *v = sqlite3_malloc64(count ? count * sizeof(float) : 1);
    if (!v) {
        cJSON_Delete(root);
        *err = NULL;
        return -1;
    }
    size_t i = 0;
    for (const cJSON *e = root->child; e; e = e->next, i++) {
        if (!cJSON_IsNumber(e)) {
            *err = sqlite3_mprintf("element %lld of the JSON array is not a number", (long long)i);
            goto fail;
        }
        float f = (float)e->valuedouble;
        if (!isfinite(f)) {
            *err = sqlite3_mprintf("element %lld (%g) is not a finite float32", (long long)i, e->valuedouble);
            goto fail;
        }
        v[i] = f;
    }
    cJSON_Delete(root);
    *out = v;
    *n = count;
    return 0;
fail:
    cJSON_Delete(root);
    sqlite3_free(v);
    return -1;
}

/* A BLOB as float32 values; aligned BLOBs are used in place. */
static ext_rc blob_float32(const void *p, int bytes, const char *what, ext_vec *out, char **err) {
    if (bytes % 4) {
        *err = sqlite3_mprintf("%s is a blob of %d bytes, not a float32 vector (its length must be "
                               "a multiple of 4; a sqlite-vec int8 vector loses its type when "
                               "stored: pass vec_int8(v))",
                               what, bytes);
        return EXT_ERROR;
    }
    out->n = (size_t)bytes / 4;
    if (((uintptr_t)p % sizeof(float)) != 0) {
        out->buf = sqlite3_malloc(bytes);
        if (!out->buf) return EXT_ERROR;
        memcpy(out->buf, p, (size_t)bytes);
        out->v = out->buf;
    } else {
        out->v = p;
    }
    for (size_t i = 0; i < out->n; i++)
        if (!isfinite(out->v[i])) {
            *err = sqlite3_mprintf("%s has a non-finite value at index %lld", what, (long long)i);
            ext_vec_free(out);
            return EXT_ERROR;
        }
    return EXT_OK;
}

/* A sqlite-vec int8 vector: each signed byte is a dimension, converted exactly. */
static ext_rc blob_int8(const void *p, int bytes, ext_vec *out) {
    out->buf = sqlite3_malloc64((size_t)bytes * sizeof(float));
    if (!out->buf) return EXT_ERROR;
    for (int i = 0; i < bytes; i++) out->buf[i] = (float)((const int8_t *)p)[i];
    out->v = out->buf;
    out->n = (size_t)bytes;
    return EXT_OK;
}

ext_rc ext_value_vector(sqlite3_value *val, const char *what, ext_vec *out, char **err) {
    memset(out, 0, sizeof *out);
    *err = NULL;
    switch (sqlite3_value_type(val)) {
    case SQLITE_NULL: return EXT_NULL;
    case SQLITE_BLOB: {
        const void *p = sqlite3_value_blob(val);
        int bytes = sqlite3_value_bytes(val);
        unsigned subtype = sqlite3_value_subtype(val);
        if (subtype == EMBED_VEC_BIT_SUBTYPE) {
            *err = sqlite3_mprintf("%s: a sqlite-vec bit vector cannot be used where a float vector "
                                   "is needed; pass a float32 vector (vec_f32) or an int8 one "
                                   "(vec_int8)",
                                   what);
            return EXT_ERROR;
        }
        if (bytes == 0) {
            *err = sqlite3_mprintf("%s is an empty blob: a vector needs at least one dimension", what);
            return EXT_ERROR;
        }
        return subtype == EMBED_VEC_INT8_SUBTYPE ? blob_int8(p, bytes, out)
                                                 : blob_float32(p, bytes, what, out, err);
    }
    case SQLITE_TEXT: {
        const char *json = (const char *)sqlite3_value_text(val);
        char *msg = NULL;
        if (!json) return EXT_ERROR; /* out of memory */
        if (ext_parse_json_vector(json, sqlite3_value_bytes(val), &out->buf, &out->n, &msg)) {
            if (msg) *err = sqlite3_mprintf("%s: %s", what, msg);
            sqlite3_free(msg);
            return EXT_ERROR;
        }
        if (out->n == 0) {
            ext_vec_free(out);
            *err = sqlite3_mprintf("%s is an empty JSON array: a vector needs at least one dimension", what);
            return EXT_ERROR;
        }
        out->v = out->buf;
        return EXT_OK;
    }
    default:
        *err = sqlite3_mprintf("%s must be a vector (float32 blob or JSON array), not %s", what,
                               ext_type_name(sqlite3_value_type(val)));
        return EXT_ERROR;
    }
}

ext_rc ext_get_vector(sqlite3_context *ctx, sqlite3_value *val, const char *fn, int arg, ext_vec *out) {
    char what[32], *err;
    snprintf(what, sizeof what, "argument %d", arg + 1);
    ext_rc rc = ext_value_vector(val, what, out, &err);
    if (rc == EXT_ERROR) { ext_error_take(ctx, fn, err); }
    return rc;
}

void ext_vec_free(ext_vec *v) {
    sqlite3_free(v->buf);
    v->buf = NULL;
    v->v = NULL;
}

int ext_same_dims(sqlite3_context *ctx, const char *fn, const ext_vec *a, const ext_vec *b) {
    if (a->n == b->n) return 1;
    ext_error(ctx, fn, "vectors have different dimensions (%lld and %lld)", (long long)a->n, (long long)b->n);
    return 0;
}

void ext_result_vector(sqlite3_context *ctx, const float *v, size_t n) {
    sqlite3_result_blob64(ctx, v, n * sizeof(float), SQLITE_TRANSIENT);
    sqlite3_result_subtype(ctx, EMBED_VECTOR_SUBTYPE);
}

void ext_result_vector_owned(sqlite3_context *ctx, float *v, size_t n) {
    sqlite3_result_blob64(ctx, v, n * sizeof(float), sqlite3_free);
    sqlite3_result_subtype(ctx, EMBED_VECTOR_SUBTYPE);
}

void ext_result_finite_vector(sqlite3_context *ctx, const char *fn, float *out, size_t n) {
    for (size_t i = 0; i < n; i++)
        if (!isfinite(out[i])) {
            sqlite3_free(out);
            ext_error(ctx, fn, "the result overflows float32 at index %lld", (long long)i);
            return;
        }
    ext_result_vector_owned(ctx, out, n);
}

/* Shortest %g form (6 to 9 significant digits) that reads back to the same float32. */
static int format_float(char *buf, size_t cap, float f) {
    int len = 0;
    for (int prec = 6; prec <= 9; prec++) {
        len = snprintf(buf, cap, "%.*g", prec, (double)f);
        if (strtof(buf, NULL) == f) break;
    }
    return len;
}

char *ext_vector_to_json(const float *v, size_t n) {
    size_t cap = n * 17 + 3;
    char *out = sqlite3_malloc64(cap);
    if (!out) return NULL;
    size_t pos = 0;
    out[pos++] = '[';
    for (size_t i = 0; i < n; i++) {
        if (i) out[pos++] = ',';
        pos += (size_t)format_float(out + pos, cap - pos, v[i]);
    }
    out[pos++] = ']';
    out[pos] = '\0';
    return out;
}

char *ext_describe_value(sqlite3_value *val) {
    switch (sqlite3_value_type(val)) {
    case SQLITE_INTEGER: return sqlite3_mprintf("the integer %lld", sqlite3_value_int64(val));
    case SQLITE_FLOAT: return sqlite3_mprintf("the real %g", sqlite3_value_double(val));
    case SQLITE_BLOB: return sqlite3_mprintf("a blob of %d bytes", sqlite3_value_bytes(val));
    case SQLITE_TEXT: {
        const char *s = (const char *)sqlite3_value_text(val);
        int n = sqlite3_value_bytes(val);
        if (!s) return NULL;
        if (!emb_utf8_valid(s, (size_t)n, NULL) || (int)strlen(s) != n)
            return sqlite3_mprintf("text of %d bytes", n);
        int shown = n;
        if (shown > 40) /* cut on a character boundary */
            for (shown = 40; ((unsigned char)s[shown] & 0xC0) == 0x80; shown--) {}
        return sqlite3_mprintf("text '%.*s%s'", shown, s, shown < n ? "..." : "");
    }
    default: return sqlite3_mprintf("NULL");
    }
}

/* Sets "fn: <what> must be <kind>, not <the value>". */
static void type_error(sqlite3_context *ctx, const char *fn, const char *what, const char *kind,
                       sqlite3_value *val) {
    char *got = ext_describe_value(val);
    if (got) ext_error(ctx, fn, "%s must be %s, not %s", what, kind, got);
    else sqlite3_result_error_nomem(ctx);
    sqlite3_free(got);
}

ext_rc ext_get_int(sqlite3_context *ctx, sqlite3_value *val, const char *fn, const char *what, sqlite3_int64 lo,
                   sqlite3_int64 hi, sqlite3_int64 *out) {
    int t = sqlite3_value_type(val);
    if (t == SQLITE_NULL) return EXT_NULL;
    if (t == SQLITE_FLOAT) {
        double d = sqlite3_value_double(val);
        if (d != floor(d) || d < (double)lo || d > (double)hi) {
            ext_error(ctx, fn, "%s must be an integer from %lld to %lld, not %g", what, lo, hi, d);
            return EXT_ERROR;
        }
        *out = (sqlite3_int64)d;
        return EXT_OK;
    }
    if (t != SQLITE_INTEGER) {
        type_error(ctx, fn, what, "an integer", val);
        return EXT_ERROR;
    }
    sqlite3_int64 x = sqlite3_value_int64(val);
    if (x < lo || x > hi) {
        ext_error(ctx, fn, "%s must be from %lld to %lld, not %lld", what, lo, hi, x);
        return EXT_ERROR;
    }
    *out = x;
    return EXT_OK;
}

/* The text of val, or EXT_ERROR with nomem set. */
static ext_rc value_text(sqlite3_context *ctx, sqlite3_value *val, const char **out, int *len) {
    *out = (const char *)sqlite3_value_text(val);
    *len = sqlite3_value_bytes(val);
    if (*out) return EXT_OK;
    sqlite3_result_error_nomem(ctx);
    return EXT_ERROR;
}

ext_rc ext_get_text(sqlite3_context *ctx, sqlite3_value *val, const char *fn, const char *what, const char **out,
                    int *len) {
    int t = sqlite3_value_type(val);
    if (t == SQLITE_NULL) return EXT_NULL;
    if (t != SQLITE_TEXT) {
        type_error(ctx, fn, what, "text", val);
        return EXT_ERROR;
    }
    if (value_text(ctx, val, out, len) != EXT_OK) return EXT_ERROR;
    if ((int)strlen(*out) != *len) {
        ext_error(ctx, fn, "%s contains a NUL character", what);
        return EXT_ERROR;
    }
    return EXT_OK;
}

ext_rc ext_value_input_text(sqlite3_value *val, const char *what, const char **out, int *len, char **err) {
    *err = NULL;
    int t = sqlite3_value_type(val);
    if (t == SQLITE_NULL) return EXT_NULL;
    if (t == SQLITE_BLOB) {
        *err = sqlite3_mprintf("%s must be text, not a blob (write CAST(x AS TEXT) if its bytes are "
                               "UTF-8 text)",
                               what);
        return EXT_ERROR;
    }
    *out = (const char *)sqlite3_value_text(val);
    *len = sqlite3_value_bytes(val);
    return *out ? EXT_OK : EXT_ERROR; /* no message: out of memory */
}

ext_rc ext_get_input_text(sqlite3_context *ctx, sqlite3_value *val, const char *fn, const char *what,
                          const char **out, int *len) {
    char *err;
    ext_rc r = ext_value_input_text(val, what, out, len, &err);
    if (r == EXT_ERROR) { ext_error_take(ctx, fn, err); }
    return r;
}

int ext_json_object(const char *json, int len, const char *example, cJSON **root, char **err) {
    *err = NULL;
    *root = NULL;
    if (!emb_utf8_valid(json, (size_t)len, NULL) || (int)strlen(json) != len) {
        *err = sqlite3_mprintf("options must be UTF-8 text without NUL characters");
        return -1;
    }
    /* the length counts the terminating NUL, which cJSON must see right after the object */
    cJSON *r = cJSON_ParseWithLengthOpts(json, (size_t)len + 1, NULL, 1);
    if (!cJSON_IsObject(r)) {
        *err = sqlite3_mprintf("options must be a JSON object such as %s, not '%.60s'", example, json);
        cJSON_Delete(r);
        return -1;
    }
    for (const cJSON *item = r->child; item; item = item->next)
        for (const cJSON *prev = r->child; prev != item; prev = prev->next)
            if (strcmp(prev->string, item->string) == 0) {
                *err = sqlite3_mprintf("option \"%s\" is given twice", item->string);
                cJSON_Delete(r);
                return -1;
            }
    *root = r;
    return 0;
}

char *ext_json_text(const cJSON *item) {
    if (cJSON_IsNumber(item)) {
        char buf[32]; /* libc's printf: SQLite's %g stops at 16 digits */
        for (int digits = 15; digits <= 17; digits++) {
            snprintf(buf, sizeof buf, "%.*g", digits, item->valuedouble);
            if (strtod(buf, NULL) == item->valuedouble) break;
        }
        return sqlite3_mprintf("%s", buf);
    }
    char *got = cJSON_PrintUnformatted(item);
    char *s = got ? sqlite3_mprintf("%s", got) : NULL;
    cJSON_free(got);
    return s;
}

ext_rc ext_get_options(sqlite3_context *ctx, sqlite3_value *val, const char *fn, const char *example,
                       cJSON **root) {
    const char *json;
    int len;
    char *err;
    ext_rc r = ext_get_text(ctx, val, fn, "options", &json, &len);
    if (r != EXT_OK) return r;
    if (ext_json_object(json, len, example, root, &err)) {
        ext_error_take(ctx, fn, err);
        return EXT_ERROR;
    }
    return EXT_OK;
}

/* ---------- planning table-valued functions ---------- */

int ext_plan_arguments(const sqlite3_index_info *info, int first, int n, int *slot) {
    int unusable = 0;
    for (int a = 0; a < n; a++) slot[a] = -1;
    for (int i = 0; i < info->nConstraint; i++) {
        const struct sqlite3_index_constraint *c = &info->aConstraint[i];
        int a = c->iColumn - first;
        if (a < 0 || a >= n || c->op != SQLITE_INDEX_CONSTRAINT_EQ) continue;
        if (c->usable) slot[a] = i;
        else unusable |= 1 << a;
    }
    for (int a = 0; a < n; a++)
        if (slot[a] < 0 && (unusable & 1 << a)) return SQLITE_CONSTRAINT;
    return SQLITE_OK;
}

void ext_plan_missing(sqlite3_index_info *info, int need) {
    info->idxNum = need;
    info->estimatedCost = 1e30;
}

int ext_plan_pass(sqlite3_index_info *info, const int *slot, int n, int omit) {
    int argv_index = 1, mask = 0;
    for (int a = 0; a < n; a++)
        if (slot[a] >= 0) {
            info->aConstraintUsage[slot[a]].argvIndex = argv_index++;
            info->aConstraintUsage[slot[a]].omit = (omit >> a) & 1;
            mask |= 1 << a;
        }
    return mask;
}

int ext_plan_hidden(sqlite3_index_info *info, int first, int n, int required, double cost, double rows) {
    int slot[8];
    if (ext_plan_arguments(info, first, n, slot) != SQLITE_OK) return SQLITE_CONSTRAINT;
    for (int a = 0; a < required; a++)
        if (slot[a] < 0) {
            ext_plan_missing(info, EXT_PLAN_NEED_ARGS(n));
            return SQLITE_OK;
        }
    info->idxNum = ext_plan_pass(info, slot, n, (1 << n) - 1);
    info->estimatedCost = cost;
    info->estimatedRows = (sqlite3_int64)rows;
    return SQLITE_OK;
}
