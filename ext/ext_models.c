/* embed_define, embed_load, embed_unload: adding models to the registry and removing them. */
#include "ext_functions.h"
#include "ext_registry.h"
#include <string.h>

#define MODEL_NAME_MAX 128

/* Registers m; a name already taken is an error unless it holds the same folder. */
static void publish(sqlite3_context *ctx, const char *fn, emb_model *m) {
    emb_model *existing;
    const emb_model_info *info = emb_model_get_info(m);
    int rc = ext_registry_put(m, &existing);
    if (rc == SQLITE_OK) {
        sqlite3_result_text(ctx, info->name, -1, SQLITE_TRANSIENT);
    } else if (rc == SQLITE_CONSTRAINT) {
        const emb_model_info *old = emb_model_get_info(existing);
        if (info->path && old->path && strcmp(info->path, old->path) == 0 &&
            strcmp(info->fingerprint, old->fingerprint) == 0)
            sqlite3_result_text(ctx, info->name, -1, SQLITE_TRANSIENT); /* loading twice is harmless */
        else
            ext_error(ctx, fn, "a model named '%s' is already loaded (embed_unload it first)", info->name);
        emb_model_release(existing);
    } else {
        sqlite3_result_error_nomem(ctx);
    }
    emb_model_release(m);
}

static int model_name_arg(sqlite3_context *ctx, sqlite3_value *val, const char *fn, const char **name) {
    int len;
    ext_rc r = ext_get_text(ctx, val, fn, "the model name", name, &len);
    if (r == EXT_NULL) ext_error(ctx, fn, "the model name must not be NULL");
    if (r != EXT_OK) return -1;
    if (len == 0 || len > MODEL_NAME_MAX || (int)strlen(*name) != len) {
        ext_error(ctx, fn, "the model name must be 1 to %d characters", MODEL_NAME_MAX);
        return -1;
    }
    return 0;
}

static void fn_embed_define(sqlite3_context *ctx, int argc, sqlite3_value **argv) {
    (void)argc;
    const char *fn = "embed_define", *name, *json;
    int len;
    if (model_name_arg(ctx, argv[0], fn, &name)) return;
    ext_rc r = ext_get_text(ctx, argv[1], fn, "the model definition", &json, &len);
    if (r == EXT_NULL) ext_error(ctx, fn, "the model definition must not be NULL");
    if (r != EXT_OK) return;
    char err[EMB_ERR_LEN];
    emb_model *m;
    if (emb_model_define(name, json, (size_t)len, &m, err)) {
        ext_error(ctx, fn, "%s", err);
        return;
    }
    publish(ctx, fn, m);
}

static void fn_embed_load(sqlite3_context *ctx, int argc, sqlite3_value **argv) {
    (void)argc;
    const char *fn = "embed_load", *name, *path;
    int len;
    if (model_name_arg(ctx, argv[0], fn, &name)) return;
    ext_rc r = ext_get_text(ctx, argv[1], fn, "the model folder", &path, &len);
    if (r == EXT_NULL) ext_error(ctx, fn, "the model folder must not be NULL");
    if (r != EXT_OK) return;
    emb_model *existing = ext_registry_get(name);
    if (existing) { /* already loaded: no need to read the files again */
        const char *old = emb_model_get_info(existing)->path;
        if (old && strcmp(old, path) == 0) sqlite3_result_text(ctx, name, -1, SQLITE_TRANSIENT);
        else ext_error(ctx, fn, "a model named '%s' is already loaded (embed_unload it first)", name);
        emb_model_release(existing);
        return;
    }
    char err[EMB_ERR_LEN];
    emb_model *m;
    if (emb_model_load(name, path, &m, err)) {
        ext_error(ctx, fn, "%s", err);
        return;
    }
    publish(ctx, fn, m);
}

static void fn_embed_unload(sqlite3_context *ctx, int argc, sqlite3_value **argv) {
    (void)argc;
    const char *name;
    int len;
    ext_rc r = ext_get_text(ctx, argv[0], "embed_unload", "the model name", &name, &len);
    if (r != EXT_OK) return;
    sqlite3_result_int(ctx, ext_registry_remove(name));
}

int ext_register_model_functions(sqlite3 *db) {
    int rc = sqlite3_create_function(db, "embed_define", 2, SQLITE_UTF8, NULL, fn_embed_define, NULL, NULL);
    if (rc == SQLITE_OK)
        rc = sqlite3_create_function(db, "embed_load", 2, SQLITE_UTF8 | SQLITE_DIRECTONLY, NULL,
                                     fn_embed_load, NULL, NULL);
    if (rc == SQLITE_OK)
        rc = sqlite3_create_function(db, "embed_unload", 1, SQLITE_UTF8, NULL, fn_embed_unload, NULL, NULL);
    return rc;
}
