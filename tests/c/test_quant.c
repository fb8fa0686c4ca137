/* Quantized records and approximate scores (core/quant.h): records against values worked out
 * by hand (and, for bit, sqlite-vec's layout), scores against double-precision sums over the
 * decoded vectors, every kernel set against the scalar one, candidates against a sort of the
 * scores, and the recall of int8 and bit candidates on random unit vectors. */
#include "check.h"
#include "search/quant.h"
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

static uint64_t rng_state = 0x9E3779B97F4A7C15ull;
static double uniform(void) { /* xorshift64*, in [-1, 1) */
    rng_state ^= rng_state >> 12;
    rng_state ^= rng_state << 25;
    rng_state ^= rng_state >> 27;
    return (double)((rng_state * 2685821657736338717ull) >> 11) / 4503599627370496.0 - 1.0;
}
static double gaussian(void) { /* Box-Muller */
    double u = (uniform() + 1) / 2, v = (uniform() + 1) / 2;
    return sqrt(-2 * log(u > 0 ? u : 1e-300)) * cos(6.283185307179586 * v);
}

static const char *const paths[] = {"scalar", "avx2", "avx512"};
static const emb_storage storages[] = {EMB_STORAGE_F32, EMB_STORAGE_F16, EMB_STORAGE_INT8, EMB_STORAGE_BIT};
static const emb_metric metrics[] = {EMB_METRIC_COSINE, EMB_METRIC_L2, EMB_METRIC_L1, EMB_METRIC_DOT};
static const size_t dims[] = {1, 7, 33, 384, 385, 1024};

static uint16_t f16_of(float x) {
    unsigned char b[2];
    emb_encode(EMB_STORAGE_F16, &x, 1, b);
    return (uint16_t)(b[0] | b[1] << 8);
}

/* The value of binary16 h from its definition. */
static double f16_value(uint16_t h) {
    int e = (h >> 10) & 31, man = h & 1023;
    double v = e == 0 ? ldexp(man, -24) : ldexp(1024 + man, e - 25);
    return h & 0x8000 ? -v : v;
}

static void test_names(void) {
    emb_storage s = EMB_STORAGE_F32;
    CHECK(emb_storage_parse("INT8", &s) == 0 && s == EMB_STORAGE_INT8, "INT8 parses");
    CHECK(emb_storage_parse("Bit", &s) == 0 && s == EMB_STORAGE_BIT, "Bit parses");
    CHECK(emb_storage_parse("f16", &s) == 0 && s == EMB_STORAGE_F16, "f16 parses");
    CHECK(emb_storage_parse("f32", &s) == 0 && s == EMB_STORAGE_F32, "f32 parses");
    CHECK(emb_storage_parse("int4", &s) == -1 && s == EMB_STORAGE_F32, "int4 refused, out untouched");
    CHECK(emb_storage_parse(NULL, &s) == -1, "NULL refused");
    CHECK(strcmp(emb_storage_name(EMB_STORAGE_BIT), "bit") == 0, "name of bit");
    CHECK(emb_code_bytes(EMB_STORAGE_F32, 384) == 1536, "f32 bytes");
    CHECK(emb_code_bytes(EMB_STORAGE_F16, 385) == 770, "f16 bytes");
    CHECK(emb_code_bytes(EMB_STORAGE_INT8, 384) == 388, "int8 bytes");
    CHECK(emb_code_bytes(EMB_STORAGE_BIT, 385) == 49 && emb_code_bytes(EMB_STORAGE_BIT, 8) == 1, "bit bytes");
    CHECK(emb_quant_force_path("avx1024") == -1, "unknown kernel set refused");
}

/* f16 of known values, then every finite f16, the midpoints between neighbours (ties to even)
 * and the floats either side of each midpoint. */
