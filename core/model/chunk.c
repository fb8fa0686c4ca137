/* Token-aware chunks (sqlite-embed/chunk.h). The text is tokenized in segments of about 64 KiB
 * (cut after a line break or a space), so that memory stays bounded and the tokenizer's working
 * memory is reused; each cut between two tokens gets a kind (sentence end, white space, word,
 * token), and chunks are packed greedily: the strongest kind of cut within the limit, the
 * furthest of that kind. Each chunk is then tokenized alone, since Unigram / Metaspace and
 * byte-level BPE segment a substring differently from the same span in the whole text, and it
 * is shortened until that count fits. WordPiece tokenizes word by word, so a chunk cut between
 * words has its span's tokens and needs no second pass (twice the speed: bench/README.md). */
#include "sqlite-embed/chunk.h"
#include "base/emb_common.h"
#include "base/utf8.h"
#include "model/model_internal.h"
#include "text/tokenizer.h"
#include <limits.h>
#include <stdlib.h>
#include <string.h>

#define SEGMENT (64 * 1024) /* bytes tokenized at a time for planning */
#define COMPACT 4096 /* planned tokens dropped from the buffer at a time */

/* Kinds of cut before a token, weakest first; a chunk ends at the strongest kind in reach. */
enum { CUT_NONE = -1, CUT_TOKEN = 0, CUT_WORD = 1, CUT_SPACE = 2, CUT_SENTENCE = 3, CUT_END = 4 };

/* A token of the text: its bytes, its word, the kind of cut before it, and its place among the
 * text's tokens (tokens of white space alone are counted there but are no items). */
typedef struct {
    int32_t start, end, word;
    int8_t cut;
    int64_t at;
} item;

typedef struct {
    const emb_model *m;
    const char *text;
    size_t len;
    int defined; /* whitespace tokens: counted here, no vocabulary needed */
    int words_alone; /* a chunk cut between words tokenizes as its span (WordPiece) */
    int fake_cuts; /* a segment was cut inside a word: word boundaries are no longer certain */
    emb_encoding seg; /* one segment's tokens */
    emb_encoding alone; /* one chunk tokenized alone */
    item *it; /* the tokens of text[.., done) not yet dropped */
    size_t n, cap, base; /* base: tokens dropped before it[0] */
    size_t done; /* bytes tokenized */
    int32_t words; /* word numbers given so far */
    int64_t seen; /* the text's tokens so far, specials excluded */
    int max, overlap;
    emb_chunk *out;
    size_t n_out, cap_out;
} planner;

/* The code point at s[i] of valid UTF-8, its length in *adv. */
static uint32_t decode(const char *text, size_t i, size_t *adv) {
    const unsigned char *s = (const unsigned char *)text + i;
    if (s[0] < 0x80) return *adv = 1, s[0];
    if (s[0] < 0xE0) return *adv = 2, ((uint32_t)(s[0] & 0x1F) << 6) | (s[1] & 0x3F);
    if (s[0] < 0xF0)
        return *adv = 3, ((uint32_t)(s[0] & 0x0F) << 12) | ((uint32_t)(s[1] & 0x3F) << 6) | (s[2] & 0x3F);
    *adv = 4;
    return ((uint32_t)(s[0] & 0x07) << 18) | ((uint32_t)(s[1] & 0x3F) << 12) | ((uint32_t)(s[2] & 0x3F) << 6) |
           (s[3] & 0x3F);
}

/* The start of the character that ends at byte i (> 0). */
static size_t char_before(const char *text, size_t i) {
    do i--;
    while (i > 0 && ((unsigned char)text[i] & 0xC0) == 0x80);
    return i;
}

/* Unicode's White_Space property. */
static int is_white(uint32_t c) {
    if (c < 0x80) return c == ' ' || (c >= '\t' && c <= '\r');
    return c == 0x85 || c == 0xA0 || c == 0x1680 || (c >= 0x2000 && c <= 0x200A) || c == 0x2028 || c == 0x2029 ||
           c == 0x202F || c == 0x205F || c == 0x3000;
}

static int is_break(uint32_t c) { return (c >= '\n' && c <= '\r') || c == 0x85 || c == 0x2028 || c == 0x2029; }

