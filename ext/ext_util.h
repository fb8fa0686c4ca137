/* Shared glue for the SQL functions: reading vectors from BLOB or JSON arguments,
 * returning vectors, and errors that name the function. */
#ifndef EMBED_EXT_UTIL_H
#define EMBED_EXT_UTIL_H
#include <sqlite3ext.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

extern const sqlite3_api_routines *sqlite3_api; /* defined once in embed_ext.c */

/* sqlite-vec's subtypes: float32 vectors (ours too, so both extensions treat them alike),
 * bit vectors (one bit per dimension) and int8 vectors (one signed byte per dimension). */
#define EMBED_VECTOR_SUBTYPE 223
#define EMBED_VEC_BIT_SUBTYPE 224
#define EMBED_VEC_INT8_SUBTYPE 225
#ifndef SQLITE_RESULT_SUBTYPE
#define SQLITE_RESULT_SUBTYPE 0x001000000 /* SQLite >= 3.45; ignored by older versions */
#endif
#define EMBED_PURE (SQLITE_UTF8 | SQLITE_DETERMINISTIC | SQLITE_INNOCUOUS)

typedef struct {
    const float *v; /* the values: into the argument's BLOB when aligned, else into buf */
    size_t n;
    float *buf; /* owned copy (JSON input or unaligned BLOB), sqlite3_free'd */
} ext_vec;

typedef enum { EXT_OK = 0, EXT_NULL = 1, EXT_ERROR = -1 } ext_rc;

/* Reads a value as a vector: a float32 BLOB, a sqlite-vec int8 vector (subtype 225, each byte's
 * value converted exactly) or JSON text. A sqlite-vec bit vector and a vector without
 * dimensions are errors. On EXT_ERROR *err is a sqlite3_malloc'd message that starts with
 * `what` (NULL when out of memory). On EXT_NULL the value is NULL. The subtype reaches a
 * function only on its direct argument, so functions calling this are registered
 * SQLITE_SUBTYPE. */
ext_rc ext_value_vector(sqlite3_value *val, const char *what, ext_vec *out, char **err);
/* Reads argument `arg` (0-based) of function `fn` as a vector. On EXT_ERROR the error is
 * already set on ctx. On EXT_NULL the caller returns NULL. */
ext_rc ext_get_vector(sqlite3_context *ctx, sqlite3_value *val, const char *fn, int arg, ext_vec *out);
void ext_vec_free(ext_vec *v);
/* Returns a copy of v as a float32 BLOB with the vector subtype. */
void ext_result_vector(sqlite3_context *ctx, const float *v, size_t n);
/* Like ext_result_vector, but takes ownership of a sqlite3_malloc'd buffer. */
void ext_result_vector_owned(sqlite3_context *ctx, float *v, size_t n);
/* The same for a computed vector, refused with "fn: the result overflows float32 at index i"
 * when any value is not finite (arithmetic can overflow; an infinity is never a vector). */
void ext_result_finite_vector(sqlite3_context *ctx, const char *fn, float *v, size_t n);

/* Planning a table-valued function whose arguments are hidden columns [first, first + n). */
/* slot[a]: the usable equality constraint on argument a, or -1. SQLITE_CONSTRAINT when an
 * argument is there only unusable (bound to a table not yet read: a join order that reads it
 * first supplies it), else SQLITE_OK. */
int ext_plan_arguments(const sqlite3_index_info *info, int first, int n, int *slot);
/* A plan without the required arguments, as SQLite asks for each branch of an OR (which never
 * carries a function's arguments): priced out of reach, not an error; xFilter sees idxNum
 * `need` and says what is missing only if SQLite chooses it after all. */
void ext_plan_missing(sqlite3_index_info *info, int need);
/* Passes the arguments with slot[a] >= 0 to xFilter in order (omitted from SQLite's own checks
 * where bit a of omit is set); returns the mask of the arguments passed. */
int ext_plan_pass(sqlite3_index_info *info, const int *slot, int n, int omit);
/* The whole xBestIndex of a table-valued function whose hidden arguments are the n (<= 8) columns
 * from `first`, the first `required` of them needed: a plan with them passes every argument given
 * (idxNum: the mask of those, each omitted from SQLite's checks), priced cost for rows; one
 * without them gets idxNum EXT_PLAN_NEED_ARGS(n) (ext_plan_missing). SQLITE_CONSTRAINT as
 * ext_plan_arguments says. */
