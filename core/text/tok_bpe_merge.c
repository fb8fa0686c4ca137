/* Applying BPE merges to a pre-token's symbols (see tok_bpe.h): the lowest rank first, the
 * leftmost on ties, as HF's Word::merge_all. Short words rescan their pairs (fast for the few
 * symbols of a regex pre-token); longer ones keep a heap of candidate merges over a linked list
 * of symbols (HF's way), so a text that is one word (a file with no pre-tokenizer) costs
 * n log n, not n^2. */
#include <stdlib.h>
#include <string.h>

#include "text/tok_bpe.h"

#define SCAN_MAX 48 /* symbols: below this the rescan beats the heap */

static long merge_scan(const tok_bpe *m, bpe_scratch *sc, size_t n) {
    /* rank[i]: the rank of the merge of symbols i and i + 1 (INT32_MAX: none) */
    for (size_t i = 0; i + 1 < n; i++) sc->rank[i] = emb_tok_bpe_rank(m, sc->id[i], sc->id[i + 1], &sc->out[i]);
    while (n > 1) {
        int32_t best = INT32_MAX;
        size_t at = 0;
        for (size_t i = 0; i + 1 < n; i++)
            if (sc->rank[i] < best) {
                best = sc->rank[i];
                at = i;
            }
        if (best == INT32_MAX) break;
        sc->id[at] = sc->out[at];
        sc->end[at] = sc->end[at + 1];
        size_t tail = n - at - 2;
        memmove(sc->id + at + 1, sc->id + at + 2, tail * sizeof *sc->id);
        memmove(sc->end + at + 1, sc->end + at + 2, tail * sizeof *sc->end);
        memmove(sc->rank + at + 1, sc->rank + at + 2, tail * sizeof *sc->rank);
        memmove(sc->out + at + 1, sc->out + at + 2, tail * sizeof *sc->out);
        n--;
        if (at > 0) sc->rank[at - 1] = emb_tok_bpe_rank(m, sc->id[at - 1], sc->id[at], &sc->out[at - 1]);
        if (at + 1 < n) sc->rank[at] = emb_tok_bpe_rank(m, sc->id[at], sc->id[at + 1], &sc->out[at]);
    }
    return (long)n;
}

/* ---- binary min-heap of candidate merges keyed by (rank, position) */

static int heap_push(bpe_scratch *sc, int32_t rank, size_t pos, int32_t out) {
    if (sc->nheap == sc->hcap && emb_grow((void **)&sc->heap, &sc->hcap, sc->nheap + 1, sizeof *sc->heap))
        return -1;
    bpe_heap_item x = {(uint64_t)(uint32_t)rank << 32 | (uint64_t)pos, out};
    size_t i = sc->nheap++;
    while (i > 0 && sc->heap[(i - 1) / 2].key > x.key) {
        sc->heap[i] = sc->heap[(i - 1) / 2];
        i = (i - 1) / 2;
    }
    sc->heap[i] = x;
    return 0;
}

static bpe_heap_item heap_pop(bpe_scratch *sc) {
    bpe_heap_item top = sc->heap[0], x = sc->heap[--sc->nheap];
    size_t i = 0, n = sc->nheap;
    for (;;) {
        size_t c = 2 * i + 1;
        if (c >= n) break;
        if (c + 1 < n && sc->heap[c + 1].key < sc->heap[c].key) c++;
        if (sc->heap[c].key >= x.key) break;
        sc->heap[i] = sc->heap[c];
        i = c;
    }
    if (n) sc->heap[i] = x;
    return top;
}

/* the candidate merge of symbol i with the next one, if any */
static int push_pair(const tok_bpe *m, bpe_scratch *sc, size_t i) {
    int32_t j = sc->next[i], out;
    if (j < 0) return 0;
    int32_t r = emb_tok_bpe_rank(m, sc->id[i], sc->id[j], &out);
    return r == INT32_MAX ? 0 : heap_push(sc, r, i, out);
}

/* A popped candidate is stale when its left symbol is gone or the pair now merges into
 * another token (HF's check). end[i] = 0 marks a removed symbol. */
static long merge_heap(const tok_bpe *m, bpe_scratch *sc, size_t n) {
    sc->nheap = 0;
    for (size_t i = 0; i < n; i++) {
        sc->prev[i] = (int32_t)i - 1;
        sc->next[i] = i + 1 < n ? (int32_t)i + 1 : -1;
    }
    for (size_t i = 0; i + 1 < n; i++)
        if (push_pair(m, sc, i)) return -1;
    while (sc->nheap) {
        bpe_heap_item top = heap_pop(sc);
        size_t i = (size_t)(top.key & 0xFFFFFFFFu);
        int32_t j = sc->next[i], out;
        if (sc->end[i] == 0 || j < 0) continue;
        if (emb_tok_bpe_rank(m, sc->id[i], sc->id[j], &out) == INT32_MAX || out != top.out) continue;
        sc->id[i] = out;
        sc->end[i] = sc->end[j];
        sc->end[j] = 0;
        sc->next[i] = sc->next[j];
        if (sc->next[j] >= 0) sc->prev[sc->next[j]] = (int32_t)i;
        if ((sc->prev[i] >= 0 && push_pair(m, sc, (size_t)sc->prev[i])) || push_pair(m, sc, i)) return -1;
    }
    size_t k = 0;
    for (size_t i = 0; i < n; i++)
        if (sc->end[i]) {
            sc->id[k] = sc->id[i];
            sc->end[k++] = sc->end[i];
        }
    return (long)k;
}

long emb_tok_bpe_merge(const tok_bpe *m, bpe_scratch *sc, size_t n) {
    if (n < 2) return (long)n;
    return n < SCAN_MAX ? merge_scan(m, sc, n) : merge_heap(m, sc, n);
}
