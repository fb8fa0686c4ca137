/* embed_index's CREATE VIRTUAL TABLE arguments: `key = value` options (model, dims, metric,
 * chunk_size, chunk_tokens, ...), metadata columns `name type [partition key]`, and answers to sqlite-vec's way of
 * writing them. Parsing only: ix_schema.c creates and connects. */
#include "ix.h"
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define DEFAULT_CHUNK 1024

void ix_options_free(ix_options *o) {
    sqlite3_free(o->model);
    sqlite3_free(o->prompt_names[0]);
    sqlite3_free(o->prompt_names[1]);
    for (int j = 0; j < o->n_meta; j++) sqlite3_free(o->meta[j].name);
    sqlite3_free(o->meta);
}

static char *dequote(const char *s, size_t n) {
    while (n && (*s == ' ' || *s == '\t' || *s == '\n' || *s == '\r')) s++, n--;
    while (n && (s[n - 1] == ' ' || s[n - 1] == '\t' || s[n - 1] == '\n' || s[n - 1] == '\r')) n--;
    char *out = sqlite3_malloc64(n + 1);
    if (!out) return NULL;
    if (n >= 2 && (s[0] == '\'' || s[0] == '"' || s[0] == '`') && s[n - 1] == s[0]) {
        char q = s[0];
        size_t j = 0;
        for (size_t i = 1; i + 1 < n; i++) {
            out[j++] = s[i];
            if (s[i] == q && i + 2 < n && s[i + 1] == q) i++;
        }
        out[j] = 0;
    } else {
        memcpy(out, s, n);
        out[n] = 0;
    }
    return out;
}

static int parse_int(const char *s, long lo, long hi, int *out) {
    char *end;
    long x = strtol(s, &end, 10);
    if (!*s || *end || x < lo || x > hi) return -1;
    *out = (int)x;
    return 0;
}

/* sqlite-vec's vec0 declares its vector as a column, `embedding float[384]`, with an optional
 * `distance_metric=cosine`: such an argument gets the embed_index equivalent. NULL if the
 * argument is not one. */
static char *vec0_hint(const char *arg) {
    static const char *const types[] = {"float[", "f32[", "int8[", "bit["};
    const char *at = NULL;
    for (int i = 0; i < 4 && !at; i++)
        for (const char *p = arg; *p && !at; p++)
            if (sqlite3_strnicmp(p, types[i], (int)strlen(types[i])) == 0) at = p + strlen(types[i]);
    if (!at) return NULL;
    int dims = atoi(at);
    const char *metric = sqlite3_strglob("*distance_metric*=*", arg) == 0 ? strrchr(arg, '=') + 1 : NULL;
    while (metric && (*metric == ' ' || *metric == '\'' || *metric == '"')) metric++;
    char m[16] = "";
    for (int i = 0; metric && i < 15 && metric[i] && metric[i] != ' ' && metric[i] != '\'' && metric[i] != '"' &&
                    metric[i] != ')';
         i++)
        m[i] = metric[i], m[i + 1] = 0;
    return sqlite3_mprintf(IX_FN ": columns are not declared as in sqlite-vec's vec0 ('%s'): the vector "
                                 "column is always named vector; write embed_index(dims = %d%s%s%s) for "
                                 "vectors made elsewhere, or embed_index(model = 'name') to embed text",
                           arg, dims, *m ? ", metric = '" : "", m, *m ? "'" : "");
}

#define KNOWN_OPTIONS                                                                                             \
    "model, dims, metric, storage, rescore, index, chunk_size, chunk_tokens, chunk_overlap, query_prompt, "       \
    "document_prompt"
/* Names a metadata column cannot have: the table's own columns, the rowid, the options. */
static const char *const reserved_names[] = {"vector",       "text",
                                             "distance",     "k",
                                             "oversample",   "probes",
                                             "chunk",        "chunk_start",
                                             "chunk_end",    "rerank",
                                             "rerank_depth", "rerank_score",
                                             "rowid",        "oid",
                                             "_rowid_",      "model",
                                             "dims",         "metric",
                                             "chunk_size",   "storage",
                                             "rescore",      "index",
                                             "chunk_tokens", "chunk_overlap",
                                             "query_prompt", "document_prompt"};
#define N_COLUMN_NAMES 15
static const char *const meta_types[] = {"integer", "real", "text", "blob"};