static void test_f16(const char *path) {
    static const struct {
        float x;
        uint16_t h;
    } known[] = {
        {1.0f, 0x3c00},
        {-2.0f, 0xc000},
        {0.5f, 0x3800},
        {0.1f, 0x2e66},
        {1.0f / 3, 0x3555},
        {65504.0f, 0x7bff},
        {65519.0f, 0x7bff},
        {65520.0f, 0x7bff} /* saturates (IEEE: inf) */,
        {1e6f, 0x7bff},
        {-1e6f, 0xfbff},
        {-0.0f, 0x8000},
        {0x1p-14f, 0x0400},
        {0x1p-24f, 0x0001},
        {0x1p-25f, 0x0000} /* half the smallest subnormal: tie to even 0 */,
        {0x1.8p-25f, 0x0001},
        {0x3p-25f, 0x0002} /* 1.5 units: tie to even 2 */,
        {0x5p-25f, 0x0002} /* 2.5 units */,
        {0x7ffp-25f, 0x0400} /* 1023.5 units: tie to even 1024, the smallest normal */,
        {1e-8f, 0x0000},
        {4e-8f, 0x0001},
        {0x1.002p0f, 0x3c00} /* 1 + 2^-11: tie to even */,
        {0x1.006p0f, 0x3c02},
        {0x1.00201p0f, 0x3c01},
        {-0x1.ffcp15f, 0xfbff},
    };
    for (size_t i = 0; i < sizeof known / sizeof *known; i++)
        CHECK(f16_of(known[i].x) == known[i].h, "%s: f16(%a) = %04x, want %04x", path, known[i].x,
              f16_of(known[i].x), known[i].h);
    /* every finite f16 in one long vector (so the SIMD loops see them), and the midpoints */
    size_t n = 0x7c00;
    float *x = malloc(4 * n * sizeof *x), *back = malloc(n * sizeof *back);
    uint16_t *h = malloc(4 * n * sizeof *h), *want = malloc(4 * n * sizeof *want);
    for (size_t v = 0; v < n; v++) {
        x[v] = (float)f16_value((uint16_t)v);
        want[v] = (uint16_t)v;
        double next = v + 1 < n ? f16_value((uint16_t)(v + 1)) : 65536.0; /* past the top: saturation */
        float mid = (float)((x[v] + next) / 2); /* exact: 12 significant bits */
        x[n + v] = mid;
        want[n + v] = v + 1 < n ? (uint16_t)(v % 2 ? v + 1 : v) : 0x7bff;
        x[2 * n + v] = nextafterf(mid, 0);
        want[2 * n + v] = (uint16_t)v;
        x[3 * n + v] = -nextafterf(mid, INFINITY);
        want[3 * n + v] = (uint16_t)(0x8000 | (v + 1 < n ? v + 1 : 0x7bff));
    }
    emb_encode(EMB_STORAGE_F16, x, 4 * n, h);
    size_t bad = 0, first = 0;
    for (size_t i = 0; i < 4 * n; i++)
        if (h[i] != want[i] && !bad++) first = i;
    CHECK(bad == 0, "%s: %zu f16 conversions wrong, first %a -> %04x, want %04x", path, bad, x[first], h[first],
          want[first]);
    emb_decode(EMB_STORAGE_F16, want, n, back);
    bad = 0;
    for (size_t v = 0; v < n; v++) bad += back[v] != x[v];
    CHECK(bad == 0, "%s: %zu f16 values decoded wrong", path, bad);
    free(x);
    free(back);
    free(h);
    free(want);
}

