/* Hostile and careless model folders (issue 8): copies of the bert-tiny fixture in a temporary
 * directory with one file replaced by a FIFO, a Git LFS pointer, a truncated or empty file, a
 * directory, a device, a symlink loop, out-of-range ids, huge numbers or wrong types. Every load
 * must fail with an error that names the file, quickly (an alarm kills a hang), without a leak
 * or a sanitizer report. Also the pieces underneath: the JSON integer reader, the file reader,
 * the vocabulary's id bound and the defined model's lookup of words that hold a NUL. */
#include "check.h"
#include "base/emb_json.h"
#include "base/file.h"
#include "sqlite-embed/model.h"
#include "model/defined_model.h"
#include "text/tokenizer.h"
#include "text/vocab.h"
#include <cjson/cJSON.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#define SRC FIXTURES "/models/bert-tiny-uncased"
static const char *files[] = {"config.json",           "model.safetensors", "tokenizer.json",
                              "tokenizer_config.json", "vocab.txt",         "special_tokens_map.json"};
static char root[256];

static char *slurp(const char *path, size_t *len) {
    char *buf, err[EMB_ERR_LEN];
    if (emb_read_file(path, 64u << 20, &buf, len, err)) {
        fprintf(stderr, "%s\n", err);
        exit(2);
    }
    return buf;
}

static void put(const char *path, const char *data, size_t len) {
    FILE *f = fopen(path, "wb");
    if (!f || fwrite(data, 1, len, f) != len || fclose(f) != 0) {
        fprintf(stderr, "cannot write %s\n", path);
        exit(2);
    }
}

/* A fresh copy of the fixture folder: root/name. */
static const char *copy(const char *name, char *dir) {
    snprintf(dir, 512, "%s/%s", root, name);
    mkdir(dir, 0700);
    for (size_t i = 0; i < sizeof files / sizeof *files; i++) {
        char from[512], to[600];
        size_t len;
        snprintf(from, sizeof from, "%s/%s", SRC, files[i]);
        snprintf(to, sizeof to, "%s/%s", dir, files[i]);
        char *b = slurp(from, &len);
        put(to, b, len);
        free(b);
    }
    return dir;
}

static void path_of(char *out, const char *dir, const char *file) { snprintf(out, 600, "%s/%s", dir, file); }

static void remove_file(const char *dir, const char *file) {
    char p[600];
    path_of(p, dir, file);
    unlink(p);
}

/* Parses dir/file, lets change() edit it, writes it back. */
static void edit(const char *dir, const char *file, void (*change)(cJSON *)) {
    char p[600];
    size_t len;
    path_of(p, dir, file);
    char *txt = slurp(p, &len);
    cJSON *j = cJSON_ParseWithLength(txt, len);
    free(txt);
    change(j);
    char *out = cJSON_PrintUnformatted(j);
    put(p, out, strlen(out));
    free(out);
    cJSON_Delete(j);
}

/* The load fails within a few seconds and the message holds every fragment. */
static void expect_error(const char *what, const char *dir, const char *frag1, const char *frag2) {
    emb_model *m = NULL;
    char err[EMB_ERR_LEN] = "";
    struct timespec a, b;
    clock_gettime(CLOCK_MONOTONIC, &a);
    alarm(30); /* a hang (a FIFO opened for reading) kills the suite rather than blocking it */
    int rc = emb_model_load("hostile", dir, &m, err);
    alarm(0);
    clock_gettime(CLOCK_MONOTONIC, &b);
    double secs = (double)(b.tv_sec - a.tv_sec) + (double)(b.tv_nsec - a.tv_nsec) * 1e-9;
    CHECK(rc != 0 && strstr(err, frag1) && (!frag2 || strstr(err, frag2)) && secs < 5,
          "%s: rc %d after %.1f s, error '%s' (want '%s' and '%s')", what, rc, secs, err, frag1,
          frag2 ? frag2 : "");
    emb_model_release(m);
}

