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

/* A text or BLOB where the position must be: the error says which forms exist, since
 * position_encoding('1', '4') fits neither. */
static int position_type_error(sqlite3_context *ctx, sqlite3_value *pos) {
    int t = sqlite3_value_type(pos);
    if (t != SQLITE_TEXT && t != SQLITE_BLOB) return 0;
    char *got = ext_describe_value(pos);
    if (got)
        ext_error(ctx, "position_encoding", "the position must be an integer (got %s); use "
                  "position_encoding(pos, dim [, base]) or position_encoding(model, pos)", got);
    else
        sqlite3_result_error_nomem(ctx);
    sqlite3_free(got);
    return 1;
}

static void sinusoidal(sqlite3_context *ctx, int argc, sqlite3_value **argv) {
    const char *fn = "position_encoding";
    sqlite3_int64 pos, dim;
    double base = 10000.0;
    if (position_type_error(ctx, argv[0])) return;
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
    emb_model *m = ext_model_arg(ctx, argv, 0, fn);
    if (!m) return;
    const emb_model_info *info = emb_model_get_info(m);
    sqlite3_int64 pos;
    char err[EMB_ERR_LEN];
    if (emb_model_require_vectors(info, "position vectors", err))
        ext_error(ctx, fn, "%s", err);
    else if (!position_type_error(ctx, argv[1]) &&
             ext_get_int(ctx, argv[1], fn, "pos", 0, info->dims->max_positions - 1, &pos) == EXT_OK) {
        const float *row = emb_model_position_row(m, (int32_t)pos);
        if (row) ext_result_vector(ctx, row, (size_t)info->dims->hidden);
    }
    emb_model_release(m);
}

/* (text, number) is (model, pos). (text, text) is (model, pos) only when a model has that
 * name; otherwise it is read as (pos, dim), whose error lists both forms. */
static int is_model_form(sqlite3_context *ctx, int argc, sqlite3_value **argv) {
    if (argc != 2 || sqlite3_value_type(argv[0]) != SQLITE_TEXT) return 0;
    int t = sqlite3_value_type(argv[1]);
    if ((t != SQLITE_TEXT && t != SQLITE_BLOB) || sqlite3_get_auxdata(ctx, 0)) return 1;
    const char *name = (const char *)sqlite3_value_text(argv[0]);
    if (!name) return 1; /* out of memory: the model form reports it */
    char *err;
    emb_model *m = ext_model_named(name, sqlite3_value_bytes(argv[0]), &err);
    sqlite3_free(err);
    emb_model_release(m);
    return m != NULL;
}

void sql_position_encoding(sqlite3_context *ctx, int argc, sqlite3_value **argv) {
    if (is_model_form(ctx, argc, argv)) model_position(ctx, argv);
    else sinusoidal(ctx, argc, argv);
}
