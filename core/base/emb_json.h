/* JSON helpers shared by the readers of model files: integers read without undefined casts,
 * and JSON files read through the one file reader (file.h). */
#ifndef EMBED_EMB_JSON_H
#define EMBED_EMB_JSON_H
#include <stddef.h>
#include <stdint.h>
#include <cjson/cJSON.h>
#include "base/emb_common.h"

/* The most bytes a JSON settings file of a model folder (config.json, tokenizer_config.json,
 * the sentence-transformers files) may have. */
#define EMB_CONFIG_MAX_BYTES (16u << 20)

/* 0 and *out when j is a JSON number that is an integer in [lo, hi] (|lo|, |hi| <= 2^53),
 * else -1: no float-to-int cast of a number that does not fit. */
int emb_json_int(const cJSON *j, int64_t lo, int64_t hi, int64_t *out);

/* Reads the JSON file at path (at most max_bytes) into *root (any JSON value; the caller
 * checks its type and frees it). Errors name the file. */
int emb_json_read_file(const char *path, size_t max_bytes, cJSON **root, char err[EMB_ERR_LEN]);

#endif
