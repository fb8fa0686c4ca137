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
    int (*const registrations[])(sqlite3 *) = {
        ext_register_vector_functions, ext_register_position_functions,
        ext_register_info_functions,   ext_register_model_functions,
        ext_register_models_table,     ext_register_tokens_table,
        ext_register_text_functions,   ext_register_index_module,
    };
    for (size_t i = 0; i < sizeof registrations / sizeof registrations[0]; i++) {
        int rc = registrations[i](db);
        if (rc != SQLITE_OK) {
            *pzErrMsg = sqlite3_mprintf("sqlite-embed: registration failed: %s", sqlite3_errmsg(db));
            return rc;
        }
    }
    return SQLITE_OK;
}
