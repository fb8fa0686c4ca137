/* See model_gguf.h. A BERT file's WordPiece vocabulary is stored in llama.cpp's spelling
 * (convert_hf_to_gguf.py's BertModel.set_vocab): a word-initial token has a U+2581 in front, a
 * continuation has lost its "##", a control token is as it was. It is spelled back and written
 * out as the tokenizer.json of a BERT tokenizer (BertNormalizer, BertPreTokenizer, WordPiece,
 * [CLS] $A [SEP]), so that the tokenizer equals Hugging Face's for the folder the file was made
 * from. The file does not say whether the tokenizer lowercases (llama.cpp lowercases every
 * WordPiece file): a vocabulary with the capitals as tokens is read as cased (bert-base-cased,
 * the multilingual BERT), any other as uncased, as the BERTs that embedders are built on are. */
#include "model/model_gguf.h"
#include "model/gguf_tok_t5.h"
#include "model/gguf_dense.h"
#include "model/gguf_tok_spm.h"
#include "nn/encoder_gguf.h"
#include "text/tok_split.h"
#include <cjson/cJSON.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define TOKEN_CONTROL 3 /* llama.cpp's LLAMA_TOKEN_TYPE_CONTROL */

static int32_t special_id(const emb_gguf *g, const char *key, int32_t n, int32_t dflt) {
    int64_t v;
    if (emb_gguf_kv_int(emb_gguf_find(g, key), &v) || v < 0 || v >= n) return dflt;
    return (int32_t)v;
}

/* The token's Hugging Face spelling into buf (NUL-terminated); 0 when it does not fit. */
static int hf_spelling(const char *s, size_t len, int control, char *buf, size_t cap) {
    static const char phantom[] = "\xE2\x96\x81";
    const char *pre = "";
    if (!control && len >= 3 && memcmp(s, phantom, 3) == 0) s += 3, len -= 3;
    else if (!control) pre = "##";
    if (strlen(pre) + len + 1 > cap) return 0;
    memcpy(buf, pre, strlen(pre));
    memcpy(buf + strlen(pre), s, len);
    buf[strlen(pre) + len] = 0;
    return 1;
}

static cJSON *special_token(const char *name, int32_t id) {
    cJSON *o = cJSON_CreateObject(), *ids = cJSON_CreateArray(), *toks = cJSON_CreateArray();
    cJSON_AddStringToObject(o, "id", name);
    cJSON_AddItemToArray(ids, cJSON_CreateNumber(id));
    cJSON_AddItemToArray(toks, cJSON_CreateString(name));
    cJSON_AddItemToObject(o, "ids", ids);
    cJSON_AddItemToObject(o, "tokens", toks);
    return o;
}
static cJSON *piece(const char *kind, const char *id, int type_id) {
    cJSON *o = cJSON_CreateObject(), *in = cJSON_CreateObject();
    cJSON_AddStringToObject(in, "id", id);
    cJSON_AddNumberToObject(in, "type_id", type_id);
    cJSON_AddItemToObject(o, kind, in);
    return o;
}
/* [CLS] $A [SEP] and [CLS] $A [SEP] $B:1 [SEP]:1; without cls (NULL), $A [SEP] and $A [SEP] $B:1 [SEP]:1. */
static cJSON *template(const char *cls, int32_t cls_id, const char *sep, int32_t sep_id) {
    cJSON *t = cJSON_CreateObject(), *single = cJSON_CreateArray(), *pair = cJSON_CreateArray(),
          *sp = cJSON_CreateObject();
    cJSON_AddStringToObject(t, "type", "TemplateProcessing");
    if (cls) cJSON_AddItemToArray(single, piece("SpecialToken", cls, 0));
    cJSON_AddItemToArray(single, piece("Sequence", "A", 0));
    cJSON_AddItemToArray(single, piece("SpecialToken", sep, 0));
    if (cls) cJSON_AddItemToArray(pair, piece("SpecialToken", cls, 0));
    cJSON_AddItemToArray(pair, piece("Sequence", "A", 0));
    cJSON_AddItemToArray(pair, piece("SpecialToken", sep, 0));
    cJSON_AddItemToArray(pair, piece("Sequence", "B", 1));
    cJSON_AddItemToArray(pair, piece("SpecialToken", sep, 1));
    if (cls) cJSON_AddItemToObject(sp, cls, special_token(cls, cls_id));
    if (!cls || strcmp(cls, sep) != 0) cJSON_AddItemToObject(sp, sep, special_token(sep, sep_id));
    cJSON_AddItemToObject(t, "single", single);
    cJSON_AddItemToObject(t, "pair", pair);
    cJSON_AddItemToObject(t, "special_tokens", sp);
    return t;
}