/* Closing quotes and brackets that may follow a sentence's last mark: ." .) .» 。」 */
static int is_closer(uint32_t c) {
    static const uint32_t closers[] = {'"',    '\'',   ')',    ']',    '}',    0x2019, 0x201D, 0xBB,   0x203A,
                                       0x300D, 0x300F, 0xFF09, 0xFF3D, 0x3011, 0x3015, 0x3009, 0x300B, 0xFF02};
    for (size_t k = 0; k < sizeof closers / sizeof *closers; k++)
        if (c == closers[k]) return 1;
    return 0;
}

/* 1: a mark that ends a sentence when white space follows (. ! ? … and the Arabic, Urdu,
 * Devanagari, Armenian, Ethiopic, Myanmar and Greek ones); 2: a full-width mark that ends one
 * without space (。！？｡); 0: neither. */
static int terminator(uint32_t c) {
    if (c == '.' || c == '!' || c == '?') return 1;
    static const uint32_t spaced[] = {0x2026, 0x203C, 0x2047, 0x2048, 0x2049, 0x061F, 0x06D4,
                                      0x0964, 0x0965, 0x0589, 0x1362, 0x1367, 0x104B, 0x037E};
    for (size_t k = 0; k < sizeof spaced / sizeof *spaced; k++)
        if (c == spaced[k]) return 1;
    return c == 0x3002 || c == 0xFF01 || c == 0xFF1F || c == 0xFF61 ? 2 : 0;
}

/* The kind of cut between tokens a and b, read from the text around the gap. */
static int cut_kind(const char *text, const item *a, const item *b) {
    if (a->end > b->start) return CUT_NONE; /* they share a character (a byte-level BPE split) */
    size_t q = (size_t)b->start, adv;
    while (q < (size_t)b->end && is_white(decode(text, q, &adv))) q += adv; /* "▁word" spans its space */
    size_t p = q;
    int white = 0, breaks = 0;
    while (p > (size_t)a->start) {
        size_t j = char_before(text, p);
        uint32_t c = decode(text, j, &adv);
        if (!is_white(c)) break;
        white = 1;
        breaks |= is_break(c);
        p = j;
    }
    if (breaks) return CUT_SENTENCE;
    for (int k = 0; k < 4 && p > 0 && is_closer(decode(text, char_before(text, p), &adv)); k++)
        p = char_before(text, p);
    int t = p > 0 ? terminator(decode(text, char_before(text, p), &adv)) : 0;
    if (t == 2 || (t == 1 && white)) return CUT_SENTENCE;
    if (white) return CUT_SPACE;
    return a->word != b->word ? CUT_WORD : CUT_TOKEN;
}

/* The defined models' tokens: words between ASCII white space, as emb_defined_tokenize splits
 * them (counted without looking them up: a chunk needs no vocabulary). */
static int is_ascii_space(char c) { return c == ' ' || (c >= '\t' && c <= '\r'); }

static int defined_words(const char *text, size_t len, emb_encoding *enc, size_t *count) {
    size_t i = 0, n = 0;
    if (enc) enc->n = 0;
    while (i < len) {
        while (i < len && is_ascii_space(text[i])) i++;
        if (i == len) break;
        size_t start = i;
        while (i < len && !is_ascii_space(text[i])) i++;
        if (enc) {
            if (emb_grow((void **)&enc->tok, &enc->cap, n + 1, sizeof *enc->tok)) return -1;
            enc->tok[n] = (emb_token){0, 0, (int32_t)start, (int32_t)i, (int32_t)n, 0};
        }
        n++;
    }
    if (enc) enc->n = n;
    *count = n;
    return 0;
}

/* The model's tokens of text[from, to) into enc, specials included. */
static int tokenize(planner *pl, size_t from, size_t to, emb_encoding *enc, char err[EMB_ERR_LEN]) {
    size_t n;
    if (!pl->defined) return emb_model_tokenize_limit(pl->m, pl->text + from, to - from, NULL, 0, 0, enc, err);
    return defined_words(pl->text + from, to - from, enc, &n) ? emb_fail(err, "out of memory") : 0;
}

/* The bytes at text[from, to) the tokenizer drops before its first kept character (\x01, \x7f
 * for SentencePiece's map): Hugging Face's Precompiled normalizer loses the removal of leading
 * characters, so the offsets after them lie early by their length; they are tokenized without. */
