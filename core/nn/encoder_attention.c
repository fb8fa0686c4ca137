/* The attention of one (sequence, head) of an encoder layer, run by the forward pass's helper
 * threads (see encoder_attention.h), and the additive bias it applies. */
#include "nn/encoder_attention.h"
#include "math/encoder_kernels.h"
#include "math/nn_gemm.h"
#include "nn/relpos.h"
#include <cblas.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

/* OpenBLAS (interface/gemm.c) keeps a product on the calling thread when
 * M*N*K <= 65536 * GEMM_MULTITHREAD_THRESHOLD (4 by default). */
#define ATT_BLOCK_MNK 262144.0

/* ALiBi's penalty for a distance d, as the scores receive it (subtracted). */
static inline float alibi_penalty(float slope, int64_t d) { return slope * (float)(d < 0 ? -d : d); }

float emb_attention_bias_of(float slope, int half_window, int64_t i, int64_t j) {
    if (half_window >= 0 && (i - j > half_window || j - i > half_window)) return -INFINITY;
    return 0.0f - alibi_penalty(slope, i - j); /* 0 - p: +0 at distance 0, not -0 */
}

float emb_attention_bias_causal(float slope, int half_window, int causal, int64_t i, int64_t j) {
    return causal && j > i ? -INFINITY : emb_attention_bias_of(slope, half_window, i, j);
}

EMB_KERNELS_BEGIN
EMB_SIMD_DEFINE_STATIC(void, softmax_rows, (float *S, int rows, int n), (S, rows, n)) {
    for (int r = 0; r < rows; r++) {
        float *s = S + (size_t)r * n;
        float mx = s[0];
#pragma omp simd reduction(max : mx)
        for (int i = 0; i < n; i++) mx = s[i] > mx ? s[i] : mx;
        float sum = 0;
#pragma omp simd reduction(+ : sum)
        for (int i = 0; i < n; i++) {
            float y = emb_expf(s[i] - mx);
            s[i] = y;
            sum += y;
        }
        float inv = 1.0f / sum;
#pragma omp simd
        for (int i = 0; i < n; i++) s[i] *= inv;
    }
}
/* s = exp(s - max(s)) over a row of n, left unnormalised; returns 1 / the sum (the context
 * product applies it: one pass over the weights fewer). */
EMB_SIMD_DEFINE_STATIC(float, exp_row_any, (float *s, int n), (s, n)) {
    float mx = s[0];
#pragma omp simd reduction(max : mx)
    for (int i = 0; i < n; i++) mx = s[i] > mx ? s[i] : mx;
    float sum = 0;
#pragma omp simd reduction(+ : sum)
    for (int i = 0; i < n; i++) {
        float y = emb_expf(s[i] - mx);
        s[i] = y;
        sum += y;
    }
    return 1.0f / sum;
}
EMB_KERNELS_END

#if defined(__x86_64__) && defined(__GNUC__)
#include "math/vexp512.h"
/* exp_row_any on AVX-512, four vectors a step. */
EMB_T_AVX512_FMA static float exp_row512(float *s, int n) {
    __m512 mx = _mm512_set1_ps(-INFINITY), sum = _mm512_setzero_ps();
    for (int i = 0; i < n; i += 16) {
        __mmask16 m = n - i >= 16 ? (__mmask16)0xFFFF : (__mmask16)((1u << (n - i)) - 1u);
        mx = _mm512_mask_max_ps(mx, m, mx, _mm512_maskz_loadu_ps(m, s + i));
    }
    __m512 top = _mm512_set1_ps(_mm512_reduce_max_ps(mx));
    int i = 0;
    for (; i + 64 <= n; i += 64) { /* 4 vectors a step (emb_vexp512_n), summed in the same order */
        __m512 e[4];
#pragma GCC unroll 4
        for (int u = 0; u < 4; u++) e[u] = _mm512_sub_ps(_mm512_loadu_ps(s + i + 16 * u), top);
        emb_vexp512_n(e, 4);
#pragma GCC unroll 4
        for (int u = 0; u < 4; u++) {
            _mm512_storeu_ps(s + i + 16 * u, e[u]);
            sum = _mm512_add_ps(sum, e[u]);
        }
    }
    for (; i < n; i += 16) {
        __mmask16 m = n - i >= 16 ? (__mmask16)0xFFFF : (__mmask16)((1u << (n - i)) - 1u);
        __m512 e = emb_vexp512(_mm512_sub_ps(_mm512_maskz_loadu_ps(m, s + i), top));
        _mm512_mask_storeu_ps(s + i, m, e);
        sum = _mm512_mask_add_ps(sum, m, sum, e);
    }
    return 1.0f / _mm512_reduce_add_ps(sum);
}
#define HAVE_EXP_ROW512 1