/* The vocabulary and the control tokens as added tokens; names[i] gets token i's spelling. */
static int vocab(const emb_gguf *g, const char *label, cJSON *vocab_obj, cJSON *added, char **names, int32_t n,
                 char err[EMB_ERR_LEN]) {
    const emb_gguf_kv *toks = emb_gguf_find(g, "tokenizer.ggml.tokens"),
                      *types = emb_gguf_find(g, "tokenizer.ggml.token_type");
    if (types && (types->type != EMB_GGUF_ARRAY || types->elem_type != EMB_GGUF_I32 || types->n != (uint64_t)n))
        return emb_fail(err, "%s: tokenizer.ggml.token_type is not %d int32 values", label, n);
    size_t cur = 0;
    for (int32_t i = 0; i < n; i++) {
        const char *s;
        size_t len;
        char buf[512];
        emb_gguf_array_next_string(toks, &cur, &s, &len);
        int32_t type = 1;
        if (types) memcpy(&type, types->value + 4 * (size_t)i, 4); /* little-endian host */
        if (memchr(s, 0, len) || !hf_spelling(s, len, type == TOKEN_CONTROL, buf, sizeof buf) ||
            !(names[i] = strdup(buf)))
            return emb_fail(err, "%s: token %d is too long or holds a NUL byte", label, i);
        cJSON_AddItemToObject(vocab_obj, buf, cJSON_CreateNumber(i));
        if (type == TOKEN_CONTROL) {
            cJSON *a = cJSON_CreateObject();
            cJSON_AddNumberToObject(a, "id", i);
            cJSON_AddStringToObject(a, "content", buf);
            cJSON_AddBoolToObject(a, "single_word", 0);
            cJSON_AddBoolToObject(a, "lstrip", 0);
            cJSON_AddBoolToObject(a, "rstrip", 0);
            cJSON_AddBoolToObject(a, "normalized", 0);
            cJSON_AddBoolToObject(a, "special", 1);
            cJSON_AddItemToArray(added, a);
        }
    }
    return 0;
}

/* Whether the vocabulary keeps capitals: it has the capital letters as words of their own (as
 * bert-base-cased and the multilingual BERT do; an uncased vocabulary cannot reach them). */
static int vocab_is_cased(char *const *names, int32_t n) {
    int capitals = 0;
    for (int32_t i = 0; i < n; i++)
        if (names[i] && names[i][0] >= 'A' && names[i][0] <= 'Z' && names[i][1] == 0) capitals++;
    return capitals >= 13;
}

