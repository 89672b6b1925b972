#!/usr/bin/env python3
"""Expected logits of the tiny 4-bit MLX fixtures, from two independent float32 implementations.

For each fixture in Tests/Fixtures (tiny-phi3.5-4bit, tiny-phi4-mini-4bit) the 4-bit weights are
dequantized with mlx (w = scale * q + bias, computed in float32), then run on a fixed sequence of ids by
  * transformers (Phi3ForCausalLM, float32): at a context of 4096 it uses LongRoPE's short factors;
  * mlx-lm (phi3 model, float32): it always uses the long factors (a context above 4096 for us).
Written to Tests/Fixtures/reference-logits/<fixture>.json: the ids, then per implementation and per
position the logits at `probe_ids` (a fixed subset of the vocabulary), the argmax id and the
log-sum-exp over the whole vocabulary.

    pip install torch transformers mlx mlx-lm numpy
    python3 Scripts/reference/make_reference_logits.py
"""
import json
import pathlib

import mlx.core as mx
import numpy as np
import torch
import transformers
from mlx_lm.models import phi3 as mlx_phi3

ROOT = pathlib.Path(__file__).resolve().parents[2]
FIXTURES = ROOT / "Tests" / "Fixtures"
OUTPUT = FIXTURES / "reference-logits"
IDS = [1, 450, 7483, 310, 3444, 338, 3681, 29889, 32010, 13, 1576, 29871, 31999, 2, 100, 5000]
PROBES = 192


def dequantized_weights(directory, config):
    """All tensors of the checkpoint as float32 numpy arrays, quantized ones dequantized."""
    raw = {}
    for path in sorted(directory.glob("*.safetensors")):
        raw.update(mx.load(str(path)))
    quantization = config["quantization"]
    weights = {}
    for name, value in raw.items():
        if name.endswith(".scales") or name.endswith(".biases"):
            continue
        prefix = name[: -len(".weight")]
        if prefix + ".scales" in raw:
            # Scales and biases in float32 first: mx.dequantize computes in their dtype (bfloat16 here).
            value = mx.dequantize(value, raw[prefix + ".scales"].astype(mx.float32),
                                  raw[prefix + ".biases"].astype(mx.float32),
                                  group_size=quantization["group_size"], bits=quantization["bits"])
        weights[name] = np.array(value.astype(mx.float32))
    return weights


def transformers_logits(config, weights):
    hf_config = {k: v for k, v in config.items() if k not in ("quantization", "quantization_config")}
    hf_config["torch_dtype"] = "float32"
    model = transformers.Phi3ForCausalLM(transformers.Phi3Config(**hf_config)).float().eval()
    state = {k: torch.from_numpy(v.copy()) for k, v in weights.items()}
    if config.get("tie_word_embeddings"):
        state["lm_head.weight"] = state["model.embed_tokens.weight"]
    missing, unexpected = model.load_state_dict(state, strict=False)
    assert not unexpected and all("rotary" in m for m in missing), (missing, unexpected)
    with torch.no_grad():
        return model(torch.tensor([IDS])).logits[0].numpy().astype(np.float64)


def mlx_logits(config, weights):
    args = {k: v for k, v in config.items() if k not in ("quantization", "quantization_config")}
    model = mlx_phi3.Model(mlx_phi3.ModelArgs.from_dict(args))
    model.load_weights([(k, mx.array(v)) for k, v in weights.items()], strict=False)
    model.set_dtype(mx.float32)
    logits = model(mx.array([IDS]))[0].astype(mx.float32)
    return np.array(logits).astype(np.float64)


def summary(logits, probe_ids):
    peak = logits.max(axis=1)
    logsumexp = peak + np.log(np.exp(logits - peak[:, None]).sum(axis=1))
    return {
        "probe_logits": [[round(float(v), 6) for v in row[probe_ids]] for row in logits],
        "argmax": [int(i) for i in logits.argmax(axis=1)],
        "logsumexp": [round(float(v), 6) for v in logsumexp],
    }


def main():
    OUTPUT.mkdir(parents=True, exist_ok=True)
    for name in ("tiny-phi3.5-4bit", "tiny-phi4-mini-4bit"):
        directory = FIXTURES / name
        config = json.loads((directory / "config.json").read_text())
        weights = dequantized_weights(directory, config)
        rng = np.random.default_rng(1234)
        probe_ids = sorted(set(range(32)) | set(int(i) for i in rng.choice(config["vocab_size"], PROBES, replace=False)))
        hf = transformers_logits(config, weights)
        ml = mlx_logits(config, weights)
        probe_ids = sorted(set(probe_ids) | set(int(i) for i in hf.argmax(axis=1)) | set(int(i) for i in ml.argmax(axis=1)))
        result = {
            "fixture": name,
            "ids": IDS,
            "probe_ids": probe_ids,
            "transformers_context_4096": summary(hf, probe_ids),
            "mlx_lm_long_factors": summary(ml, probe_ids),
            "versions": {"transformers": transformers.__version__, "torch": torch.__version__,
                         "mlx": mx.__version__},
        }
        (OUTPUT / f"{name}.json").write_text(json.dumps(result, indent=0) + "\n")
        print(name, "max |transformers - mlx| =", float(np.abs(hf - ml).max()))


if __name__ == "__main__":
    main()