/* `name type [partition key]`: a metadata column (name a plain or "quoted" identifier). */
static int parse_column(const char *a, ix_options *o, char **err) {
    const char *p = a + strspn(a, " \t\r\n"), *name_end;
    char *name;
    if (*p == '"' || *p == '`' || *p == '[') {
        char close = *p == '[' ? ']' : *p;
        const char *q = p + 1;
        while (*q && !(*q == close && q[1] != close)) q += *q == close ? 2 : 1;
        if (!*q)
            return (*err = sqlite3_mprintf(IX_FN ": unfinished column name in '%s'", a)) ? SQLITE_ERROR
                                                                                         : SQLITE_NOMEM;
        name_end = q + 1;
        name = dequote(p, (size_t)(name_end - p));
    } else {
        name_end = p;
        while (*name_end == '_' || (*name_end & 0x80) || ((*name_end | 32) >= 'a' && (*name_end | 32) <= 'z') ||
               (name_end > p && *name_end >= '0' && *name_end <= '9'))
            name_end++;
        name = name_end > p ? dequote(p, (size_t)(name_end - p)) : NULL;
        if (name_end == p) {
            *err = sqlite3_mprintf(IX_FN ": argument '%s' is neither key = value (options: " KNOWN_OPTIONS
                                         ") nor a metadata column `name type` (types: integer, real, "
                                         "text, blob)",
                                   a);
            return SQLITE_ERROR;
        }
    }
    if (!name) return SQLITE_NOMEM;
    char type[16] = "", rest[64] = "";
    int got = sscanf(name_end, " %15s %63[^\n]", type, rest);
    int t = -1;
    for (int i = 0; got >= 1 && i < 4; i++)
        if (!sqlite3_stricmp(type, meta_types[i])) t = i;
    int rc = SQLITE_ERROR, partition = 0;
    if (got >= 2) {
        char *r = rest + strlen(rest);
        while (r > rest && (r[-1] == ' ' || r[-1] == '\t')) *--r = 0;
        partition = !sqlite3_stricmp(rest, "partition key");
    }
    for (size_t i = 0; i < sizeof reserved_names / sizeof *reserved_names && !*err; i++)
        if (!sqlite3_stricmp(name, reserved_names[i]))
            *err = sqlite3_mprintf(IX_FN ": a metadata column cannot be named '%s', the name of %s", name,
                                   i < N_COLUMN_NAMES ? "a column of the table" : "an option (write key = value)");
    for (int j = 0; j < o->n_meta && !*err; j++)
        if (!sqlite3_stricmp(name, o->meta[j].name))
            *err = sqlite3_mprintf(IX_FN ": metadata column '%s' is declared twice", name);
    if (*err) {
    } else if (t < 0) {
        *err = sqlite3_mprintf(IX_FN ": metadata column '%s' has type '%s'; the types are integer, real, "
                                     "text and blob",
                               name, got >= 1 ? type : "");
    } else if (got >= 2 && !partition) {
        *err = sqlite3_mprintf(IX_FN ": metadata column '%s': unexpected '%s' after its type (only "
                                     "'partition key' may follow)",
                               name, rest);
    } else if (partition && o->partition >= 0) {
        *err = sqlite3_mprintf(IX_FN ": only one column can be the partition key ('%s' and '%s')",
                               o->meta[o->partition].name, name);
    } else if (partition && t != IX_META_INTEGER && t != IX_META_TEXT) {
        *err = sqlite3_mprintf(IX_FN ": the partition key '%s' must be integer or text", name);
    } else if (o->n_meta == IX_MAX_META) {
        *err = sqlite3_mprintf(IX_FN ": at most %d metadata columns", IX_MAX_META);
    } else {
        ix_meta *m = sqlite3_realloc64(o->meta, (size_t)(o->n_meta + 1) * sizeof *m);
        if (!m) rc = SQLITE_NOMEM;
        else {
            o->meta = m;
            m[o->n_meta] = (ix_meta){name, (ix_meta_type)t};
            if (partition) o->partition = o->n_meta;
            o->n_meta++;
            return SQLITE_OK;
        }
    }
    sqlite3_free(name);
    return rc;
}

