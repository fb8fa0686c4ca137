/* Two builds of the encoder in one process: the forward passes of this tree's libembedcore.a and
 * of an older one whose symbols were renamed old_* (bench/ab_encoder.sh builds both), run in
 * alternation on the same model, token ids and threads, first one then the other, the order
 * swapped at every pair. A shared machine's load moves single timings by 5-10 % here; within a
 * pair both builds meet the same load, so the median of the pairs' time ratios shows changes of
 * 1-2 % that separate runs cannot. Prints both builds' fastest and median pass, the median ratio
 * new / old with its quartiles, and the largest difference between their outputs.
 * Usage: ab_encoder DIR f32|int8 B T PAIRS THREADS (DIR: a model folder, e.g. from
 * bench_encoder --write). Uses only the encoder's load / set-weights / workspace / forward
 * calls, so that it links against older builds too. */
#include "bench_clock.h"
#include "nn/encoder.h"
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

void openblas_set_num_threads(int);
int old_emb_encoder_load(const char *, emb_encoder **, char[EMB_ERR_LEN]);
void old_emb_encoder_free(emb_encoder *);
int old_emb_encoder_set_weights(emb_encoder *, emb_weights, char[EMB_ERR_LEN]);
emb_workspace *old_emb_workspace_new(void);
void old_emb_workspace_free(emb_workspace *);
int old_emb_encoder_forward(const emb_encoder *, emb_workspace *, int, int, const int32_t *, const int32_t *,
                            const int32_t *, int, float *, char[EMB_ERR_LEN]);

int main(int argc, char **argv) {
    if (argc != 7) {
        fprintf(stderr, "usage: ab_encoder DIR f32|int8 B T PAIRS THREADS\n");
        return 2;
    }
    const char *dir = argv[1];
    int int8 = strcmp(argv[2], "int8") == 0, B = atoi(argv[3]), T = atoi(argv[4]), n = atoi(argv[5]);
    int threads = atoi(argv[6]);
    if (B < 1 || T < 1 || n < 1 || threads < 1) {
        fprintf(stderr, "ab_encoder: B, T, PAIRS and THREADS must be positive\n");
        return 2;
    }
    bench_openblas_sleeps(argv);
    char err[EMB_ERR_LEN];
    emb_encoder *enc[2] = {NULL, NULL}; /* 0: old, 1: new */
    if (old_emb_encoder_load(dir, &enc[0], err) || emb_encoder_load(dir, &enc[1], err) ||
        (int8 && (old_emb_encoder_set_weights(enc[0], EMB_WEIGHTS_INT8, err) ||
                  emb_encoder_set_weights(enc[1], EMB_WEIGHTS_INT8, err)))) {
        fprintf(stderr, "ab_encoder: %s\n", err);
        return 1;
    }
    openblas_set_num_threads(threads);
    const emb_encoder_config *c = emb_encoder_get_config(enc[1]);
    int H = c->dims.hidden, L = c->dims.layers;
    int32_t *ids = malloc(sizeof(int32_t) * B * T), *lens = malloc(sizeof(int32_t) * B);
    float *out[2] = {malloc(sizeof(float) * B * T * H), malloc(sizeof(float) * B * T * H)};
    double *t[2] = {malloc(sizeof(double) * n), malloc(sizeof(double) * n)}, *ratio = malloc(sizeof(double) * n);
    unsigned seed = 1;
    for (int i = 0; i < B * T; i++) {
        seed = seed * 1103515245u + 12345u;
        ids[i] = i % T == 0 ? 101 : 1000 + (int32_t)((seed >> 8) % 20000u);
    }
    for (int b = 0; b < B; b++) lens[b] = T;
    emb_workspace *ws[2] = {old_emb_workspace_new(), emb_workspace_new()};
    for (int i = -1; i < n; i++) /* pair -1: untimed, both warm */
        for (int k = 0; k < 2; k++) {
            int v = (i & 1) ^ k;
            double s = bench_now();
            int rc = v ? emb_encoder_forward(enc[1], ws[1], B, T, ids, NULL, lens, L, out[1], err)
                       : old_emb_encoder_forward(enc[0], ws[0], B, T, ids, NULL, lens, L, out[0], err);
            if (rc) {
                fprintf(stderr, "ab_encoder: %s\n", err);
                return 1;
            }
            if (i >= 0) t[v][i] = bench_now() - s;
        }
    for (int i = 0; i < n; i++) ratio[i] = t[1][i] / t[0][i];
    double diff = 0;
    for (size_t j = 0; j < (size_t)B * T * H; j++) {
        double d = (double)out[1][j] - out[0][j];
        if (d < 0) d = -d;
        if (d > diff) diff = d;
    }
    /* bench_median sorts: the fastest pass is then first, the quartiles at n / 4 and 3 n / 4 */
    double med_old = bench_median(t[0], (size_t)n), med_new = bench_median(t[1], (size_t)n);
    double median = bench_median(ratio, (size_t)n);
    printf("%-8s %-4s %3d x %-4d %dt  old %9.2f / %9.2f ms  new %9.2f / %9.2f ms (fastest / median)  "
           "new/old %.3f (quartiles %.3f-%.3f)  max |new - old| %.2g\n",
           strrchr(dir, '/') ? strrchr(dir, '/') + 1 : dir, argv[2], B, T, threads, t[0][0] * 1e3, med_old * 1e3,
           t[1][0] * 1e3, med_new * 1e3, median, ratio[n / 4], ratio[(3 * n) / 4], diff);
    for (int v = 0; v < 2; v++) free(out[v]), free(t[v]);
    free(ids), free(lens), free(ratio);
    old_emb_workspace_free(ws[0]);
    emb_workspace_free(ws[1]);
    old_emb_encoder_free(enc[0]);
    emb_encoder_free(enc[1]);
    return 0;
}