static void huge_vocab_id(cJSON *t) {
    cJSON_AddNumberToObject(cJSON_GetObjectItem(cJSON_GetObjectItem(t, "model"), "vocab"), "zzzhuge",
                            2000000000.0);
}
static void add_decoder_key(cJSON *c, const char *key) {
    cJSON *d = cJSON_GetObjectItem(c, "added_tokens_decoder");
    if (!d) d = cJSON_AddObjectToObject(c, "added_tokens_decoder");
    cJSON_AddStringToObject(cJSON_AddObjectToObject(d, key), "content", "[NEW]");
}
static void overflow_key(cJSON *c) { add_decoder_key(c, "2147483647"); }
static void negative_key(cJSON *c) { add_decoder_key(c, "-1"); }
static void hidden_huge(cJSON *c) { cJSON_ReplaceItemInObject(c, "hidden_size", cJSON_CreateNumber(1e300)); }
static void hidden_string(cJSON *c) { cJSON_ReplaceItemInObject(c, "hidden_size", cJSON_CreateString("32")); }
static void positions_huge(cJSON *c) {
    cJSON_ReplaceItemInObject(c, "max_position_embeddings", cJSON_CreateNumber(1 << 20));
}
static void model_type_number(cJSON *c) { cJSON_ReplaceItemInObject(c, "model_type", cJSON_CreateNumber(5)); }
static void eps_string(cJSON *c) { cJSON_ReplaceItemInObject(c, "layer_norm_eps", cJSON_CreateString("x")); }
static void eps_underflow(cJSON *c) { cJSON_ReplaceItemInObject(c, "layer_norm_eps", cJSON_CreateNumber(1e-91)); }
static void template_id(cJSON *t) {
    cJSON *cls = cJSON_GetObjectItem(
        cJSON_GetObjectItem(cJSON_GetObjectItem(t, "post_processor"), "special_tokens"), "[CLS]");
    cJSON_ReplaceItemInObject(cls, "ids", cJSON_CreateIntArray((const int[]){40000}, 1));
}
static void type_id_huge(cJSON *t) {
    cJSON *single = cJSON_GetObjectItem(cJSON_GetObjectItem(t, "post_processor"), "single");
    cJSON *seq = cJSON_GetObjectItem(cJSON_GetArrayItem(single, 1), "Sequence");
    cJSON_ReplaceItemInObject(seq, "type_id", cJSON_CreateNumber(-1e300));
}
/* found by fuzz_tokenizer_json: a sequence twice in the pair template made encodings longer
 * than max_len */
static void sequence_twice(cJSON *t) {
    cJSON *pair = cJSON_GetObjectItem(cJSON_GetObjectItem(t, "post_processor"), "pair");
    cJSON_AddItemToArray(pair, cJSON_Duplicate(cJSON_GetArrayItem(pair, 1), 1));
}

/* What replaces the file of a case. */
typedef enum { FIFO, TEXT, HALF, DIRECTORY, SYMLINK, EDIT } change;
#define LFS_POINTER "version https://git-lfs.github.com/spec/v1\noid sha256:0123\nsize 4049552\n"

