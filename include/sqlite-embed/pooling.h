/* Public API of libembedcore (installed as <sqlite-embed/pooling.h>).
 * Sentence pooling over a sequence's hidden states, as sentence-transformers' Pooling module
 * computes it (L2 normalisation is emb_vec_normalize in vec.h). */
#ifndef EMBED_POOLING_H
#define EMBED_POOLING_H
typedef enum {
    EMB_POOL_MEAN,
    EMB_POOL_CLS,
    EMB_POOL_MAX,
    EMB_POOL_MEAN_SQRT_LEN, /* the sum over sqrt(count) */
    EMB_POOL_WEIGHTED_MEAN, /* row t weighted t + 1 */
    EMB_POOL_LAST_TOKEN
} emb_pool_mode;
#define EMB_POOL_MODES 6

/* hidden: T rows of H floats; pools over the first len rows (the real tokens).
 * len <= 0 gives a zero vector. */
void emb_pool(const float *hidden, int T, int H, int len, emb_pool_mode mode, float *out);
/* The same over rows first .. len - 1 only (a prompt's tokens left out, as sentence-transformers'
 * include_prompt false): CLS is then the first row pooled, weights stay the rows' positions + 1.
 * No row left gives a zero vector. */
void emb_pool_from(const float *hidden, int T, int H, int first, int len, emb_pool_mode mode, float *out);
/* "mean" | "cls" | "max" | "mean_sqrt_len_tokens" | "weightedmean" | "lasttoken" */
const char *emb_pool_mode_name(emb_pool_mode m);
int emb_pool_mode_parse(const char *s, emb_pool_mode *out); /* 0 if s is one of those names */
#endif
