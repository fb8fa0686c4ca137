/* Finishing a tokenizer whose settings are read (tokenizer_load.c): the ids they name checked, the
 * tables the encoding uses (continuation tokens, added tokens, ASCII classes), the fingerprint. */
#include "text/tokenizer_internal.h"

#include <stdlib.h>
#include <string.h>

#define XXH_INLINE_ALL
#include <xxhash.h>

#include "text/tok_pipeline.h"
#include "text/unicode_hf.h"

static int cmp_added(const void *a, const void *b) {
    const added_tok *x = a, *y = b;
    if (x->id != y->id) return x->id < y->id ? -1 : 1;
    size_t m = x->len < y->len ? x->len : y->len;
    int c = memcmp(x->s, y->s, m);
    return c ? c : (x->len < y->len ? -1 : x->len > y->len);
}

static void put_u64(XXH3_state_t *st, uint64_t v) {
    unsigned char b[8];
    for (int i = 0; i < 8; i++) b[i] = (unsigned char)(v >> (8 * i));
    XXH3_64bits_update(st, b, 8);
}

static void put_str(XXH3_state_t *st, const char *s, size_t len) {
    put_u64(st, len);
    XXH3_64bits_update(st, s, len);
}

/* Everything after the settings are read: continuation table, ASCII tables, fingerprint. */
int emb_tokenizer_finish(emb_tokenizer *t, const char *src, char err[EMB_ERR_LEN]) {
    int32_t n = emb_vocab_size(t->vocab);
    if (n == 0) return emb_fail(err, "%s: the vocabulary is empty", src);
    /* every id the tokenizer can emit is a token: checked here, not at the first embed() */
    t->max_type[0] = t->max_type[1] = 0;
    for (int k = 0; k < t->n_single + t->n_pair; k++) {
        int pair = k >= t->n_single;
        const tmpl_item *it = pair ? &t->pair[k - t->n_single] : &t->single[k];
        if (it->kind == 0 && !emb_vocab_token(t->vocab, it->id, NULL))
            return emb_fail(err, "%s: the post_processor's special token id %d is not in the vocabulary", src,
                            it->id);
        if (it->type_id > t->max_type[pair]) t->max_type[pair] = it->type_id;
    }
    if (t->pad_id >= 0 && !emb_vocab_token(t->vocab, t->pad_id, NULL))
        return emb_fail(err, "%s: padding pad_id %d is not in the vocabulary", src, t->pad_id);
    for (int32_t id = 0; id < n; id++) {
        size_t len;
        const char *s = emb_vocab_token(t->vocab, id, &len);
        if (!s) continue;
        /* the id a lookup finds (duplicates: the later one) */
        int32_t fid = emb_vocab_find(t->vocab, s, len);
        if (fid != id) continue;
        if (len > t->max_tok) t->max_tok = len;
        if (t->prefix_len && len >= t->prefix_len && memcmp(s, t->prefix, t->prefix_len) == 0) {
            if (emb_vocab_add(t->cont, s + t->prefix_len, len - t->prefix_len, id))
                return emb_fail(err, "out of memory");
            if (len - t->prefix_len > t->max_cont) t->max_cont = len - t->prefix_len;
        }
    }
    /* a byte-level BPE needs none: every byte is a token */
    if (t->unk_id < 0 && t->kind != TOK_BPE)
        return emb_fail(err, "%s: the unknown token is not in the vocabulary", src);
    if (t->n_added) qsort(t->added, t->n_added, sizeof *t->added, cmp_added);
    memset(t->added_first, 0, sizeof t->added_first);
    for (size_t i = 0; i < t->n_added; i++) t->added_first[(unsigned char)t->added[i].s[0]] = 1;
    t->spec_single = t->spec_pair = 0;
    for (int i = 0; i < t->n_single; i++) t->spec_single += t->single[i].kind == 0;
    for (int i = 0; i < t->n_pair; i++) t->spec_pair += t->pair[i].kind == 0;

    emb_hf_init();
    t->bmp = emb_hf_bmp_table();
    for (int c = 0; c < 128; c++) {
        unsigned f = t->bmp[c];
        uint8_t a = A_WORD;
        if (t->clean && (f & EMB_HF_REMOVED)) a = A_REMOVED;
        else if (f & EMB_HF_WS) a = A_WS;
        else if (f & EMB_HF_PUNCT) a = A_PUNCT;
        t->ascii_act[c] = a;
        t->ascii_low[c] = (char)((t->lowercase && c >= 'A' && c <= 'Z') ? c + 32 : c);
    }

    XXH3_state_t *st = XXH3_createState();
    if (!st) return emb_fail(err, "out of memory");
    XXH3_64bits_reset(st);
    XXH3_64bits_update(st, "sqlite-embed wordpiece 1", 24);
    if (t->pipe) { /* Unigram / BPE (WordPiece fingerprints stay as they were) */
        put_u64(st, (uint64_t)t->kind);
        put_u64(st, emb_tok_pipeline_fingerprint(t->pipe));
        for (size_t i = 0; i < t->n_added; i++)
            put_u64(st, (uint64_t)(t->added[i].lstrip * 2 + t->added[i].rstrip));
    }
    put_u64(st, (uint64_t)t->lowercase);
    put_u64(st, (uint64_t)t->strip);
    put_u64(st, (uint64_t)t->chinese);
    put_u64(st, (uint64_t)t->clean);
    put_u64(st, (uint64_t)t->max_chars);
    put_str(st, t->prefix, t->prefix_len);
    put_u64(st, (uint64_t)(int64_t)t->unk_id);
    put_u64(st, t->n_added);
    for (size_t i = 0; i < t->n_added; i++) {
        put_str(st, t->added[i].s, t->added[i].len);
        put_u64(st, (uint64_t)(int64_t)t->added[i].id);
    }
    put_u64(st, (uint64_t)t->n_single);
    for (int i = 0; i < t->n_single; i++) {
        put_u64(st, (uint64_t)t->single[i].kind);
        put_u64(st, (uint64_t)(int64_t)t->single[i].id);
        put_u64(st, (uint64_t)(int64_t)t->single[i].type_id);
    }
    put_u64(st, (uint64_t)t->n_pair);
    for (int i = 0; i < t->n_pair; i++) {
        put_u64(st, (uint64_t)t->pair[i].kind);
        put_u64(st, (uint64_t)(int64_t)t->pair[i].id);
        put_u64(st, (uint64_t)(int64_t)t->pair[i].type_id);
    }
    put_u64(st, (uint64_t)n);
    for (int32_t id = 0; id < n; id++) {
        size_t len = 0;
        const char *s = emb_vocab_token(t->vocab, id, &len);
        if (s) put_str(st, s, len);
        else put_u64(st, UINT64_MAX);
    }
    t->fp = XXH3_64bits_digest(st);
    XXH3_freeState(st);
    return 0;
}
