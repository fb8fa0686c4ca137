/* Entry point of the loadable extension: `.load ./embed` calls sqlite3_embed_init. */
#include <sqlite3ext.h>
SQLITE_EXTENSION_INIT1
#include "ext_functions.h"
#include <stddef.h>

/* The one symbol embed.so exports: everything else is built with -fvisibility=hidden. */
#ifdef _WIN32
__declspec(dllexport)
#else
__attribute__((visibility("default")))
#endif
    int sqlite3_embed_init(sqlite3 *db, char **pzErrMsg, const sqlite3_api_routines *pApi) {
    /* SQLITE_EXTENSION_INIT2 would store the pointer again at each connection's opening, a write
     * that races with other threads' calls through it: it never changes, so store it once */
    if (sqlite3_api != pApi) sqlite3_api = pApi;
    static const struct {
        const char *name;
        const sqlite3_module *module;
    } modules[] = {
        {"embed_models", &ext_models_module},       {"embed_tokens", &ext_tokens_module},
        {"embed_index", &ext_index_module},         {"embed_hybrid", &ext_hybrid_module},
        {"embed_attention", &ext_attention_module}, {"embed_chunks", &ext_chunks_module},
        {"embed_rerank_batch", &ext_rerank_module}, {"embed_index_status", &ext_index_status_module},
    };
    const char *failed = NULL;
    int rc = ext_register_functions(db, &failed);
    for (size_t i = 0; rc == SQLITE_OK && i < sizeof modules / sizeof modules[0]; i++)
        if ((rc = sqlite3_create_module(db, modules[i].name, modules[i].module, NULL)) != SQLITE_OK)
            failed = modules[i].name;
    if (rc != SQLITE_OK)
        *pzErrMsg = sqlite3_mprintf("sqlite-embed: cannot register %s: %s", failed, sqlite3_errmsg(db));
    return rc;
}
