#include "search/meta.h"
#include <stdlib.h>
#include <string.h>

void emb_meta_column_free(emb_meta_column *c) {
    free(c->type);
    free(c->cell);
    free(c->arena);
    memset(c, 0, sizeof *c);
}

static int reserve(emb_meta_column *c, size_t n) {
    if (n <= c->cap) return 0;
    size_t cap = c->cap ? c->cap : 1024;
    while (cap < n) cap *= 2;
    unsigned char *t = realloc(c->type, cap);
    if (t) c->type = t;
    union emb_cell *cell = realloc(c->cell, cap * sizeof *cell);
    if (cell) c->cell = cell;
    if (!t || !cell) return -1;
    c->cap = cap;
    return 0;
}

int emb_meta_column_reset(emb_meta_column *c, size_t n) {
    if (reserve(c, n)) return -1;
    if (n) memset(c->type, EMB_NULL, n); /* no rows: a column never grown has no type array */
    c->n = n;
    c->arena_n = 0;
    return 0;
}

int emb_meta_column_resize(emb_meta_column *c, size_t n) {
    if (reserve(c, n)) return -1;
    if (n > c->n) memset(c->type + c->n, EMB_NULL, n - c->n);
    c->n = n;
    return 0;
}

int emb_meta_column_copy(emb_meta_column *dst, const emb_meta_column *src) {
    memset(dst, 0, sizeof *dst);
    if (reserve(dst, src->n ? src->n : 1)) return -1;
    if (src->arena_n && !(dst->arena = malloc(src->arena_n))) {
        emb_meta_column_free(dst);
        return -1;
    }
    if (src->n) {
        memcpy(dst->type, src->type, src->n);
        memcpy(dst->cell, src->cell, src->n * sizeof *dst->cell);
    }
    if (src->arena_n) memcpy(dst->arena, src->arena, src->arena_n);
    dst->n = src->n;
    dst->arena_n = dst->arena_cap = src->arena_n;
    return 0;
}

size_t emb_meta_column_bytes(const emb_meta_column *c) { return c->cap * (1 + sizeof *c->cell) + c->arena_cap; }

int emb_meta_column_set(emb_meta_column *c, size_t i, const emb_value *v) {
    union emb_cell *cell = &c->cell[i];
    if (v->type == EMB_TEXT || v->type == EMB_BLOB) {
        if (c->arena_n + v->n > c->arena_cap) {
            size_t cap = c->arena_cap ? 2 * c->arena_cap : 4096;
            while (cap < c->arena_n + v->n) cap *= 2;
            char *a = realloc(c->arena, cap);
            if (!a) return -1;
            c->arena = a;
            c->arena_cap = cap;
        }
        if (v->n) memcpy(c->arena + c->arena_n, v->p, v->n);
        cell->s.off = c->arena_n;
        cell->s.n = v->n;
        c->arena_n += v->n;
    } else if (v->type == EMB_REAL) {
        cell->r = v->r;
    } else {
        cell->i = v->i;
    }
    c->type[i] = (unsigned char)v->type;
    return 0;
}

int emb_meta_column_push(emb_meta_column *c, const emb_value *v) {
    if (reserve(c, c->n + 1) || emb_meta_column_set(c, c->n, v)) return -1;
    c->n++;
    return 0;
}

void emb_meta_column_remove(emb_meta_column *c, size_t pos) {
    size_t last = c->n - 1; /* the moved row keeps its bytes where they are in the arena */
    c->type[pos] = c->type[last];
    c->cell[pos] = c->cell[last];
    c->n--;
}

emb_value emb_meta_column_get(const emb_meta_column *c, size_t i) {
    emb_value v = {.type = (emb_value_type)c->type[i]};
    const union emb_cell *cell = &c->cell[i];
    if (v.type == EMB_INT) v.i = cell->i;
    else if (v.type == EMB_REAL) v.r = cell->r;
    else if (v.type == EMB_TEXT || v.type == EMB_BLOB) {
        /* an empty value has no bytes in the arena (which may not exist): a pointer to none,
         * never NULL, which SQLite's result functions would read as SQL NULL */
        v.n = cell->s.n;
        v.p = v.n ? c->arena + cell->s.off : "";
    }
    return v;
}

