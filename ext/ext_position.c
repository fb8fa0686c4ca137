/* position_encoding(pos, dim [, base]): the sinusoidal formula (core/posenc.c);
 * position_encoding(model, pos): that model's own position vector (a rotary model's cos and sin,
 * an error for ALiBi, which has none); embed_rotate(v, pos [, base]): RoPE on a vector
 * (core/relpos.c). */
#include "ext_util.h"
#include "ext_functions.h"
#include "ext_registry.h"
#include "sqlite-embed/model.h"
#include "sqlite-embed/posenc.h"
#include "nn/relpos.h"
#include <string.h>
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
        ext_error(ctx, "position_encoding",
                  "the position must be an integer (got %s); use "
                  "position_encoding(pos, dim [, base]) or position_encoding(model, pos)",
                  got);
    else sqlite3_result_error_nomem(ctx);
    sqlite3_free(got);
    return 1;
}

/* The optional base argument: 1 with *base set (10000 when absent), 0 for NULL (the result is
 * NULL), -1 with the error set. */
static int read_base(sqlite3_context *ctx, const char *fn, int argc, sqlite3_value **argv, int arg, double *base) {
    *base = 10000.0;
    if (argc <= arg) return 1;
    int t = sqlite3_value_type(argv[arg]);
    if (t == SQLITE_NULL) return 0;
    *base = sqlite3_value_double(argv[arg]);
    if ((t != SQLITE_INTEGER && t != SQLITE_FLOAT) || !isfinite(*base) || *base <= 0) {
        ext_error(ctx, fn, "base must be a positive number");
        return -1;
    }
    return 1;
}

static void sinusoidal(sqlite3_context *ctx, int argc, sqlite3_value **argv) {
    const char *fn = "position_encoding";
    sqlite3_int64 pos, dim;
    double base;
    if (position_type_error(ctx, argv[0])) return;
    ext_rc r = ext_get_int(ctx, argv[0], fn, "pos", 0, POSENC_MAX_POS, &pos);
    if (r != EXT_OK) return;
    r = ext_get_int(ctx, argv[1], fn, "dim", 1, POSENC_MAX_DIM, &dim);
    if (r != EXT_OK || read_base(ctx, fn, argc, argv, 2, &base) != 1) return;
    float *out = sqlite3_malloc64((size_t)dim * sizeof(float));
    if (!out) {
        sqlite3_result_error_nomem(ctx);
        return;
    }
    emb_sinusoidal((double)pos, (size_t)dim, base, out);
    ext_result_vector_owned(ctx, out, (size_t)dim);
}

/* A rotary model's position: cos then sin of its rotation angles (emb_relpos_rope_angles' layout). */
static void rotary_position(sqlite3_context *ctx, const emb_model *m, sqlite3_int64 pos) {
    int rot;
    double theta;
    if (emb_model_rotary(m, &rot, &theta)) return;
    float *out = sqlite3_malloc64((size_t)rot * sizeof(float));
    if (!out) {
        sqlite3_result_error_nomem(ctx);
        return;
    }
    emb_relpos_rope_angles(theta, rot, (double)pos, out);
    ext_result_vector_owned(ctx, out, (size_t)rot);
}

static void model_position(sqlite3_context *ctx, sqlite3_value **argv) {
    const char *fn = "position_encoding";
    emb_model *m = ext_model_arg(ctx, argv, 0, fn);
    if (!m) return;
    const emb_model_info *info = emb_model_get_info(m);
    sqlite3_int64 pos;
    char err[EMB_ERR_LEN];
    if (emb_model_require_vectors(info, "position vectors", err)) ext_error(ctx, fn, "%s", err);
    else if (info->position_kind && strcmp(info->position_kind, "alibi") == 0)
        ext_error(ctx, fn,
                  "model '%s' has no position vector: ALiBi adds a per-head bias -slope·|i−j| to "
                  "attention scores instead; see embed_attention_bias",
                  info->name);
    else if (!position_type_error(ctx, argv[1]) &&
             ext_get_int(ctx, argv[1], fn, "pos", 0, info->dims->max_positions - 1, &pos) == EXT_OK) {
        const float *row = emb_model_position_row(m, (int32_t)pos);
        if (row) ext_result_vector(ctx, row, (size_t)info->dims->hidden);
        else rotary_position(ctx, m, pos);
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

/* embed_rotate(v, pos [, base]): v rotated as RoPE rotates a query or key at position pos, pairs
 * (i, i + d/2), angles pos * base^(-2i/d). */
void sql_embed_rotate(sqlite3_context *ctx, int argc, sqlite3_value **argv) {
    const char *fn = "embed_rotate";
    ext_vec v;
    ext_rc rv = ext_get_vector(ctx, argv[0], fn, 0, &v);
    if (rv == EXT_ERROR) return;
    sqlite3_int64 pos = 0;
    double base;
    ext_rc rp = rv == EXT_OK ? ext_get_int(ctx, argv[1], fn, "pos", 0, POSENC_MAX_POS, &pos) : EXT_NULL;
    if (rp == EXT_OK && v.n % 2 != 0)
        ext_error(ctx, fn,
                  "the vector has %lld dimensions: rotation pairs dimension i with i + d/2, so d "
                  "must be even",
                  (long long)v.n);
    else if (rp == EXT_OK && read_base(ctx, fn, argc, argv, 2, &base) == 1) {
        float *out = sqlite3_malloc64(v.n * 2 * sizeof(float));
        if (!out) {
            sqlite3_result_error_nomem(ctx);
        } else {
            float *angles = out + v.n;
            emb_relpos_rope_angles(base, (int)v.n, (double)pos, angles);
            memcpy(out, v.v, v.n * sizeof(float));
            emb_relpos_rope_rotate(out, angles, (int)v.n);
            ext_result_finite_vector(ctx, fn, out, v.n);
        }
    }
    ext_vec_free(&v);
}
