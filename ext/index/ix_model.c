/* embed_index's model: the loaded model of the name in NAME_config, checked against the
 * fingerprint the index was made with; held by a transaction whose texts are pending; and
 * replaced by an equal model loaded under another name. */
#include "ix.h"
#include <string.h>

/* Whether m is a model this index can use: vectors of its size, with its fingerprint. */
static int model_fits(ix_vtab *v, const char *name, emb_model *m) {
    const emb_model_info *info = emb_model_get_info(m);
    /* an index of fewer dims than the model's keeps the first dims of each vector (Matryoshka) */
    if (info->has_vectors && info->dimensions >= v->dims && !strcmp(info->fingerprint, v->fingerprint)) return 1;
    ix_error(v,
             "model '%s' (fingerprint %s, %d dimensions) is not the model \"%s\" was made with "
             "(fingerprint %s, %d dimensions)",
             name, info->fingerprint, info->has_vectors ? info->dimensions : 0, v->name, v->fingerprint, v->dims);
    return 0;
}

/* The error for a model that is not loaded, with the folder it came from as a hint only:
 * loading a path named by a database file is the user's call. */
static void not_loaded(ix_vtab *v, const char *name) {
    char *path = NULL;
    if (ix_get_config_text(v, "model_path", &path) == SQLITE_OK && path)
        ix_error(v,
                 "model '%s' of \"%s\" is not loaded: load it first with embed_load('%s', '%s') "
                 "(the folder it was loaded from when the index was created), or point the "
                 "index at an equal model: INSERT INTO \"%s\"(\"%s\", text) VALUES ('model', 'name')",
                 name, v->name, name, path, v->name, v->name);
    else
        ix_error(v,
                 "model '%s' of \"%s\" is not loaded: load or define it first (embed_load, "
                 "embed_define)",
                 name, v->name);
    sqlite3_free(path);
}

emb_model *ix_model(ix_vtab *v, int *rc) {
    if (v->held) {
        emb_model_retain(v->held);
        *rc = SQLITE_OK;
        return v->held;
    }
    char *name = NULL;
    emb_model *m = NULL;
    /* the name is read each time: another connection may have pointed the index elsewhere */
    if ((*rc = ix_get_config_text(v, "model", &name)) != SQLITE_OK) return NULL;
    *rc = SQLITE_ERROR;
    if (!name) {
        ix_error(v, "\"%s\" has no model (it was created with dims = %d): give vectors, not text", v->name,
                 v->dims);
    } else if (!(m = ext_registry_get(name))) {
        not_loaded(v, name);
    } else if (!model_fits(v, name, m)) {
        emb_model_release(m);
        m = NULL;
    } else {
        *rc = SQLITE_OK;
    }
    sqlite3_free(name);
    return m;
}

int ix_hold_model(ix_vtab *v) {
    if (v->held) return SQLITE_OK;
    int rc;
    v->held = ix_model(v, &rc);
    return rc;
}

void ix_release_model(ix_vtab *v) {
    emb_model_release(v->held);
    v->held = NULL;
}

/* The prompt of a role: NAME_config's query_prompt / document_prompt (a prompt name of the model,
 * or "none"), else the model's own choice as sentence-transformers' encode_query and
 * encode_document make it (NULL: its default prompt). */
static int role_prompt(ix_vtab *v, emb_model *m, ix_role role, const char **out) {
    char *name = NULL;
    int rc = ix_get_config_text(v, IX_PROMPT_KEY(role), &name);
    *out = NULL;
    if (rc != SQLITE_OK) return rc;
    if (!name) *out = emb_model_role_prompt(m, role == IX_ROLE_QUERY ? EMB_PROMPT_QUERY : EMB_PROMPT_DOCUMENT);
    else if (!strcmp(name, "none")) *out = "";
    else if (!(*out = emb_model_prompt(m, name)))
        rc = ix_error(v, "%s '%s' of \"%s\" is not a prompt of model '%s' (its prompts: %s)", IX_PROMPT_KEY(role),
                      name, v->name, emb_model_get_info(m)->name,
                      emb_model_get_info(m)->prompts ? emb_model_get_info(m)->prompts : "none");
    sqlite3_free(name);
    return rc;
}

int ix_embed_texts(ix_vtab *v, ix_role role, const char *const *texts, const size_t *lens, size_t n, float *out) {
    int rc;
    emb_model *m = ix_model(v, &rc);
    if (!m) return rc;
    char err[EMB_ERR_LEN];
    emb_embed_options opt = {.pool = -1, .normalize = -1, .dims = 0, .prompt = NULL};
    if (emb_model_get_info(m)->dimensions > v->dims) opt.dims = v->dims;
    rc = role_prompt(v, m, role, &opt.prompt);
    if (rc == SQLITE_OK && emb_model_embed(m, texts, lens, n, &opt, out, err)) rc = ix_error(v, "%s", err);
    emb_model_release(m);
    return rc;
}