/* tokenizer.json text of the file's WordPiece tokenizer (malloc'ed). */
static int wordpiece_json(const emb_gguf *g, const char *label, char **out, char err[EMB_ERR_LEN]) {
    const emb_gguf_kv *toks = emb_gguf_find(g, "tokenizer.ggml.tokens");
    if (!toks || toks->type != EMB_GGUF_ARRAY || toks->elem_type != EMB_GGUF_STRING || toks->n < 1 ||
        toks->n > (1u << 24))
        return emb_fail(err, "%s: tokenizer.ggml.tokens is not a list of strings", label);
    int32_t n = (int32_t)toks->n;
    char **names = calloc((size_t)n, sizeof *names);
    cJSON *root = cJSON_CreateObject(), *added = cJSON_CreateArray(), *model = cJSON_CreateObject(),
          *voc = cJSON_CreateObject(), *norm = cJSON_CreateObject(), *pre = cJSON_CreateObject();
    int rc = !names || !root ? emb_fail(err, "out of memory") : vocab(g, label, voc, added, names, n, err);
    int32_t unk = special_id(g, "tokenizer.ggml.unknown_token_id", n, 100),
            cls = special_id(g, "tokenizer.ggml.cls_token_id", n,
                             special_id(g, "tokenizer.ggml.bos_token_id", n, 101)),
            sep = special_id(g, "tokenizer.ggml.seperator_token_id", n,
                             special_id(g, "tokenizer.ggml.eos_token_id", n, 102));
    if (rc == 0 && (unk >= n || cls >= n || sep >= n))
        rc = emb_fail(err, "%s: no [UNK], [CLS] or [SEP] token among its %d", label, n);
    if (rc == 0) {
        cJSON_AddStringToObject(norm, "type", "BertNormalizer");
        cJSON_AddBoolToObject(norm, "clean_text", 1);
        cJSON_AddBoolToObject(norm, "handle_chinese_chars", 1);
        cJSON_AddNullToObject(norm, "strip_accents");
        cJSON_AddBoolToObject(norm, "lowercase", !vocab_is_cased(names, n));
        cJSON_AddStringToObject(pre, "type", "BertPreTokenizer");
        cJSON_AddStringToObject(model, "type", "WordPiece");
        cJSON_AddStringToObject(model, "unk_token", names[unk]);
        cJSON_AddStringToObject(model, "continuing_subword_prefix", "##");
        cJSON_AddNumberToObject(model, "max_input_chars_per_word", 100);
        cJSON_AddItemToObject(model, "vocab", voc);
        voc = NULL;
        cJSON_AddItemToObject(root, "added_tokens", added);
        added = NULL;
        cJSON_AddItemToObject(root, "normalizer", norm);
        cJSON_AddItemToObject(root, "pre_tokenizer", pre);
        norm = pre = NULL;
        cJSON_AddItemToObject(root, "post_processor", template(names[cls], cls, names[sep], sep));
        cJSON_AddItemToObject(root, "model", model);
        model = NULL;
        if (!(*out = cJSON_PrintUnformatted(root))) rc = emb_fail(err, "out of memory");
    }
    for (int32_t i = 0; names && i < n; i++) free(names[i]);
    free(names);
    cJSON_Delete(root), cJSON_Delete(added), cJSON_Delete(model), cJSON_Delete(voc), cJSON_Delete(norm),
        cJSON_Delete(pre);
    return rc;
}

/* A byte-level BPE file (tokenizer.ggml.model "gpt2") as tokenizer.json: the pre-tokenizer that
 * tokenizer.ggml.pre names (qwen2: NFC, then Qwen2's Split regex and ByteLevel, as Qwen's
 * tokenizer.json has it), the tokens by id (control and user-defined ones as added tokens), the
 * merges, and the eos token appended when add_eos_token says so. */
