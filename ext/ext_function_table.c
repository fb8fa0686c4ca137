/* Every scalar and aggregate SQL function of the extension, in one table: its name, argument
 * count, flags, implementation and signature. For each name, a fallback with nArg = -1
 * (SQLite prefers an exact argument count) turns a wrong count into an error that lists the
 * signatures: "embed_distance: expects embed_distance(a, b) or embed_distance(a, b, metric);
 * got 4 arguments", where SQLite alone says only "wrong number of arguments". */
#include "ext_functions.h"
#include "ext_util.h"
#include <string.h>

typedef void (*sql_func)(sqlite3_context *, int, sqlite3_value **);

typedef struct {
    const char *name;
    int n_arg;
    int flags;
    sql_func func, step; /* func for a scalar, step and final for an aggregate */
    void (*final)(sqlite3_context *);
    const char *signature;
} ext_function;

#ifndef SQLITE_SUBTYPE
#define SQLITE_SUBTYPE 0x000100000
#endif
/* VEC: reads vectors, whose sqlite-vec subtype (int8, bit) it must see; OUT: returns a
 * subtype (float32 vector, or JSON). Registry-reading functions are not deterministic. */
#define VEC (EMBED_PURE | SQLITE_SUBTYPE)
#define OUT SQLITE_RESULT_SUBTYPE
#define REGISTRY (SQLITE_UTF8 | SQLITE_INNOCUOUS)
#define DIRECT (SQLITE_UTF8 | SQLITE_DIRECTONLY)
#define SCALAR(f) f, NULL, NULL
#define AGGREGATE(f) NULL, f##_step, f##_final

static const ext_function functions[] = {
    {"embed_version", 0, EMBED_PURE, SCALAR(sql_embed_version), "embed_version()"},
    /* These tell about the process (its libraries, threads, every index's memory): a database's
     * views and triggers must not read them (docs/security.md). */
    {"embed_debug", 0, DIRECT, SCALAR(sql_embed_debug), "embed_debug()"},
    {"embed_index_cache_bytes", 0, DIRECT, SCALAR(sql_embed_index_cache_bytes), "embed_index_cache_bytes()"},
    {"embed_vector", 1, VEC | OUT, SCALAR(sql_embed_vector), "embed_vector(x)"},
    {"embed_json", 1, VEC | OUT, SCALAR(sql_embed_json), "embed_json(v)"},
    {"embed_dims", 1, VEC, SCALAR(sql_embed_dims), "embed_dims(v)"},
    {"embed_add", 2, VEC | OUT, SCALAR(sql_embed_add), "embed_add(a, b)"},
    {"embed_sub", 2, VEC | OUT, SCALAR(sql_embed_sub), "embed_sub(a, b)"},
    {"embed_scale", 2, VEC | OUT, SCALAR(sql_embed_scale), "embed_scale(v, k)"},
    {"embed_normalize", 1, VEC | OUT, SCALAR(sql_embed_normalize), "embed_normalize(v)"},
    {"embed_truncate", 2, VEC | OUT, SCALAR(sql_embed_truncate), "embed_truncate(v, n)"},
    {"embed_truncate", 3, VEC | OUT, SCALAR(sql_embed_truncate), "embed_truncate(v, n, normalize)"},
    {"embed_dot", 2, VEC, SCALAR(sql_embed_dot), "embed_dot(a, b)"},
    {"embed_cosine", 2, VEC, SCALAR(sql_embed_cosine), "embed_cosine(a, b)"},
    {"embed_distance", 2, VEC, SCALAR(sql_embed_distance), "embed_distance(a, b)"},
    {"embed_distance", 3, VEC, SCALAR(sql_embed_distance), "embed_distance(a, b, metric)"},
    {"embed_sum", 1, VEC | OUT, AGGREGATE(sql_embed_sum), "embed_sum(v)"},
    {"embed_mean", 1, VEC | OUT, AGGREGATE(sql_embed_mean), "embed_mean(v)"},
    /* The 2-argument form may read the model registry, so it is not deterministic. */
    {"position_encoding", 2, REGISTRY | OUT, SCALAR(sql_position_encoding),
     "position_encoding(pos, dim) or position_encoding(model, pos)"},
    {"position_encoding", 3, EMBED_PURE | OUT, SCALAR(sql_position_encoding), "position_encoding(pos, dim, base)"},
    {"embed_rotate", 2, VEC | OUT, SCALAR(sql_embed_rotate), "embed_rotate(v, pos)"},
    {"embed_rotate", 3, VEC | OUT, SCALAR(sql_embed_rotate), "embed_rotate(v, pos, base)"},
    {"embed_attention_bias", 3, REGISTRY | OUT, SCALAR(sql_embed_attention_bias),
     "embed_attention_bias(model, i, j)"},
    {"embed_attention_bias", 4, REGISTRY | OUT, SCALAR(sql_embed_attention_bias),
     "embed_attention_bias(model, i, j, layer)"},
    {"embed_token_ids", 2, REGISTRY | OUT, SCALAR(sql_embed_token_ids), "embed_token_ids(model, text)"},
    {"embed_token_ids", 3, REGISTRY | OUT, SCALAR(sql_embed_token_ids), "embed_token_ids(model, text, text_b)"},
    {"contextual_embedding", 3, REGISTRY | OUT, SCALAR(sql_contextual_embedding),
     "contextual_embedding(model, text, index)"},
    {"contextual_embedding", 4, REGISTRY | OUT, SCALAR(sql_contextual_embedding),
     "contextual_embedding(model, text, index, layer)"},
    {"embed", 2, REGISTRY | OUT, SCALAR(sql_embed), "embed(model, text)"},
    {"embed", 3, REGISTRY | OUT, SCALAR(sql_embed), "embed(model, text, options)"},
    {"embed_rerank", 3, REGISTRY, SCALAR(sql_embed_rerank), "embed_rerank(model, query, text)"},
    {"embed_rerank", 4, REGISTRY, SCALAR(sql_embed_rerank), "embed_rerank(model, query, text, options)"},
    /* These change the process-wide registry: a database's views and triggers must not. */
    {"embed_define", 2, DIRECT, SCALAR(sql_embed_define), "embed_define(name, json)"},
    {"embed_load", 2, DIRECT, SCALAR(sql_embed_load), "embed_load(name, folder)"},
    {"embed_load", 3, DIRECT, SCALAR(sql_embed_load), "embed_load(name, folder, options)"},
    {"embed_unload", 1, DIRECT, SCALAR(sql_embed_unload), "embed_unload(name)"},
};
#define N_FUNCTIONS (sizeof functions / sizeof functions[0])