/* One argument into o: `key = value`, or a metadata column; *err set on a bad one. */
static int parse_option(const char *a, ix_options *o, char **err) {
    const char *eq = strchr(a, '=');
    if ((*err = vec0_hint(a)) != NULL) return SQLITE_ERROR;
    if (!eq) return parse_column(a, o, err);
    char *key = dequote(a, (size_t)(eq - a)), *val = dequote(eq + 1, strlen(eq + 1));
    int rc = key && val ? SQLITE_OK : SQLITE_NOMEM;
    if (rc != SQLITE_OK) {
    } else if (!sqlite3_stricmp(key, "model") && !o->model) {
        o->model = val, val = NULL;
    } else if ((!sqlite3_stricmp(key, "query_prompt") && !o->prompt_names[IX_ROLE_QUERY]) ||
               (!sqlite3_stricmp(key, "document_prompt") && !o->prompt_names[IX_ROLE_DOCUMENT])) {
        o->prompt_names[(key[0] | 32) == 'q' ? IX_ROLE_QUERY : IX_ROLE_DOCUMENT] = val, val = NULL;
    } else if (!sqlite3_stricmp(key, "metric") && !o->has_metric) {
        o->has_metric = 1;
        if (emb_metric_parse(val, &o->metric)) {
            *err = sqlite3_mprintf(IX_FN ": unknown metric '%s' (use cosine, l2, dot or l1)", val);
            rc = SQLITE_ERROR;
        }
    } else if (!sqlite3_stricmp(key, "dims") && !o->dims) {
        if (parse_int(val, 1, IX_MAX_DIMS, &o->dims)) {
            *err = sqlite3_mprintf(IX_FN ": dims must be an integer from 1 to %d, not '%s'", IX_MAX_DIMS, val);
            rc = SQLITE_ERROR;
        }
    } else if (!sqlite3_stricmp(key, "chunk_size")) {
        if (parse_int(val, 1, IX_MAX_CHUNK_ROWS, &o->chunk)) {
            *err = sqlite3_mprintf(IX_FN ": chunk_size must be an integer from 1 to %d, not '%s'",
                                   IX_MAX_CHUNK_ROWS, val);
            rc = SQLITE_ERROR;
        }
    } else if (!sqlite3_stricmp(key, "chunk_tokens") && !o->chunk_tokens) {
        if (parse_int(val, 1, 1 << 20, &o->chunk_tokens)) {
            *err = sqlite3_mprintf(IX_FN ": chunk_tokens must be a positive integer (tokens per chunk of "
                                         "a row's text), not '%s'",
                                   val);
            rc = SQLITE_ERROR;
        }
    } else if (!sqlite3_stricmp(key, "chunk_overlap") && !o->has_overlap) {
        o->has_overlap = 1;
        if (parse_int(val, 0, 1 << 20, &o->chunk_overlap)) {
            *err = sqlite3_mprintf(IX_FN ": chunk_overlap must be an integer from 0 (tokens consecutive "
                                         "chunks share), not '%s'",
                                   val);
            rc = SQLITE_ERROR;
        }
    } else if (!sqlite3_stricmp(key, "storage") && !o->has_storage) {
        o->has_storage = 1;
        if (emb_storage_parse(val, &o->storage)) {
            *err = sqlite3_mprintf(IX_FN ": unknown storage '%s' (use f32, f16, int8 or bit)", val);
            rc = SQLITE_ERROR;
        }
    } else if (!sqlite3_stricmp(key, "rescore") && !o->has_rescore) {
        o->has_rescore = 1;
        if (!sqlite3_stricmp(val, "true") || !strcmp(val, "1")) o->rescore = 1;
        else if (!sqlite3_stricmp(val, "false") || !strcmp(val, "0")) o->rescore = 0;
        else {
            *err = sqlite3_mprintf(IX_FN ": rescore must be true or false, not '%s'", val);
            rc = SQLITE_ERROR;
        }
    } else if (!sqlite3_stricmp(key, "index") && !o->has_index) {
        o->has_index = 1;
        if (!sqlite3_stricmp(val, "ivf")) o->ivf = 1;
        else if (!sqlite3_stricmp(val, "flat")) o->ivf = 0;
        else {
            *err = sqlite3_mprintf(IX_FN ": unknown index '%s' (use flat, the exact scan, or ivf, the "
                                         "approximate inverted-file index)",
                                   val);
            rc = SQLITE_ERROR;
        }
    } else if (!sqlite3_stricmp(key, "distance_metric")) {
        *err = sqlite3_mprintf(IX_FN ": distance_metric is sqlite-vec's name; write metric = '%s'", val);
        rc = SQLITE_ERROR;
    } else {
        *err = sqlite3_mprintf(IX_FN ": unknown or repeated option '%s' (known: " KNOWN_OPTIONS ")", key);
        rc = SQLITE_ERROR;
    }
    sqlite3_free(key);
    sqlite3_free(val);
    return rc;
}

/* The arguments of CREATE VIRTUAL TABLE (argv[3..]), as xCreate and xConnect both read them. */
int ix_parse_options(int argc, const char *const *argv, ix_options *o, char **err) {
    memset(o, 0, sizeof *o);
    o->chunk = DEFAULT_CHUNK;
    o->metric = EMB_METRIC_COSINE;
    o->partition = -1;
    o->storage = EMB_STORAGE_F32;
    o->rescore = 1;
    int rc = SQLITE_OK;
    for (int i = 3; i < argc && rc == SQLITE_OK; i++) rc = parse_option(argv[i], o, err);
    for (int j = 0; rc == SQLITE_OK && j < o->n_meta; j++)
        if (!sqlite3_stricmp(o->meta[j].name, argv[2])) {
            *err = sqlite3_mprintf(IX_FN ": a metadata column cannot have the table's name '%s'", argv[2]);
            rc = SQLITE_ERROR;
        }
    return rc;
}

