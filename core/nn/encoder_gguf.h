/* A GGUF file (llama.cpp's format) as a checkpoint for the encoder: encoder_gguf.c. */
#ifndef EMBED_ENCODER_GGUF_H
#define EMBED_ENCODER_GGUF_H
#include "nn/encoder_config.h"
#include "nn/safetensors.h"

#include "nn/gguf.h"

/* 1 if path names a .gguf file (by its name). */
int emb_gguf_path(const char *path);
/* path mapped (or read) and parsed: *sf holds the bytes, g points into them; the caller frees g
 * (emb_gguf_free) and closes sf. -1 with err naming the file. */
int emb_gguf_file_open(const char *path, int use_mmap, emb_safetensors **sf, emb_gguf *g, char err[EMB_ERR_LEN]);
/* 0 when the string key equals want; else an error naming the file: "<what> '<value>' is not read
 * from GGUF yet (<want> is)", or that the key is missing. */
int emb_gguf_expect(const emb_gguf *g, const char *key, const char *want, const char *label, const char *what,
                    char err[EMB_ERR_LEN]);
/* Opens path: its metadata read into cfg through the config.json that the architecture's reader
 * takes (so that every check of a Hugging Face config applies), and its tensors as *file, named
 * as Hugging Face names them (F32, F16 and BF16 used in place; ggml's block types Q4_0 ... Q6_K
 * kept as blocks, widened to float32 tensor by tensor as the loaders take them: nn/gguf_quant.h).
 * BERT ("bert") and Qwen3 ("qwen3") so far; another architecture, a weight type not read yet,
 * or a causal BERT is an error naming the file. */
int emb_encoder_gguf_open(const char *path, int use_mmap, emb_encoder_config *cfg, emb_safetensors **file,
                          char err[EMB_ERR_LEN]);
#endif
