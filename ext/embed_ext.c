/* Entry point of the loadable extension: `.load ./embed` calls sqlite3_embed_init. */
#include <sqlite3ext.h>
SQLITE_EXTENSION_INIT1
#include "ext_functions.h"
#include <stddef.h>

#ifdef _WIN32
__declspec(dllexport)
#endif
int sqlite3_embed_init(sqlite3 *db, char **pzErrMsg, const sqlite3_api_routines *pApi) {
    SQLITE_EXTENSION_INIT2(pApi);
    static const struct {
        const char *what;
        int (*reg)(sqlite3 *);
    } others[] = {
        {"embed_define, embed_load and embed_unload", ext_register_model_functions},
        {"embed_models", ext_register_models_table},
        {"embed_tokens", ext_register_tokens_table},
        {"embed_index", ext_register_index_module},
    };
    const char *failed = NULL;
    int rc = ext_register_functions(db, &failed);
    for (size_t i = 0; rc == SQLITE_OK && i < sizeof others / sizeof others[0]; i++)
        if ((rc = others[i].reg(db)) != SQLITE_OK) failed = others[i].what;
    if (rc != SQLITE_OK)
        *pzErrMsg = sqlite3_mprintf("sqlite-embed: cannot register %s: %s", failed, sqlite3_errmsg(db));
    return rc;
}
