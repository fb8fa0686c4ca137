/* Recall-targeted search settings, measured on held-out queries: the exact k nearest of each
 * query (its own row left out, as a query from outside the data would not find it), then the
 * smallest IVF `probes` or compact-code `oversample` under which a given share of those
 * neighbours is found. Both are exact for the queries measured: a neighbour is found with p
 * probes when its list ranks among the p nearest lists of the query, and with oversample o when
 * fewer than k x o rows score better by the codes. */
#ifndef EMBED_TUNE_H
#define EMBED_TUNE_H
#include "search/ivf.h"
#include "sqlite-embed/vec.h"
#include <stddef.h>
#include <stdint.h>

/* The exact k nearest of nq queries among rows given block by block. */
typedef struct {
    size_t nq, k, d;
    emb_metric metric;
    float *q; /* nq x d, copied */
    size_t *self; /* each query's own position, left out of its neighbours */
    float *score; /* nq x k scores, lower nearer, each query's sorted */
    size_t *pos; /* nq x k positions */
    size_t *found; /* per query: how many are held (< k while fewer rows were seen) */
    float *block; /* scores of a block of rows */
} emb_truth;

/* Copies the queries (nq x d) and their own positions. Returns 0, or -1 (out of memory, or nq,
 * k or d 0). */
int emb_truth_init(emb_truth *t, const float *q, const size_t *self, size_t nq, size_t d, emb_metric m, size_t k);
/* Scores the rows x (rows x d) at positions first .. first + rows - 1 against every query.
 * Returns 0, or -1 (out of memory). */
int emb_truth_add(emb_truth *t, const float *x, size_t rows, size_t first);
void emb_truth_free(emb_truth *t);

/* What a measurement found: the setting, the recall it reaches on the queries measured, and for
 * probes the mean share of the rows those lists hold. */
typedef struct {
    size_t value;
    double recall, scanned;
} emb_tuned;

/* The smallest probes reaching recall `target` (0 .. 1): list_of[pos] is each row's list (-1:
 * none, always scanned), sizes[l] each list's rows, n the rows. Returns 0, or -1 (out of
 * memory). */
int emb_tune_probes(const emb_ivf *ivf, const emb_truth *t, const int32_t *list_of, const size_t *sizes, size_t n,
                    double target, emb_tuned *out);
/* The rank by code score of each neighbour among m rows, given the scores of every row for
 * query j (score[0 .. m-1], lower nearer; the query's own row left out): ranks[j * k + i] for
 * neighbour i. */
void emb_tune_code_ranks(const emb_truth *t, size_t j, const float *score, size_t m, size_t *ranks);
/* The smallest oversample o reaching `target`: a neighbour of rank r is found when
 * r < k x o. */
int emb_tune_oversample(const size_t *ranks, size_t count, size_t k, double target, emb_tuned *out);

#endif