static int dropped_prefix(planner *pl, size_t from, size_t to, size_t *skip, char err[EMB_ERR_LEN]) {
    size_t adv;
    *skip = 0;
    while (!pl->defined && from + *skip < to && !is_white(decode(pl->text, from + *skip, &adv))) {
        if (tokenize(pl, from + *skip, from + *skip + adv, &pl->alone, err)) return -1;
        for (size_t i = 0; i < pl->alone.n; i++)
            if (pl->alone.tok[i].seq >= 0) return 0;
        *skip += adv;
    }
    return 0;
}

/* Where the segment from `from` ends: after the last line break, else the last space, of its
 * second half; else at a character boundary. */
static size_t segment_end(const char *text, size_t from, size_t len) {
    if (len - from <= SEGMENT) return len;
    size_t end = from + SEGMENT, lo = from + SEGMENT / 2;
    for (size_t i = end; i > lo; i--)
        if (text[i - 1] == '\n') return i;
    for (size_t i = end; i > lo; i--)
        if (text[i - 1] == ' ' || text[i - 1] == '\t') return i;
    while (((unsigned char)text[end] & 0xC0) == 0x80) end--;
    return end;
}

/* Whether the segment ending at `to` ends at white space (so its last word is whole). */
static int ends_at_space(const char *text, size_t to, size_t len) {
    return to == len || text[to - 1] == '\n' || text[to - 1] == ' ' || text[to - 1] == '\t';
}

/* A token of white space alone holds nothing a chunk must cover: its bytes go with the gap. */
static int only_white(const char *text, const emb_token *t) {
    size_t adv;
    for (size_t i = (size_t)t->start; i < (size_t)t->end; i += adv)
        if (!is_white(decode(text, i, &adv))) return 0;
    return 1;
}

/* Tokenizes the next segment onto the buffer. Its words are numbered after the last segment's,
 * so a segment cut inside a run without spaces reads as a word boundary (planning only). */
static int next_segment(planner *pl, char err[EMB_ERR_LEN]) {
    size_t from = pl->done, to = segment_end(pl->text, from, pl->len), skip;
    if (!ends_at_space(pl->text, to, pl->len)) pl->fake_cuts = 1;
    if (dropped_prefix(pl, from, to, &skip, err) || tokenize(pl, from + skip, to, &pl->seg, err)) return -1;
    from += skip;
    if (emb_grow((void **)&pl->it, &pl->cap, pl->n + pl->seg.n, sizeof *pl->it))
        return emb_fail(err, "out of memory");
    int32_t last = -1;
    for (size_t i = 0; i < pl->seg.n; i++) {
        const emb_token *t = &pl->seg.tok[i];
        if (t->seq < 0) continue; /* the template's specials */
        if (only_white(pl->text + from, t)) { /* "▁", "Ċ", an empty "Ġ" */
            pl->seen++;
            continue;
        }
        item *x = &pl->it[pl->n];
        *x = (item){t->start + (int32_t)from, t->end + (int32_t)from, t->word + pl->words, CUT_NONE, pl->seen++};
        if (t->word > last) last = t->word;
        if (pl->n > 0) x->cut = (int8_t)cut_kind(pl->text, x - 1, x);
        pl->n++;
    }
    pl->words += last + 1;
    pl->done = to;
    return 0;
}

/* Tokenizes until token `need` is buffered or the text is done. */
static int ensure(planner *pl, size_t need, char err[EMB_ERR_LEN]) {
    while (pl->n <= need && pl->done < pl->len)
        if (next_segment(pl, err)) return -1;
    return 0;
}

/* The model's tokens of text[bs, be) tokenized alone, specials excluded. */
static int count_alone(planner *pl, size_t bs, size_t be, int *count, char err[EMB_ERR_LEN]) {
    if (tokenize(pl, bs, be, &pl->alone, err)) return -1;
    size_t n = 0;
    for (size_t i = 0; i < pl->alone.n; i++) n += pl->alone.tok[i].seq >= 0;
    *count = n > INT_MAX ? INT_MAX : (int)n;
    return 0;
}

/* The kind of cut before buffered token e; e == n only once the text is done. */
static int kind_at(const planner *pl, size_t e) { return e < pl->n ? pl->it[e].cut : CUT_END; }