static void test_int8_records(void) {
    /* scale 1: codes are the values rounded */
    float a[6] = {127, -50, 25.4f, 6.6f, -0.4f, 0};
    unsigned char want_a[10] = {0x7f, 0xce, 0x19, 0x07, 0x00, 0x00, 0x00, 0x00, 0x80, 0x3f};
    unsigned char r[16];
    emb_encode(EMB_STORAGE_INT8, a, 6, r);
    CHECK(memcmp(r, want_a, 10) == 0, "int8 of a scale-1 vector");
    /* scale 254 / 127 = 2: 3/2 = 1.5 rounds away from zero to 2, 5.2/2 -> 3, -7.1/2 -> -4 */
    float b[4] = {-254, 3, 5.2f, -7.1f}, back[4];
    unsigned char want_b[8] = {0x81, 0x02, 0x03, 0xfc, 0x00, 0x00, 0x00, 0x40};
    emb_encode(EMB_STORAGE_INT8, b, 4, r);
    CHECK(memcmp(r, want_b, 8) == 0, "int8 of a scale-2 vector");
    emb_decode(EMB_STORAGE_INT8, r, 4, back);
    CHECK(back[0] == -254 && back[1] == 4 && back[2] == 6 && back[3] == -8, "int8 decoded: code * scale");
    CHECK_NEAR(emb_code_aux(EMB_STORAGE_INT8, EMB_METRIC_L2, r, 4), 64632, 1e-2, "int8 l2 aux: |(-254,4,6,-8)|^2");
    CHECK_NEAR(emb_code_aux(EMB_STORAGE_INT8, EMB_METRIC_COSINE, r, 4), 1 / sqrt(64632.0), 1e-9,
               "int8 cosine aux");
    CHECK(emb_code_aux(EMB_STORAGE_INT8, EMB_METRIC_DOT, r, 4) == 0, "int8 dot aux 0");
    /* 0.3 / (0.3/127) = 127; -0.1 / (0.3/127) = -42.33 -> -42 */
    float c[2] = {0.3f, -0.1f};
    emb_encode(EMB_STORAGE_INT8, c, 2, r);
    float scale;
    memcpy(&scale, r + 2, 4);
    CHECK((int8_t)r[0] == 127 && (int8_t)r[1] == -42 && scale == 0.3f / 127, "int8 of (0.3, -0.1)");
    float z[3] = {0, 0, 0};
    memset(r, 0xaa, sizeof r);
    emb_encode(EMB_STORAGE_INT8, z, 3, r);
    CHECK(r[0] == 0 && r[1] == 0 && r[2] == 0 && memcmp(r + 3, "\0\0\0\0", 4) == 0,
          "zero vector: codes 0, scale 0");
    CHECK(emb_code_aux(EMB_STORAGE_INT8, EMB_METRIC_COSINE, r, 3) == 0, "zero vector: cosine aux 0");
}

static void test_bit_and_f32_records(void) {
    /* sqlite-vec 0.1.x: vec_quantize_binary of this vector is X'9989' (checked with its vec0.so) */
    float x[16] = {0.5f, -1, 0, 2, 3, -0.1f, 0, 1e-30f, 7, 0, -3, 4, 0, 0, 0, 5}, back[16];
    unsigned char r[2];
    emb_encode(EMB_STORAGE_BIT, x, 16, r);
    CHECK(r[0] == 0x99 && r[1] == 0x89, "bit layout: %02x%02x, want 9989", r[0], r[1]);
    emb_encode(EMB_STORAGE_BIT, x, 10, r);
    CHECK(r[0] == 0x99 && r[1] == 0x01, "bit of 10 dimensions: bits past d are 0");
    emb_decode(EMB_STORAGE_BIT, r, 10, back);
    CHECK(back[0] == 1 && back[1] == -1 && back[2] == -1 && back[7] == 1 && back[8] == 1 && back[9] == -1,
          "bit decoded to +1 / -1");
    CHECK(emb_code_aux(EMB_STORAGE_BIT, EMB_METRIC_COSINE, r, 10) == 0, "bit aux 0");
    float v[2] = {3, 4};
    unsigned char f[8];
    emb_encode(EMB_STORAGE_F32, v, 2, f);
    CHECK(memcmp(f, v, 8) == 0, "f32 record: the floats");
    CHECK_NEAR(emb_code_aux(EMB_STORAGE_F32, EMB_METRIC_COSINE, f, 2), 0.2, 1e-7, "f32 cosine aux 1/5");
    emb_encode(EMB_STORAGE_F16, v, 2, f);
    CHECK_NEAR(emb_code_aux(EMB_STORAGE_F16, EMB_METRIC_L2, f, 2), 25, 0, "f16 l2 aux 25");
}

