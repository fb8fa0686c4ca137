/* The SQL vector functions (docs/vectors.md): conversion (embed_vector, embed_json,
 * embed_dims), arithmetic (embed_add, embed_sub, embed_scale, embed_normalize), distances
 * (embed_dot, embed_cosine, embed_distance), Matryoshka truncation (embed_truncate) and
 * aggregates (embed_sum, embed_mean).
 * The arithmetic itself is core/vec.c; this file checks arguments and shapes results.
 * ext_function_table.c registers them. */
#include "ext_util.h"
#include "ext_functions.h"
#include "sqlite-embed/vec.h"
#include <math.h>
#include <string.h>

void sql_embed_vector(sqlite3_context *ctx, int argc, sqlite3_value **argv) {
    (void)argc;
    ext_vec v;
    if (ext_get_vector(ctx, argv[0], "embed_vector", 0, &v) != EXT_OK) return;
    ext_result_vector(ctx, v.v, v.n);
    ext_vec_free(&v);
}

void sql_embed_json(sqlite3_context *ctx, int argc, sqlite3_value **argv) {
    (void)argc;
    ext_vec v;
    if (ext_get_vector(ctx, argv[0], "embed_json", 0, &v) != EXT_OK) return;
    char *json = ext_vector_to_json(v.v, v.n);
    ext_vec_free(&v);
    if (!json) {
        sqlite3_result_error_nomem(ctx);
        return;
    }
    sqlite3_result_text(ctx, json, -1, sqlite3_free);
    sqlite3_result_subtype(ctx, 'J'); /* SQLite's JSON subtype: json_array(embed_json(v)) nests it */
}

void sql_embed_dims(sqlite3_context *ctx, int argc, sqlite3_value **argv) {
    (void)argc;
    ext_vec v;
    if (ext_get_vector(ctx, argv[0], "embed_dims", 0, &v) != EXT_OK) return;
    sqlite3_result_int64(ctx, (sqlite3_int64)v.n);
    ext_vec_free(&v);
}

/* Reads two vectors of equal dimension; returns 0 when the caller should go on. */
static int two_vectors(sqlite3_context *ctx, sqlite3_value **argv, const char *fn, ext_vec *a, ext_vec *b) {
    ext_rc ra = ext_get_vector(ctx, argv[0], fn, 0, a);
    if (ra == EXT_ERROR) return -1;
    ext_rc rb = ext_get_vector(ctx, argv[1], fn, 1, b);
    if (rb == EXT_ERROR || ra == EXT_NULL || rb == EXT_NULL) {
        ext_vec_free(a);
        ext_vec_free(b);
        return -1; /* NULL in, NULL out: the result stays NULL */
    }
    if (!ext_same_dims(ctx, fn, a, b)) {
        ext_vec_free(a);
        ext_vec_free(b);
        return -1;
    }
    return 0;
}

static float *alloc_vector(sqlite3_context *ctx, size_t n) {
    float *out = sqlite3_malloc64(n * sizeof(float)); /* n >= 1: every vector has a dimension */
    if (!out) sqlite3_result_error_nomem(ctx);
    return out;
}

static void binary_arith(sqlite3_context *ctx, sqlite3_value **argv, const char *fn,
                         void (*op)(float *, const float *, const float *, size_t)) {
    ext_vec a, b;
    if (two_vectors(ctx, argv, fn, &a, &b)) return;
    float *out = alloc_vector(ctx, a.n);
    if (out) {
        op(out, a.v, b.v, a.n);
        ext_result_finite_vector(ctx, fn, out, a.n);
    }
    ext_vec_free(&a);
    ext_vec_free(&b);
}

void sql_embed_add(sqlite3_context *ctx, int argc, sqlite3_value **argv) {
    (void)argc;
    binary_arith(ctx, argv, "embed_add", emb_vec_add);
}

void sql_embed_sub(sqlite3_context *ctx, int argc, sqlite3_value **argv) {
    (void)argc;
    binary_arith(ctx, argv, "embed_sub", emb_vec_sub);
}

