/* position_encoding(pos, dim [, base]): the sinusoidal formula (core/posenc.c);
 * position_encoding(model, pos): that model's own position vector. */
#include "ext_util.h"
#include "ext_functions.h"
#include "ext_registry.h"
#include "model.h"
#include "posenc.h"
#include <math.h>

#define POSENC_MAX_DIM 65536
#define POSENC_MAX_POS 1000000000LL

static void sinusoidal(sqlite3_context *ctx, int argc, sqlite3_value **argv) {
    const char *fn = "position_encoding";
    sqlite3_int64 pos, dim;
    double base = 10000.0;
    ext_rc r = ext_get_int(ctx, argv[0], fn, "pos", 0, POSENC_MAX_POS, &pos);
    if (r != EXT_OK) return;
    r = ext_get_int(ctx, argv[1], fn, "dim", 1, POSENC_MAX_DIM, &dim);
    if (r != EXT_OK) return;
    if (argc == 3) {
        int t = sqlite3_value_type(argv[2]);
        if (t == SQLITE_NULL) return;
        base = sqlite3_value_double(argv[2]);
        if ((t != SQLITE_INTEGER && t != SQLITE_FLOAT) || !isfinite(base) || base <= 0) {
            ext_error(ctx, fn, "base must be a positive number");
            return;
        }
    }
    float *out = sqlite3_malloc64((size_t)dim * sizeof(float));
    if (!out) {
        sqlite3_result_error_nomem(ctx);
        return;
    }
    emb_sinusoidal((double)pos, (size_t)dim, base, out);
    ext_result_vector_owned(ctx, out, (size_t)dim);
}

static void model_position(sqlite3_context *ctx, sqlite3_value **argv) {
    const char *fn = "position_encoding";
    emb_model *m = ext_model_arg(ctx, argv[0], fn);
    if (!m) return;
    const emb_model_info *info = emb_model_get_info(m);
    if (!info->has_vectors) {
        ext_error(ctx, fn, "model '%s' is a tokenizer only: it has no position vectors", info->name);
        emb_model_release(m);
        return;
    }
    sqlite3_int64 pos;
    ext_rc r = ext_get_int(ctx, argv[1], fn, "pos", 0, info->max_positions - 1, &pos);
    if (r == EXT_OK) {
        const float *row = emb_model_position_row(m, (int32_t)pos);
        if (row) ext_result_vector(ctx, row, (size_t)info->hidden);
    }
    emb_model_release(m);
}

static void fn_position_encoding(sqlite3_context *ctx, int argc, sqlite3_value **argv) {
    if (argc == 2 && sqlite3_value_type(argv[0]) == SQLITE_TEXT) model_position(ctx, argv);
    else sinusoidal(ctx, argc, argv);
}

int ext_register_position_functions(sqlite3 *db) {
    /* The 2-argument form may read the model registry, so it is not deterministic. */
    int rc = sqlite3_create_function(db, "position_encoding", 2,
                                     SQLITE_UTF8 | SQLITE_INNOCUOUS | SQLITE_RESULT_SUBTYPE, NULL,
                                     fn_position_encoding, NULL, NULL);
    if (rc == SQLITE_OK)
        rc = sqlite3_create_function(db, "position_encoding", 3, EMBED_PURE | SQLITE_RESULT_SUBTYPE,
                                     NULL, fn_position_encoding, NULL, NULL);
    return rc;
}