#include "math/vexp256.h"
/* exp_row_any on AVX2, four vectors a step; the tail through a padded vector (lanes are independent:
 * each value the same bits wherever it lies). */
EMB_T_AVX2_FMA static float exp_row256(float *s, int n) {
    float mxs = s[0];
    for (int i = 1; i < n; i++) mxs = s[i] > mxs ? s[i] : mxs;
    __m256 top = _mm256_set1_ps(mxs), sum = _mm256_setzero_ps();
    int i = 0;
    for (; i + 32 <= n; i += 32) {
        __m256 e[4];
#pragma GCC unroll 4
        for (int u = 0; u < 4; u++) e[u] = _mm256_sub_ps(_mm256_loadu_ps(s + i + 8 * u), top);
        emb_vexp256_n(e, 4);
#pragma GCC unroll 4
        for (int u = 0; u < 4; u++) {
            _mm256_storeu_ps(s + i + 8 * u, e[u]);
            sum = _mm256_add_ps(sum, e[u]);
        }
    }
    for (; i < n; i += 8) {
        float part[8];
        int m = n - i < 8 ? n - i : 8;
        for (int u = 0; u < 8; u++) part[u] = u < m ? s[i + u] : mxs;
        __m256 e = _mm256_sub_ps(_mm256_loadu_ps(part), top);
        emb_vexp256_n(&e, 1);
        __m256i real = _mm256_cmpgt_epi32(_mm256_set1_epi32(m), _mm256_setr_epi32(0, 1, 2, 3, 4, 5, 6, 7));
        e = _mm256_and_ps(e, _mm256_castsi256_ps(real)); /* the padding adds nothing to the sum */
        _mm256_storeu_ps(part, e);
        memcpy(s + i, part, (size_t)m * sizeof(float));
        sum = _mm256_add_ps(sum, e);
    }
    __m128 h = _mm_add_ps(_mm256_castps256_ps128(sum), _mm256_extractf128_ps(sum, 1));
    h = _mm_add_ps(h, _mm_movehl_ps(h, h));
    h = _mm_add_ss(h, _mm_movehdup_ps(h));
    return 1.0f / _mm_cvtss_f32(h);
}
#define HAVE_EXP_ROW256 1
#endif

static float exp_row(float *s, int n) {
#ifdef HAVE_EXP_ROW512
    if (emb_simd() == EMB_SIMD_AVX512) return exp_row512(s, n);
    if (emb_simd() == EMB_SIMD_AVX2) return exp_row256(s, n);
#endif
    return exp_row_any(s, n);
}

/* One row's softmax: normalised in place (inv NULL), or unnormalised with its 1 / sum in *inv. */
static void softmax_row(float *s, int n, float *inv) {
    if (inv) *inv = exp_row(s, n);
    else softmax_rows(s, 1, n);
}

/* The context of query rows whose window holds no real key (padding far past the text in a
 * sliding-window layer): transformers' mask makes every score equal there, so the softmax is
 * uniform over all T keys and the context the mean of the head's values. */
static void mean_context(float *out, const float *vb, int T, int H, int dh) {
    for (int d = 0; d < dh; d++) out[d] = 0;
    for (int j = 0; j < T; j++)
        for (int d = 0; d < dh; d++) out[d] += vb[(size_t)j * H + d];
    for (int d = 0; d < dh; d++) out[d] /= (float)T;
}

/* Scores of rows [r0, r0+m) against keys [k0, k0+nk) (row stride nk): ALiBi's or MPNet's bias, then the
 * softmax over each row's keys (its window's only, the rest 0), normalised (inv NULL) or left
 * for the context product to scale by inv[i] (0 for an empty window). Returns how many rows
 * have an empty window. */
