/* Tokenizer throughput on one thread, per vocabulary, on two ~10 MB corpora:
 *   english: English prose generated from the bert-base-uncased vocabulary (frequency-ordered
 *            words, Zipf-like), interleaved with the English texts of cases.jsonl;
 *   mixed:   every text of tests/fixtures/tokenizers/public/cases.jsonl (all scripts, emoji,
 *            controls, long words...) repeated.
 * Each document is encoded with special tokens and no truncation, as Hugging Face's encode()
 * does. The corpora are also written to OUTDIR/<corpus>.jsonl (one JSON string per line) so that
 * bench/hf_tokenize.js measures Hugging Face on exactly the same documents.
 *
 * usage: bench_tokenizer [FIXTURES_DIR [OUTDIR [MB]]]   (defaults tests/fixtures bench/out 10)
 * Prints a table and lines "RESULT ours <vocab> <corpus> <MB/s> <tokens/s>" (MB = 10^6 bytes). */
#include <cjson/cJSON.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>

#include "text/tokenizer.h"

typedef struct {
    char **doc;
    size_t *len;
    size_t n, cap, bytes;
} corpus;

static void add_doc(corpus *c, const char *s, size_t len) {
    if (c->n == c->cap) {
        c->cap = c->cap ? c->cap * 2 : 4096;
        c->doc = realloc(c->doc, c->cap * sizeof *c->doc);
        c->len = realloc(c->len, c->cap * sizeof *c->len);
        if (!c->doc || !c->len) exit(1);
    }
    char *d = malloc(len + 1);
    if (!d) exit(1);
    memcpy(d, s, len);
    d[len] = 0;
    c->doc[c->n] = d;
    c->len[c->n++] = len;
    c->bytes += len;
}

static uint64_t rng = 0x9E3779B97F4A7C15ull;
static uint64_t next(void) { /* xorshift64* */
    rng ^= rng >> 12;
    rng ^= rng << 25;
    rng ^= rng >> 27;
    return rng * 0x2545F4914F6CDD1Dull;
}
static double unif(void) { return (double)(next() >> 11) / 9007199254740992.0; }

static double now(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return ts.tv_sec + ts.tv_nsec * 1e-9;
}

static int write_jsonl(const corpus *c, const char *path) {
    FILE *f = fopen(path, "wb");
    if (!f) return -1;
    for (size_t i = 0; i < c->n; i++) {
        cJSON *s = cJSON_CreateString(c->doc[i]);
        char *p = cJSON_PrintUnformatted(s);
        fputs(p, f);
        fputc('\n', f);
        free(p);
        cJSON_Delete(s);
    }
    return fclose(f);
}