/* Bits past d in a record's last byte (not written by emb_encode) do not count. */
static void test_bit_padding(void) {
    static const size_t ds[] = {10, 255, 513};
    for (int p = 0; p < 3; p++) {
        if (emb_quant_force_path(paths[p]) != 0) continue;
        for (int k = 0; k < 3; k++) {
            size_t d = ds[k], nb = (d + 7) / 8;
            float x[513], q[513];
            for (size_t i = 0; i < d; i++) x[i] = (float)uniform(), q[i] = (float)uniform();
            unsigned char rec[2 * 65];
            emb_encode(EMB_STORAGE_BIT, x, d, rec);
            memcpy(rec + nb, rec, nb);
            rec[2 * nb - 1] |= (unsigned char)~((1u << (d % 8)) - 1u); /* garbage past d in the copy */
            long ham = 0;
            for (size_t i = 0; i < d; i++) ham += (q[i] > 0) != (x[i] > 0);
            emb_code_query cq;
            emb_code_query_init(&cq, EMB_STORAGE_BIT, EMB_METRIC_DOT, q, d);
            float score[2];
            emb_code_scores(&cq, rec, NULL, NULL, 2, score);
            CHECK(score[0] == ham && score[1] == ham, "bit d=%zu %s: %g and %g, want %ld", d, paths[p], score[0],
                  score[1], ham);
            emb_code_query_free(&cq);
        }
    }
    emb_quant_force_path(NULL);
}

/* ---------- scores ---------- */

typedef struct {
    size_t n, d;
    float *x; /* n x d source vectors */
    unsigned char *rec; /* their records */
    float *aux;
} dataset;

static dataset make_data(emb_storage s, emb_metric m, size_t n, size_t d, int unit) {
    dataset ds = {n, d, malloc((n * d + 1) * sizeof(float)), malloc(n * emb_code_bytes(s, d) + 1),
                  malloc((n + 1) * sizeof(float))};
    for (size_t i = 0; i < n; i++) {
        double norm = 0;
        for (size_t j = 0; j < d; j++) {
            ds.x[i * d + j] = (float)(unit ? gaussian() : uniform() * 2);
            norm += (double)ds.x[i * d + j] * ds.x[i * d + j];
        }
        if (unit)
            for (size_t j = 0; j < d; j++) ds.x[i * d + j] = (float)(ds.x[i * d + j] / sqrt(norm));
        if (!unit && i == 5)
            for (size_t j = 0; j < d; j++) ds.x[i * d + j] = 0; /* a zero row */
        emb_encode(s, ds.x + i * d, d, ds.rec + i * emb_code_bytes(s, d));
        ds.aux[i] = emb_code_aux(s, m, ds.rec + i * emb_code_bytes(s, d), d);
    }
    return ds;
}

static void free_data(dataset *ds) {
    free(ds->x);
    free(ds->rec);
    free(ds->aux);
}

/* The score from its definition, in double, over the decoded row (and, for int8, the query
 * quantized as a row is); *scale: the size of the terms, for the tolerance. */
static double ref_score(emb_storage s, emb_metric m, const float *q, const float *x, const unsigned char *rec,
                        size_t d, double *scale) {
    size_t bytes = emb_code_bytes(s, d);
    float *xr = malloc(d * sizeof *xr), *qr = malloc(d * sizeof *qr);
    unsigned char *qrec = malloc(bytes);
    emb_decode(s, rec, d, xr);
    memcpy(qr, q, d * sizeof *q);
    if (s == EMB_STORAGE_INT8 && m != EMB_METRIC_L1) {
        emb_encode(s, q, d, qrec);
        emb_decode(s, qrec, d, qr);
    }
    double ab = 0, aa = 0, bb = 0, abs_ab = 0, l1 = 0, l1_size = 0;
    long ham = 0;
    for (size_t i = 0; i < d; i++) {
        ab += (double)qr[i] * xr[i];
        abs_ab += fabs((double)qr[i] * xr[i]);
        aa += (double)qr[i] * qr[i];
        bb += (double)xr[i] * xr[i];
        l1 += fabs((double)qr[i] - xr[i]);
        l1_size += fabs(qr[i]) + fabs(xr[i]);
        ham += (q[i] > 0) != (x[i] > 0);
    }
    free(xr);
    free(qr);
    free(qrec);
    if (s == EMB_STORAGE_BIT) return *scale = 0, (double)ham;
    switch (m) {
    case EMB_METRIC_COSINE:
        if (aa == 0 || bb == 0) return *scale = 0, 0.0;
        return *scale = abs_ab / sqrt(aa * bb), -ab / sqrt(aa * bb);
    case EMB_METRIC_L2: return *scale = bb + 2 * abs_ab, bb - 2 * ab;
    case EMB_METRIC_L1: return *scale = l1_size, l1;
    case EMB_METRIC_DOT: return *scale = abs_ab, -ab;
    }
    return NAN;
}