/* The best end in (lo, hi]: the strongest kind of cut, then the furthest; 0 when none. */
static size_t best_end(const planner *pl, size_t lo, size_t hi) {
    size_t best = 0;
    int kind = CUT_NONE;
    for (size_t e = hi; e > lo && kind < CUT_SENTENCE; e--)
        if (kind_at(pl, e) > kind) kind = kind_at(pl, e), best = e;
    return best;
}

/* Byte span of tokens [s, e), trimmed: a cut's gap (white space, characters the tokenizer
 * drops) goes to the chunk before it, so the spans cover the whole text. */
static void span_of(const planner *pl, size_t s, size_t e, size_t *bs, size_t *be) {
    size_t a = pl->base + s == 0 ? 0 : (size_t)pl->it[s].start;
    size_t b = e >= pl->n ? pl->len : (size_t)pl->it[e].start, adv;
    while (a < b && is_white(decode(pl->text, a, &adv))) a += adv;
    while (b > a) {
        size_t j = char_before(pl->text, b);
        if (!is_white(decode(pl->text, j, &adv))) break;
        b = j;
    }
    *bs = a;
    *be = b;
}

static int emit(planner *pl, size_t bs, size_t be, int tokens) {
    if (bs == be) return 0; /* only white space */
    if (emb_grow((void **)&pl->out, &pl->cap_out, pl->n_out + 1, sizeof *pl->out)) return -1;
    pl->out[pl->n_out++] = (emb_chunk){(int64_t)bs, (int64_t)be, tokens};
    return 0;
}

/* The first token of the chunk after [s, e): about `overlap` tokens back from e, at a word
 * boundary within half the overlap of that, else at a token boundary; always after s. */
static size_t next_start(const planner *pl, size_t s, size_t e) {
    int64_t o = pl->overlap;
    if (o == 0 || e >= pl->n) return e;
    size_t t = s + 1;
    while (t < e && pl->it[e - 1].at - pl->it[t].at + 1 > o) t++;
    for (size_t p = t; p < e && pl->it[p].at <= pl->it[t].at + o / 2; p++)
        if (pl->it[p].cut >= CUT_WORD) return p;
    for (size_t p = t; p < e; p++)
        if (pl->it[p].cut >= CUT_TOKEN) return p;
    return e;
}

/* The text's tokens in items [s, e), white space between them included. */
static int64_t tokens_in(const planner *pl, size_t s, size_t e) { return pl->it[e - 1].at - pl->it[s].at + 1; }

/* The furthest e with tokens_in(s, e) <= budget, tokenizing the text as far as needed. */
static int reach(planner *pl, size_t s, long budget, size_t *hi, char err[EMB_ERR_LEN]) {
    size_t e = s;
    while (budget > 0) {
        if (ensure(pl, e, err)) return -1;
        if (e >= pl->n || tokens_in(pl, s, e + 1) > budget) break;
        e++;
    }
    *hi = e;
    return 0;
}

/* Whether items [s, e) tokenized alone are exactly themselves: WordPiece, cut between the
 * tokenizer's own words (its word ids; white space it does not split at, such as U+000B, which
 * it removes, joins the words around it). */
static int span_is_alone(const planner *pl, size_t s, size_t e) {
    if (!pl->words_alone || pl->fake_cuts || (s == 0 && pl->base > 0)) return 0;
    int starts = s == 0 || pl->it[s - 1].word != pl->it[s].word;
    int ends = e >= pl->n ? pl->done == pl->len : pl->it[e - 1].word != pl->it[e].word;
    return starts && ends;
}

/* One chunk from token s whose end lies after prev: the best end in reach, shortened while the
 * chunk tokenized alone has too many tokens; the overlap is given up before failing. */