#define EXT_PLAN_NEED_ARGS(n) (1 << (n))
int ext_plan_hidden(sqlite3_index_info *info, int first, int n, int required, double cost, double rows);
/* Sets "fn: err" on ctx (out of memory when err is NULL) and frees err: for the messages of
 * the context-free readers (ext_value_vector, ext_value_input_text, ext_json_object). */
void ext_error_take(sqlite3_context *ctx, const char *fn, char *err);
/* Sets a formatted error "fn: message" on ctx. */
void ext_error(sqlite3_context *ctx, const char *fn, const char *fmt, ...);
/* xConnect of a table-valued function: declares schema and makes a zeroed sqlite3_vtab in *out,
 * configured with `risk` (SQLITE_VTAB_INNOCUOUS, or SQLITE_VTAB_DIRECTONLY: docs/security.md). */
int ext_vtab_connect(sqlite3 *db, const char *schema, int risk, sqlite3_vtab **out);
/* Its xDisconnect (and xDestroy): frees what ext_vtab_connect made. */
int ext_vtab_disconnect(sqlite3_vtab *vtab);
/* Sets "fn: message" as a virtual table's error; returns SQLITE_ERROR (SQLITE_NOMEM when the
 * message could not be made). */
int ext_vtab_verror(sqlite3_vtab *vtab, const char *fn, const char *fmt, va_list ap);
/* Errors for two vectors of different dimensions. */
int ext_same_dims(sqlite3_context *ctx, const char *fn, const ext_vec *a, const ext_vec *b);
/* Writes v as a JSON array whose numbers read back to the same float32 values. */
char *ext_vector_to_json(const float *v, size_t n);
/* Reads an integer argument; EXT_ERROR (error set) when it is not an integer in [lo, hi]. */
ext_rc ext_get_int(sqlite3_context *ctx, sqlite3_value *val, const char *fn, const char *what, sqlite3_int64 lo,
                   sqlite3_int64 hi, sqlite3_int64 *out);
/* Reads a text argument; EXT_ERROR when it is not text, or contains a NUL character (names,
 * metrics and options are read as C strings). */
ext_rc ext_get_text(sqlite3_context *ctx, sqlite3_value *val, const char *fn, const char *what, const char **out,
                    int *len);
/* Reads a text to tokenize or embed: a number is converted as SQLite converts it (42 is
 * '42', as FTS5 and embed_index take it); a BLOB is an error with the CAST hint. Without a
 * function context (virtual tables): on EXT_ERROR *err is a sqlite3_malloc'd message that
 * starts with `what` (NULL when out of memory). */
ext_rc ext_value_input_text(sqlite3_value *val, const char *what, const char **out, int *len, char **err);
ext_rc ext_get_input_text(sqlite3_context *ctx, sqlite3_value *val, const char *fn, const char *what,
                          const char **out, int *len);
/* The options argument of a function: UTF-8 JSON text (len bytes, NUL-terminated as SQLite
 * gives it) holding one object whose keys each appear once, into *root (cJSON_Delete it).
 * Returns 0, or -1 with *err a sqlite3_malloc'd message, "options must be a JSON object such
 * as <example>..." or "option \"key\" is given twice" (NULL when out of memory). */
struct cJSON;
int ext_json_object(const char *json, int len, const char *example, struct cJSON **root, char **err);
/* A function's options argument read with ext_get_text and ext_json_object (error set on ctx;
 * EXT_NULL for NULL, the defaults). */
ext_rc ext_get_options(sqlite3_context *ctx, sqlite3_value *val, const char *fn, const char *example,
                       struct cJSON **root);
/* A JSON value as it reads in an error message: numbers as the shortest text that reads back as
 * the same double (cJSON prints 1.0000000000000002 as "1"); sqlite3_malloc'd, NULL when out of memory. */
char *ext_json_text(const struct cJSON *item);
const char *ext_type_name(int sqlite_type);
/* A short description of a value for error messages: "text '1'", "a blob of 3 bytes",
 * "the integer 7", "NULL"; sqlite3_malloc'd (NULL when out of memory). */
char *ext_describe_value(sqlite3_value *val);

#endif
