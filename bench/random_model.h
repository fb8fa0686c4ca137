/* A random-weight BERT checkpoint for the benchmarks: config.json and model.safetensors
 * (F32, the tensor names and shapes of Hugging Face's BertModel, vocabulary 30522,
 * 512 positions), the same weights on every call with the same sizes. */
#ifndef BENCH_RANDOM_MODEL_H
#define BENCH_RANDOM_MODEL_H

/* Writes the model into dir (created if missing). with_tokenizer: also the tokenizer and
 * sentence-transformers files of tests/fixtures/models/minilm-tiny-st (mean pooling,
 * normalised, as all-MiniLM-L6-v2), so that emb_model_load and embed_load() take the
 * folder; those paths are relative to the repository root. Returns 0, or nonzero after a
 * message on stderr. */
int bench_random_model_write(const char *dir, int hidden, int layers, int heads, int intermediate,
                             int with_tokenizer);

#endif
