/* The attention weights and bias the encoder shows (encoder_attention_probe.c): capturing them
 * leaves the forward pass's output bit for bit the same; any span of layers and heads gives the
 * same numbers as the whole; padding keys weigh exactly 0, and in a sliding-window layer a
 * padded query with no real key in its window is uniform over all keys, as transformers makes
 * it; errors are named. (The weights' values against the golden references: tests/sql/test_attention.py.) */
#include "check.h"
#include "nn/encoder_internal.h"
#include <stdlib.h>
#include <string.h>

/* "I left my phone on the left side of the table." in bert-base-uncased ids */
static const int32_t LEFT_PHONE[14] = {101,  1045, 2187, 2026, 3042, 2006, 1996,
                                       2187, 2217, 1997, 1996, 2795, 1012, 102};

static double row_sum(const float *row, int n) {
    double s = 0;
    for (int j = 0; j < n; j++) s += row[j];
    return s;
}

static void capture_leaves_the_pass_unchanged(void) {
    char err[EMB_ERR_LEN];
    emb_encoder *e;
    if (emb_encoder_load(FIXTURES "/models/bert-tiny-uncased", &e, err)) {
        CHECK(0, "load: %s", err);
        return;
    }
    enum { T = 14, H = 32, NH = 4, L = 2 };
    emb_workspace *ws = emb_workspace_new();
    float plain[T * H], captured[T * H], all[L * NH * T * T], part[1 * 2 * T * T];
    int32_t len = T;
    emb_attention_span every = {1, L, 0, NH - 1}, some = {2, 2, 1, 2};
    int rc = emb_encoder_forward(e, ws, 1, T, LEFT_PHONE, NULL, &len, L, plain, err);
    rc |= emb_encoder_forward_capture(e, ws, 1, T, LEFT_PHONE, NULL, &len, L, captured, &every, all, err);
    CHECK(rc == 0 && memcmp(plain, captured, sizeof plain) == 0,
          "the output with a capture is the output without: %s", rc ? err : "");
    double worst = 0;
    for (int r = 0; r < L * NH * T; r++) worst = fmax(worst, fabs(row_sum(all + (size_t)r * T, T) - 1));
    CHECK(worst < 1e-5, "every row sums to 1 (worst %.3g)", worst);
    rc = emb_encoder_attention(e, ws, T, LEFT_PHONE, NULL, &some, part, err);
    CHECK(rc == 0 && memcmp(part, all + (size_t)(1 * NH + 1) * T * T, sizeof part) == 0,
          "layer 2, heads 1-2 alone equal the same heads of the whole: %s", rc ? err : "");
    /* a padded batch: sequence 0 has 5 real tokens of 14; its padding keys weigh 0 and its real
     * rows are those of the 5 tokens alone */
    int32_t ids[2 * T], lens[2] = {5, T};
    for (int t = 0; t < T; t++) ids[t] = t < 5 ? LEFT_PHONE[t] : 0, ids[T + t] = LEFT_PHONE[t];
    float out[2 * T * H], alone[L * NH * 5 * 5];
    emb_attention_span two = {1, L, 0, NH - 1};
    rc = emb_encoder_forward_capture(e, ws, 2, T, ids, NULL, lens, L, out, &two, all, err);
    rc |= emb_encoder_attention(e, ws, 5, LEFT_PHONE, NULL, &two, alone, err);
    double pad = 0, diff = 0;
    for (int p = 0; p < L * NH; p++)
        for (int i = 0; i < 5; i++)
            for (int j = 0; j < T; j++) {
                float w = all[((size_t)p * T + i) * T + j];
                if (j >= 5) pad = fmax(pad, fabs(w));
                else diff = fmax(diff, fabs(w - alone[((size_t)p * 5 + i) * 5 + j]));
            }
    CHECK(rc == 0 && pad == 0 && diff < 1e-6, "padding keys weigh 0 (%g), real rows as alone (%.3g): %s", pad,
          diff, rc ? err : "");
    emb_workspace_free(ws);
    emb_encoder_free(e);
}

