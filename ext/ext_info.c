/* embed_version() and embed_debug(): what this build is and what it runs on. */
#include "ext_functions.h"
#include "ext_util.h"
#include "base/simd.h"
#include "math/bf16_gemm.h"
#include "math/int8_gemm.h"
#include <cblas.h>
#include <openblas_config.h> /* OpenBLAS itself, not another BLAS's cblas.h */

/* The release number, from the VERSION file: the Makefile passes -DEMBED_VERSION="..." (the one
 * source that sqlite-embed.pc and the Python and npm packages read too). */
#ifndef EMBED_VERSION
#error "EMBED_VERSION is not defined: build with the Makefile, which reads it from VERSION"
#endif

void sql_embed_version(sqlite3_context *ctx, int argc, sqlite3_value **argv) {
    (void)argc;
    (void)argv;
    sqlite3_result_text(ctx, EMBED_VERSION, -1, SQLITE_STATIC);
}

void sql_embed_debug(sqlite3_context *ctx, int argc, sqlite3_value **argv) {
    (void)argc;
    (void)argv;
    const char *bad = emb_simd_unknown_request();
    char *s = sqlite3_mprintf("version=%s\nsqlite=%s\nblas=%s\nblas_core=%s\n"
                              "blas_threads=%d\nsimd=%s%s%s%s\nsimd_cpu=%s\nint8=%s\nbf16=%s\ncompiler=%s",
                              EMBED_VERSION, sqlite3_libversion(), openblas_get_config(), openblas_get_corename(),
                              openblas_get_num_threads(), emb_simd_name(emb_simd()), *bad ? " (EMBED_SIMD='" : "",
                              bad, *bad ? "' names no set: avx512, avx2 or generic)" : "",
                              emb_simd_name(emb_simd_cpu()), emb_int8_gemm_path_name(emb_int8_gemm_path_default()),
                              emb_bf16_kernels_name(emb_bf16_kernels_default()), __VERSION__);
    if (!s) sqlite3_result_error_nomem(ctx);
    else sqlite3_result_text(ctx, s, -1, sqlite3_free);
}