/* Relative to the size of the terms: float sums of up to 1024 products. */
#define SCORE_TOL 2e-5

/* Scores under every kernel set: equal to the double reference within SCORE_TOL (Hamming
 * exactly), int8 and bit bitwise equal to the scalar set's, aux NULL the same as aux given, and
 * a list of rows the same as those positions of the whole. */
static void test_scores(emb_storage s, emb_metric m, size_t d) {
    size_t n = 37;
    dataset ds = make_data(s, m, n, d, 0);
    float *q = malloc(d * sizeof *q), *score = malloc(n * sizeof *score), *first = malloc(n * sizeof *first);
    float *other = malloc(n * sizeof *other);
    for (size_t j = 0; j < d; j++) q[j] = (float)uniform();
    int npaths = 0;
    size_t rows[12];
    for (size_t j = 0; j < 12; j++) rows[j] = n - 1 - 3 * j; /* 36, 33, ... 3: backwards */
    for (int p = 0; p < 3; p++) {
        if (emb_quant_force_path(paths[p]) != 0) continue;
        emb_code_query cq;
        CHECK(emb_code_query_init(&cq, s, m, q, d) == 0, "query");
        emb_code_scores(&cq, ds.rec, ds.aux, NULL, n, score);
        size_t bad = 0;
        for (size_t i = 0; i < n; i++) {
            double size = 0, ref = ref_score(s, m, q, ds.x + i * d, ds.rec + i * emb_code_bytes(s, d), d, &size);
            if (!(fabs(score[i] - ref) <= SCORE_TOL * size + 1e-6) && !bad++)
                fprintf(stderr, "  row %zu: %.9g, reference %.9g\n", i, score[i], ref);
        }
        CHECK(bad == 0, "%s %s d=%zu %s: %zu scores off the reference", emb_storage_name(s), emb_metric_name(m), d,
              paths[p], bad);
        if (npaths++ == 0) memcpy(first, score, n * sizeof *score);
        else if (s == EMB_STORAGE_INT8 || s == EMB_STORAGE_BIT)
            CHECK(memcmp(first, score, n * sizeof *score) == 0, "%s %s d=%zu: %s bitwise equal to scalar",
                  emb_storage_name(s), emb_metric_name(m), d, paths[p]);
        emb_code_scores(&cq, ds.rec, NULL, NULL, n, other);
        CHECK(memcmp(other, score, n * sizeof *score) == 0, "%s %s d=%zu %s: aux NULL is the same",
              emb_storage_name(s), emb_metric_name(m), d, paths[p]);
        emb_code_scores(&cq, ds.rec, ds.aux, rows, 12, other);
        bad = 0;
        for (size_t j = 0; j < 12; j++) bad += memcmp(&other[j], &score[rows[j]], sizeof *score) != 0;
        CHECK(bad == 0, "%s %s d=%zu %s: rows scored as in the whole", emb_storage_name(s), emb_metric_name(m), d,
              paths[p]);
        emb_code_query_free(&cq);
    }
    emb_quant_force_path(NULL);
    free(q);
    free(score);
    free(first);
    free(other);
    free_data(&ds);
}

/* ---------- candidates ---------- */

typedef struct {
    float score;
    size_t pos;
} ranked;

static int ranked_cmp(const void *pa, const void *pb) {
    const ranked *a = pa, *b = pb;
    if (a->score != b->score) return a->score < b->score ? -1 : 1;
    return (a->pos > b->pos) - (a->pos < b->pos);
}

