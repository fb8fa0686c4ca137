/* Scores of quantized records and the best candidates among them: the kernels give a block
 * of raw quantities, which become scores here and go straight into a small heap, so a scan
 * never writes (and re-reads) one score per row of a large array. */
#include "search/quant.h"
#include "math/half.h"
#include "search/quant_kernels.h"
#include <math.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#define BLOCK 256 /* rows scored between two selections */
#define PARALLEL_BYTES (4u << 20) /* a scan of more records than this uses threads */
#define BYTES_PER_THREAD (1u << 20) /* and gives each at least this much */
#define MAX_THREADS 64

static float load_f32(const unsigned char *p) {
    float f;
    memcpy(&f, p, 4);
    return f;
}

/* sum |q_i - x^_i| in float, one row at a time: l1 is the rare metric */
static float l1_row(const emb_code_query *q, const unsigned char *r) {
    const float *qf = q->qf;
    float s = 0;
    switch (q->storage) {
    case EMB_STORAGE_F32:
        for (size_t i = 0; i < q->d; i++) s += fabsf(qf[i] - load_f32(r + 4 * i));
        break;
    case EMB_STORAGE_F16:
        for (size_t i = 0; i < q->d; i++)
            s += fabsf(qf[i] - emb_f16_to_f32((uint16_t)(r[2 * i] | r[2 * i + 1] << 8)));
        break;
    default: { /* int8 */
        float scale = load_f32(r + q->d);
        for (size_t i = 0; i < q->d; i++) s += fabsf(qf[i] - (float)(int8_t)r[i] * scale);
        break;
    }
    }
    return s;
}

/* The scores of rows lo .. lo+n-1 of the list (n <= BLOCK). */
static void block_scores(const emb_code_query *q, const unsigned char *records, const float *aux,
                         const size_t *rows, size_t lo, size_t n, float *score) {
    emb_qblock b = {records, q->bytes, rows, lo, n};
    emb_qpath path = (emb_qpath)q->path;
    if (q->storage == EMB_STORAGE_BIT) {
        emb_quant_kernels_hamming(path, q->qbits, q->d, &b, score);
        return;
    }
    if (q->metric == EMB_METRIC_L1) {
        for (size_t j = 0; j < n; j++) score[j] = l1_row(q, records + emb_qblock_pos(&b, j) * q->bytes);
        return;
    }
    float dot[BLOCK], a[BLOCK];
    float f = q->factor; /* cosine: 1/|q| (int8: qscale/|q^|); int8 l2 and dot: qscale */
    if (q->storage == EMB_STORAGE_INT8) {
        emb_quant_kernels_int8_dots(path, q->q8, q->qabs, q->qsum, q->d, &b, dot); /* isum * the row's scale */
    } else {
        if (q->storage == EMB_STORAGE_F16) emb_quant_kernels_f16_dots(path, q->qf, q->d, &b, dot);
        else emb_quant_kernels_f32_dots(path, q->qf, q->d, &b, dot);
        if (q->metric != EMB_METRIC_COSINE) f = 1;
    }
    if (!emb_code_needs_aux(q->storage, q->metric)) {
    } else if (aux && !rows) {
        memcpy(a, aux + lo, n * sizeof *a);
    } else {
        for (size_t j = 0; j < n; j++) {
            size_t pos = emb_qblock_pos(&b, j);
            a[j] = aux ? aux[pos] : emb_code_aux(q->storage, q->metric, records + pos * q->bytes, q->d);
        }
    }
    switch (q->metric) {
    case EMB_METRIC_COSINE:
        for (size_t j = 0; j < n; j++) score[j] = -(dot[j] * a[j] * f);
        break;
    case EMB_METRIC_L2:
        for (size_t j = 0; j < n; j++) score[j] = a[j] - 2.0f * (dot[j] * f);
        break;
    default: /* dot */
        for (size_t j = 0; j < n; j++) score[j] = -(dot[j] * f);
        break;
    }
}

void emb_code_scores(const emb_code_query *q, const void *records, const float *aux, const size_t *rows, size_t m,
                     float *score) {
    for (size_t at = 0; at < m; at += BLOCK)
        block_scores(q, records, aux, rows, at, m - at < BLOCK ? m - at : BLOCK, score + at);
}

/* ---------- selection ---------- */

typedef struct {
    float score;
    size_t pos;
} cand;

static int cand_after(const cand *a, const cand *b) {
    return a->score > b->score || (a->score == b->score && a->pos > b->pos);
}

static int cand_cmp(const void *pa, const void *pb) {
    const cand *a = pa, *b = pb;
    return cand_after(a, b) - cand_after(b, a);
}

