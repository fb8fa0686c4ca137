/* Length-sorted batches run in groups (emb_encoder_forward_grouped): the grouping is the
 * cheapest split of the batch (checked against every split of small batches), and a batch of a
 * golden model's cases, sorted by length and padded to the longest, gives every case's
 * last_hidden_state as Hugging Face computed it alone, with padding rows 0. Run from the repo
 * root. */
#include "check.h"
#include "nn/encoder.h"
#include "base/file.h"
#include <cjson/cJSON.h>
#include <math.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

static unsigned long long rng = 0x9E3779B97F4A7C15ull;

/* The cost of a split, counted as the header says: whole 32-row blocks plus EMB_GROUP_COST. */
static long split_cost(const int32_t *lens, const int *starts, int n) {
    long c = 0;
    for (int g = 0; g < n; g++) {
        long rows = (long)(starts[g + 1] - starts[g]) * lens[starts[g + 1] - 1];
        c += (rows + 31) / 32 * 32 + EMB_GROUP_COST;
    }
    return c;
}

/* Every split of B <= 12 sorted lengths (a cut or not after each sequence): the returned one
 * is valid and none is cheaper. */
static void check_groups_optimal(void) {
    int bad = 0, runs = 0, split = 0;
    for (int r = 0; r < 400; r++) {
        int B = 1 + (int)(check_rng(&rng) % 12), spread = r % 4 == 0 ? 4 : r % 4 == 1 ? 40 : 300;
        int32_t lens[12];
        for (int b = 0; b < B; b++) lens[b] = 1 + (int32_t)(check_rng(&rng) % (unsigned)spread);
        for (int i = 1; i < B; i++) /* insertion sort */
            for (int j = i; j > 0 && lens[j] < lens[j - 1]; j--) {
                int32_t t = lens[j];
                lens[j] = lens[j - 1];
                lens[j - 1] = t;
            }
        int starts[13], n = emb_encoder_groups(lens, B, starts);
        int valid = n >= 1 && n <= B && starts[0] == 0 && starts[n] == B;
        for (int g = 0; valid && g < n; g++) valid = starts[g] < starts[g + 1];
        long best = -1;
        for (unsigned mask = 0; mask < 1u << (B - 1); mask++) {
            int s[13], k = 0;
            s[k++] = 0;
            for (int b = 1; b < B; b++)
                if (mask >> (b - 1) & 1) s[k++] = b;
            s[k] = B;
            long c = split_cost(lens, s, k);
            if (best < 0 || c < best) best = c;
        }
        if (!valid || split_cost(lens, starts, n) != best) bad++;
        split += n > 1;
        runs++;
    }
    CHECK(bad == 0, "emb_encoder_groups: %d of %d batches not split at the least cost", bad, runs);
    CHECK(split > 50, "emb_encoder_groups: only %d of %d batches split", split, runs);
    /* worked cases: 16 sequences of 10 and 16 of 100 part at the change of length
     * (160 + 16 + 1600 + 16 rows against 3200 + 16); unsorted lengths stay one group */
    int32_t two[32];
    for (int b = 0; b < 32; b++) two[b] = b < 16 ? 10 : 100;
    int st[33], n = emb_encoder_groups(two, 32, st);
    CHECK(n == 2 && st[1] == 16, "16 x 10 then 16 x 100: %d groups, the second from %d", n, n > 1 ? st[1] : -1);
    int32_t *many = malloc(sizeof(int32_t) * 1200);
    int *mst = malloc(sizeof(int) * 1201), longest = 0;
    for (int b = 0; b < 1200; b++) many[b] = 7;
    n = emb_encoder_groups(many, 1200, mst);
    for (int g = 0; g < n; g++)
        if (mst[g + 1] - mst[g] > longest) longest = mst[g + 1] - mst[g];
    CHECK(n >= 3 && mst[n] == 1200 && longest <= EMB_GROUP_MAX, "1,200 equal lengths: %d groups, the longest %d",
          n, longest);
    free(many);
    free(mst);
    int32_t unsorted[4] = {5, 300, 3, 200};
    n = emb_encoder_groups(unsorted, 4, st);
    CHECK(n == 1 && st[0] == 0 && st[1] == 4, "unsorted lengths: %d groups", n);
}

/* The larger of two errors, NaN if either is (a NaN output is the worst error, and stays so). */
static double worse(double m, double d) { return isnan(m) || isnan(d) ? NAN : d > m ? d : m; }

static double diff_rows(const cJSON *rows, const float *x, int n, int H) {
    double m = 0;
    const cJSON *r = rows->child;
    for (int i = 0; i < n; i++, r = r->next) {
        if (!r || cJSON_GetArraySize(r) != H) return INFINITY;
        int k = 0;
        for (const cJSON *v = r->child; v; v = v->next, k++)
            m = worse(m, fabs(v->valuedouble - (double)x[(size_t)i * H + k]));
    }
    return m;
}

static void swap_ints(int32_t *a, int32_t *b, int n) {
    for (int i = 0; i < n; i++) {
        int32_t t = a[i];
        a[i] = b[i];
        b[i] = t;
    }
}

/* The model's golden cases of up to max_len tokens as one batch, sorted by length and padded to
 * the longest. */
