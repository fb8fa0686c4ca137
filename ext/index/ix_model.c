/* embed_index's model: the loaded model of the name in NAME_config, checked against the
 * fingerprint the index was made with; held by a transaction whose texts are pending; and
 * replaced by an equal model loaded under another name. */
#include "ix.h"
#include <string.h>

/* Whether m is a model this index can use: vectors of its size, with its fingerprint. */
static int model_fits(ix_vtab *v, const char *name, emb_model *m) {
    const emb_model_info *info = emb_model_get_info(m);
    /* an index of fewer dims than the model's keeps the first dims of each vector (Matryoshka) */
    if (info->has_vectors && info->dims->hidden >= v->dims && !strcmp(info->fingerprint, v->fingerprint)) return 1;
    ix_error(v,
             "model '%s' (fingerprint %s, %d dimensions) is not the model \"%s\" was made with "
             "(fingerprint %s, %d dimensions)",
             name, info->fingerprint, info->has_vectors ? info->dims->hidden : 0, v->name, v->fingerprint,
             v->dims);
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

int ix_embed_texts(ix_vtab *v, const char *const *texts, const size_t *lens, size_t n, float *out) {
    int rc;
    emb_model *m = ix_model(v, &rc);
    if (!m) return rc;
    char err[EMB_ERR_LEN];
    emb_embed_options opt = {.pool = -1, .normalize = -1, .dims = 0};
    if (emb_model_get_info(m)->dims->hidden > v->dims) opt.dims = v->dims;
    if (emb_model_embed(m, texts, lens, n, &opt, out, err)) rc = ix_error(v, "%s", err);
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