/* A max-heap (the last candidate kept on top) of at most cap candidates. */
typedef struct {
    cand *c;
    size_t n, cap;
} heap;

static void heap_down(heap *h, size_t at) {
    for (;;) {
        size_t l = 2 * at + 1, top = at;
        if (l < h->n && cand_after(&h->c[l], &h->c[top])) top = l;
        if (l + 1 < h->n && cand_after(&h->c[l + 1], &h->c[top])) top = l + 1;
        if (top == at) return;
        cand t = h->c[at];
        h->c[at] = h->c[top];
        h->c[top] = t;
        at = top;
    }
}

static void heap_offer(heap *h, float score, size_t pos) {
    cand x = {score == score ? score : INFINITY, pos}; /* NaN: last */
    if (h->n < h->cap) {
        h->c[h->n++] = x;
        if (h->n == h->cap)
            for (size_t j = h->cap / 2; j-- > 0;) heap_down(h, j);
    } else if (cand_after(&h->c[0], &x)) {
        h->c[0] = x;
        heap_down(h, 0);
    }
}

typedef struct {
    const emb_code_query *q;
    const unsigned char *records;
    const float *aux;
    const size_t *rows;
    size_t lo, hi;
    heap h;
} part;

static void *scan_part(void *arg) {
    part *t = arg;
    float score[BLOCK];
    float bound = INFINITY; /* once the heap is full: its last score; a row above it cannot enter */
    for (size_t at = t->lo; at < t->hi; at += BLOCK) {
        size_t n = t->hi - at < BLOCK ? t->hi - at : BLOCK;
        block_scores(t->q, t->records, t->aux, t->rows, at, n, score);
        for (size_t j = 0; j < n; j++) {
            if (score[j] > bound) continue; /* the common case; a NaN goes on to be placed last */
            heap_offer(&t->h, score[j], t->rows ? t->rows[at + j] : at + j);
            if (t->h.n == t->h.cap) bound = t->h.c[0].score;
        }
    }
    return NULL;
}

void emb_code_scratch_free(emb_code_scratch *s) {
    free(s->mem);
    s->mem = NULL;
    s->cap = 0;
}

static int parts_for(size_t m, size_t bytes, int threads) {
    size_t total = m * bytes;
    if (total <= PARALLEL_BYTES) return 1;
    long t = threads > 0 ? threads : sysconf(_SC_NPROCESSORS_ONLN);
    size_t most = total / BYTES_PER_THREAD;
    if (t < 1) t = 1;
    if (t > MAX_THREADS) t = MAX_THREADS;
    if ((size_t)t > most) t = (long)most;
    return (int)t;
}

size_t emb_code_candidates(const emb_code_query *q, const void *records, const float *aux, const size_t *rows,
                           size_t m, size_t keep, int threads, emb_code_scratch *scratch, size_t *out) {
    if (keep > m) keep = m;
    if (keep == 0) return 0;
    int np = parts_for(m, q->bytes, threads);
    part parts[MAX_THREADS];
    size_t need = 0;
    for (int t = 0; t < np; t++) {
        size_t lo = m * (size_t)t / (size_t)np, hi = m * (size_t)(t + 1) / (size_t)np;
        parts[t] = (part){q, records, aux, rows, lo, hi, {NULL, 0, hi - lo < keep ? hi - lo : keep}};
        need += parts[t].h.cap;
    }
    if (scratch->cap < need) {
        emb_code_scratch_free(scratch);
        if (!(scratch->mem = malloc(need * sizeof(cand)))) return (size_t)-1;
        scratch->cap = need;
    }
    cand *all = scratch->mem;
    size_t at = 0;
    for (int t = 0; t < np; t++) {
        parts[t].h.c = all + at;
        at += parts[t].h.cap;
    }
    pthread_t tid[MAX_THREADS];
    int started[MAX_THREADS] = {0};
    for (int t = 1; t < np; t++) started[t] = pthread_create(&tid[t], NULL, scan_part, &parts[t]) == 0;
    scan_part(&parts[0]);
    for (int t = 1; t < np; t++) {
        if (started[t]) pthread_join(tid[t], NULL);
        else scan_part(&parts[t]); /* no thread to be had: this one does the part */
    }
    /* each part's best, side by side, then sorted: the first keep are the best of all */
    size_t n = 0;
    for (int t = 0; t < np; t++) {
        memmove(all + n, parts[t].h.c, parts[t].h.n * sizeof(cand));
        n += parts[t].h.n;
    }
    qsort(all, n, sizeof(cand), cand_cmp);
    if (n > keep) n = keep;
    for (size_t j = 0; j < n; j++) out[j] = all[j].pos;
    return n;
}