int main(int argc, char **argv) {
    const char *fx = argc > 1 ? argv[1] : "tests/fixtures";
    const char *outdir = argc > 2 ? argv[2] : "bench/out";
    double mb = argc > 3 ? atof(argv[3]) : 10.0;
    size_t target = (size_t)(mb * 1e6);
    char path[1024], err[EMB_ERR_LEN];

    /* cases.jsonl texts */
    snprintf(path, sizeof path, "%s/tokenizers/public/cases.jsonl", fx);
    FILE *f = fopen(path, "rb");
    if (!f) {
        fprintf(stderr, "cannot open %s\n", path);
        return 1;
    }
    corpus cases = {0}, english_cases = {0};
    char *line = NULL;
    size_t lcap = 0;
    ssize_t ll;
    while ((ll = getline(&line, &lcap, f)) > 0) {
        cJSON *j = cJSON_Parse(line);
        const char *keys[2] = {"text", "text_b"};
        const char *cat = cJSON_GetStringValue(cJSON_GetObjectItemCaseSensitive(j, "cat"));
        int en = cat && (!strcmp(cat, "man_en") || !strcmp(cat, "debian_doc_prose") || !strcmp(cat, "lang_en") ||
                         !strcmp(cat, "required") || !strcmp(cat, "gen_paragraph"));
        for (int k = 0; k < 2; k++) {
            const char *s = cJSON_GetStringValue(cJSON_GetObjectItemCaseSensitive(j, keys[k]));
            if (s && *s) {
                add_doc(&cases, s, strlen(s));
                if (en) add_doc(&english_cases, s, strlen(s));
            }
        }
        cJSON_Delete(j);
    }
    free(line);
    fclose(f);

    /* English words from the (frequency-ordered) bert-base-uncased vocabulary */
    emb_tokenizer *t = NULL;
    snprintf(path, sizeof path, "%s/tokenizers/vocab/bert-base-uncased", fx);
    if (emb_tokenizer_load(path, &t, err)) {
        fprintf(stderr, "%s\n", err);
        return 1;
    }
    size_t nw = 0;
    const char **words = malloc(sizeof *words * (size_t)emb_tokenizer_vocab_size(t));
    size_t *wlen = malloc(sizeof *wlen * (size_t)emb_tokenizer_vocab_size(t));
    for (int32_t id = 0; id < emb_tokenizer_vocab_size(t); id++) {
        size_t len;
        const char *s = emb_tokenizer_token(t, id, &len);
        int ok = s && len >= 1 && (len >= 2 || *s == 'a' || *s == 'i');
        for (size_t i = 0; ok && i < len; i++) ok = s[i] >= 'a' && s[i] <= 'z';
        if (ok) {
            words[nw] = s;
            wlen[nw++] = len;
        }
    }
    double *cum = malloc(sizeof *cum * nw);
    double acc = 0;
    for (size_t i = 0; i < nw; i++) cum[i] = (acc += 1.0 / (double)(i + 8));
    corpus english = {0}, mixed = {0};
    char *para = malloc(1 << 16);
    size_t ci = 0;
    while (english.bytes < target) {
        if (english.n % 10 == 9 && english_cases.n) {
            add_doc(&english, english_cases.doc[ci % english_cases.n], english_cases.len[ci % english_cases.n]);
            ci++;
            continue;
        }
        size_t p = 0;
        int nsent = 3 + (int)(next() % 6);
        for (int s = 0; s < nsent; s++) {
            int nword = 6 + (int)(next() % 19);
            for (int w = 0; w < nword; w++) {
                double r = unif() * acc;
                size_t lo = 0, hi = nw - 1;
                while (lo < hi) {
                    size_t mid = (lo + hi) / 2;
                    if (cum[mid] < r) lo = mid + 1;
                    else hi = mid;
                }
                if (p) para[p++] = ' ';
                memcpy(para + p, words[lo], wlen[lo]);
                if (w == 0) para[p] = (char)(para[p] - 32);
                p += wlen[lo];
                if (w + 1 < nword && next() % 12 == 0) para[p++] = ',';
            }
            uint64_t e = next() % 20;
            para[p++] = e == 0 ? '?' : e == 1 ? '!' : '.';
        }
        add_doc(&english, para, p);
    }
    free(para);
    for (size_t i = 0; mixed.bytes < target; i++) add_doc(&mixed, cases.doc[i % cases.n], cases.len[i % cases.n]);
    emb_tokenizer_free(t);

    mkdir(outdir, 0777);
    snprintf(path, sizeof path, "%s/english.jsonl", outdir);
    int wr = write_jsonl(&english, path);
    snprintf(path, sizeof path, "%s/mixed.jsonl", outdir);
    wr |= write_jsonl(&mixed, path);
    if (wr) fprintf(stderr, "warning: could not write the corpora to %s\n", outdir);

    /* WordPiece (tokenizers/vocab), Unigram and byte-level BPE (tokenizers2/vocab), Qwen2- and
     * Gemma-style BPE (tokenizers3/vocab) */
    static const char *vocabs[] = {"bert-base-uncased", "bert-base-cased", "bert-base-multilingual-cased",
                                   "bert-base-chinese", "xlmr-style-ml8k", "roberta-base",
                                   "qwen-style",        "gemma-style"};
    static const char *vocab_dirs[] = {"tokenizers",  "tokenizers",  "tokenizers",  "tokenizers",
                                       "tokenizers2", "tokenizers2", "tokenizers3", "tokenizers3"};
    const corpus *corpora[2] = {&english, &mixed};
    static const char *cnames[2] = {"english", "mixed"};
    printf("sqlite-embed tokenizer, one thread: english %.2f MB in %zu docs, mixed %.2f MB in %zu docs\n",
           english.bytes / 1e6, english.n, mixed.bytes / 1e6, mixed.n);
    printf("%-30s %-8s %10s %12s\n", "vocabulary", "corpus", "MB/s", "tokens/s");
    emb_encoding enc;
    emb_encoding_init(&enc);
    for (size_t v = 0; v < sizeof vocabs / sizeof *vocabs; v++) {
        snprintf(path, sizeof path, "%s/%s/vocab/%s", fx, vocab_dirs[v], vocabs[v]);
        if (emb_tokenizer_load(path, &t, err)) {
            fprintf(stderr, "%s\n", err);
            return 1;
        }
        for (int c = 0; c < 2; c++) {
            const corpus *cp = corpora[c];
            double best = 1e30;
            size_t ntok = 0;
            for (int rep = 0; rep < 3; rep++) {
                size_t n = 0;
                double t0 = now();
                for (size_t i = 0; i < cp->n; i++) {
                    if (emb_tokenize(t, cp->doc[i], cp->len[i], NULL, 0, 0, &enc, err)) {
                        fprintf(stderr, "%s\n", err);
                        return 1;
                    }
                    n += enc.n;
                }
                double dt = now() - t0;
                if (dt < best) best = dt;
                ntok = n;
            }
            double mbs = cp->bytes / 1e6 / best, tps = ntok / best;
            printf("%-30s %-8s %10.2f %12.0f\n", vocabs[v], cnames[c], mbs, tps);
            printf("RESULT ours %s %s %.3f %.0f\n", vocabs[v], cnames[c], mbs, tps);
            fflush(stdout);
        }
        emb_tokenizer_free(t);
    }
    emb_encoding_free(&enc);
    return 0;
}
