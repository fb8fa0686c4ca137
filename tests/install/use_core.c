/* A C program built only from what `make install` puts in place: the headers under
 * <sqlite-embed/...> and the flags of `pkg-config --cflags --libs sqlite-embed`.
 * It defines the README's lesson model and checks its input vectors (token row + position
 * row, computed by hand), its sizes, their mean pooling and two kernels against values worked
 * out independently. */
#include <math.h>
#include <stdio.h>
#include <string.h>
#include <sqlite-embed/model.h>
#include <sqlite-embed/pooling.h>
#include <sqlite-embed/posenc.h>
#include <sqlite-embed/vec.h>

static const char lesson[] = "{\"vocab\": [\"bus\", \"is\", \"late\", \"early\"],"
                             " \"embeddings\": [[1,0,2], [0,1,0], [2,1,1], [2,1,-1]],"
                             " \"positions\": [[1,1,0], [0,1,1], [1,0,1]]}";

int main(void) {
    char err[EMB_ERR_LEN];
    emb_model *m = NULL;
    if (emb_model_define("lesson", lesson, strlen(lesson), &m, err)) {
        printf("define: %s\n", err);
        return 1;
    }
    emb_encoding enc;
    emb_model_encoding_init(&enc);
    float out[9];
    if (emb_model_tokenize(m, "bus is late", 11, NULL, 0, &enc, err) ||
        emb_model_hidden_states(m, &enc, 0, out, err)) {
        printf("encode: %s\n", err);
        return 1;
    }
    const float want[9] = {2, 1, 2, 0, 2, 1, 3, 1, 2}; /* bus+pos0, is+pos1, late+pos2 */
    int bad = enc.n != 3 || memcmp(out, want, sizeof want) != 0;
    const emb_model_dims *dims = emb_model_get_info(m)->dims; /* 4 words, 3 dimensions, 3 positions */
    bad |= dims->hidden != 3 || dims->vocab_size != 4 || dims->max_positions != 3 || dims->layers != 0;
    float mean[3];
    emb_pool(out, 3, 3, 3, EMB_POOL_MEAN, mean); /* (2+0+3, 1+2+1, 2+1+2) / 3 */
    bad |= fabsf(mean[0] - 5.0f / 3) > 1e-6f || fabsf(mean[1] - 4.0f / 3) > 1e-6f ||
           fabsf(mean[2] - 5.0f / 3) > 1e-6f;
    emb_model_encoding_free(&enc);
    emb_model_release(m);

    const float a[2] = {1, 0}, b[2] = {0, 1};
    bad |= emb_vec_cosine(a, b, 2) != 0.0;
    float pe[4];
    emb_sinusoidal(1, 4, 10000, pe); /* sin(1), cos(1), sin(1/100), cos(1/100) */
    bad |= fabsf(pe[0] - (float)sin(1.0)) > 1e-7f || fabsf(pe[3] - (float)cos(0.01)) > 1e-7f;
    printf(bad ? "use_core: wrong values\n" : "use_core: ok\n");
    return bad;
}