static int class_of(emb_value_type t) {
    return t == EMB_NULL ? 0 : t == EMB_INT || t == EMB_REAL ? 1 : t == EMB_TEXT ? 2 : 3;
}

/* Numbers by value: an integer and a real compared exactly (long double holds every int64). */
static int compare_numbers(const emb_value *a, const emb_value *b) {
    if (a->type == EMB_INT && b->type == EMB_INT) return (a->i > b->i) - (a->i < b->i);
    long double x = a->type == EMB_INT ? (long double)a->i : (long double)a->r;
    long double y = b->type == EMB_INT ? (long double)b->i : (long double)b->r;
    return (x > y) - (x < y);
}

int emb_value_compare(const emb_value *a, const emb_value *b) {
    int ca = class_of(a->type), cb = class_of(b->type);
    if (ca != cb) return ca < cb ? -1 : 1;
    if (ca == 0) return 0;
    if (ca == 1) return compare_numbers(a, b);
    size_t n = a->n < b->n ? a->n : b->n;
    int c = n ? memcmp(a->p, b->p, n) : 0;
    if (c) return c < 0 ? -1 : 1;
    return (a->n > b->n) - (a->n < b->n);
}

/* The comparison's truth for a result c of compare(row, value). */
static int cmp_holds(emb_op op, int c) {
    switch (op) {
    case EMB_OP_EQ: return c == 0;
    case EMB_OP_NE: return c != 0;
    case EMB_OP_LT: return c < 0;
    case EMB_OP_LE: return c <= 0;
    case EMB_OP_GT: return c > 0;
    default: return c >= 0;
    }
}

int emb_pred_holds(const emb_pred *p, const emb_value *v) {
    int is_null = v->type == EMB_NULL;
    switch (p->op) {
    case EMB_OP_ISNULL: return is_null;
    case EMB_OP_NOTNULL: return !is_null;
    case EMB_OP_IS: return emb_value_compare(v, &p->value) == 0;
    case EMB_OP_ISNOT: return emb_value_compare(v, &p->value) != 0;
    case EMB_OP_IN:
        if (is_null) return 0;
        for (size_t j = 0; j < p->n_list; j++)
            if (p->list[j].type != EMB_NULL && emb_value_compare(v, &p->list[j]) == 0) return 1;
        return 0;
    default: break;
    }
    if (is_null || p->value.type == EMB_NULL) return 0;
    return cmp_holds(p->op, emb_value_compare(v, &p->value));
}

/* One comparison with a number over rows src[0 .. n-1] (identity when src is NULL), keeping
 * those that hold: the common filter (a year, a score, a rowid range), one tight loop. */
static size_t filter_numeric(const emb_meta_column *col, const int64_t *ids, const emb_pred *p, const size_t *src,
                             size_t n, size_t *out) {
    size_t m = 0;
    const emb_value *v = &p->value;
    for (size_t j = 0; j < n; j++) {
        size_t i = src ? src[j] : j;
        int c;
        if (!col) {
            emb_value x = {.type = EMB_INT, .i = ids[i]};
            c = compare_numbers(&x, v);
        } else {
            unsigned char t = col->type[i];
            if (t == EMB_INT && v->type == EMB_INT) c = (col->cell[i].i > v->i) - (col->cell[i].i < v->i);
            else if (t == EMB_REAL && v->type == EMB_REAL) c = (col->cell[i].r > v->r) - (col->cell[i].r < v->r);
            else if (t == EMB_NULL) continue;
            else if (t == EMB_TEXT || t == EMB_BLOB) c = 1; /* after every number */
            else {
                emb_value x = emb_meta_column_get(col, i);
                c = compare_numbers(&x, v);
            }
        }
        if (cmp_holds(p->op, c)) out[m++] = i;
    }
    return m;
}

