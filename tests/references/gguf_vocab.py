"""A tokenizer folder written as a vocabulary-only GGUF file, as llama.cpp keeps its
models/ggml-vocab-*.gguf: the general.* keys and the tokenizer.ggml.* keys its converter writes,
no tensors. "bert" writes a WordPiece folder's vocabulary as gguf_bert.py does (arch bert), "qwen2"
a byte-level BPE folder's as gguf_decoder.py does (arch qwen3, pre qwen2). Plain Python
(tests/sql/test_gguf_tokenizers.py writes its files with it).
Usage: gguf_vocab.py TOKENIZER_DIR OUT.gguf bert|qwen2|t5"""
import os
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from gguf_bert import vocab as bert_vocab  # noqa: E402
from gguf_decoder import qwen_vocab  # noqa: E402
from gguf_layout import ALIGN, STR, U32, kv, write_file  # noqa: E402
from gguf_xlmr import t5_vocab  # noqa: E402


def write(src, dst, kind):
    arch, tokenizer = {"bert": lambda: ("bert", bert_vocab(src)[0]), "qwen2": lambda: ("qwen3", qwen_vocab(src)),
                       "t5": lambda: ("bert", t5_vocab(src)[0])}[kind]()
    kvs = [kv("general.architecture", STR, arch), kv("general.name", STR, os.path.basename(src.rstrip("/"))),
           kv("general.alignment", U32, ALIGN)] + tokenizer
    write_file(dst, kvs, [])


if __name__ == "__main__":
    if len(sys.argv) != 4 or sys.argv[3] not in ("bert", "qwen2", "t5"):
        sys.exit("usage: gguf_vocab.py TOKENIZER_DIR OUT.gguf bert|qwen2|t5")
    write(*sys.argv[1:])