int ix_use_model(ix_vtab *v, const char *name) {
    if (!v->model) return ix_error(v, "\"%s\" has no model (it was created with dims = %d)", v->name, v->dims);
    if (!name) return ix_error(v, "command 'model' needs the name of a loaded model in the text column");
    char *why = NULL;
    emb_model *m = ext_model_named(name, (int)strlen(name), &why);
    if (!m) {
        int rc = why ? ix_error(v, "%s", why) : SQLITE_NOMEM;
        sqlite3_free(why);
        return rc;
    }
    char *copy = NULL;
    int rc = model_fits(v, name, m) ? SQLITE_OK : SQLITE_ERROR;
    if (rc == SQLITE_OK && !(copy = sqlite3_mprintf("%s", name))) rc = SQLITE_NOMEM;
    if (rc == SQLITE_OK) rc = ix_set_config_text(v, "model", name);
    if (rc == SQLITE_OK) rc = ix_set_config_text(v, "model_path", emb_model_get_info(m)->path);
    if (rc == SQLITE_OK) {
        sqlite3_free(v->model);
        v->model = copy;
        copy = NULL;
    }
    sqlite3_free(copy);
    emb_model_release(m);
    return rc;
}

/* NAME_config's text of key (NULL: absent), sqlite3_malloc'd. */
static int config_text(sqlite3 *db, const char *schema, const char *index, const char *key, char **out) {
    char *sql = sqlite3_mprintf("SELECT value FROM \"%w\".\"%w_config\" WHERE key = ?", schema, index);
    sqlite3_stmt *s = NULL;
    int rc = sql ? sqlite3_prepare_v2(db, sql, -1, &s, NULL) : SQLITE_NOMEM;
    sqlite3_free(sql);
    *out = NULL;
    if (rc == SQLITE_OK) rc = sqlite3_bind_text(s, 1, key, -1, SQLITE_STATIC);
    if (rc == SQLITE_OK && sqlite3_step(s) == SQLITE_ROW && sqlite3_column_type(s, 0) == SQLITE_TEXT &&
        !(*out = sqlite3_mprintf("%s", sqlite3_column_text(s, 0))))
        rc = SQLITE_NOMEM;
    int frc = sqlite3_finalize(s);
    return rc != SQLITE_OK ? rc : frc;
}

/* The model of the index's name and fingerprint, retained; NULL when not loaded. */
static int loaded_model(sqlite3 *db, const char *schema, const char *index, emb_model **out) {
    char *name = NULL, *fp = NULL;
    int rc = config_text(db, schema, index, "model", &name);
    if (rc == SQLITE_OK) rc = config_text(db, schema, index, "fingerprint", &fp);
    *out = rc == SQLITE_OK && name && fp ? ext_registry_get(name) : NULL;
    if (*out && strcmp(emb_model_get_info(*out)->fingerprint, fp) != 0) {
        emb_model_release(*out);
        *out = NULL;
    }
    sqlite3_free(name);
    sqlite3_free(fp);
    return rc;
}

int ix_count_truncated(sqlite3 *db, const char *schema, const char *index, sqlite3_int64 *out) {
    emb_model *m;
    *out = -1;
    int rc = loaded_model(db, schema, index, &m);
    if (rc != SQLITE_OK || !m) return rc;
    int limit = emb_model_get_info(m)->max_tokens;
    char *sql = sqlite3_mprintf("SELECT text FROM \"%w\".\"%w_rows\" WHERE text IS NOT NULL", schema, index);
    sqlite3_stmt *s = NULL;
    rc = sql ? sqlite3_prepare_v2(db, sql, -1, &s, NULL) : SQLITE_NOMEM;
    sqlite3_free(sql);
    emb_encoding enc;
    char err[EMB_ERR_LEN];
    emb_model_encoding_init(&enc);
    sqlite3_int64 n = 0;
    while (rc == SQLITE_OK && limit > 0 && sqlite3_step(s) == SQLITE_ROW) {
        const char *t = (const char *)sqlite3_column_text(s, 0);
        /* the same count as the insert's: all tokens, specials included, before the limit cuts */
        if (emb_model_tokenize_limit(m, t ? t : "", (size_t)sqlite3_column_bytes(s, 0), NULL, 0, 0, &enc, err))
            continue; /* a text the model cannot read was never embedded */
        n += enc.n > (size_t)limit;
    }
    int frc = sqlite3_finalize(s);
    emb_model_encoding_free(&enc);
    emb_model_release(m);
    if (rc == SQLITE_OK && frc == SQLITE_OK) *out = n;
    return rc != SQLITE_OK ? rc : frc;
}