void sql_embed_scale(sqlite3_context *ctx, int argc, sqlite3_value **argv) {
    (void)argc;
    ext_vec v;
    ext_rc rv = ext_get_vector(ctx, argv[0], "embed_scale", 0, &v);
    if (rv == EXT_ERROR) return;
    int kt = sqlite3_value_type(argv[1]);
    if (kt == SQLITE_NULL || rv == EXT_NULL) {
        ext_vec_free(&v);
        return;
    }
    double k = sqlite3_value_double(argv[1]);
    if ((kt != SQLITE_INTEGER && kt != SQLITE_FLOAT) || !isfinite(k)) {
        ext_error(ctx, "embed_scale", "argument 2 must be a finite number, not %s",
                  kt == SQLITE_FLOAT ? "a non-finite real" : ext_type_name(kt));
        ext_vec_free(&v);
        return;
    }
    float *out = alloc_vector(ctx, v.n);
    if (out) {
        emb_vec_scale(out, v.v, (float)k, v.n);
        ext_result_finite_vector(ctx, "embed_scale", out, v.n);
    }
    ext_vec_free(&v);
}

void sql_embed_normalize(sqlite3_context *ctx, int argc, sqlite3_value **argv) {
    (void)argc;
    ext_vec v;
    if (ext_get_vector(ctx, argv[0], "embed_normalize", 0, &v) != EXT_OK) return;
    float *out = alloc_vector(ctx, v.n);
    if (out) {
        emb_vec_normalize(out, v.v, v.n);
        ext_result_vector_owned(ctx, out, v.n);
    }
    ext_vec_free(&v);
}

/* embed_truncate(v, n [, normalize]): the first n components, L2-normalised unless normalize
 * is 0, as a Matryoshka-trained model's shorter vector is made (embed's "dims" option). */
void sql_embed_truncate(sqlite3_context *ctx, int argc, sqlite3_value **argv) {
    const char *fn = "embed_truncate";
    ext_vec v;
    ext_rc rv = ext_get_vector(ctx, argv[0], fn, 0, &v);
    if (rv == EXT_ERROR) return;
    sqlite3_int64 n = 0, normalize = 1;
    ext_rc rn = ext_get_int(ctx, argv[1], fn, "the dimension count", 1, 1 << 30, &n);
    ext_rc rz = argc < 3 ? EXT_OK : ext_get_int(ctx, argv[2], fn, "normalize", 0, 1, &normalize);
    if (rv == EXT_OK && rn == EXT_OK && rz == EXT_OK && (size_t)n > v.n)
        ext_error(ctx, fn, "cannot keep %lld dimensions of a vector of %lld", n, (long long)v.n);
    else if (rv == EXT_OK && rn == EXT_OK && rz == EXT_OK) {
        float *out = alloc_vector(ctx, (size_t)n);
        if (out && normalize) emb_vec_normalize(out, v.v, (size_t)n);
        else if (out) memcpy(out, v.v, (size_t)n * sizeof(float));
        if (out) ext_result_vector_owned(ctx, out, (size_t)n);
    }
    ext_vec_free(&v);
}

void sql_embed_dot(sqlite3_context *ctx, int argc, sqlite3_value **argv) {
    (void)argc;
    ext_vec a, b;
    if (two_vectors(ctx, argv, "embed_dot", &a, &b)) return;
    sqlite3_result_double(ctx, emb_vec_dot(a.v, b.v, a.n));
    ext_vec_free(&a);
    ext_vec_free(&b);
}

static void result_distance(sqlite3_context *ctx, const char *fn, emb_metric m, const ext_vec *a,
                            const ext_vec *b) {
    double d = m == (emb_metric)-1 ? emb_vec_cosine(a->v, b->v, a->n) : emb_vec_distance(m, a->v, b->v, a->n);
    if (isnan(d)) ext_error(ctx, fn, "cosine is undefined for a zero vector");
    else sqlite3_result_double(ctx, d);
}