static int bpe_json(const emb_gguf *g, const char *label, char **out, char err[EMB_ERR_LEN]) {
    const emb_gguf_kv *toks = emb_gguf_find(g, "tokenizer.ggml.tokens"),
                      *merges = emb_gguf_find(g, "tokenizer.ggml.merges"),
                      *types = emb_gguf_find(g, "tokenizer.ggml.token_type");
    if (emb_gguf_expect(g, "tokenizer.ggml.pre", "qwen2", label, "pre-tokenizer", err)) return -1;
    if (!toks || toks->type != EMB_GGUF_ARRAY || toks->elem_type != EMB_GGUF_STRING || toks->n < 1 ||
        toks->n > (1u << 24) || !merges || merges->type != EMB_GGUF_ARRAY ||
        merges->elem_type != EMB_GGUF_STRING ||
        (types && (types->type != EMB_GGUF_ARRAY || types->elem_type != EMB_GGUF_I32 || types->n != toks->n)))
        return emb_fail(err, "%s: tokenizer.ggml.tokens, token_type or merges is not a list of the right kind",
                        label);
    int32_t n = (int32_t)toks->n;
    cJSON *root = cJSON_CreateObject(), *added = cJSON_AddArrayToObject(root, "added_tokens"),
          *norm = cJSON_AddObjectToObject(root, "normalizer"),
          *pre = cJSON_AddObjectToObject(root, "pre_tokenizer"), *model = cJSON_AddObjectToObject(root, "model");
    cJSON_AddStringToObject(norm, "type", "NFC");
    cJSON_AddStringToObject(pre, "type", "Sequence");
    cJSON *seq = cJSON_AddArrayToObject(pre, "pretokenizers"), *split = cJSON_CreateObject(),
          *bl = cJSON_CreateObject(), *pat = cJSON_AddObjectToObject(split, "pattern");
    cJSON_AddStringToObject(split, "type", "Split");
    cJSON_AddStringToObject(pat, "Regex", emb_tok_split_regex(SPLIT_QWEN2));
    cJSON_AddStringToObject(split, "behavior", "Isolated");
    cJSON_AddBoolToObject(split, "invert", 0);
    cJSON_AddStringToObject(bl, "type", "ByteLevel");
    cJSON_AddBoolToObject(bl, "add_prefix_space", 0);
    cJSON_AddBoolToObject(bl, "trim_offsets", 0);
    cJSON_AddBoolToObject(bl, "use_regex", 0);
    cJSON_AddItemToArray(seq, split);
    cJSON_AddItemToArray(seq, bl);
    cJSON_AddStringToObject(model, "type", "BPE");
    cJSON *voc = cJSON_AddObjectToObject(model, "vocab"), *mg = cJSON_AddArrayToObject(model, "merges");
    size_t cur = 0;
    char *eos_name = NULL;
    int64_t eos = -1, add_eos = 0;
    emb_gguf_kv_int(emb_gguf_find(g, "tokenizer.ggml.eos_token_id"), &eos);
    emb_gguf_kv_int(emb_gguf_find(g, "tokenizer.ggml.add_eos_token"), &add_eos);
    int rc = 0;
    for (int32_t i = 0; i < n && rc == 0; i++) {
        const char *t;
        size_t len;
        emb_gguf_array_next_string(toks, &cur, &t, &len);
        char *str = len < 4096 && !memchr(t, 0, len) ? strndup(t, len) : NULL;
        if (!str) {
            rc = emb_fail(err, "%s: token %d is too long or holds a NUL byte", label, i);
            break;
        }
        int32_t type = 1;
        if (types) memcpy(&type, types->value + 4 * (size_t)i, 4); /* little-endian host */
        cJSON_AddItemToObject(voc, str, cJSON_CreateNumber(i));
        if (type == TOKEN_CONTROL || type == 4 /* user-defined */) {
            cJSON *a = cJSON_CreateObject();
            cJSON_AddNumberToObject(a, "id", i);
            cJSON_AddStringToObject(a, "content", str);
            cJSON_AddBoolToObject(a, "normalized", type != TOKEN_CONTROL);
            cJSON_AddBoolToObject(a, "special", type == TOKEN_CONTROL);
            cJSON_AddItemToArray(added, a);
        }
        if (i == eos) eos_name = strdup(str);
        free(str);
    }
    cur = 0;
    for (uint64_t i = 0; i < merges->n && rc == 0; i++) {
        const char *t;
        size_t len;
        emb_gguf_array_next_string(merges, &cur, &t, &len);
        char *str = strndup(t, len);
        if (!str || memchr(t, 0, len))
            rc = emb_fail(err, "%s: merge %llu holds a NUL byte", label, (unsigned long long)i);
        else cJSON_AddItemToArray(mg, cJSON_CreateString(str));
        free(str);
    }
    if (rc == 0 && add_eos && !eos_name) rc = emb_fail(err, "%s: add_eos_token without an eos token", label);
    if (rc == 0 && add_eos)
        cJSON_AddItemToObject(root, "post_processor", template(NULL, -1, eos_name, (int32_t)eos));
    if (rc == 0 && !(*out = cJSON_PrintUnformatted(root))) rc = emb_fail(err, "out of memory");
    free(eos_name);
    cJSON_Delete(root);
    return rc;
}

/* {arch}.pooling_type: mean (1, and when absent), CLS (2) or the last token (3); none (0) gives
 * no sentence vector. Rank (4), or no key and a cls.output tensor (llama.cpp's converter writes
 * no pooling_type for a cross-encoder, whose folder has no Pooling module; llama.cpp is told
 * --reranking): a reranker (*rank 1), whose vectors are the mean as a cross-encoder folder's are.
 * Only "bert" files (BERT and XLM-R heads) are read as rerankers. */
