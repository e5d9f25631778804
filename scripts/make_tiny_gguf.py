"""Writes a tiny llama-architecture GGUF model for the llamacpp backend's tests (docs/llm.md).

Random weights from a fixed seed, so the same command always writes the same bytes: two layers, 64-wide
embeddings, a small SentencePiece-style vocabulary (control tokens, printable ASCII, some words with the
SentencePiece space marker, and the 256 byte-fallback tokens so any text tokenizes). The output rows of
the control and byte tokens are zero while the others are random and large, so greedy decoding (and, all
but surely, sampling) emits printable ASCII and never the end-of-sequence token: a generation runs until
max_tokens or a stop string, which is what the tests count on.

`--chat-template TEXT` writes `tokenizer.chat_template` into the metadata (the OpenAI frontend's chat
template from the GGUF); `--pooling mean` makes it an embedding model (`llama.pooling_type`), same weights.
`--sliding-window N` writes a Gemma 3 architecture model instead (query/key norms, four norms per block,
every layer but the last attending to only the last N positions), so llama.cpp keeps a sliding-window KV
cache for it: the backend's prefix reuse has a separate path for those (src/backends/llamacpp/engine.ts).

Run with the interpreter of the cached venv scripts/setup-llm-models.sh makes (it has `gguf`):
    python scripts/make_tiny_gguf.py OUT.gguf [--seed N] [--context N] [--chat-template T] [--pooling mean]
                                              [--sliding-window N]
"""

from __future__ import annotations

import argparse
import sys

import numpy as np
from gguf import GGUFWriter, PoolingType, TokenType

N_EMBD = 64
N_LAYER = 2
N_HEAD = 4
N_HEAD_KV = 2
N_FF = 128
WORDS = [
    "the",
    "a",
    "model",
    "server",
    "token",
    "river",
    "stone",
    "light",
    "blue",
    "green",
    "small",
    "quiet",
    "learning",
    "machine",
    "is",
    "of",
    "and",
    "to",
]


def vocabulary() -> tuple[list[str], list[float], list[int]]:
    tokens: list[str] = ["<unk>", "<s>", "</s>"]
    types: list[int] = [TokenType.UNKNOWN, TokenType.CONTROL, TokenType.CONTROL]
    for b in range(256):
        tokens.append(f"<0x{b:02X}>")
        types.append(TokenType.BYTE)
    normal: list[str] = ["\u2581"]
    normal += [chr(c) for c in range(33, 127)]
    normal += ["\u2581" + w for w in WORDS]
    tokens += normal
    types += [TokenType.NORMAL] * len(normal)
    # SentencePiece scores: longer pieces first when the tokenizer merges.
    scores = [0.0] * (3 + 256) + [float(len(t)) - 10.0 for t in normal]
    return tokens, scores, types


def write(
    path: str,
    seed: int,
    context: int,
    chat_template: str | None = None,
    pooling: str | None = None,
    sliding_window: int | None = None,
) -> None:
    rng = np.random.default_rng(seed)
    tokens, scores, types = vocabulary()
    n_vocab = len(tokens)
    head_dim = N_EMBD // N_HEAD

    def mat(rows: int, cols: int, scale: float) -> np.ndarray:
        return (rng.standard_normal((rows, cols)) * scale).astype(np.float32)

    arch = "llama" if sliding_window is None else "gemma3"
    w = GGUFWriter(path, arch)
    w.add_name(f"nereid-tiny-{arch}")
    w.add_context_length(context)
    w.add_embedding_length(N_EMBD)
    w.add_block_count(N_LAYER)
    w.add_feed_forward_length(N_FF)
    w.add_head_count(N_HEAD)
    w.add_head_count_kv(N_HEAD_KV)
    w.add_layer_norm_rms_eps(1e-5)
    w.add_rope_dimension_count(head_dim)
    if sliding_window is not None:
        w.add_key_length(head_dim)
        w.add_value_length(head_dim)
        w.add_sliding_window(sliding_window)
        # One flag per layer, true = sliding window: all but the last, which attends to everything.
        w.add_sliding_window_pattern([i < N_LAYER - 1 for i in range(N_LAYER)])
    w.add_vocab_size(n_vocab)
    w.add_file_type(0)  # all F32
    w.add_tokenizer_model("llama")
    w.add_token_list(tokens)
    w.add_token_scores(scores)
    w.add_token_types(types)
    w.add_unk_token_id(0)
    w.add_bos_token_id(1)
    w.add_eos_token_id(2)
    w.add_add_bos_token(True)
    w.add_add_eos_token(False)
    if chat_template is not None:
        w.add_chat_template(chat_template)
    if pooling == "mean":
        w.add_pooling_type(PoolingType.MEAN)

    w.add_tensor("token_embd.weight", mat(n_vocab, N_EMBD, 0.5))
    w.add_tensor("output_norm.weight", np.ones(N_EMBD, dtype=np.float32))
    out = mat(n_vocab, N_EMBD, 1.0)
    out[: 3 + 256] = 0.0  # control and byte tokens never win (module docstring)
    w.add_tensor("output.weight", out)
    kv = N_HEAD_KV * head_dim
    for i in range(N_LAYER):
        w.add_tensor(f"blk.{i}.attn_norm.weight", np.ones(N_EMBD, dtype=np.float32))
        w.add_tensor(f"blk.{i}.attn_q.weight", mat(N_EMBD, N_EMBD, 0.2))
        w.add_tensor(f"blk.{i}.attn_k.weight", mat(kv, N_EMBD, 0.2))
        w.add_tensor(f"blk.{i}.attn_v.weight", mat(kv, N_EMBD, 0.2))
        w.add_tensor(f"blk.{i}.attn_output.weight", mat(N_EMBD, N_EMBD, 0.2))
        w.add_tensor(f"blk.{i}.ffn_norm.weight", np.ones(N_EMBD, dtype=np.float32))
        w.add_tensor(f"blk.{i}.ffn_gate.weight", mat(N_FF, N_EMBD, 0.2))
        w.add_tensor(f"blk.{i}.ffn_up.weight", mat(N_FF, N_EMBD, 0.2))
        w.add_tensor(f"blk.{i}.ffn_down.weight", mat(N_EMBD, N_FF, 0.2))
        if sliding_window is not None:
            w.add_tensor(f"blk.{i}.attn_q_norm.weight", np.ones(head_dim, dtype=np.float32))
            w.add_tensor(f"blk.{i}.attn_k_norm.weight", np.ones(head_dim, dtype=np.float32))
            w.add_tensor(f"blk.{i}.post_attention_norm.weight", np.ones(N_EMBD, dtype=np.float32))
            w.add_tensor(f"blk.{i}.post_ffw_norm.weight", np.ones(N_EMBD, dtype=np.float32))

    w.write_header_to_file()
    w.write_kv_data_to_file()
    w.write_tensors_to_file()
    w.close()


def main(argv: list[str]) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("out")
    parser.add_argument("--seed", type=int, default=20261202)
    parser.add_argument("--context", type=int, default=512, help="the model's trained context length")
    parser.add_argument("--chat-template", default=None, help="tokenizer.chat_template (Jinja)")
    parser.add_argument("--pooling", choices=["mean"], default=None, help="an embedding model's pooling")
    parser.add_argument(
        "--sliding-window", type=int, default=None, help="a Gemma 3 model with this attention window"
    )
    args = parser.parse_args(argv)
    write(args.out, args.seed, args.context, args.chat_template, args.pooling, args.sliding_window)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