static const struct {
    const char *file;
    change how;
    const char *text; /* TEXT: the new content; SYMLINK: the target */
    void (*edit)(cJSON *); /* EDIT */
    int vocab_txt; /* tokenizer.json removed: the tokenizer comes from vocab.txt */
    const char *want, *want2; /* fragments of the error ("@" stands for the file's path) */
} cases[] = {
    {"config.json", FIFO, 0, 0, 0, "@: not a regular file (a FIFO)", 0},
    {"model.safetensors", FIFO, 0, 0, 0, "@: not a regular file (a FIFO)", 0},
    {"tokenizer.json", FIFO, 0, 0, 0, "@: not a regular file (a FIFO)", 0},
    {"tokenizer_config.json", FIFO, 0, 0, 0, "@: not a regular file (a FIFO)", 0},
    {"vocab.txt", FIFO, 0, 0, 1, "@: not a regular file (a FIFO)", 0},
    {"model.safetensors", TEXT, LFS_POINTER, 0, 0,
     "@: this is a Git LFS pointer, not the weights; run `git lfs pull` in the model folder", 0},
    {"tokenizer.json", TEXT, LFS_POINTER, 0, 0, "@: this is a Git LFS pointer", "git lfs pull"},
    {"config.json", TEXT, LFS_POINTER, 0, 0, "@: this is a Git LFS pointer", "git lfs pull"},
    {"model.safetensors", HALF, 0, 0, 0, "model.safetensors", "outside the data section"},
    {"model.safetensors", TEXT, "", 0, 0, "model.safetensors: file too short (0 bytes)", 0},
    {"config.json", TEXT, "", 0, 0, "config.json: not a JSON object", 0},
    {"config.json", TEXT, "[1, 2]", 0, 0, "config.json: not a JSON object", 0},
    {"tokenizer.json", TEXT, "", 0, 0, "@: not valid JSON", 0},
    {"vocab.txt", TEXT, "", 0, 1, "@: no [CLS]/[SEP] token in the vocabulary", 0},
    {"tokenizer.json", EDIT, 0, huge_vocab_id, 0,
     "tokenizer.json: model.vocab id 2000000000 of 'zzzhuge' is out of range", 0},
    {"tokenizer_config.json", EDIT, 0, overflow_key, 1,
     "tokenizer_config.json: added_tokens_decoder id '2147483647'", 0},
    {"tokenizer_config.json", EDIT, 0, negative_key, 1, "tokenizer_config.json: added_tokens_decoder id '-1'", 0},
    {"tokenizer.json", EDIT, 0, template_id, 0,
     "tokenizer.json: the post_processor's special token id 40000 is not in the vocabulary", 0},
    {"tokenizer.json", EDIT, 0, type_id_huge, 0, "tokenizer.json: post_processor type_id", 0},
    {"tokenizer.json", EDIT, 0, sequence_twice, 0,
     "tokenizer.json: post_processor's pair template must hold sequence A and sequence B each exactly once", 0},
    {"config.json", EDIT, 0, hidden_huge, 0, "config.json: key 'hidden_size' = 1e+300 is out of range", 0},
    {"config.json", EDIT, 0, hidden_string, 0, "config.json: key 'hidden_size' is not an integer", 0},
    {"config.json", EDIT, 0, positions_huge, 0,
     "model.safetensors: tensor 'embeddings.position_embeddings.weight' has shape [512,32], expected [1048576,32]",
     0},
    {"config.json", EDIT, 0, model_type_number, 0, "config.json: key 'model_type' is not a string", 0},
    {"config.json", EDIT, 0, eps_string, 0, "config.json: key 'layer_norm_eps' is not a positive number", 0},
    {"config.json", EDIT, 0, eps_underflow, 0, "config.json: key 'layer_norm_eps' is not a positive number", 0},
    {"config.json", SYMLINK, "config.json", 0, 0, "@: cannot open: Too many levels of symbolic links", 0},
    {"tokenizer.json", SYMLINK, "gone.json", 0, 0, "@: cannot open: No such file or directory", 0},
    {"model.safetensors", SYMLINK, "/dev/zero", 0, 0, "@: not a regular file (a character device)", 0},
    {"config.json", DIRECTORY, 0, 0, 0, "@: not a regular file (a directory)", 0},
    {"model.safetensors", DIRECTORY, 0, 0, 0, "@: not a regular file (a directory)", 0},
};