/* candidates == the first keep of (score, position) sorted, for 1, 2, 3 and all threads */
static void check_candidates(const emb_code_query *q, const void *rec, const float *aux, const size_t *rows,
                             size_t m, size_t keep, const char *what) {
    float *score = malloc((m + 1) * sizeof *score);
    ranked *ref = malloc((m + 1) * sizeof *ref);
    size_t *out = malloc((keep + 1) * sizeof *out);
    emb_code_scores(q, rec, aux, rows, m, score);
    for (size_t j = 0; j < m; j++) ref[j] = (ranked){score[j], rows ? rows[j] : j};
    qsort(ref, m, sizeof *ref, ranked_cmp);
    size_t want = keep < m ? keep : m;
    static const int threads[] = {1, 2, 3, 0};
    emb_code_scratch scratch = {0};
    for (int t = 0; t < 4; t++) {
        memset(out, 0xff, (keep + 1) * sizeof *out);
        size_t got = emb_code_candidates(q, rec, aux, rows, m, keep, threads[t], &scratch, out);
        size_t bad = got == want ? 0 : 1;
        for (size_t j = 0; j < got && j < want; j++) bad += out[j] != ref[j].pos;
        CHECK(bad == 0 && out[want] == (size_t)-1, "%s, %d threads: %zu of %zu candidates, %zu wrong", what,
              threads[t], got, want, bad);
    }
    emb_code_scratch_free(&scratch);
    free(score);
    free(ref);
    free(out);
}

static void test_candidates_small(void) {
    emb_code_scratch scratch = {0};
    for (int si = 0; si < 4; si++)
        for (size_t di = 0; di < sizeof dims / sizeof *dims; di++) {
            emb_storage s = storages[si];
            size_t d = dims[di], n = 300;
            dataset ds = make_data(s, EMB_METRIC_COSINE, n, d, 0);
            float *q = malloc(d * sizeof *q);
            for (size_t j = 0; j < d; j++) q[j] = (float)uniform();
            emb_code_query cq;
            emb_code_query_init(&cq, s, EMB_METRIC_COSINE, q, d);
            char what[64];
            static const size_t keeps[] = {0, 1, 10, 299, 300, 400};
            for (size_t k = 0; k < sizeof keeps / sizeof *keeps; k++) {
                snprintf(what, sizeof what, "%s d=%zu keep %zu", emb_storage_name(s), d, keeps[k]);
                check_candidates(&cq, ds.rec, ds.aux, NULL, n, keeps[k], what);
            }
            size_t rows[100];
            for (size_t j = 0; j < 100; j++) rows[j] = (j * 7919) % n; /* scattered, no repeats */
            snprintf(what, sizeof what, "%s d=%zu 100 rows", emb_storage_name(s), d);
            check_candidates(&cq, ds.rec, ds.aux, rows, 100, 20, what);
            size_t none[1];
            CHECK(emb_code_candidates(&cq, ds.rec, ds.aux, NULL, 0, 10, 1, &scratch, none) == 0,
                  "n = 0: no candidates");
            emb_code_query_free(&cq);
            free(q);
            free_data(&ds);
        }
    /* bit scores of 7 dimensions tie all the time: the order is by position among equals */
    size_t n = 1000, d = 7;
    dataset ds = make_data(EMB_STORAGE_BIT, EMB_METRIC_L2, n, d, 0);
    float q[7] = {1, -1, 1, -1, 1, -1, 1};
    emb_code_query cq;
    emb_code_query_init(&cq, EMB_STORAGE_BIT, EMB_METRIC_L2, q, d);
    size_t out[50], got = emb_code_candidates(&cq, ds.rec, NULL, NULL, n, 50, 1, &scratch, out);
    ranked ref[1000];
    for (size_t i = 0; i < n; i++) {
        long ham = 0;
        for (size_t j = 0; j < d; j++) ham += (q[j] > 0) != (ds.x[i * d + j] > 0);
        ref[i] = (ranked){(float)ham, i};
    }
    qsort(ref, n, sizeof *ref, ranked_cmp);
    size_t bad = got != 50;
    for (size_t j = 0; j < got; j++) bad += out[j] != ref[j].pos;
    CHECK(bad == 0, "bit d=7: candidates are the exact Hamming order, ties by position");
    emb_code_query_free(&cq);
    free_data(&ds);
    /* a NaN score comes last */
    float rows_f32[3][2] = {{1, 0}, {NAN, 1}, {0, 1}}, one[2] = {1, 0};
    emb_code_query_init(&cq, EMB_STORAGE_F32, EMB_METRIC_DOT, one, 2);
    size_t three[3];
    got = emb_code_candidates(&cq, rows_f32, NULL, NULL, 3, 3, 1, &scratch, three);
    CHECK(got == 3 && three[0] == 0 && three[1] == 2 && three[2] == 1, "NaN score last");
    emb_code_query_free(&cq);
    emb_code_scratch_free(&scratch);
}

