"""The reference tokenizers (Hugging Face `tokenizers`, the Rust library) for the fixtures and the benchmark.

Phi-3.5 and Phi-4-mini: their tokenizer.json from the shared assets.
SmolLM2: no tokenizer.json is available offline, so it is rebuilt from the GGUF's vocabulary with
`tokenizers`: BPE over `tokenizer.ggml.tokens`/`merges`, the pre-tokenizer SmolLM2's published
tokenizer.json uses (Digits(individual_digits=True) then ByteLevel(add_prefix_space=False,
use_regex=True), which is what llama.cpp's `tokenizer.ggml.pre = smollm` stands for), a ByteLevel
decoder, and the GGUF's control tokens (type 3) as special added tokens.
"""
import os
import pathlib

from tokenizers import AddedToken, Tokenizer, decoders, models, pre_tokenizers

ROOT = pathlib.Path(__file__).resolve().parents[2]
ASSETS = pathlib.Path(os.environ.get("PHI_GPU_ASSETS", ROOT.parent / "shared" / "assets"))
SMOLLM2 = pathlib.Path(os.environ.get("PHI_GPU_SMOLLM2", ROOT / ".models" / "SmolLM2-135M-Instruct.Q4_1.gguf"))


def gguf_fields(path):
    from gguf import GGUFReader
    reader = GGUFReader(str(path))
    return {key: field.contents() for key, field in reader.fields.items() if key.startswith("tokenizer.")}


def smollm2_tokenizer():
    fields = gguf_fields(SMOLLM2)
    assert fields["tokenizer.ggml.model"] == "gpt2" and fields["tokenizer.ggml.pre"] == "smollm"
    tokens = fields["tokenizer.ggml.tokens"]
    types = fields["tokenizer.ggml.token_type"]
    vocab = {token: i for i, token in enumerate(tokens)}
    merges = [tuple(m.split(" ", 1)) for m in fields["tokenizer.ggml.merges"]]
    tok = Tokenizer(models.BPE(vocab=vocab, merges=merges, ignore_merges=False))
    tok.pre_tokenizer = pre_tokenizers.Sequence([
        pre_tokenizers.Digits(individual_digits=True),
        pre_tokenizers.ByteLevel(add_prefix_space=False, use_regex=True),
    ])
    tok.decoder = decoders.ByteLevel()
    tok.add_special_tokens([AddedToken(t, special=True, normalized=False)
                            for t, kind in zip(tokens, types) if kind == 3])
    return tok, fields


def load(name):
    """(tokenizer, chat template text, bos, eos) for "phi3", "phi4mini" or "smollm2"."""
    import json
    if name == "smollm2":
        tok, fields = smollm2_tokenizer()
        tokens = fields["tokenizer.ggml.tokens"]
        return (tok, fields["tokenizer.chat_template"], tokens[fields["tokenizer.ggml.bos_token_id"]],
                tokens[fields["tokenizer.ggml.eos_token_id"]])
    tok = Tokenizer.from_file(str(ASSETS / name / "tokenizer.json"))
    config = json.loads((ASSETS / name / "tokenizer_config.json").read_text())
    return tok, config["chat_template"], config["bos_token"], config["eos_token"]
