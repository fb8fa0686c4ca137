#include "ext_registry.h"
#include "base/utf8.h"
#include <ctype.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>

/* A short list under one mutex: a process holds a handful of models, and each lookup
 * costs far less than the work done with the model it returns. */
static pthread_mutex_t registry_lock = PTHREAD_MUTEX_INITIALIZER;
static emb_model **models;
static int n_models, cap_models;

static int find(const char *name) {
    for (int i = 0; i < n_models; i++)
        if (strcmp(emb_model_get_info(models[i])->name, name) == 0) return i;
    return -1;
}

int ext_registry_put(emb_model *m, emb_model **existing) {
    int rc = SQLITE_OK;
    *existing = NULL;
    pthread_mutex_lock(&registry_lock);
    int at = find(emb_model_get_info(m)->name);
    if (at >= 0) {
        *existing = models[at];
        emb_model_retain(*existing);
        rc = SQLITE_CONSTRAINT;
    } else {
        if (n_models == cap_models) {
            int nc = cap_models ? cap_models * 2 : 8;
            emb_model **grown = sqlite3_realloc64(models, (size_t)nc * sizeof *grown);
            if (!grown) rc = SQLITE_NOMEM;
            else {
                models = grown;
                cap_models = nc;
            }
        }
        if (rc == SQLITE_OK) {
            emb_model_retain(m);
            models[n_models++] = m;
        }
    }
    pthread_mutex_unlock(&registry_lock);
    return rc;
}

emb_model *ext_registry_get(const char *name) {
    emb_model *m = NULL;
    pthread_mutex_lock(&registry_lock);
    int at = find(name);
    if (at >= 0) {
        m = models[at];
        emb_model_retain(m);
    }
    pthread_mutex_unlock(&registry_lock);
    return m;
}

int ext_registry_remove(const char *name) {
    emb_model *gone = NULL;
    pthread_mutex_lock(&registry_lock);
    int at = find(name);
    if (at >= 0) {
        gone = models[at];
        models[at] = models[--n_models];
    }
    pthread_mutex_unlock(&registry_lock);
    emb_model_release(gone);
    return gone != NULL;
}

static int by_name(const void *a, const void *b) {
    return strcmp(emb_model_get_info(*(emb_model *const *)a)->name,
                  emb_model_get_info(*(emb_model *const *)b)->name);
}

int ext_registry_list(emb_model ***out, int *n) {
    int rc = SQLITE_OK;
    pthread_mutex_lock(&registry_lock);
    *out = sqlite3_malloc64(((size_t)n_models + 1) * sizeof **out);
    *n = *out ? n_models : 0; /* the caller releases *n models of *out, also after a failure */
    if (!*out) rc = SQLITE_NOMEM;
    else
        for (int i = 0; i < n_models; i++) {
            (*out)[i] = models[i];
            emb_model_retain(models[i]);
        }
    pthread_mutex_unlock(&registry_lock);
    if (rc == SQLITE_OK) qsort(*out, (size_t)*n, sizeof **out, by_name);
    return rc;
}

/* Edit distance between a and b (bytes, ASCII case folded), both at most NAME_NEAR_MAX bytes. */
#define NAME_NEAR_MAX 128
static int edit_distance(const char *a, const char *b) {
    int la = (int)strlen(a), lb = (int)strlen(b), row[NAME_NEAR_MAX + 1];
    for (int j = 0; j <= lb; j++) row[j] = j;
    for (int i = 1; i <= la; i++) {
        int diag = row[0];
        row[0] = i;
        for (int j = 1; j <= lb; j++) {
            int up = row[j], same = tolower((unsigned char)a[i - 1]) == tolower((unsigned char)b[j - 1]);
            int best = diag + !same;
            if (up + 1 < best) best = up + 1;
            if (row[j - 1] + 1 < best) best = row[j - 1] + 1;
            row[j] = best;
            diag = up;
        }
    }
    return row[lb];
}

/* "; did you mean 'x'?" for the loaded name nearest to a missing one (a typo: at most one edit
 * for names of 4 bytes or fewer, two for longer ones), or "" when none is that near. */
static char *nearest_hint(const char *name) {
    size_t len = strlen(name);
    char *hint = NULL;
    int best = len <= 4 ? 1 : 2;
    if (len > NAME_NEAR_MAX) return sqlite3_mprintf("");
    pthread_mutex_lock(&registry_lock);
    for (int i = 0; i < n_models; i++) {
        const char *other = emb_model_get_info(models[i])->name;
        if (strlen(other) > NAME_NEAR_MAX) continue;
        int d = edit_distance(name, other);
        if (d <= best) {
            best = d - 1; /* a later name must be strictly nearer */
            sqlite3_free(hint);
            hint = sqlite3_mprintf("; did you mean '%s'?", other);
        }
    }
    pthread_mutex_unlock(&registry_lock);
    return hint ? hint : sqlite3_mprintf("");
}

emb_model *ext_model_named(const char *name, int len, char **err) {
    size_t bad;
    *err = NULL;
    if ((int)strlen(name) != len) {
        *err = sqlite3_mprintf("the model name contains a NUL character");
        return NULL;
    }
    if (!emb_utf8_valid(name, (size_t)len, &bad)) {
        *err = sqlite3_mprintf("the model name is not valid UTF-8 (byte %lld)", (long long)bad);
        return NULL;
    }
    emb_model *m = ext_registry_get(name);
    if (!m) {
        char *hint = nearest_hint(name);
        if (hint && *hint) *err = sqlite3_mprintf("no model named '%s'%s", name, hint);
        else if (hint)
            *err = sqlite3_mprintf("no model named '%s' (load one with embed_load or embed_define)", name);
        sqlite3_free(hint);
    }
    return m;
}

static void release_model(void *m) { emb_model_release(m); }

emb_model *ext_model_arg(sqlite3_context *ctx, sqlite3_value **argv, int arg, const char *fn) {
    emb_model *m = sqlite3_get_auxdata(ctx, arg);
    if (m) {
        emb_model_retain(m);
        return m;
    }
    const char *name;
    int len;
    if (ext_get_text(ctx, argv[arg], fn, "the model name", &name, &len) != EXT_OK) return NULL;
    char *err;
    m = ext_model_named(name, len, &err);
    if (!m) {
        ext_error_take(ctx, fn, err);
        return NULL;
    }
    /* One reference for the caller, one kept with the argument; SQLite may release the kept
     * one at once (an argument that is not constant), so the caller's stays separate. */
    emb_model_retain(m);
    sqlite3_set_auxdata(ctx, arg, m, release_model);
    return m;
}

int ext_model_keep(emb_model **held, sqlite3_value *name, char **err) {
    *err = NULL;
    if (sqlite3_value_type(name) != SQLITE_TEXT) {
        char *got = ext_describe_value(name);
        if (got) *err = sqlite3_mprintf("the model name must be text, not %s", got);
        sqlite3_free(got);
        return *err ? SQLITE_ERROR : SQLITE_NOMEM;
    }
    const char *s = (const char *)sqlite3_value_text(name);
    int len = sqlite3_value_bytes(name);
    if (!s) return SQLITE_NOMEM;
    if (*held && strcmp(emb_model_get_info(*held)->name, s) == 0 && (int)strlen(s) == len) return SQLITE_OK;
    emb_model_release(*held);
    *held = ext_model_named(s, len, err);
    return *held ? SQLITE_OK : *err ? SQLITE_ERROR : SQLITE_NOMEM;
}
