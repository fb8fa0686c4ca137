/* Prompts of a sentence-transformers folder (config_sentence_transformers.json): named texts put
 * before the input ("query: ", "Instruct: ...\nQuery:"), and the one used by default. */
#ifndef EMBED_PROMPTS_H
#define EMBED_PROMPTS_H
#include <stddef.h>
#include "base/emb_common.h"

#define EMB_PROMPTS_MAX 64 /* prompts a folder may name */
#define EMB_PROMPT_MAX_BYTES 65536

typedef struct {
    int n;
    char *name[EMB_PROMPTS_MAX], *text[EMB_PROMPTS_MAX];
    int default_index; /* default_prompt_name's prompt, or -1 */
    char *json; /* {"name": "text", ...} for display, or NULL when there are none */
} emb_prompts;

/* Reads dir/config_sentence_transformers.json when present (else no prompts, no error). */
int emb_prompts_load(const char *dir, emb_prompts *p, char err[EMB_ERR_LEN]);
void emb_prompts_free(emb_prompts *p);
/* The text of the prompt called name, or NULL. */
const char *emb_prompts_find(const emb_prompts *p, const char *name);
/* The first of names[0..n) the folder defines, or NULL. */
const char *emb_prompts_first(const emb_prompts *p, const char *const *names, int n);
#endif