static int pooling(const emb_gguf *g, const char *arch, const char *label, emb_pool_mode *pool, int *rank,
                   char err[EMB_ERR_LEN]) {
    int64_t v = 1;
    char key[64];
    snprintf(key, sizeof key, "%s.pooling_type", arch);
    const emb_gguf_kv *kv = emb_gguf_find(g, key);
    if (kv && emb_gguf_kv_int(kv, &v)) return emb_fail(err, "%s: %s is not an integer", label, key);
    *rank = v == 4 || (!kv && emb_gguf_find_tensor(g, "cls.output.weight"));
    if (*rank && strcmp(arch, "bert") != 0)
        return emb_fail(err,
                        "%s: a %s reranker (%s) is not supported: bert files (BERT and XLM-R cross-encoders) "
                        "are",
                        label, arch, v == 4 ? "pooling_type 4, rank" : "a cls.output tensor");
    switch (v) {
    case 1: *pool = EMB_POOL_MEAN; return 0;
    case 2: *pool = EMB_POOL_CLS; return 0;
    case 3: *pool = EMB_POOL_LAST_TOKEN; return 0;
    case 4: *pool = EMB_POOL_MEAN; return 0;
    default:
        return emb_fail(err, "%s: %s %lld (%s) is not supported: mean (1), cls (2), last (3) or rank (4) are",
                        label, key, (long long)v, v == 0 ? "none" : "unknown");
    }
}

/* A reranker's labels: {arch}.classifier.output_labels' count (the converter writes it for a
 * head whose labels are named, as a 1-label head's LABEL_0), else 1, as llama.cpp reads it. */
static int rank_labels(const emb_gguf *g, const char *arch, const char *label, int *labels,
                       char err[EMB_ERR_LEN]) {
    char key[96];
    snprintf(key, sizeof key, "%s.classifier.output_labels", arch);
    const emb_gguf_kv *kv = emb_gguf_find(g, key);
    *labels = 1;
    if (!kv) return 0;
    if (kv->type != EMB_GGUF_ARRAY || kv->elem_type != EMB_GGUF_STRING || kv->n < 1 || kv->n > 65536)
        return emb_fail(err, "%s: %s is not a list of 1 to 65536 strings", label, key);
    *labels = (int)kv->n;
    return 0;
}

/* The file's type as general.file_type names it (llama.cpp's llama_ftype: ALL_F32, MOSTLY_F16,
 * MOSTLY_Q4_0, ...; a K-quant's _S / _M says which tensors its quantizer gave more bits); "mixed"
 * for another or none. */
static const char *file_type(const emb_gguf *g) {
    static const struct {
        int64_t id;
        const char *name;
    } FT[] = {{0, "F32"},     {1, "F16"},   {2, "Q4_0"},    {3, "Q4_1"},    {7, "Q8_0"},
              {8, "Q5_0"},    {9, "Q5_1"},  {14, "Q4_K_S"}, {15, "Q4_K_M"}, {16, "Q5_K_S"},
              {17, "Q5_K_M"}, {18, "Q6_K"}, {32, "BF16"}};
    int64_t ft = -1;
    emb_gguf_kv_int(emb_gguf_find(g, "general.file_type"), &ft);
    for (size_t i = 0; i < sizeof FT / sizeof *FT; i++)
        if (FT[i].id == ft) return FT[i].name;
    return "mixed";
}

/* The tokenizer, pooling, weight type and Dense layers from the file's metadata; a reranker's
 * head: *labels > 0, and *head its architecture's name (by its vocabulary: WordPiece is BERT's,
 * SentencePiece's Unigram XLM-R's). */
