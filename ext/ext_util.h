/* Shared glue for the SQL functions: reading vectors from BLOB or JSON arguments,
 * returning vectors, and errors that name the function. */
#ifndef EMBED_EXT_UTIL_H
#define EMBED_EXT_UTIL_H
#include <sqlite3ext.h>
#include <stddef.h>
#include <stdint.h>

extern const sqlite3_api_routines *sqlite3_api; /* defined once in embed_ext.c */

/* sqlite-vec's subtype for float32 vectors, so both extensions treat them alike. */
#define EMBED_VECTOR_SUBTYPE 223
#ifndef SQLITE_RESULT_SUBTYPE
#define SQLITE_RESULT_SUBTYPE 0x001000000 /* SQLite >= 3.45; ignored by older versions */
#endif
#define EMBED_PURE (SQLITE_UTF8 | SQLITE_DETERMINISTIC | SQLITE_INNOCUOUS)

typedef struct {
    const float *v; /* the values: into the argument's BLOB when aligned, else into buf */
    size_t n;
    float *buf;     /* owned copy (JSON input or unaligned BLOB), sqlite3_free'd */
} ext_vec;

typedef enum { EXT_OK = 0, EXT_NULL = 1, EXT_ERROR = -1 } ext_rc;

/* Reads a value as a vector. On EXT_ERROR *err is a sqlite3_malloc'd message that starts
 * with `what` (NULL when out of memory). On EXT_NULL the value is NULL. */
ext_rc ext_value_vector(sqlite3_value *val, const char *what, ext_vec *out, char **err);
/* Reads argument `arg` (0-based) of function `fn` as a vector. On EXT_ERROR the error is
 * already set on ctx. On EXT_NULL the caller returns NULL. */
ext_rc ext_get_vector(sqlite3_context *ctx, sqlite3_value *val, const char *fn, int arg, ext_vec *out);
void ext_vec_free(ext_vec *v);
/* Returns a copy of v as a float32 BLOB with the vector subtype. */
void ext_result_vector(sqlite3_context *ctx, const float *v, size_t n);
/* Like ext_result_vector, but takes ownership of a sqlite3_malloc'd buffer. */
void ext_result_vector_owned(sqlite3_context *ctx, float *v, size_t n);
/* Sets a formatted error "fn: message" on ctx. */
void ext_error(sqlite3_context *ctx, const char *fn, const char *fmt, ...);
/* Errors for two vectors of different dimensions. */
int ext_same_dims(sqlite3_context *ctx, const char *fn, const ext_vec *a, const ext_vec *b);
/* Writes v as a JSON array whose numbers read back to the same float32 values. */
char *ext_vector_to_json(const float *v, size_t n);
/* Reads an integer argument; EXT_ERROR (error set) when it is not an integer in [lo, hi]. */
ext_rc ext_get_int(sqlite3_context *ctx, sqlite3_value *val, const char *fn, const char *what,
                   sqlite3_int64 lo, sqlite3_int64 hi, sqlite3_int64 *out);
/* Reads a text argument; EXT_ERROR when it is not text. */
ext_rc ext_get_text(sqlite3_context *ctx, sqlite3_value *val, const char *fn, const char *what,
                    const char **out, int *len);
const char *ext_type_name(int sqlite_type);

#endif
