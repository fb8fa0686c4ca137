/* embed_version() and embed_debug(): what this build is and what it runs on. */
#include "ext_functions.h"
#include "ext_util.h"
#include "vec.h"
#include <cblas.h>
#include <openblas_config.h> /* OpenBLAS itself, not another BLAS's cblas.h */

#define EMBED_VERSION "0.1.0"

static void fn_embed_version(sqlite3_context *ctx, int argc, sqlite3_value **argv) {
    (void)argc;
    (void)argv;
    sqlite3_result_text(ctx, EMBED_VERSION, -1, SQLITE_STATIC);
}

static void fn_embed_debug(sqlite3_context *ctx, int argc, sqlite3_value **argv) {
    (void)argc;
    (void)argv;
    char *s = sqlite3_mprintf("version=%s\nsqlite=%s\nblas=%s\nblas_core=%s\n"
                              "blas_threads=%d\nsimd=%s\ncompiler=%s",
                              EMBED_VERSION, sqlite3_libversion(), openblas_get_config(),
                              openblas_get_corename(), openblas_get_num_threads(),
                              emb_vec_simd_path(), __VERSION__);
    if (!s) sqlite3_result_error_nomem(ctx);
    else sqlite3_result_text(ctx, s, -1, sqlite3_free);
}

int ext_register_info_functions(sqlite3 *db) {
    int rc = sqlite3_create_function(db, "embed_version", 0, EMBED_PURE, NULL, fn_embed_version, NULL, NULL);
    if (rc == SQLITE_OK)
        rc = sqlite3_create_function(db, "embed_debug", 0, SQLITE_UTF8 | SQLITE_INNOCUOUS, NULL,
                                     fn_embed_debug, NULL, NULL);
    return rc;
}