/* Arrays past the 4 MB threshold, so that 2 and 3 threads split them. */
static void test_candidates_threads(void) {
    static const struct {
        emb_storage s;
        size_t n;
    } big[] = {{EMB_STORAGE_INT8, 20000}, {EMB_STORAGE_F16, 8000}, {EMB_STORAGE_BIT, 100000}};
    for (int b = 0; b < 3; b++) {
        size_t n = big[b].n, d = 384;
        dataset ds = make_data(big[b].s, EMB_METRIC_COSINE, n, d, 0);
        float q[384];
        for (size_t j = 0; j < d; j++) q[j] = (float)uniform();
        emb_code_query cq;
        emb_code_query_init(&cq, big[b].s, EMB_METRIC_COSINE, q, d);
        char what[64];
        snprintf(what, sizeof what, "%s n=%zu keep 40", emb_storage_name(big[b].s), n);
        check_candidates(&cq, ds.rec, ds.aux, NULL, n, 40, what);
        size_t *rows = malloc(n * sizeof *rows);
        for (size_t j = 0; j < n; j++) rows[j] = n - 1 - j;
        snprintf(what, sizeof what, "%s n=%zu reversed rows keep 300", emb_storage_name(big[b].s), n);
        check_candidates(&cq, ds.rec, ds.aux, rows, n, 300, what);
        free(rows);
        emb_code_query_free(&cq);
        free_data(&ds);
    }
}

/* ---------- recall ---------- */

static int dist_cmp(const void *pa, const void *pb) {
    const double *a = pa, *b = pb;
    return (a[0] > b[0]) - (a[0] < b[0]);
}

/* The exact top 10 of each query (cosine, in double) into top[t * 10 ..]. */
static void exact_top10(const float *x, size_t n, const float *queries, int nq, size_t d, size_t *top) {
    double(*exact)[2] = malloc(n * sizeof *exact);
    for (int t = 0; t < nq; t++) {
        const float *q = queries + (size_t)t * d;
        for (size_t i = 0; i < n; i++) {
            double dot = 0;
            for (size_t j = 0; j < d; j++) dot += (double)q[j] * x[i * d + j];
            exact[i][0] = -dot;
            exact[i][1] = (double)i;
        }
        qsort(exact, n, sizeof *exact, dist_cmp);
        for (int k = 0; k < 10; k++) top[t * 10 + k] = (size_t)exact[k][1];
    }
    free(exact);
}

/* The share of the exact top 10 among `keep` candidates, over the queries. */
static double recall(emb_storage s, const float *x, size_t n, const float *queries, const size_t *top, int nq,
                     size_t d, size_t keep) {
    unsigned char *rec = malloc(n * emb_code_bytes(s, d));
    float *aux = malloc(n * sizeof *aux);
    for (size_t i = 0; i < n; i++) {
        emb_encode(s, x + i * d, d, rec + i * emb_code_bytes(s, d));
        aux[i] = emb_code_aux(s, EMB_METRIC_COSINE, rec + i * emb_code_bytes(s, d), d);
    }
    size_t *out = malloc(keep * sizeof *out), found = 0;
    emb_code_scratch scratch = {0};
    for (int t = 0; t < nq; t++) {
        emb_code_query cq;
        emb_code_query_init(&cq, s, EMB_METRIC_COSINE, queries + (size_t)t * d, d);
        size_t got = emb_code_candidates(&cq, rec, aux, NULL, n, keep, 0, &scratch, out);
        for (int k = 0; k < 10; k++)
            for (size_t j = 0; j < got; j++) found += out[j] == top[t * 10 + k];
        emb_code_query_free(&cq);
    }
    emb_code_scratch_free(&scratch);
    free(out);
    free(rec);
    free(aux);
    return found / (10.0 * nq);
}

static void normalize(float *v, size_t d) {
    double norm = 0;
    for (size_t j = 0; j < d; j++) norm += (double)v[j] * v[j];
    for (size_t j = 0; j < d; j++) v[j] = (float)(v[j] / sqrt(norm));
}

/* n unit vectors: uniform on the sphere, or around 200 Gaussian centres (sigma 0.35 per
 * dimension); queries: fresh uniform vectors, or data points plus noise (sigma 0.1). */
