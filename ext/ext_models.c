/* embed_define, embed_load, embed_unload: adding models to the registry and removing them.
 * All three change what every connection of the process sees, so they are DIRECTONLY: a
 * database's views and triggers cannot call them. */
#include "ext_functions.h"
#include "ext_registry.h"
#include "base/utf8.h"
#include <cjson/cJSON.h>
#include <dirent.h>
#include <errno.h>
#include <limits.h>
#include <stdio.h>
#include <string.h>
#include <strings.h>
#include <sys/stat.h>
#include <unistd.h>

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
        else ext_error(ctx, fn, "a model named '%s' is already loaded (embed_unload it first)", info->name);
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
    size_t bad;
    if (!emb_utf8_valid(*name, (size_t)len, &bad)) {
        ext_error(ctx, fn, "the model name is not valid UTF-8 (byte %d)", (int)bad); /* sqlite3 printf: no %zu */
        return -1;
    }
    return 0;
}

/* One option into opt; -1 (error set) for an unknown key or value. */
static int load_option(sqlite3_context *ctx, const cJSON *item, emb_load_options *opt) {
    const char *fn = "embed_load";
    if (strcmp(item->string, "mmap") == 0) {
        if (cJSON_IsBool(item)) {
            opt->mmap = cJSON_IsTrue(item);
            return 0;
        }
        ext_error(ctx, fn, "option \"mmap\" must be true or false");
    } else if (strcmp(item->string, "weights") == 0) {
        if (cJSON_IsString(item) && emb_weights_parse(item->valuestring, &opt->weights) == 0) return 0;
        ext_error(ctx, fn, "option \"weights\" must be \"f32\", \"int8\", \"bf16\" or \"q8_0\"");
    } else if (strcmp(item->string, "allow_missing_dense") == 0) {
        if (cJSON_IsBool(item)) {
            opt->allow_missing_dense = cJSON_IsTrue(item);
            return 0;
        }
        ext_error(ctx, fn, "option \"allow_missing_dense\" must be true or false");
    } else {
        ext_error(ctx, fn, "unknown option \"%.60s\" (known: mmap, weights, allow_missing_dense)", item->string);
    }
    return -1;
}

/* options: {"mmap": true | false, "weights": "f32" | "int8" | "bf16" | "q8_0", "allow_missing_dense": true | false};
 * NULL means the defaults. */
static int load_options(sqlite3_context *ctx, sqlite3_value *val, emb_load_options *opt) {
    *opt = (emb_load_options)EMB_LOAD_DEFAULTS;
    if (!val) return 0;
    cJSON *root;
    ext_rc r = ext_get_options(ctx, val, "embed_load", "{\"weights\": \"int8\"}", &root);
    if (r != EXT_OK) return r == EXT_ERROR ? -1 : 0;
    int rc = 0;
    for (const cJSON *item = root->child; item && rc == 0; item = item->next) rc = load_option(ctx, item, opt);
    cJSON_Delete(root);
    return rc;
}

void sql_embed_define(sqlite3_context *ctx, int argc, sqlite3_value **argv) {
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

static int ends_with_gguf(const char *path) {
    size_t n = strlen(path);
    return n >= 5 && strcasecmp(path + n - 5, ".gguf") == 0;
}

/* 1 if the folder holds a .gguf file but no Hugging Face files (a llama.cpp download: the file
 * itself is to be named). */
static int gguf_only_folder(const char *dir) {
    static const char *hf[] = {"config.json", "tokenizer.json", "vocab.txt"};
    char path[PATH_MAX];
    for (size_t i = 0; i < sizeof hf / sizeof *hf; i++)
        if (snprintf(path, sizeof path, "%s/%s", dir, hf[i]) < (int)sizeof path && access(path, F_OK) == 0)
            return 0;
    DIR *d = opendir(dir);
    int found = 0;
    for (struct dirent *e; d && !found && (e = readdir(d));) found = ends_with_gguf(e->d_name);
    if (d) closedir(d);
    return found;
}

/* The usual mistakes in the folder argument, named before the core reads anything: a missing
 * path, a file (config.json, model.safetensors) given for its folder, a folder of GGUF files. A
 * .gguf file is a model of its own (the core reads it). */
static int folder_arg_ok(sqlite3_context *ctx, const char *fn, const char *path) {
    struct stat st;
    if (stat(path, &st) != 0 && errno == ENOENT)
        ext_error(ctx, fn, "%s: no such %s", path, ends_with_gguf(path) ? "file" : "folder");
    else if (ends_with_gguf(path)) return 1;
    else if (S_ISREG(st.st_mode))
        ext_error(ctx, fn,
                  "%s is a file, not a folder: give the folder that holds config.json and model.safetensors "
                  "(or a .gguf file)",
                  path);
    else if (S_ISDIR(st.st_mode) && gguf_only_folder(path))
        ext_error(ctx, fn, "%s holds only .gguf files: give the .gguf file itself", path);
    else return 1; /* a folder, or what the core names itself (a FIFO, a path it cannot read) */
    return 0;
}

void sql_embed_load(sqlite3_context *ctx, int argc, sqlite3_value **argv) {
    const char *fn = "embed_load", *name, *path;
    int len;
    emb_load_options opt;
    if (model_name_arg(ctx, argv[0], fn, &name)) return;
    ext_rc r = ext_get_text(ctx, argv[1], fn, "the model folder", &path, &len);
    if (r == EXT_NULL) ext_error(ctx, fn, "the model folder must not be NULL");
    if (r != EXT_OK) return;
    if ((int)strlen(path) != len) {
        ext_error(ctx, fn, "the model folder contains a NUL character");
        return;
    }
    if (load_options(ctx, argc > 2 ? argv[2] : NULL, &opt)) return;
    if (!folder_arg_ok(ctx, fn, path)) return;
    emb_model *existing = ext_registry_get(name);
    if (existing) { /* already loaded: no need to read the files again */
        const emb_model_info *old = emb_model_get_info(existing);
        if (!old->path || strcmp(old->path, path) != 0)
            ext_error(ctx, fn, "a model named '%s' is already loaded (embed_unload it first)", name);
        else if (old->mmap != opt.mmap)
            ext_error(ctx, fn,
                      "model '%s' is already loaded from that folder with mmap %s (embed_unload it first)", name,
                      old->mmap ? "true" : "false");
        /* the default weights: what a load chooses by default (f32, or a GGUF file's Q8_0) */
        else if (old->weights && (opt.weights == EMB_WEIGHTS_DEFAULT
                                      ? strcmp(old->weights, "f32") != 0 && strcmp(old->weights, "q8_0") != 0
                                      : strcmp(old->weights, emb_weights_name(opt.weights)) != 0))
            ext_error(ctx, fn,
                      "model '%s' is already loaded from that folder with %s weights (embed_unload it first)",
                      name, old->weights);
        else sqlite3_result_text(ctx, name, -1, SQLITE_TRANSIENT);
        emb_model_release(existing);
        return;
    }
    char err[EMB_ERR_LEN];
    emb_model *m;
    if (emb_model_load_with(name, path, &opt, &m, err)) {
        ext_error(ctx, fn, "%s", err);
        return;
    }
    publish(ctx, fn, m);
}

void sql_embed_unload(sqlite3_context *ctx, int argc, sqlite3_value **argv) {
    (void)argc;
    const char *name;
    int len;
    ext_rc r = ext_get_text(ctx, argv[0], "embed_unload", "the model name", &name, &len);
    if (r != EXT_OK) return;
    sqlite3_result_int(ctx, ext_registry_remove(name));
}