static int scores_softmax(const emb_attention_job *c, int h, float *Sr, int r0, int m, int k0, int nk,
                          float *inv) {
    if (c->softcap > 0) { /* Gemma's soft cap, on the scaled scores before any bias or mask */
        float cap = c->softcap;
        for (size_t i = 0; i < (size_t)m * nk; i++) Sr[i] = cap * tanhf(Sr[i] / cap);
    }
    if (c->slopes) {
        float slope = c->slopes[h];
        for (int i = 0; i < m; i++)
            for (int j = 0; j < nk; j++) Sr[(size_t)i * nk + j] -= alibi_penalty(slope, r0 + i - (k0 + j));
    }
    if (c->rel_bias) { /* a row of the head's table per query: its keys' distances are consecutive */
        const float *tab = c->rel_bias + (size_t)h * (2 * (size_t)c->rel_span - 1) + (c->rel_span - 1);
        for (int i = 0; i < m; i++) {
            const float *row = tab + (k0 - (r0 + i));
            float *s = Sr + (size_t)i * nk;
#pragma omp simd
            for (int j = 0; j < nk; j++) s[j] += row[j];
        }
    }
    if (c->half_window < 0 && !c->causal) {
        if (inv)
            for (int i = 0; i < m; i++) inv[i] = exp_row(Sr + (size_t)i * nk, nk);
        else softmax_rows(Sr, m, nk);
        return 0;
    }
    /* each row's band of keys: its window, and with a causal mask none after the query */
    int empty = 0, w = c->half_window;
    for (int i = 0; i < m; i++) {
        float *row = Sr + (size_t)i * nk;
        int q = r0 + i, lo = w >= 0 ? q - w - k0 : 0, hi = w >= 0 ? q + w + 1 - k0 : nk;
        if (c->causal && hi > q + 1 - k0) hi = q + 1 - k0;
        if (lo < 0) lo = 0;
        if (hi > nk) hi = nk;
        if (lo >= hi) {
            empty++;
            lo = hi = 0;
        }
        for (int j = 0; j < lo; j++) row[j] = 0;
        for (int j = hi; j < nk; j++) row[j] = 0;
        if (inv) inv[i] = 0;
        if (hi > lo) softmax_row(row + lo, hi - lo, inv ? inv + i : NULL);
    }
    return empty;
}

/* Copies the weights of rows [r0, r0+m) (keys [k0, k0+nk), row stride nk; normalised, or scaled
 * here by inv) into the capture of head h: full rows of T, 0 for the keys outside [k0, k0+nk). */
static void capture_rows(const emb_attention_job *c, int h, const float *Sr, const float *inv, int r0, int m,
                         int k0, int nk) {
    int T = c->T;
    float *P = c->capture + (size_t)(h - c->capture_h0) * T * T;
    for (int i = 0; i < m; i++) {
        float *row = P + (size_t)(r0 + i) * T;
        memset(row, 0, (size_t)T * sizeof(float));
        for (int j = 0; j < nk; j++) row[k0 + j] = inv ? Sr[(size_t)i * nk + j] * inv[i] : Sr[(size_t)i * nk + j];
    }
}

/* A captured row whose window holds no real key: uniform over all T keys (see mean_context). */
static void capture_uniform(const emb_attention_job *c, int h, int q) {
    float *row = c->capture + ((size_t)(h - c->capture_h0) * c->T + q) * c->T;
    for (int j = 0; j < c->T; j++) row[j] = 1.0f / (float)c->T;
}

/* One (sequence, head): rotary positions on its queries and keys, scores, softmax over the real
 * keys (those of the query's window in a sliding-window layer), context into the query slice. */
