/* emb_encoder_set_weights: int8 and bf16 (where the kernels in use have AVX2 with FMA or AVX512_BF16; refused on the generic set) pack
 * the linear layers and change the fingerprint and the output (within the bounds of
 * tests/sql/test_int8_weights.py); going back to float32 gives the float32 fingerprint and
 * output bit for bit; packing refuses unknown types and leaves the encoder as it was. */
#include "check.h"
#include "nn/encoder_internal.h"
#include <math.h>
#include <stdlib.h>
#include <string.h>

static const int32_t LEFT_PHONE[14] = {101,  1045, 2187, 2026, 3042, 2006, 1996,
                                       2187, 2217, 1997, 1996, 2795, 1012, 102};
enum { T = 14, H = 32 };

static double cosine(const float *a, const float *b, int n) {
    double ab = 0, aa = 0, bb = 0;
    for (int i = 0; i < n; i++) ab += (double)a[i] * b[i], aa += (double)a[i] * a[i], bb += (double)b[i] * b[i];
    return ab / sqrt(aa * bb);
}

static void switch_and_back(const char *folder, emb_weights kind) {
    char err[EMB_ERR_LEN];
    emb_encoder *e;
    if (emb_encoder_load(folder, &e, err)) {
        CHECK(0, "load %s: %s", folder, err);
        return;
    }
    int L = e->cfg.dims.layers;
    emb_workspace *ws = emb_workspace_new();
    float f32[T * H], i8[T * H], back[T * H];
    int32_t len = T;
    uint64_t fp = emb_encoder_fingerprint(e);
    size_t used = e->info.used_bytes;
    int rc = emb_encoder_forward(e, ws, 1, T, LEFT_PHONE, NULL, &len, L, f32, err);
    CHECK(rc == 0 && emb_encoder_weights(e) == EMB_WEIGHTS_F32 && e->info.packed_bytes == 0 &&
              used == e->info.weight_bytes,
          "%s loads as float32: %s", folder, rc ? err : "");
    if (kind == EMB_WEIGHTS_BF16 && !emb_bf16_fast()) {
        CHECK(emb_encoder_set_weights(e, kind, err) != 0 && strstr(err, "need AVX2 with FMA or AVX512_BF16") &&
                  emb_encoder_weights(e) == EMB_WEIGHTS_F32 && emb_encoder_fingerprint(e) == fp,
              "no vector bf16 kernels: bf16 is refused and nothing changes: %s", err);
        emb_workspace_free(ws);
        emb_encoder_free(e);
        return;
    }
    const char *kn = emb_weights_name(kind);
    rc = emb_encoder_set_weights(e, kind, err) ||
         emb_encoder_forward(e, ws, 1, T, LEFT_PHONE, NULL, &len, L, i8, err);
    double worst = 1;
    for (int t = 0; t < T; t++) worst = fmin(worst, cosine(f32 + t * H, i8 + t * H, H));
    CHECK(rc == 0 && emb_encoder_weights(e) == kind && emb_encoder_fingerprint(e) != fp &&
              memcmp(f32, i8, sizeof f32) != 0 && worst > 0.99,
          "%s %s: another fingerprint and output, every token's cosine to float32 > 0.99 (%.5f): %s", folder, kn,
          worst, rc ? err : "");
    /* the packed layers take about a quarter (int8) or half (bf16) of the float32 tensors they replace */
    size_t part = kind == EMB_WEIGHTS_INT8 ? 4 : 2;
    CHECK(e->info.packed_bytes > 0 && e->info.used_bytes < used &&
              e->info.used_bytes + e->info.packed_bytes * (part - 1) + 4096 * 6 * 2 * part > used,
          "%s %s bytes: %zu packed, %zu in use of %zu", folder, kn, e->info.packed_bytes, e->info.used_bytes,
          used);
    CHECK(emb_encoder_set_weights(e, (emb_weights)7, err) != 0 && strstr(err, "unknown weight type 7") &&
              emb_encoder_weights(e) == kind,
          "an unknown type is refused and changes nothing: %s", err);
    rc = emb_encoder_set_weights(e, EMB_WEIGHTS_F32, err) ||
         emb_encoder_forward(e, ws, 1, T, LEFT_PHONE, NULL, &len, L, back, err);
    CHECK(rc == 0 && emb_encoder_fingerprint(e) == fp && memcmp(f32, back, sizeof f32) == 0 &&
              e->info.packed_bytes == 0 && e->info.used_bytes == used && e->L8 == NULL && e->LB == NULL,
          "%s back to float32: the same fingerprint and bytes: %s", folder, rc ? err : "");
    emb_workspace_free(ws);
    emb_encoder_free(e);
}

int main(void) {
    CHECK(strcmp(emb_weights_name(EMB_WEIGHTS_INT8), "int8") == 0 &&
              strcmp(emb_weights_name(EMB_WEIGHTS_BF16), "bf16") == 0 &&
              strcmp(emb_weights_name(EMB_WEIGHTS_Q8_0), "q8_0") == 0 &&
              emb_weights_name((emb_weights)4) == NULL && emb_weights_name(EMB_WEIGHTS_DEFAULT) == NULL,
          "names");
    emb_weights w;
    CHECK(emb_weights_parse("f32", &w) == 0 && w == EMB_WEIGHTS_F32 && emb_weights_parse("int8", &w) == 0 &&
              w == EMB_WEIGHTS_INT8 && emb_weights_parse("INT8", &w) == -1 && emb_weights_parse("", &w) == -1,
          "parse");
    for (emb_weights k = EMB_WEIGHTS_INT8; k <= EMB_WEIGHTS_BF16; k++) {
        switch_and_back(FIXTURES "/models/bert-tiny-uncased", k);
        switch_and_back(FIXTURES "/models2/nomic-bert-tiny", k); /* gated: two halves packed as one */
    }
    /* int8 then bf16 then back: the second packing replaces the first */
    char err[EMB_ERR_LEN];
    emb_encoder *e;
    if (emb_bf16_fast() && emb_encoder_load(FIXTURES "/models/bert-tiny-uncased", &e, err) == 0) {
        uint64_t fp = emb_encoder_fingerprint(e);
        int rc = emb_encoder_set_weights(e, EMB_WEIGHTS_INT8, err);
        uint64_t f8 = emb_encoder_fingerprint(e);
        rc |= emb_encoder_set_weights(e, EMB_WEIGHTS_BF16, err);
        CHECK(rc == 0 && e->L8 == NULL && e->LB != NULL && emb_encoder_fingerprint(e) != f8 &&
                  emb_encoder_fingerprint(e) != fp,
              "int8 then bf16: %s", rc ? err : "");
        emb_encoder_free(e);
    }
    /* a folder of float32 safetensors: q8_0 refused (no Q8_0 tensor), the default is float32 */
    if (emb_encoder_load_open(FIXTURES "/models/bert-tiny-uncased", 1, &e, err) == 0) {
        uint64_t fp = emb_encoder_fingerprint(e);
        CHECK(emb_encoder_set_weights(e, EMB_WEIGHTS_Q8_0, err) == -1 && strstr(err, "no Q8_0 tensor"), "q8_0: %s",
              err);
        CHECK(emb_encoder_set_weights(e, EMB_WEIGHTS_DEFAULT, err) == 0 &&
                  emb_encoder_weights(e) == EMB_WEIGHTS_F32 && emb_encoder_fingerprint(e) == fp,
              "default: f32");
        emb_encoder_free(e);
    }
    return check_report();
}
