/* Metadata beside an array of vectors: one column of values per declared column, compared as
 * SQLite compares values, and predicates over them that select the rows a search may return
 * (filtered k-nearest-neighbour search, before the top k, never after).
 *
 * Values are SQLite's storage classes. Their order is SQLite's: NULL < numbers (INTEGER and
 * REAL compared by value) < TEXT (bytes, as the BINARY collation) < BLOB (bytes). A
 * comparison with NULL is never true, except IS / IS NOT. */
#ifndef EMBED_META_H
#define EMBED_META_H
#include <stddef.h>
#include <stdint.h>

typedef enum { EMB_NULL, EMB_INT, EMB_REAL, EMB_TEXT, EMB_BLOB } emb_value_type;

/* A value not owned here (text and blob point at the caller's bytes). */
typedef struct {
    emb_value_type type;
    int64_t i;
    double r;
    const void *p;
    size_t n;
} emb_value;

/* One column of n values; texts and blobs are copied into an arena. */
typedef struct {
    unsigned char *type; /* emb_value_type of each row */
    union emb_cell {
        int64_t i;
        double r;
        struct {
            size_t off; /* into arena */
            size_t n;
        } s;
    } * cell;
    size_t n, cap;
    char *arena;
    size_t arena_n, arena_cap;
} emb_meta_column;

void emb_meta_column_free(emb_meta_column *c);
/* Appends a value (copying its bytes). Returns 0, or -1 when out of memory. */
int emb_meta_column_push(emb_meta_column *c, const emb_value *v);
/* Makes the column n NULLs, to be set in any order. Returns 0, or -1 when out of memory. */
int emb_meta_column_reset(emb_meta_column *c, size_t n);
/* Makes the column n rows long: rows added are NULL. Returns 0, or -1 when out of memory. */
int emb_meta_column_resize(emb_meta_column *c, size_t n);
/* dst (uninitialised) becomes a copy of src. Returns 0, or -1 when out of memory. */
int emb_meta_column_copy(emb_meta_column *dst, const emb_meta_column *src);
/* The memory the column holds. */
size_t emb_meta_column_bytes(const emb_meta_column *c);
/* Sets row i (< n) once (its bytes are appended to the arena). Returns 0, or -1. */
int emb_meta_column_set(emb_meta_column *c, size_t i, const emb_value *v);
/* Removes row pos by moving the last row into its place (pos < n). */
void emb_meta_column_remove(emb_meta_column *c, size_t pos);
/* Row i's value (text and blob pointing into the arena, valid until the column changes). */
emb_value emb_meta_column_get(const emb_meta_column *c, size_t i);

/* -1, 0 or 1 as a orders before, equal to or after b in SQLite's order of values. */
int emb_value_compare(const emb_value *a, const emb_value *b);

typedef enum {
    EMB_OP_EQ,
    EMB_OP_NE,
    EMB_OP_LT,
    EMB_OP_LE,
    EMB_OP_GT,
    EMB_OP_GE,
    EMB_OP_IS,
    EMB_OP_ISNOT,
    EMB_OP_ISNULL,
    EMB_OP_NOTNULL,
    EMB_OP_IN
} emb_op;

/* One condition: column col (or the rows' ids when col is -1) op value, or for EMB_OP_IN,
 * equal to one of list[0 .. n_list-1]. */
typedef struct {
    int col;
    emb_op op;
    emb_value value;
    const emb_value *list;
    size_t n_list;
} emb_pred;

/* Whether value v satisfies p (v is the column's value, or the id as an integer). */
int emb_pred_holds(const emb_pred *p, const emb_value *v);

/* The rows among candidates (positions; NULL: 0 .. n-1, nc ignored) that satisfy every
 * predicate, into out (room for nc, or n), in increasing position order when candidates are.
 * cols[j] is column j, ids the rows' ids. Returns their number. */
size_t emb_meta_filter(const emb_meta_column *cols, const int64_t *ids, size_t n, const emb_pred *preds, size_t np,
                       const size_t *candidates, size_t nc, size_t *out);

/* The rows of a column grouped by value, to find the rows of one value (a partition) without a
 * pass over the others: positions sorted by value, then position. */
typedef struct {
    size_t *order;
    size_t n;
} emb_meta_groups;

/* Builds the groups of column c. Returns 0, or -1 when out of memory. */
int emb_meta_groups_build(emb_meta_groups *g, const emb_meta_column *c);
void emb_meta_groups_free(emb_meta_groups *g);
/* The positions whose value equals v (never NULL's): *first .. *first + return value - 1 of
 * g->order. */
size_t emb_meta_groups_find(const emb_meta_groups *g, const emb_meta_column *c, const emb_value *v, size_t *first);

#endif