static int plan_one(planner *pl, size_t *s, size_t prev, size_t *end, char err[EMB_ERR_LEN]) {
    long budget = pl->max;
    for (;;) {
        size_t hi;
        if (reach(pl, *s, budget, &hi, err) || ensure(pl, hi, err)) return -1;
        size_t e = best_end(pl, prev, hi);
        if (e == 0 && *s < prev) { /* the overlap leaves no room: start where the last chunk ended */
            *s = prev;
            budget = pl->max;
            continue;
        }
        size_t bs, be;
        span_of(pl, *s, e ? e : prev + 1, &bs, &be);
        if (e == 0)
            return emb_fail(err, "max_tokens %d is too small: the text at byte %zu takes more tokens than that",
                            pl->max, bs);
        int count;
        if (span_is_alone(pl, *s, e)) count = (int)tokens_in(pl, *s, e);
        else if (count_alone(pl, bs, be, &count, err)) return -1;
        if (count <= pl->max) {
            *end = e;
            return emit(pl, bs, be, count) ? emb_fail(err, "out of memory") : 0;
        }
        budget = (long)tokens_in(pl, *s, e) - (count - pl->max); /* the alone count's excess, off the next try */
    }
}

/* Drops the tokens before s once there are enough of them. */
static void compact(planner *pl, size_t *s, size_t *prev) {
    if (*s < COMPACT) return;
    memmove(pl->it, pl->it + *s, (pl->n - *s) * sizeof *pl->it);
    pl->n -= *s;
    pl->base += *s;
    *prev -= *s;
    *s = 0;
}

static int plan(planner *pl, char err[EMB_ERR_LEN]) {
    if (ensure(pl, 0, err)) return -1;
    if (pl->n == 0) { /* nothing the tokenizer keeps; the non-space bytes still form a chunk */
        size_t bs, be;
        span_of(pl, 0, 0, &bs, &be);
        return emit(pl, bs, be, 0) ? emb_fail(err, "out of memory") : 0;
    }
    size_t s = 0, prev = 0;
    while (prev < pl->n) {
        compact(pl, &s, &prev);
        size_t e = pl->n;
        if (plan_one(pl, &s, prev, &e, err)) return -1;
        s = next_start(pl, s, e);
        prev = e;
    }
    return 0;
}

/* The limit: the one asked, else the model's less the special tokens its template adds (those
 * of an empty text); checked before the text is tokenized. */
static int resolve_limits(planner *pl, const emb_chunk_options *opt, char err[EMB_ERR_LEN]) {
    const emb_model_info *info = emb_model_get_info(pl->m);
    pl->max = opt ? opt->max_tokens : 0;
    pl->overlap = opt ? opt->overlap : 0;
    if (pl->max <= 0) {
        if (info->max_tokens <= 0)
            return emb_fail(err, "model '%s' has no token limit: give max_tokens", info->name);
        if (tokenize(pl, 0, 0, &pl->alone, err)) return -1;
        pl->max = info->max_tokens - (int)pl->alone.n;
        if (pl->max <= 0)
            return emb_fail(err, "model '%s' leaves no tokens for text (limit %d, %zu special)", info->name,
                            info->max_tokens, pl->alone.n);
    }
    if (pl->overlap < 0 || pl->overlap >= pl->max)
        return emb_fail(err, "overlap must be from 0 to max_tokens - 1 (%d), not %d", pl->max - 1, pl->overlap);
    return 0;
}

int emb_model_chunks(const emb_model *m, const char *text, size_t len, const emb_chunk_options *opt,
                     emb_chunk **out, size_t *n, char err[EMB_ERR_LEN]) {
    *out = NULL;
    *n = 0;
    if (len > INT32_MAX) return emb_fail(err, "the text has %zu bytes, more than 2147483647", len);
    planner pl = {.m = m, .text = text ? text : "", .len = text ? len : 0};
    pl.defined = strcmp(emb_model_get_info(m)->architecture, "defined") == 0;
    pl.words_alone = !pl.defined && m->tok && emb_tokenizer_words_alone(m->tok);
    size_t bad;
    if (!emb_utf8_valid(pl.text, pl.len, &bad)) return emb_fail(err, "invalid UTF-8 at byte %zu", bad);
    emb_model_encoding_init(&pl.seg);
    emb_model_encoding_init(&pl.alone);
    int rc = resolve_limits(&pl, opt, err);
    if (rc == 0) rc = plan(&pl, err);
    free(pl.it);
    emb_model_encoding_free(&pl.seg);
    emb_model_encoding_free(&pl.alone);
    if (rc) {
        free(pl.out);
        return -1;
    }
    *out = pl.out;
    *n = pl.n_out;
    return 0;
}
