/* emb_encoder_set_weights: int8 packs the linear layers and changes the fingerprint and the
 * output (within the bounds of tests/sql/test_int8_weights.py); going back to float32 gives the
 * float32 fingerprint and output bit for bit; packing refuses unknown types and leaves the
 * encoder as it was. */
#include "check.h"
#include "encoder_internal.h"
#include <math.h>
#include <stdlib.h>
#include <string.h>

static const int32_t LEFT_PHONE[14] = {101, 1045, 2187, 2026, 3042, 2006, 1996, 2187, 2217, 1997, 1996, 2795, 1012, 102};
enum { T = 14, H = 32 };

static double cosine(const float *a, const float *b, int n) {
    double ab = 0, aa = 0, bb = 0;
    for (int i = 0; i < n; i++) ab += (double)a[i] * b[i], aa += (double)a[i] * a[i], bb += (double)b[i] * b[i];
    return ab / sqrt(aa * bb);
}

static void switch_and_back(const char *folder) {
    char err[EMB_ERR_LEN];
    emb_encoder *e;
    if (emb_encoder_load(folder, &e, err)) { CHECK(0, "load %s: %s", folder, err); return; }
    int L = e->cfg.dims.layers;
    emb_workspace *ws = emb_workspace_new();
    float f32[T * H], i8[T * H], back[T * H];
    int32_t len = T;
    uint64_t fp = emb_encoder_fingerprint(e);
    size_t used = e->info.used_bytes;
    int rc = emb_encoder_forward(e, ws, 1, T, LEFT_PHONE, NULL, &len, L, f32, err);
    CHECK(rc == 0 && emb_encoder_weights(e) == EMB_WEIGHTS_F32 && e->info.packed_bytes == 0 && used == e->info.weight_bytes,
          "%s loads as float32: %s", folder, rc ? err : "");
    rc = emb_encoder_set_weights(e, EMB_WEIGHTS_INT8, err) || emb_encoder_forward(e, ws, 1, T, LEFT_PHONE, NULL, &len, L, i8, err);
    double worst = 1;
    for (int t = 0; t < T; t++) worst = fmin(worst, cosine(f32 + t * H, i8 + t * H, H));
    CHECK(rc == 0 && emb_encoder_weights(e) == EMB_WEIGHTS_INT8 && emb_encoder_fingerprint(e) != fp &&
              memcmp(f32, i8, sizeof f32) != 0 && worst > 0.99,
          "%s int8: another fingerprint and output, every token's cosine to float32 > 0.99 (%.5f): %s", folder, worst,
          rc ? err : "");
    /* the packed layers take about a quarter of the float32 tensors they replace */
    CHECK(e->info.packed_bytes > 0 && e->info.used_bytes < used && e->info.used_bytes + e->info.packed_bytes * 3 > used,
          "%s int8 bytes: %zu packed, %zu in use of %zu", folder, e->info.packed_bytes, e->info.used_bytes, used);
    CHECK(emb_encoder_set_weights(e, (emb_weights)7, err) != 0 && strstr(err, "unknown weight type 7") &&
              emb_encoder_weights(e) == EMB_WEIGHTS_INT8,
          "an unknown type is refused and changes nothing: %s", err);
    rc = emb_encoder_set_weights(e, EMB_WEIGHTS_F32, err) || emb_encoder_forward(e, ws, 1, T, LEFT_PHONE, NULL, &len, L, back, err);
    CHECK(rc == 0 && emb_encoder_fingerprint(e) == fp && memcmp(f32, back, sizeof f32) == 0 && e->info.packed_bytes == 0 &&
              e->info.used_bytes == used && e->L8 == NULL,
          "%s back to float32: the same fingerprint and bytes: %s", folder, rc ? err : "");
    emb_workspace_free(ws);
    emb_encoder_free(e);
}

int main(void) {
    CHECK(strcmp(emb_weights_name(EMB_WEIGHTS_INT8), "int8") == 0 && emb_weights_name((emb_weights)2) == NULL, "names");
    emb_weights w;
    CHECK(emb_weights_parse("f32", &w) == 0 && w == EMB_WEIGHTS_F32 && emb_weights_parse("int8", &w) == 0 &&
              w == EMB_WEIGHTS_INT8 && emb_weights_parse("INT8", &w) == -1 && emb_weights_parse("", &w) == -1,
          "parse");
    switch_and_back(FIXTURES "/models/bert-tiny-uncased");
    switch_and_back(FIXTURES "/models2/nomic-bert-tiny"); /* gated: two halves packed as one */
    return check_report();
}
