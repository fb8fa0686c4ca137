"""The ONNX graph of bench_rerank's cross-encoder for ONNX Runtime (bench/peers/ort_rerank.js):
transformers' BertForSequenceClassification (BERT with token types, the pooler, the classifier)
written in PyTorch from the same weights (encoder.safetensors, head.safetensors of the folder
bench_rerank --write made), exported with dynamic batch and length, inputs input_ids,
attention_mask and token_type_ids, output logits [B, 1].
Usage: /usr/bin/python3 rerank_onnx.py DIR (the folder with config.json)"""
import json, os, sys
import torch
import torch.nn as nn

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
sys.path.insert(0, os.path.join(HERE, "..", "..", "tests", "references"))
from torch_encoder import load_safetensors  # noqa: E402
from make_rerank import PairBert  # noqa: E402 (the reference's BERT with types and a mask)


class CrossEncoder(nn.Module):
    def __init__(self, cfg, w):
        super().__init__()
        self.enc = PairBert(cfg, w, roberta=False)
        for k in ("pooler.dense.weight", "pooler.dense.bias", "classifier.weight", "classifier.bias"):
            self.register_buffer(k.replace(".", "_"), w[k])

    def forward(self, input_ids, attention_mask, token_type_ids):
        h = self.enc(input_ids, token_type_ids, attention_mask)[:, 0]
        pooled = torch.tanh(h @ self.pooler_dense_weight.T + self.pooler_dense_bias)
        return pooled @ self.classifier_weight.T + self.classifier_bias


def main():
    d = sys.argv[1]
    cfg = json.load(open(os.path.join(d, "config.json")))
    w = load_safetensors(os.path.join(d, "encoder.safetensors"))
    w.update(load_safetensors(os.path.join(d, "head.safetensors")))
    m = CrossEncoder(cfg, w).eval()
    ids = torch.ones(2, 8, dtype=torch.int64)
    with torch.no_grad():
        torch.onnx.export(m, (ids, torch.ones_like(ids), torch.zeros_like(ids)), os.path.join(d, "model.onnx"),
                          input_names=["input_ids", "attention_mask", "token_type_ids"], output_names=["logits"],
                          dynamic_axes={k: {0: "b", 1: "t"} for k in ("input_ids", "attention_mask", "token_type_ids")},
                          opset_version=14)
    print("wrote", os.path.join(d, "model.onnx"))


if __name__ == "__main__":
    main()