static void check_model(const char *set, const char *model, int max_len, double tol) {
    char path[512], err[EMB_ERR_LEN], *txt;
    size_t len;
    snprintf(path, sizeof path, FIXTURES "/%s/refs/%s.json", set, model);
    int rc = emb_read_file(path, 64u << 20, &txt, &len, err);
    CHECK(rc == 0, "%s: %s", model, err);
    if (rc) return;
    cJSON *ref = cJSON_ParseWithLength(txt, len);
    free(txt);
    snprintf(path, sizeof path, FIXTURES "/%s/%s", set, model);
    emb_encoder *enc = NULL;
    rc = !ref || emb_encoder_load(path, &enc, err);
    CHECK(rc == 0, "%s: load: %s", model, ref ? err : "bad JSON");
    if (rc) {
        cJSON_Delete(ref);
        return;
    }
    int H = emb_encoder_get_config(enc)->dims.hidden, L = emb_encoder_get_config(enc)->dims.layers;
    const cJSON *cs[64];
    int B = 0, T = 0;
    for (const cJSON *c = cJSON_GetObjectItem(ref, "cases")->child; c && B < 64; c = c->next) {
        int n = cJSON_GetObjectItem(c, "seq_len")->valueint;
        if (n > max_len) continue;
        cs[B++] = c;
        if (n > T) T = n;
    }
    for (int i = 1; i < B; i++) /* by length, stable */
        for (int j = i; j > 0 && cJSON_GetObjectItem(cs[j], "seq_len")->valueint <
                                     cJSON_GetObjectItem(cs[j - 1], "seq_len")->valueint;
             j--) {
            const cJSON *t = cs[j];
            cs[j] = cs[j - 1];
            cs[j - 1] = t;
        }
    int32_t *ids = calloc((size_t)B * T, sizeof(int32_t)), *tt = calloc((size_t)B * T, sizeof(int32_t));
    int32_t *lens = calloc((size_t)B, sizeof(int32_t));
    float *out = malloc(sizeof(float) * (size_t)B * T * H), *whole = malloc(sizeof(float) * (size_t)B * T * H);
    for (int b = 0; b < B; b++) {
        lens[b] = cJSON_GetObjectItem(cs[b], "seq_len")->valueint;
        int k = 0;
        for (const cJSON *v = cJSON_GetObjectItem(cs[b], "input_ids")->child; v; v = v->next)
            ids[(size_t)b * T + k++] = v->valueint;
        k = 0;
        for (const cJSON *v = cJSON_GetObjectItem(cs[b], "token_type_ids")->child; v; v = v->next)
            tt[(size_t)b * T + k++] = v->valueint;
    }
    int starts[65], groups = emb_encoder_groups(lens, B, starts);
    emb_workspace *ws = emb_workspace_new();
    for (size_t i = 0; i < (size_t)B * T * H; i++) out[i] = NAN;
    rc = emb_encoder_forward_grouped(enc, ws, B, T, ids, tt, lens, L, out, err);
    CHECK(rc == 0, "%s: grouped forward: %s", model, err);
    double worst = 0;
    int pad_nonzero = 0;
    for (int b = 0; rc == 0 && b < B; b++) {
        const float *x = out + (size_t)b * T * H;
        worst = worse(worst, diff_rows(cJSON_GetObjectItem(cs[b], "last_hidden_state"), x, lens[b], H));
        for (size_t i = (size_t)lens[b] * H; i < (size_t)T * H; i++) pad_nonzero += x[i] != 0.0f;
    }
    CHECK(groups > 1, "%s: %d cases of 2 to %d tokens ran as one group", model, B, T);
    CHECK(worst <= tol, "%s: %d cases in %d groups: max |HF - ours| %.3g (tolerance %.0e)", model, B, groups,
          worst, tol);
    CHECK(pad_nonzero == 0, "%s: %d padding values not 0", model, pad_nonzero);
    printf("  %s: %d cases of up to %d tokens in %d groups, max abs error vs HF %.3g\n", model, B, T, groups,
           worst);

    /* the same batch longest first is not in increasing order: one batch, bit for bit */
    for (int b = 0; b < B / 2; b++) {
        swap_ints(lens + b, lens + B - 1 - b, 1);
        swap_ints(ids + (size_t)b * T, ids + (size_t)(B - 1 - b) * T, T);
        swap_ints(tt + (size_t)b * T, tt + (size_t)(B - 1 - b) * T, T);
    }
    rc = emb_encoder_forward_grouped(enc, ws, B, T, ids, tt, lens, L, out, err) ||
         emb_encoder_forward(enc, ws, B, T, ids, tt, lens, L, whole, err);
    CHECK(rc == 0 && memcmp(out, whole, sizeof(float) * (size_t)B * T * H) == 0,
          "%s: lengths out of order must run as emb_encoder_forward, bit for bit", model);

    /* errors as emb_encoder_forward gives them */
    lens[0] = T + 1;
    rc = emb_encoder_forward_grouped(enc, ws, B, T, ids, tt, lens, L, out, err);
    CHECK(rc != 0 && strstr(err, "sequence 0 has length"), "%s: a length past T: %s", model,
          rc ? err : "no error");
    lens[0] = 1;
    int big = emb_encoder_max_tokens(enc) + 1;
    rc = emb_encoder_forward_grouped(enc, ws, 2, big, ids, tt, lens, L, out, err);
    CHECK(rc != 0 && strstr(err, "exceed the model's maximum"), "%s: T past the positions: %s", model,
          rc ? err : "no error");

    emb_workspace_free(ws);
    emb_encoder_free(enc);
    cJSON_Delete(ref);
    free(ids);
    free(tt);
    free(lens);
    free(out);
    free(whole);
}

int main(void) {
    check_groups_optimal();
    check_model("models", "bert-tiny-uncased", 512, 1e-4);
    check_model("models", "distilbert-tiny-uncased", 512, 1e-4);
    check_model("models2", "xlmr-tiny", 512, 1e-5);
    check_model("models2", "modernbert-tiny", 128, 1e-5);
    return check_report();
}