/* The fallback of a name: its signatures joined with " or ". */
static void wrong_count_error(sqlite3_context *ctx, const char *got) {
    const ext_function *first = sqlite3_user_data(ctx);
    sqlite3_str *s = sqlite3_str_new(NULL);
    for (size_t i = 0; i < N_FUNCTIONS; i++)
        if (strcmp(functions[i].name, first->name) == 0)
            sqlite3_str_appendf(s, "%s%s", sqlite3_str_length(s) ? " or " : "", functions[i].signature);
    char *signatures = sqlite3_str_finish(s);
    if (signatures) ext_error(ctx, first->name, "expects %s; got %s", signatures, got);
    else sqlite3_result_error_nomem(ctx);
    sqlite3_free(signatures);
}

static void wrong_count(sqlite3_context *ctx, int argc, sqlite3_value **argv) {
    (void)argv;
    char got[32];
    sqlite3_snprintf(sizeof got, got, "%d argument%s", argc, argc == 1 ? "" : "s");
    wrong_count_error(ctx, got);
}

/* An aggregate's fallback also fails over no rows, where xFinal alone runs. */
static void wrong_count_final(sqlite3_context *ctx) { wrong_count_error(ctx, "another number of arguments"); }

/* The flags of a name's fallback: DIRECTONLY if any form is, DETERMINISTIC and INNOCUOUS
 * only if every form is, so the fallback is never usable where the function is not. */
static int fallback_flags(const ext_function *first) {
    int all = SQLITE_DETERMINISTIC | SQLITE_INNOCUOUS, any = 0;
    for (size_t i = 0; i < N_FUNCTIONS; i++)
        if (strcmp(functions[i].name, first->name) == 0) {
            all &= functions[i].flags;
            any |= functions[i].flags & SQLITE_DIRECTONLY;
        }
    return SQLITE_UTF8 | all | any;
}

static int first_of_its_name(size_t at) {
    for (size_t i = 0; i < at; i++)
        if (strcmp(functions[i].name, functions[at].name) == 0) return 0;
    return 1;
}

int ext_register_functions(sqlite3 *db, const char **failed) {
    for (size_t i = 0; i < N_FUNCTIONS; i++) {
        const ext_function *f = &functions[i];
        int rc = SQLITE_OK, aggregate = f->step != NULL;
        *failed = f->name;
        rc = sqlite3_create_function(db, f->name, f->n_arg, f->flags, NULL, f->func, f->step, f->final);
        if (rc == SQLITE_OK && first_of_its_name(i))
            rc = sqlite3_create_function(db, f->name, -1, fallback_flags(f), (void *)f,
                                         aggregate ? NULL : wrong_count, aggregate ? wrong_count : NULL,
                                         aggregate ? wrong_count_final : NULL);
        if (rc != SQLITE_OK) return rc;
    }
    *failed = NULL;
    return SQLITE_OK;
}
