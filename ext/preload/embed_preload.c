/* embed_preload.so: registers sqlite-embed in every connection of a process that cannot call
 * load_extension itself (dqlite nodes, servers that host SQLite), through LD_PRELOAD.
 *
 *   LD_PRELOAD=/usr/local/lib/embed_preload.so \
 *   EMBED_MODELS='minilm=/srv/models/all-MiniLM-L6-v2' dqlite-demo ...
 *
 * EMBED_EXTENSION: the path of embed.so (default: embed.so in this library's own folder).
 * EMBED_MODELS: models loaded once per process before the first connection opens, either
 *   name=folder[,name=folder...] or a JSON object {"name": "folder" |
 *   {"folder": "...", "options": {...embed_load options...}}, ...}.
 *
 * Registration waits for the process's first sqlite3_open*: doing it in a library constructor
 * would initialise SQLite before the host's own sqlite3_config() calls (dqlite's among them),
 * which then fail. Any error (extension or model not loadable, malformed EMBED_MODELS) is
 * printed on stderr and the helper registers nothing at all, so a node either has every model
 * or no sqlite-embed: never half of it. The host's connections then open as they would
 * without the helper. */
#include <cjson/cJSON.h>
#include <dlfcn.h>
#include <pthread.h>
#include <sqlite3.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

typedef int (*open_v2_fn)(const char *, sqlite3 **, int, const char *);
typedef int (*open_fn)(const char *, sqlite3 **);
typedef int (*open16_fn)(const void *, sqlite3 **);
typedef void (*entry_fn)(void);

/* The entry points this helper exports, in front of the host's SQLite (the rest is hidden). */
#define EMBED_PRELOAD_EXPORT __attribute__((visibility("default")))

static pthread_once_t setup_once = PTHREAD_ONCE_INIT;
static open_v2_fn real_open_v2;
static open_fn real_open;
static open16_fn real_open16;

static void complain(const char *fmt, ...) {
    va_list ap;
    va_start(ap, fmt);
    fputs("embed_preload: ", stderr);
    vfprintf(stderr, fmt, ap);
    fputs(" (sqlite-embed not registered)\n", stderr);
    va_end(ap);
}

/* EMBED_EXTENSION, or embed.so beside this library. Returns a malloc'd path or NULL. */
static char *extension_path(void) {
    const char *env = getenv("EMBED_EXTENSION");
    if (env && *env) return strdup(env);
    Dl_info info;
    if (!dladdr((void *)extension_path, &info) || !info.dli_fname) return NULL;
    const char *slash = strrchr(info.dli_fname, '/');
    size_t dir = slash ? (size_t)(slash - info.dli_fname) : 1;
    char *p = malloc(dir + sizeof "/embed.so");
    if (!p) return NULL;
    if (slash) memcpy(p, info.dli_fname, dir);
    else p[0] = '.';
    strcpy(p + dir, "/embed.so");
    return p;
}

/* One model of EMBED_MODELS: embed_load(name, folder, options) on the set-up connection. */
static int load_model(sqlite3 *db, const char *name, const char *folder, const char *options) {
    sqlite3_stmt *st = NULL;
    int rc = sqlite3_prepare_v2(db, "SELECT embed_load(?1, ?2, ?3)", -1, &st, NULL);
    if (rc == SQLITE_OK) {
        sqlite3_bind_text(st, 1, name, -1, SQLITE_TRANSIENT);
        sqlite3_bind_text(st, 2, folder, -1, SQLITE_TRANSIENT);
        if (options) sqlite3_bind_text(st, 3, options, -1, SQLITE_TRANSIENT);
        rc = sqlite3_step(st) == SQLITE_ROW ? SQLITE_OK : SQLITE_ERROR;
    }
    if (rc != SQLITE_OK) complain("EMBED_MODELS: model '%s' from '%s': %s", name, folder, sqlite3_errmsg(db));
    sqlite3_finalize(st);
    return rc;
}

/* Whether a member before m has m's name (cJSON keeps both of a repeated name). */
static int named_before(const cJSON *first, const cJSON *m) {
    for (const cJSON *e = first; e != m; e = e->next)
        if (!strcmp(e->string, m->string)) return 1;
    return 0;
}