void emb_attention_task(void *cv, int t, int worker) {
    const emb_attention_job *c = cv;
    int b = t / c->NH, h = t % c->NH, T = c->T, H = c->H, KL = c->kv_ld, dh = c->dh, len = c->lens[b];
    size_t off = (size_t)b * T * H + (size_t)h * dh, koff = (size_t)b * T * KL + (size_t)(h / c->kv_group) * dh;
    float *qb = c->q + off, *kb = c->k + koff, *vb = c->v + koff, *cb = (c->ctx ? c->ctx : c->q) + off;
    float *S = c->scores + (size_t)worker * EMB_ATTENTION_SCRATCH(T, dh);
    float *kt = S + (size_t)(T < EMB_ATTENTION_ROWS ? T : EMB_ATTENTION_ROWS) * T;
    float *inv = kt + (size_t)dh * T; /* own kernels: each row's 1 / sum of its weights */
    int capture = c->capture && b == 0 && h >= c->capture_h0 && h < c->capture_h0 + c->capture_nh;
    if (c->rope) {
        for (int i = 0; i < T; i++)
            emb_relpos_rope_rotate(qb + (size_t)i * H, c->rope + (size_t)i * c->rot, c->rot);
        for (int i = 0; i < len; i++)
            emb_relpos_rope_rotate(kb + (size_t)i * KL, c->rope + (size_t)i * c->rot, c->rot);
    }
    /* With several OpenBLAS threads, products are issued in row blocks of at most
     * ATT_BLOCK_MNK multiply-adds, which OpenBLAS keeps on the calling thread: splitting
     * such small products over its pool costs more in synchronisation than it saves,
     * and here the heads already run in parallel. */
    int rb = T, w = c->half_window;
    if (c->split && !c->own_kernels) {
        rb = (int)(ATT_BLOCK_MNK / ((double)len * dh));
        if (rb < 8) rb = 8;
    }
    if (w >= 0 && rb > (w < 16 ? 16 : w)) rb = w < 16 ? 16 : w; /* a window's block sees a band of keys */
    if (c->causal && rb > 64) rb = 64; /* a block sees the keys up to its last row: half the scores */
    if (rb > EMB_ATTENTION_ROWS) rb = EMB_ATTENTION_ROWS; /* the scratch holds this many rows of scores */
    int band = w >= 0 || c->causal; /* each block its own keys, transposed again */
    for (int r0 = 0; r0 < T; r0 += rb) {
        int m = T - r0 < rb ? T - r0 : rb;
        int k0 = 0, k1 = len;
        if (w >= 0) {
            k0 = r0 - w > 0 ? r0 - w : 0;
            k1 = r0 + m + w < len ? r0 + m + w : len;
        }
        if (c->causal && k1 > r0 + m) k1 = r0 + m;
        if (k1 < k0) k1 = k0;
        int nk = k1 - k0, empty = m;
        float *qr = qb + (size_t)r0 * H, *cr = cb + (size_t)r0 * H;
        if (nk > 0 && c->own_kernels) {
            if (c->qk_panels) { /* the keys, dh x nk, and the queries from the panels */
                int row0 = b * T; /* the panels' row of this sequence's token 0 */
                if (r0 == 0 || band) emb_panel_columns_t(nk, dh, c->k, H, row0 + k0, h * dh, kt);
                emb_nn_gemm_panel_a(m, nk, dh, c->scale, c->q, H, row0 + r0, h * dh, kt, nk, S, nk);
            } else {
                if (r0 == 0 || band) emb_transpose(nk, dh, kb + (size_t)k0 * KL, KL, kt);
                emb_nn_gemm(m, nk, dh, c->scale, qr, H, kt, nk, S, nk);
            }
            empty = scores_softmax(c, h, S, r0, m, k0, nk, inv);
            if (capture) capture_rows(c, h, S, inv, r0, m, k0, nk);
            emb_nn_gemm_scaled(m, dh, nk, inv, S, nk, vb + (size_t)k0 * KL, KL, cr, H);
        } else if (nk > 0) {
            cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasTrans, m, nk, dh, c->scale, qr, H, kb + (size_t)k0 * KL,
                        KL, 0.0f, S, nk);
            empty = scores_softmax(c, h, S, r0, m, k0, nk, NULL);
            if (capture) capture_rows(c, h, S, NULL, r0, m, k0, nk);
            /* the context (without ctx, over these query rows of this head: no longer needed) */
            cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasNoTrans, m, dh, nk, 1.0f, S, nk, vb + (size_t)k0 * KL,
                        KL, 0.0f, cr, H);
        } else if (capture) {
            capture_rows(c, h, S, NULL, r0, m, k0, 0);
        }
        for (int i = 0; empty > 0 && i < m; i++) {
            int q = r0 + i;
            if (nk == 0 || q - w >= len) {
                mean_context(cr + (size_t)i * H, vb, T, KL, dh);
                if (capture) capture_uniform(c, h, q);
                empty--;
            }
        }
    }
}
