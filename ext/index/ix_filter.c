/* embed_index's search filters: the conditions on metadata columns and the rowid that
 * xBestIndex passed to a search (ix_module.c), read from xFilter's arguments and applied to the
 * copy before the top k: the positions that pass them. A chunked index's positions hold parts,
 * which carry their row's rowid and metadata. */
#include "ix.h"
#include <stdlib.h>
#include <string.h>

/* A condition's value as the column compares it: SQLite applies the column's affinity to a
 * constant compared with it (numeric for integer, real and the rowid; text for text). */
static emb_value filter_value(ix_vtab *v, int col, sqlite3_value *x) {
    emb_value e = {.type = EMB_NULL};
    int numeric = col < 0 || v->meta[col].type == IX_META_INTEGER || v->meta[col].type == IX_META_REAL;
    int t = sqlite3_value_type(x);
    if (numeric && t == SQLITE_TEXT) t = sqlite3_value_numeric_type(x);
    if (col >= 0 && v->meta[col].type == IX_META_TEXT && (t == SQLITE_INTEGER || t == SQLITE_FLOAT))
        t = SQLITE_TEXT;
    switch (t) {
    case SQLITE_INTEGER: e.type = EMB_INT, e.i = sqlite3_value_int64(x); break;
    case SQLITE_FLOAT: e.type = EMB_REAL, e.r = sqlite3_value_double(x); break;
    case SQLITE_TEXT:
        e.type = EMB_TEXT;
        e.p = sqlite3_value_text(x);
        e.n = (size_t)sqlite3_value_bytes(x);
        break;
    case SQLITE_BLOB:
        e.type = EMB_BLOB;
        e.p = sqlite3_value_blob(x);
        e.n = (size_t)sqlite3_value_bytes(x);
        break;
    default: break;
    }
    return e;
}

void ix_filters_free(ix_filters *f) {
    for (int i = 0; i < f->n; i++) {
        for (size_t j = 0; f->lists[i] && j < f->pred[i].n_list; j++)
            if (f->lists[i][j].type == EMB_TEXT || f->lists[i][j].type == EMB_BLOB)
                sqlite3_free((void *)f->lists[i][j].p);
        sqlite3_free(f->lists[i]);
    }
    f->n = 0;
}

/* The conditions xBestIndex passed (idx_str: "col,op;" each, col -1 for the rowid), whose
 * values are argv[0 ..]. */
int ix_read_filters(ix_vtab *v, const char *idx_str, sqlite3_value **argv, ix_filters *f) {
    f->n = 0;
    for (const char *p = idx_str; p && *p && f->n < (int)(sizeof f->pred / sizeof *f->pred);) {
        char *end;
        int col = (int)strtol(p, &end, 10), op = (int)strtol(end + 1, &end, 10);
        p = *end == ';' ? end + 1 : end;
        emb_pred *pr = &f->pred[f->n];
        sqlite3_value *x = argv[f->n];
        f->lists[f->n] = NULL;
        *pr = (emb_pred){.col = col, .op = (emb_op)op};
        if (op == EMB_OP_IN) {
            sqlite3_value *e;
            size_t n = 0, cap = 0;
            int rc;
            for (rc = sqlite3_vtab_in_first(x, &e); rc == SQLITE_OK && e; rc = sqlite3_vtab_in_next(x, &e)) {
                if (n == cap) {
                    cap = cap ? 2 * cap : 16;
                    emb_value *grown = sqlite3_realloc64(f->lists[f->n], cap * sizeof *grown);
                    if (!grown) {
                        rc = SQLITE_NOMEM;
                        break;
                    }
                    f->lists[f->n] = grown;
                }
                emb_value x = filter_value(v, col, e);
                if (x.type == EMB_TEXT || x.type == EMB_BLOB) { /* e is reused by the next value */
                    void *copy = sqlite3_malloc64(x.n + 1);
                    if (!copy) {
                        rc = SQLITE_NOMEM;
                        break;
                    }
                    if (x.n) memcpy(copy, x.p, x.n);
                    x.p = copy;
                }
                f->lists[f->n][n++] = x;
                pr->n_list = n;
            }
            f->n++;
            if (rc != SQLITE_DONE && rc != SQLITE_OK) return rc == SQLITE_NOMEM ? rc : ix_sql_error(v, rc);
            pr->list = f->lists[f->n - 1];
            pr->n_list = n;
        } else {
            if (op != EMB_OP_ISNULL && op != EMB_OP_NOTNULL) pr->value = filter_value(v, col, x);
            f->n++;
        }
    }
    return SQLITE_OK;
}

static int by_position(const void *a, const void *b) {
    size_t x = *(const size_t *)a, y = *(const size_t *)b;
    return (x > y) - (x < y);
}

/* The positions that satisfy every condition, into *rows (sqlite3_malloc'd) and *m. A condition
 * = or IN on the partition key takes its rows from the groups, without a pass over the others. */
int ix_filter_rows(ix_vtab *v, const ix_cache *c, const ix_filters *f, size_t **rows, size_t *m) {
    const emb_pred *part = NULL;
    for (int i = 0; i < f->n && !part; i++)
        if (f->pred[i].col >= 0 && f->pred[i].col == v->partition &&
            (f->pred[i].op == EMB_OP_EQ || f->pred[i].op == EMB_OP_IN))
            part = &f->pred[i];
    size_t n = c->n, *cand = NULL, nc = 0;
    if (part) { /* the copy's groups are made with its rows (ix_refresh) */
        const emb_value *vals = part->op == EMB_OP_IN ? part->list : &part->value;
        size_t nv = part->op == EMB_OP_IN ? part->n_list : 1, total = 0;
        size_t *span = sqlite3_malloc64(2 * (nv ? nv : 1) * sizeof *span); /* each value's first, count */
        if (!span) return SQLITE_NOMEM;
        for (size_t i = 0; i < nv; i++)
            total += span[2 * i + 1] =
                emb_meta_groups_find(&c->groups, &c->meta[v->partition], &vals[i], &span[2 * i]);
        if (!(cand = sqlite3_malloc64((total ? total : 1) * sizeof *cand))) {
            sqlite3_free(span);
            return SQLITE_NOMEM;
        }
        for (size_t i = 0; i < nv; i++) {
            memcpy(cand + nc, c->groups.order + span[2 * i], span[2 * i + 1] * sizeof *cand);
            nc += span[2 * i + 1];
        }
        sqlite3_free(span);
        qsort(cand, nc, sizeof *cand, by_position); /* an IN list may repeat a value */
        size_t u = 0;
        for (size_t i = 0; i < nc; i++)
            if (!u || cand[u - 1] != cand[i]) cand[u++] = cand[i];
        nc = u;
    }
    *rows = sqlite3_malloc64(((part ? nc : n) + 1) * sizeof **rows);
    if (!*rows) {
        sqlite3_free(cand);
        return SQLITE_NOMEM;
    }
    *m = emb_meta_filter(c->meta, c->rows ? c->rows : c->ids, n, f->pred, (size_t)f->n, part ? cand : NULL, nc,
                         *rows);
    sqlite3_free(cand);
    return SQLITE_OK;
}