static void hostile_folders(void) {
    char d[512];
    for (size_t i = 0; i < sizeof cases / sizeof *cases; i++) {
        char name[32], p[600], want[700];
        snprintf(name, sizeof name, "case%02zu", i);
        copy(name, d);
        if (cases[i].vocab_txt) remove_file(d, "tokenizer.json");
        path_of(p, d, cases[i].file);
        struct stat st;
        switch (cases[i].how) {
        case FIFO:
            unlink(p);
            CHECK(mkfifo(p, 0600) == 0, "mkfifo");
            break;
        case TEXT: put(p, cases[i].text, strlen(cases[i].text)); break;
        case HALF: CHECK(stat(p, &st) == 0 && truncate(p, st.st_size / 2) == 0, "truncate"); break;
        case DIRECTORY:
            unlink(p);
            CHECK(mkdir(p, 0700) == 0, "mkdir");
            break;
        case SYMLINK:
            unlink(p);
            CHECK(symlink(cases[i].text, p) == 0, "symlink");
            break;
        case EDIT: edit(d, cases[i].file, cases[i].edit); break;
        }
        const char *at = strchr(cases[i].want, '@');
        if (at) snprintf(want, sizeof want, "%s%s", p, at + 1);
        else snprintf(want, sizeof want, "%s", cases[i].want);
        expect_error(name, d, want, cases[i].want2);
    }

    /* the same folder untouched loads, both ways, to equal vectors: the cases above fail for their change */
    copy("intact", d);
    emb_model *a = NULL, *b = NULL;
    char err[EMB_ERR_LEN];
    emb_load_options priv = {0};
    int rc = emb_model_load("a", d, &a, err);
    CHECK(rc == 0, "intact copy loads: %s", err);
    rc |= emb_model_load_with("b", d, &priv, &b, err);
    CHECK(rc == 0 && emb_model_get_info(a)->mapped == 1 && emb_model_get_info(b)->mapped == 0,
          "mmap true maps the weights, false does not: %s", err);
    if (rc == 0) {
        const char *text = "I left my phone on the left side";
        size_t len = strlen(text);
        float va[32], vb[32];
        rc =
            emb_model_embed(a, &text, &len, 1, NULL, va, err) || emb_model_embed(b, &text, &len, 1, NULL, vb, err);
        char p[600];
        path_of(p, d, "model.safetensors");
        CHECK(truncate(p, 0) == 0, "truncate");
        float vc[32];
        rc |= emb_model_embed(b, &text, &len, 1, NULL, vc, err); /* private memory: the file is not read again */
        CHECK(rc == 0 && memcmp(va, vb, sizeof va) == 0 && memcmp(vb, vc, sizeof vb) == 0,
              "mmap false: same vectors, also after the file is truncated: %s", err);
    }
    emb_model_release(a);
    emb_model_release(b);
}

static void json_integers(void) {
    static const struct {
        const char *json;
        int64_t lo, hi;
        int ok;
        int64_t want;
    } cases[] = {
        {"0", 0, 10, 1, 0},        {"10", 0, 10, 1, 10},
        {"11", 0, 10, 0, 0},       {"-1", 0, 10, 0, 0},
        {"2.5", 0, 10, 0, 0},      {"1e300", 0, 10, 0, 0},
        {"-1e300", -10, 10, 0, 0}, {"1e999", 0, INT64_C(1) << 53, 0, 0},
        {"\"3\"", 0, 10, 0, 0},    {"true", 0, 10, 0, 0},
        {"null", 0, 10, 0, 0},     {"2147483647", 0, INT32_MAX, 1, INT32_MAX},
        {"-7", -10, 10, 1, -7},    {"9007199254740992", 0, INT64_C(1) << 53, 1, INT64_C(1) << 53},
    };
    for (size_t i = 0; i < sizeof cases / sizeof *cases; i++) {
        cJSON *j = cJSON_Parse(cases[i].json);
        int64_t v = -12345;
        int rc = emb_json_int(j, cases[i].lo, cases[i].hi, &v);
        CHECK((rc == 0) == cases[i].ok && (!cases[i].ok || v == cases[i].want), "emb_json_int(%s) rc %d v %lld",
              cases[i].json, rc, (long long)v);
        cJSON_Delete(j);
    }
    CHECK(emb_json_int(NULL, 0, 1, NULL) != 0, "no value");
}

static void file_reader(void) {
    char p[600], err[EMB_ERR_LEN], *buf;
    size_t len;
    snprintf(p, sizeof p, "%s/small", root);
    put(p, "0123456789", 10);
    CHECK(emb_read_file(p, 10, &buf, &len, err) == 0 && len == 10 && buf[10] == 0 &&
              memcmp(buf, "0123456789", 10) == 0,
          "a file of exactly the limit: %s", err);
    free(buf);
    CHECK(emb_read_file(p, 9, &buf, &len, err) != 0 &&
              strstr(err, "small: 10 bytes, more than the 9 this file may have") && !buf,
          "over the limit, before reading: %s", err);
    CHECK(emb_read_file("/nonexistent/x.json", 9, &buf, &len, err) != 0 &&
              strcmp(err, "/nonexistent/x.json: cannot open: No such file or directory") == 0,
          "missing: %s", err);
    CHECK(emb_path_exists(p) && !emb_path_exists("/nonexistent/x") && emb_path_exists("/dev/null"), "exists");
    snprintf(p, sizeof p, "%s/dangling_link", root);
    CHECK(symlink("nowhere", p) == 0 && emb_path_exists(p),
          "a dangling symlink is there (and then an open error)");
    CHECK(emb_is_lfs_pointer("version https://git-lfs.github.com/spec/v1\n", 43) &&
              !emb_is_lfs_pointer("version https://git-lfs.github.com/spec", 39) && !emb_is_lfs_pointer("{}", 2),
          "LFS magic");
}