size_t emb_meta_filter(const emb_meta_column *cols, const int64_t *ids, size_t n, const emb_pred *preds, size_t np,
                       const size_t *candidates, size_t nc, size_t *out) {
    /* one condition at a time, each over the rows the ones before kept */
    const size_t *src = candidates;
    size_t count = candidates ? nc : n;
    if (np == 0) {
        for (size_t j = 0; j < count; j++) out[j] = src ? src[j] : j;
        return count;
    }
    /* comparisons with numbers first: one tight loop each, and the others see fewer rows */
    for (size_t pass = 0; pass < 2 * np; pass++) {
        const emb_pred *p = &preds[pass % np];
        int numeric = p->op <= EMB_OP_GE && (p->value.type == EMB_INT || p->value.type == EMB_REAL);
        if (numeric != (pass < np)) continue;
        const emb_meta_column *col = p->col < 0 ? NULL : &cols[p->col];
        size_t m = 0;
        if (numeric) {
            m = filter_numeric(col, ids, p, src, count, out);
        } else if (col && p->op == EMB_OP_EQ && p->value.type == EMB_TEXT) {
            for (size_t j = 0; j < count; j++) { /* equal text: same length, same bytes */
                size_t i = src ? src[j] : j;
                if (col->type[i] == EMB_TEXT && col->cell[i].s.n == p->value.n &&
                    (p->value.n == 0 || memcmp(col->arena + col->cell[i].s.off, p->value.p, p->value.n) == 0))
                    out[m++] = i;
            }
        } else {
            for (size_t j = 0; j < count; j++) {
                size_t i = src ? src[j] : j;
                emb_value v = col ? emb_meta_column_get(col, i) : (emb_value){.type = EMB_INT, .i = ids[i]};
                if (emb_pred_holds(p, &v)) out[m++] = i;
            }
        }
        src = out; /* in place from here on: out[m] is written after src[j] with m <= j is read */
        count = m;
    }
    return count;
}

/* ---------- groups ---------- */

static int by_value(const void *pa, const void *pb, void *column) {
    size_t a = *(const size_t *)pa, b = *(const size_t *)pb;
    emb_value va = emb_meta_column_get(column, a), vb = emb_meta_column_get(column, b);
    int c = emb_value_compare(&va, &vb);
    return c ? c : (a > b) - (a < b);
}

int emb_meta_groups_build(emb_meta_groups *g, const emb_meta_column *c) {
    g->n = c->n;
    g->order = malloc((c->n ? c->n : 1) * sizeof *g->order);
    if (!g->order) return -1;
    for (size_t i = 0; i < c->n; i++) g->order[i] = i;
    qsort_r(g->order, c->n, sizeof *g->order, by_value, (void *)c); /* positions sorted by value */
    return 0;
}

void emb_meta_groups_free(emb_meta_groups *g) {
    free(g->order);
    g->order = NULL;
    g->n = 0;
}

size_t emb_meta_groups_find(const emb_meta_groups *g, const emb_meta_column *c, const emb_value *v,
                            size_t *first) {
    *first = 0;
    if (v->type == EMB_NULL) return 0;
    size_t lo = 0, hi = g->n;
    while (lo < hi) { /* first position whose value is >= v */
        size_t mid = lo + (hi - lo) / 2;
        emb_value m = emb_meta_column_get(c, g->order[mid]);
        if (emb_value_compare(&m, v) < 0) lo = mid + 1;
        else hi = mid;
    }
    size_t end = lo;
    while (end < g->n) {
        emb_value m = emb_meta_column_get(c, g->order[end]);
        if (emb_value_compare(&m, v) != 0) break;
        end++;
    }
    *first = lo;
    return end - lo;
}