static void window_rows_without_a_real_key_are_uniform(void) {
    char err[EMB_ERR_LEN];
    emb_encoder *e;
    if (emb_encoder_load(FIXTURES "/models2/modernbert-tiny", &e, err)) {
        CHECK(0, "load: %s", err);
        return;
    }
    enum { T = 200, H = 32, NH = 4 };
    int32_t *ids = malloc(sizeof(int32_t) * T), len = 3;
    for (int t = 0; t < T; t++) ids[t] = t < 3 ? 3 + t * 101 : 1; /* <pad> after 3 tokens */
    float *out = malloc(sizeof(float) * T * H), *probs = malloc(sizeof(float) * NH * T * T);
    emb_workspace *ws = emb_workspace_new();
    emb_attention_span local = {2, 2, 0, NH - 1}; /* layer 2 is a sliding-window layer */
    int rc = emb_encoder_forward_capture(e, ws, 1, T, ids, NULL, &len, 2, out, &local, probs, err);
    /* query 199 is 197 past the last real key, beyond the half window of 64 */
    double far = 0, near = 0;
    for (int h = 0; h < NH; h++)
        for (int j = 0; j < T; j++) {
            far = fmax(far, fabs(probs[((size_t)h * T + 199) * T + j] - 1.0 / T));
            if (j >= 3) near = fmax(near, fabs(probs[((size_t)h * T + 1) * T + j]));
        }
    CHECK(rc == 0 && far < 1e-7 && near == 0,
          "far padding row uniform (%.3g), a real row's padding keys 0 (%g): %s", far, near, rc ? err : "");
    emb_workspace_free(ws);
    free(ids);
    free(out);
    free(probs);
    emb_encoder_free(e);
}

static void expect_error(int rc, const char *err, const char *want) {
    CHECK(rc != 0 && strcmp(err, want) == 0, "error\n got %s\nwant %s", rc ? err : "(none)", want);
}

static void bias_and_errors(void) {
    char err[EMB_ERR_LEN];
    emb_encoder *bert, *jina, *modern;
    if (emb_encoder_load(FIXTURES "/models/bert-tiny-uncased", &bert, err) ||
        emb_encoder_load(FIXTURES "/models2/jina-bert-v2-tiny", &jina, err) ||
        emb_encoder_load(FIXTURES "/models2/modernbert-tiny", &modern, err)) {
        CHECK(0, "load: %s", err);
        return;
    }
    float b[4], probs[4 * 4];
    emb_workspace *ws = emb_workspace_new();
    /* ALiBi: the float the forward pass subtracts, slope * (float)|i - j| */
    int rc = emb_encoder_attention_bias(jina, 2, 3, 8, b, err);
    CHECK(rc == 0 && b[0] == -1.25f && b[1] == -0.3125f && b[2] == -0.078125f && b[3] == -0.01953125f,
          "jina bias at distance 5: %g %g %g %g", b[0], b[1], b[2], b[3]);
    rc = emb_encoder_attention_bias(modern, 3, 100, 35, b, err);
    CHECK(rc == 0 && isinf(b[0]) && b[0] < 0 && isinf(b[3]), "modernbert layer 3, distance 65: -inf");
    rc = emb_encoder_attention_bias(modern, 4, 100, 35, b, err);
    CHECK(rc == 0 && b[0] == 0 && b[3] == 0, "modernbert layer 4 (global): 0");
    expect_error(emb_encoder_attention_bias(modern, 0, 1, 2, b, err), err,
                 "the layers differ (layer 2 has a sliding window, layer 1 does not): give a layer from 1 to 4");
    expect_error(
        emb_encoder_attention_bias(bert, 3, 1, 2, b, err), err,
        "layer 3 is out of range: the model has layers 1 to 2 (layer 0, the embedding output, has no attention)");
    expect_error(emb_encoder_attention_bias(bert, 1, -1, 2, b, err), err,
                 "positions -1 and 2: each must be from 0 to 511");
    expect_error(emb_encoder_attention_bias(bert, 1, 1, 512, b, err), err,
                 "positions 1 and 512: each must be from 0 to 511");
    emb_attention_span bad_layer = {0, 1, 0, 0}, reversed = {2, 1, 0, 0}, bad_head = {1, 1, 0, 4};
    expect_error(
        emb_encoder_attention(bert, ws, 2, LEFT_PHONE, NULL, &bad_layer, probs, err), err,
        "layer 0 is out of range: the model has layers 1 to 2 (layer 0, the embedding output, has no attention)");
    expect_error(emb_encoder_attention(bert, ws, 2, LEFT_PHONE, NULL, &reversed, probs, err), err,
                 "layers 2 to 1: the first is after the last");
    expect_error(emb_encoder_attention(bert, ws, 2, LEFT_PHONE, NULL, &bad_head, probs, err), err,
                 "heads 0 to 4 are out of range: the model has heads 0 to 3");
    emb_attention_span ok = {1, 1, 0, 0};
    expect_error(emb_encoder_attention(bert, ws, 0, LEFT_PHONE, NULL, &ok, probs, err), err,
                 "0 tokens: expected 1 to the model's 512");
    emb_workspace_free(ws);
    emb_encoder_free(bert);
    emb_encoder_free(jina);
    emb_encoder_free(modern);
}

int main(void) {
    capture_leaves_the_pass_unchanged();
    window_rows_without_a_real_key_are_uniform();
    bias_and_errors();
    return check_report();
}
