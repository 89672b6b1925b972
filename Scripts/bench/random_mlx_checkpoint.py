#!/usr/bin/env python3
"""Writes a Phi-3.5-mini-shaped MLX checkpoint with random 4- or 8-bit weights, for speed checks
of models that `phi-gpu bench model --random` does not synthesize (8-bit weights) and for
comparing greedy ids across kernel paths on a real-size model.

    python3 -m pip install numpy
    python3 Scripts/bench/random_mlx_checkpoint.py /tmp/phi8 --bits 8 --tokenizer ../shared/assets/phi3
    phi-gpu bench model --model /tmp/phi8 -p 0 -n 128 -r 3

Shapes and rope settings come from Tests/Fixtures/tiny-phi3.5-4bit/config.json, widened to
Phi-3.5-mini's (hidden 3072, intermediate 8192, 32 heads, 32 layers). Packed words are uniform
random; each group of 64 gets a scale near 0.004 · 15 / (2^bits − 1) and the bias that centres its
values on 0, so that activations stay in range. The tokenizer files are copied from --tokenizer.
About 2.1 GB at 4 bits and 4.1 GB at 8 bits; a few seconds to write.
"""
import argparse
import json
import os
import shutil
import struct

import numpy as np

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
FIXTURE = os.path.join(ROOT, "Tests", "Fixtures", "tiny-phi3.5-4bit")
HIDDEN, INTERMEDIATE, VOCAB, LAYERS, GROUP = 3072, 8192, 32064, 32, 64


def bf16(values):
    """The upper halves of Float32 values, as bfloat16 bits."""
    return (np.asarray(values, np.float32).view(np.uint32) >> 16).astype(np.uint16)


def main():
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("output", help="directory to write (created)")
    parser.add_argument("--bits", type=int, choices=[4, 8], default=4)
    parser.add_argument("--tokenizer", required=True, help="directory with tokenizer.json and tokenizer_config.json")
    parser.add_argument("--seed", type=int, default=7)
    args = parser.parse_args()

    os.makedirs(args.output, exist_ok=True)
    config = json.load(open(os.path.join(FIXTURE, "config.json")))
    config["quantization"] = config["quantization_config"] = {"group_size": GROUP, "bits": args.bits, "mode": "affine"}
    config.update(hidden_size=HIDDEN, intermediate_size=INTERMEDIATE, num_attention_heads=32, num_key_value_heads=32,
                  num_hidden_layers=LAYERS)
    rotary_half = HIDDEN // 32 // 2
    config["rope_scaling"]["long_factor"] = list(np.linspace(1, 40, rotary_half))
    config["rope_scaling"]["short_factor"] = list(np.linspace(1, 1.2, rotary_half))
    json.dump(config, open(os.path.join(args.output, "config.json"), "w"), indent=2)
    shutil.copy(os.path.join(FIXTURE, "generation_config.json"), args.output)
    for name in ["tokenizer.json", "tokenizer_config.json"]:
        shutil.copy(os.path.join(args.tokenizer, name), args.output)

    rng = np.random.default_rng(args.seed)
    tensors = {}  # name: (dtype, shape, array)
    per_word = 32 // args.bits
    levels = (1 << args.bits) - 1

    def quantized(name, rows, columns, scale=0.004):
        tensors[name + ".weight"] = ("U32", [rows, columns // per_word],
                                     rng.integers(0, 2**32, (rows, columns // per_word), dtype=np.uint32))
        scales = rng.uniform(0.75, 1.25, (rows, columns // GROUP)).astype(np.float32) * scale * 15 / levels
        tensors[name + ".scales"] = ("BF16", [rows, columns // GROUP], bf16(scales))
        tensors[name + ".biases"] = ("BF16", [rows, columns // GROUP], bf16(-levels / 2 * scales))

    quantized("model.embed_tokens", VOCAB, HIDDEN, 0.01)
    quantized("lm_head", VOCAB, HIDDEN)
    tensors["model.norm.weight"] = ("BF16", [HIDDEN], bf16(np.ones(HIDDEN)))
    for layer in range(LAYERS):
        prefix = f"model.layers.{layer}."
        quantized(prefix + "self_attn.qkv_proj", 3 * HIDDEN, HIDDEN)
        quantized(prefix + "self_attn.o_proj", HIDDEN, HIDDEN)
        quantized(prefix + "mlp.gate_up_proj", 2 * INTERMEDIATE, HIDDEN)
        quantized(prefix + "mlp.down_proj", HIDDEN, INTERMEDIATE, 0.003)
        for norm in ["input_layernorm", "post_attention_layernorm"]:
            tensors[prefix + norm + ".weight"] = ("BF16", [HIDDEN], bf16(np.ones(HIDDEN)))

    header, offset = {"__metadata__": {"format": "mlx"}}, 0
    for name, (dtype, shape, array) in tensors.items():
        header[name] = {"dtype": dtype, "shape": shape, "data_offsets": [offset, offset + array.nbytes]}
        offset += array.nbytes
    encoded = json.dumps(header).encode()
    encoded += b" " * (-len(encoded) % 8)
    with open(os.path.join(args.output, "model.safetensors"), "wb") as file:
        file.write(struct.pack("<Q", len(encoded)))
        file.write(encoded)
        for _, (_, _, array) in tensors.items():
            file.write(np.ascontiguousarray(array).tobytes())
    print(f"wrote {offset / 1e9:.2f} GB of {args.bits}-bit weights to {args.output}")


if __name__ == "__main__":
    main()