static int from_metadata(const char *path, const emb_load_options *opt, emb_tokenizer **tok, emb_pool_mode *pool,
                         const char **weight_type, emb_dense dense[2], int *n_dense, int *vocab_only, int *labels,
                         const char **head, char err[EMB_ERR_LEN]) {
    emb_safetensors *sf;
    emb_gguf g;
    char *json = NULL;
    if (emb_gguf_file_open(path, 1, &sf, &g, err)) return -1;
    const char *m = NULL, *a = NULL;
    size_t mlen = 0, alen = 0;
    int rc = emb_gguf_kv_string(emb_gguf_find(&g, "tokenizer.ggml.model"), &m, &mlen) ||
                     emb_gguf_kv_string(emb_gguf_find(&g, "general.architecture"), &a, &alen) || alen > 32
                 ? emb_fail(err, "%s: no tokenizer.ggml.model or general.architecture", sf->label)
                 : 0;
    char arch[40];
    snprintf(arch, sizeof arch, "%.*s", (int)alen, a ? a : "");
    *vocab_only = g.n_tensors == 0; /* as llama.cpp's ggml-vocab-*.gguf: a tokenizer alone */
    int rank = 0;
    *labels = 0;
    if (rc == 0 && !*vocab_only) rc = pooling(&g, arch, sf->label, pool, &rank, err);
    if (rc == 0 && rank) rc = rank_labels(&g, arch, sf->label, labels, err);
    if (rc == 0 && rank) {
        *head = mlen == 2 && memcmp(m, "t5", 2) == 0 ? "XLMRobertaForSequenceClassification"
                                                     : "BertForSequenceClassification";
        if (!((mlen == 2 && memcmp(m, "t5", 2) == 0) || (mlen == 4 && memcmp(m, "bert", 4) == 0)))
            rc = emb_fail(err,
                          "%s: a reranker with tokenizer '%.*s' is not supported (bert's WordPiece and t5's "
                          "Unigram: BERT and XLM-R cross-encoders are)",
                          sf->label, (int)(mlen > 40 ? 40 : mlen), m);
    }
    *weight_type = file_type(&g);
    if (rc == 0 && mlen == 4 && memcmp(m, "bert", 4) == 0) rc = wordpiece_json(&g, sf->label, &json, err);
    else if (rc == 0 && mlen == 4 && memcmp(m, "gpt2", 4) == 0) rc = bpe_json(&g, sf->label, &json, err);
    else if (rc == 0 && mlen == 2 && memcmp(m, "t5", 2) == 0) rc = emb_gguf_t5_json(&g, sf->label, &json, err);
    else if (rc == 0 && mlen == 5 && memcmp(m, "llama", 5) == 0) rc = emb_gguf_spm_json(&g, sf->label, &json, err);
    else if (rc == 0)
        rc = emb_fail(err,
                      "%s: tokenizer '%.*s' is not read from GGUF yet (bert's WordPiece, gpt2's BPE, t5's "
                      "Unigram and llama's SentencePiece are)",
                      sf->label, (int)(mlen > 40 ? 40 : mlen), m);
    char key[64];
    int64_t hidden = 0;
    snprintf(key, sizeof key, "%s.embedding_length", arch);
    emb_gguf_kv_int(emb_gguf_find(&g, key), &hidden);
    if (rc == 0 && !*vocab_only && hidden > 0 && hidden <= 65536)
        rc = emb_gguf_dense_load(&g, arch, sf->label, (int)hidden, opt->allow_missing_dense, dense, n_dense, err);
    if (rc == 0) rc = emb_tokenizer_from_json(json, strlen(json), tok, err);
    free(json);
    emb_gguf_free(&g);
    emb_safetensors_close(sf);
    return rc;
}

int emb_model_gguf_load(const char *path, const emb_load_options *opt, emb_tokenizer **tok, emb_encoder **enc,
                        emb_classifier **cls, emb_pool_mode *pool, const char **weight_type, emb_dense dense[2],
                        int *n_dense, char err[EMB_ERR_LEN]) {
    *tok = NULL;
    *enc = NULL;
    *cls = NULL;
    *n_dense = 0;
    int vocab_only = 0, labels = 0;
    const char *head = NULL;
    if (from_metadata(path, opt, tok, pool, weight_type, dense, n_dense, &vocab_only, &labels, &head, err)) {
        emb_tokenizer_free(*tok);
        *tok = NULL;
        for (int i = 0; i < *n_dense; i++) emb_dense_free(&dense[i]);
        *n_dense = 0;
        return -1;
    }
    if (vocab_only) return 0;
    if (emb_encoder_load_open(path, opt->mmap, enc, err) == 0) {
        /* the head's tensors, and the Q8_0 blocks that set_weights packs, are read before the file closes */
        int rc = labels ? emb_classifier_load_gguf(*enc, head, labels, cls, err) : 0;
        if (rc) {
            char why[EMB_ERR_LEN];
            snprintf(why, sizeof why, "%s", err);
            emb_fail(err, "%s: %s", path, why);
        } else {
            rc = emb_encoder_set_weights(*enc, opt->weights, err);
        }
        emb_encoder_close_unused(*enc);
        if (rc == 0) return 0;
    }
    emb_classifier_free(*cls);
    *cls = NULL;
    emb_encoder_free(*enc);
    emb_tokenizer_free(*tok);
    for (int i = 0; i < *n_dense; i++) emb_dense_free(&dense[i]);
    *enc = NULL;
    *tok = NULL;
    *n_dense = 0;
    return -1;
}
