"""The references that gguf_llama_rank.mjs holds llama.cpp's reranker scores to, for one model of
tests/references/rerank/expected.json: each pair Hugging Face did not truncate, with Hugging
Face's logit. llama.cpp gives every token type id 0 (it has no segments), where BERT's pair gives
the text type id 1: for a BERT file the logit llama.cpp is held to is the extension's own on the
same file with type ids 0 ("query [SEP] text" scored as one sequence, which the post-processor
makes [CLS] query [SEP] text [SEP], all type 0; the ids are checked to be the pair's), whose pair
scores equal Hugging Face's (tests/sql/test_gguf_rerank.py). XLM-R's pairs are all type 0, so its
reference is Hugging Face's logit itself.
Usage: EMBED_EXT=embed.so gguf_rank_refs.py EXPECTED.json MODEL FILE.gguf OUT.json"""
import json
import os
import sqlite3
import sys

exp_path, model, gguf, out = sys.argv[1:]
exp = json.load(open(exp_path, encoding="utf-8"))
con = sqlite3.connect(":memory:")
con.enable_load_extension(True)
con.load_extension(os.path.abspath(os.environ.get("EMBED_EXT", "embed.so")))
con.execute("SELECT embed_load('m', ?)", (gguf,))
bert = exp["models"][model]["architecture"].startswith("Bert")
cases = []
for c in exp["cases"]:
    if c["model"] != model or c["truncated"]:
        continue
    r = {"query": c["query"], "text": c["text"], "tokens": c["tokens"], "hf_logit": c["logits"][0],
         "logit": c["logits"][0]}
    if bert:
        one = c["query"] + (" [SEP] " + c["text"] if c["text"] else "")
        ids = json.loads(con.execute("SELECT embed_token_ids('m', ?)", (one,)).fetchone()[0])
        pair = json.loads(con.execute("SELECT embed_token_ids('m', ?, ?)", (c["query"], c["text"])).fetchone()[0])
        if c["text"] and ids != pair:  # an empty text: the query alone, as transformers and embed_rerank take it
            sys.exit("gguf_rank_refs.py: %r as one sequence is not the pair's ids" % one)
        r["logit"] = con.execute("SELECT embed_rerank('m', ?, '', '{\"activation\": \"none\"}')", (one,)).fetchone()[0]
    cases.append(r)
json.dump({"model": model, "type_ids_zero": bert, "cases": cases}, open(out, "w"), indent=1)