static void vocabulary_bounds(void) {
    emb_vocab *v = emb_vocab_new();
    CHECK(emb_vocab_add(v, "a", 1, INT32_MAX) != 0 && emb_vocab_add(v, "a", 1, -1) != 0,
          "ids whose size overflows are refused");
    CHECK(emb_vocab_add(v, "a", 1, 5) == 0 && emb_vocab_size(v) == 6 && emb_vocab_find(v, "a", 1) == 5,
          "a plain id");
    emb_vocab_free(v);
    /* a tokenizer.json from memory: ids bounded by the entries present (3 vocab + 1 added) */
    const char *fmt = "{\"model\":{\"type\":\"WordPiece\",\"vocab\":{\"[UNK]\":0,\"[CLS]\":1,\"[SEP]\":%d}},"
                      "\"normalizer\":null,\"pre_tokenizer\":{\"type\":\"BertPreTokenizer\"},"
                      "\"added_tokens\":[{\"id\":%d,\"content\":\"[X]\"}],\"post_processor\":null}";
    char json[512], err[EMB_ERR_LEN];
    emb_tokenizer *t;
    snprintf(json, sizeof json, fmt, 2, 3);
    CHECK(emb_tokenizer_from_json(json, strlen(json), &t, err) == 0 && emb_tokenizer_vocab_size(t) == 4,
          "ids 0..3: %s", err);
    emb_tokenizer_free(t);
    snprintf(json, sizeof json, fmt, 4, 3);
    CHECK(emb_tokenizer_from_json(json, strlen(json), &t, err) != 0 &&
              strstr(
                  err,
                  "model.vocab id 4 of '[SEP]' is out of range 0 to 3 (ids are bounded by the 4 entries present)"),
          "vocab id 4 of 4 entries: %s", err);
    snprintf(json, sizeof json, fmt, 2, 4);
    CHECK(emb_tokenizer_from_json(json, strlen(json), &t, err) != 0 &&
              strstr(err, "added_tokens id 4 of '[X]' is out of range"),
          "added id 4 of 4 entries: %s", err);
}

static void nul_in_a_word(void) {
    const char *def = "{\"vocab\": [\"bus\", \"is\", \"late\", \"b\"], \"embeddings\": [[1],[2],[3],[4]], "
                      "\"positions\": [[0],[0],[0]]}";
    emb_defined_model *m;
    char err[EMB_ERR_LEN];
    CHECK(emb_defined_model_from_json(def, strlen(def), &m, err) == 0, "define: %s", err);
    /* a heap copy of exactly the bytes, so that ASan sees any read past them */
    char *w = malloc(8);
    memcpy(w, "bus\0xxxx", 8);
    CHECK(emb_defined_lookup(m, w, 8) == -1 && emb_defined_lookup(m, w, 3) == 0 &&
              emb_defined_lookup(m, w, 4) == -1 && emb_defined_lookup(m, w, 1) == 3 &&
              emb_defined_lookup(m, w, 2) == -1,
          "lookups by length");
    emb_encoding enc;
    emb_encoding_init(&enc);
    CHECK(emb_defined_tokenize(m, w, 8, &enc, err) != 0 && strcmp(err, "word 1 contains a NUL character") == 0,
          "%s", err);
    emb_encoding_free(&enc);
    free(w);
    emb_defined_model_free(m);
}

int main(void) {
    snprintf(root, sizeof root, "/tmp/embed-hostile-XXXXXX");
    if (!mkdtemp(root)) return 2;
    json_integers();
    file_reader();
    vocabulary_bounds();
    nul_in_a_word();
    hostile_folders();
    char cmd[300];
    snprintf(cmd, sizeof cmd, "rm -rf '%s'", root);
    if (system(cmd) != 0) fprintf(stderr, "could not remove %s\n", root);
    return check_report();
}