static void recall_data(int clustered, size_t n, size_t d, int nq, float *x, float *q) {
    rng_state = 0x0123456789abcdefull;
    float *centre = malloc(200 * d * sizeof *centre);
    for (size_t i = 0; i < 200 * d; i++) centre[i] = (float)gaussian();
    for (size_t i = 0; i < n; i++) {
        const float *c = centre + (i % 200) * d;
        for (size_t j = 0; j < d; j++)
            x[i * d + j] = clustered ? c[j] + 0.35f * (float)gaussian() : (float)gaussian();
        normalize(x + i * d, d);
    }
    for (int t = 0; t < nq; t++) {
        const float *p = x + (size_t)(t * 397) % n * d;
        for (size_t j = 0; j < d; j++)
            q[t * d + j] = clustered ? p[j] + 0.1f * (float)gaussian() : (float)gaussian();
        normalize(q + t * d, d);
    }
    free(centre);
}

static void test_recall(void) {
    enum { N = 20000, D = 384, NQ = 50 };
    float *x = malloc((size_t)N * D * sizeof *x), *q = malloc((size_t)NQ * D * sizeof *q);
    size_t top[NQ * 10];
    double r[2][5];
    for (int clustered = 0; clustered < 2; clustered++) {
        recall_data(clustered, N, D, NQ, x, q);
        exact_top10(x, N, q, NQ, D, top);
        r[clustered][0] = recall(EMB_STORAGE_INT8, x, N, q, top, NQ, D, 10);
        r[clustered][1] = recall(EMB_STORAGE_INT8, x, N, q, top, NQ, D, 40);
        r[clustered][2] = recall(EMB_STORAGE_F16, x, N, q, top, NQ, D, 10);
        r[clustered][3] = recall(EMB_STORAGE_BIT, x, N, q, top, NQ, D, 160);
        r[clustered][4] = recall(EMB_STORAGE_BIT, x, N, q, top, NQ, D, 400);
        printf("recall@10, %s unit vectors, d=384, n=20000, 50 queries: int8 keep 10 %.3f, keep 40 %.3f; "
               "f16 keep 10 %.3f; bit keep 160 %.3f, keep 400 %.3f\n",
               clustered ? "clustered" : "uniform random", r[clustered][0], r[clustered][1], r[clustered][2],
               r[clustered][3], r[clustered][4]);
    }
    /* measured: uniform 0.974, 1.000, 1.000, 0.416, 0.602; clustered 0.980, 1.000, 1.000, 1.000, 1.000 */
    CHECK(r[0][1] >= 0.99 && r[1][1] >= 0.99, "int8 keep 40: recall %.3f, %.3f", r[0][1], r[1][1]);
    CHECK(r[0][0] >= 0.90 && r[1][0] >= 0.90, "int8 keep 10: recall %.3f, %.3f", r[0][0], r[1][0]);
    CHECK(r[0][2] >= 0.99 && r[1][2] >= 0.99, "f16 keep 10: recall %.3f, %.3f", r[0][2], r[1][2]);
    /* sign bits of uniform random vectors keep little of their order */
    CHECK(r[0][3] >= 0.30 && r[0][4] >= 0.45, "bit, uniform: recall %.3f, %.3f", r[0][3], r[0][4]);
    CHECK(r[1][3] >= 0.95, "bit keep 160, clustered: recall %.3f", r[1][3]);
    free(x);
    free(q);
}

int main(void) {
    test_names();
    for (int p = 0; p < 3; p++) {
        if (emb_quant_force_path(paths[p]) != 0) {
            printf("kernel set %s: not on this CPU, skipped\n", paths[p]);
            continue;
        }
        test_f16(paths[p]);
    }
    emb_quant_force_path(NULL);
    printf("kernel set in use: %s\n", emb_quant_path());
    test_int8_records();
    test_bit_and_f32_records();
    test_bit_padding();
    for (int si = 0; si < 4; si++)
        for (int mi = 0; mi < 4; mi++)
            for (size_t di = 0; di < sizeof dims / sizeof *dims; di++)
                test_scores(storages[si], metrics[mi], dims[di]);
    test_candidates_small();
    test_candidates_threads();
    test_recall();
    return check_report();
}