void sql_embed_cosine(sqlite3_context *ctx, int argc, sqlite3_value **argv) {
    (void)argc;
    ext_vec a, b;
    if (two_vectors(ctx, argv, "embed_cosine", &a, &b)) return;
    result_distance(ctx, "embed_cosine", (emb_metric)-1, &a, &b);
    ext_vec_free(&a);
    ext_vec_free(&b);
}

void sql_embed_distance(sqlite3_context *ctx, int argc, sqlite3_value **argv) {
    emb_metric m = EMB_METRIC_COSINE;
    if (argc == 3) {
        const char *name;
        int len;
        ext_rc r = ext_get_text(ctx, argv[2], "embed_distance", "the metric", &name, &len);
        if (r != EXT_OK) return;
        if (emb_metric_parse(name, &m)) {
            ext_error(ctx, "embed_distance", "unknown metric '%s' (use 'cosine', 'l2', 'l1' or 'dot')", name);
            return;
        }
    }
    ext_vec a, b;
    if (two_vectors(ctx, argv, "embed_distance", &a, &b)) return;
    result_distance(ctx, "embed_distance", m, &a, &b);
    ext_vec_free(&a);
    ext_vec_free(&b);
}

/* embed_sum / embed_mean: NULL rows are skipped as SQL's sum() skips them. */
typedef struct {
    double *acc;
    size_t n;
    sqlite3_int64 count;
    int failed;
} vec_agg;

static void agg_step(sqlite3_context *ctx, sqlite3_value *val, const char *fn) {
    vec_agg *agg = sqlite3_aggregate_context(ctx, sizeof *agg);
    if (!agg) {
        sqlite3_result_error_nomem(ctx);
        return;
    }
    if (agg->failed) return;
    ext_vec v;
    ext_rc r = ext_get_vector(ctx, val, fn, 0, &v);
    if (r != EXT_OK) {
        agg->failed = r == EXT_ERROR;
        return;
    }
    if (agg->count == 0) {
        agg->acc = sqlite3_malloc64(v.n * sizeof(double));
        if (!agg->acc) {
            agg->failed = 1;
            ext_vec_free(&v);
            sqlite3_result_error_nomem(ctx);
            return;
        }
        memset(agg->acc, 0, v.n * sizeof(double));
        agg->n = v.n;
    } else if (v.n != agg->n) {
        agg->failed = 1;
        ext_error(ctx, fn, "vectors have different dimensions (%lld and %lld)", (long long)agg->n, (long long)v.n);
        ext_vec_free(&v);
        return;
    }
    emb_vec_accumulate(agg->acc, v.v, v.n);
    agg->count++;
    ext_vec_free(&v);
}

static void agg_final(sqlite3_context *ctx, const char *fn, int mean) {
    vec_agg *agg = sqlite3_aggregate_context(ctx, 0);
    if (!agg || agg->count == 0 || agg->failed) {
        if (agg) sqlite3_free(agg->acc);
        return; /* no rows, or only NULLs: NULL (an error from step stays set) */
    }
    float *out = alloc_vector(ctx, agg->n);
    if (out) {
        for (size_t i = 0; i < agg->n; i++)
            out[i] = (float)(mean ? agg->acc[i] / (double)agg->count : agg->acc[i]);
        ext_result_finite_vector(ctx, fn, out, agg->n);
    }
    sqlite3_free(agg->acc);
}

void sql_embed_sum_step(sqlite3_context *ctx, int argc, sqlite3_value **argv) {
    (void)argc;
    agg_step(ctx, argv[0], "embed_sum");
}
void sql_embed_sum_final(sqlite3_context *ctx) { agg_final(ctx, "embed_sum", 0); }
void sql_embed_mean_step(sqlite3_context *ctx, int argc, sqlite3_value **argv) {
    (void)argc;
    agg_step(ctx, argv[0], "embed_mean");
}
void sql_embed_mean_final(sqlite3_context *ctx) { agg_final(ctx, "embed_mean", 1); }