/* xCreate's checks: the model named (retained into *mod) exists and fits, dims is known. */
int ix_check_prompt_names(const char *const names[2], emb_model *m, char **err) {
    for (int r = 0; r < 2; r++) {
        if (!names[r] || !strcmp(names[r], "none") || emb_model_prompt(m, names[r])) continue;
        const emb_model_info *info = emb_model_get_info(m);
        *err = sqlite3_mprintf(IX_FN ": %s = '%s' is not a prompt of model '%s' (its prompts: %s; or none)",
                               IX_PROMPT_KEY(r), names[r], info->name, info->prompts ? info->prompts : "none");
        return *err ? SQLITE_ERROR : SQLITE_NOMEM;
    }
    return SQLITE_OK;
}

int ix_check_options(ix_options *o, emb_model **mod, char **err) {
    int rc = SQLITE_OK;
    *mod = NULL;
    if (o->model) {
        const emb_model_info *info;
        char msg[EMB_ERR_LEN];
        char *why = NULL;
        if (!(*mod = ext_model_named(o->model, (int)strlen(o->model), &why))) {
            /* the registry's wording, with the nearest loaded name when one is near */
            *err = why ? sqlite3_mprintf(IX_FN ": %s", why) : NULL;
            rc = *err ? SQLITE_ERROR : SQLITE_NOMEM;
            sqlite3_free(why);
        } else if (emb_model_require_vectors(info = emb_model_get_info(*mod), "vectors", msg)) {
            *err = sqlite3_mprintf(IX_FN ": %s", msg);
            rc = SQLITE_ERROR;
        } else if (o->dims > info->dimensions) {
            *err = sqlite3_mprintf(IX_FN ": dims = %d, but model '%s' makes vectors of %d dimensions (dims "
                                         "may keep fewer: the first dims of each vector)",
                                   o->dims, o->model, info->dimensions);
            rc = SQLITE_ERROR;
        } else if ((rc = ix_check_prompt_names((const char *const *)o->prompt_names, *mod, err)) != SQLITE_OK) {
            /* the error is set */
        } else if (info->max_tokens > 0 && o->chunk_tokens > info->max_tokens) {
            *err = sqlite3_mprintf(IX_FN ": chunk_tokens = %d, but model '%s' reads at most %d tokens",
                                   o->chunk_tokens, o->model, info->max_tokens);
            rc = SQLITE_ERROR;
        } else if (!o->dims) {
            o->dims = info->dimensions;
        }
    }
    if (rc == SQLITE_OK && !o->model && (o->prompt_names[0] || o->prompt_names[1])) {
        *err = sqlite3_mprintf(IX_FN ": query_prompt and document_prompt need a model: an index of dims = N "
                                     "embeds no text");
        rc = SQLITE_ERROR;
    }
    if (rc == SQLITE_OK && !o->model && (o->chunk_tokens || o->has_overlap)) {
        *err = sqlite3_mprintf(IX_FN ": chunk_tokens needs a model: a chunked index embeds its rows' texts "
                                     "(embed_index(model = 'name', chunk_tokens = N))");
        rc = SQLITE_ERROR;
    }
    if (rc == SQLITE_OK && o->has_overlap && (!o->chunk_tokens || o->chunk_overlap >= o->chunk_tokens)) {
        *err = sqlite3_mprintf(IX_FN ": chunk_overlap must be less than chunk_tokens (%d), not %d",
                               o->chunk_tokens, o->chunk_overlap);
        rc = SQLITE_ERROR;
    }
    if (rc == SQLITE_OK && !o->dims) {
        *err = sqlite3_mprintf(IX_FN
                               ": say which vectors it holds: embed_index(model = 'name') or "
                               "embed_index(dims = N), optionally with metric = 'cosine' | 'l2' | 'dot' | 'l1'");
        rc = SQLITE_ERROR;
    }
    if (rc == SQLITE_OK && o->has_rescore && o->storage == EMB_STORAGE_F32 && !o->rescore) {
        *err = sqlite3_mprintf(IX_FN ": rescore = false needs compact storage (storage = 'f16', 'int8' or "
                                     "'bit'): f32 storage is exact already");
        rc = SQLITE_ERROR;
    }
    if (rc == SQLITE_OK && (size_t)o->chunk * (size_t)o->dims * sizeof(float) > IX_MAX_CHUNK_BYTES) {
        o->chunk = (int)(IX_MAX_CHUNK_BYTES / ((size_t)o->dims * sizeof(float)));
        if (o->chunk < 1) o->chunk = 1;
    }
    return rc;
}