/* The JSON form: {"name": "folder" | {"folder": "...", "options": {...}}}. */
static int load_models_json(sqlite3 *db, const char *text) {
    cJSON *root = cJSON_ParseWithOpts(text, NULL, 1); /* 1: nothing may follow the object */
    if (!cJSON_IsObject(root)) {
        cJSON_Delete(root);
        complain("EMBED_MODELS: not a JSON object of name: folder (and nothing after it)");
        return SQLITE_ERROR;
    }
    int rc = SQLITE_OK;
    for (cJSON *m = root->child; m && rc == SQLITE_OK; m = m->next) {
        if (named_before(root->child, m)) {
            complain("EMBED_MODELS: model '%s' is named twice", m->string);
            rc = SQLITE_ERROR;
            break;
        }
        const cJSON *folder = cJSON_IsObject(m) ? cJSON_GetObjectItemCaseSensitive(m, "folder") : m;
        const cJSON *opts = cJSON_IsObject(m) ? cJSON_GetObjectItemCaseSensitive(m, "options") : NULL;
        if (!cJSON_IsString(folder) || (opts && !cJSON_IsObject(opts)) ||
            (cJSON_IsObject(m) && cJSON_GetArraySize(m) != 1 + (opts != NULL))) {
            complain("EMBED_MODELS: model '%s' must be a folder or {\"folder\": ..., \"options\": {...}}",
                     m->string);
            rc = SQLITE_ERROR;
            break;
        }
        char *o = opts ? cJSON_PrintUnformatted(opts) : NULL;
        rc = load_model(db, m->string, folder->valuestring, o);
        cJSON_free(o);
    }
    cJSON_Delete(root);
    return rc;
}

/* The list form: name=folder[,name=folder...]. */
static int load_models_list(sqlite3 *db, const char *text) {
    char *copy = strdup(text), *save = NULL;
    const char **names = malloc((strlen(text) / 2 + 1) * sizeof *names); /* items have 2 bytes or more */
    size_t n = 0;
    if (!copy || !names) {
        free(copy);
        free(names);
        return SQLITE_NOMEM;
    }
    int rc = SQLITE_OK;
    for (char *item = strtok_r(copy, ",", &save); item && rc == SQLITE_OK; item = strtok_r(NULL, ",", &save)) {
        char *eq = strchr(item, '=');
        if (!eq || eq == item || !eq[1]) {
            complain("EMBED_MODELS: '%s' is not name=folder", item);
            rc = SQLITE_ERROR;
        } else {
            *eq = 0;
            for (size_t i = 0; i < n && rc == SQLITE_OK; i++)
                if (!strcmp(names[i], item)) {
                    complain("EMBED_MODELS: model '%s' is named twice", item);
                    rc = SQLITE_ERROR;
                }
            names[n++] = item;
            if (rc == SQLITE_OK) rc = load_model(db, item, eq + 1, NULL);
        }
    }
    free(names);
    free(copy);
    return rc;
}

/* Loads EMBED_MODELS through a private in-memory connection (the model registry is per
 * process, so the models stay after it closes). On failure it unloads what it loaded. */
static int load_models(void) {
    const char *env = getenv("EMBED_MODELS");
    if (!env || !*env) return SQLITE_OK;
    sqlite3 *db = NULL;
    int rc = real_open_v2(":memory:", &db, SQLITE_OPEN_READWRITE | SQLITE_OPEN_CREATE, NULL);
    if (rc != SQLITE_OK) {
        complain("cannot open a connection to load EMBED_MODELS: %s", db ? sqlite3_errmsg(db) : "out of memory");
        sqlite3_close(db);
        return rc;
    }
    const char *p = env + strspn(env, " \t\n");
    rc = *p == '{' ? load_models_json(db, p) : load_models_list(db, env);
    if (rc != SQLITE_OK) sqlite3_exec(db, "SELECT embed_unload(name) FROM embed_models", NULL, NULL, NULL);
    sqlite3_close(db);
    return rc;
}

static void setup(void) {
    /* the host's SQLite (the next definitions after this library's) */
    real_open_v2 = (open_v2_fn)dlsym(RTLD_NEXT, "sqlite3_open_v2");
    real_open = (open_fn)dlsym(RTLD_NEXT, "sqlite3_open");
    real_open16 = (open16_fn)dlsym(RTLD_NEXT, "sqlite3_open16");
    char *path = extension_path();
    void *lib = path ? dlopen(path, RTLD_NOW | RTLD_LOCAL) : NULL;
    if (!lib) {
        complain("cannot load the extension '%s': %s", path ? path : "(no path)",
                 path ? dlerror() : "out of memory");
        free(path);
        return;
    }
    free(path);
    entry_fn init = (entry_fn)dlsym(lib, "sqlite3_embed_init");
    if (!init) {
        complain("the extension has no sqlite3_embed_init: %s", dlerror());
        return;
    }
    if (sqlite3_auto_extension(init) != SQLITE_OK) {
        complain("sqlite3_auto_extension failed");
        return;
    }
    if (load_models() != SQLITE_OK) sqlite3_cancel_auto_extension(init);
    /* the library stays loaded: connections opened meanwhile may hold its functions */
}

EMBED_PRELOAD_EXPORT int sqlite3_open_v2(const char *filename, sqlite3 **db, int flags, const char *vfs) {
    pthread_once(&setup_once, setup);
    return real_open_v2(filename, db, flags, vfs);
}

EMBED_PRELOAD_EXPORT int sqlite3_open(const char *filename, sqlite3 **db) {
    pthread_once(&setup_once, setup);
    return real_open(filename, db);
}

EMBED_PRELOAD_EXPORT int sqlite3_open16(const void *filename, sqlite3 **db) {
    pthread_once(&setup_once, setup);
    return real_open16(filename, db);
}
