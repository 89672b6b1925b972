#!/usr/bin/env python3
"""Expected outputs of `phi-gpu generate --json` and `phi-gpu score --json` on the tiny Phi-3.5 fixture.

The fixture's 4-bit weights are dequantized as in make_reference_logits.py and run by transformers
(Phi3ForCausalLM, float32, context 4096: LongRoPE short factors). The prompt is the Phi-3.5 chat
template of a system and a user message, tokenized with ../shared/assets/phi3/tokenizer.json
(the fixture ships without tokenizer files). Written to Tests/Fixtures/cli/tiny-phi3.5-4bit.json:
  * generate: prompt ids and the greedy answer ids (stopping at the fixture's EOS ids), with the
    smallest gap between the best and second-best logit along the way (how robust greedy is);
  * score: the perplexity of make_reference_logits.IDS.

    pip install torch transformers mlx mlx-lm numpy tokenizers
    python3 Scripts/reference/make_cli_references.py
"""
import json
import pathlib
import sys

import numpy as np
import tokenizers
import torch
import transformers

sys.path.insert(0, str(pathlib.Path(__file__).resolve().parent))
import make_reference_logits as reference  # noqa: E402

ROOT = pathlib.Path(__file__).resolve().parents[2]
FIXTURE = ROOT / "Tests" / "Fixtures" / "tiny-phi3.5-4bit"
ASSETS = ROOT.parent / "shared" / "assets" / "phi3"
OUTPUT = ROOT / "Tests" / "Fixtures" / "cli" / "tiny-phi3.5-4bit.json"
SYSTEM = "You are a helpful assistant."
# The first of these questions whose greedy answer never has a top-2 logit gap below MIN_GAP.
QUESTIONS = ["What is the capital of France?", "Hello!", "Tell me a joke.", "How are you?", "Name a colour.",
             "Count to five.", "What is 2+2?", "Say something.", "Why is the sky blue?", "Write a poem."]
MAX_TOKENS = 8
MIN_GAP = 0.005


def greedy(model, prompt_ids, eos):
    """Greedy answer ids after `prompt_ids` and the top-2 logit gap at each step."""
    ids = list(prompt_ids)
    answer, gaps = [], []
    for _ in range(MAX_TOKENS):
        logits = model(torch.tensor([ids])).logits[0, -1].numpy().astype(np.float64)
        order = np.argsort(-logits)
        gaps.append(float(logits[order[0]] - logits[order[1]]))
        token = int(order[0])
        if token in eos:
            break
        answer.append(token)
        ids.append(token)
    return answer, gaps


def main():
    config = json.loads((FIXTURE / "config.json").read_text())
    eos = json.loads((FIXTURE / "generation_config.json").read_text())["eos_token_id"]
    eos = set(eos if isinstance(eos, list) else [eos]) | {32007}  # <|end|>, the template's end of turn
    weights = reference.dequantized_weights(FIXTURE, config)
    hf_config = {k: v for k, v in config.items() if k not in ("quantization", "quantization_config")}
    model = transformers.Phi3ForCausalLM(transformers.Phi3Config(**hf_config)).float().eval()
    state = {k: torch.from_numpy(v.copy()) for k, v in weights.items()}
    model.load_state_dict(state, strict=False)

    tokenizer = tokenizers.Tokenizer.from_file(str(ASSETS / "tokenizer.json"))
    with torch.no_grad():
        for question in QUESTIONS:
            prompt = f"<|system|>\n{SYSTEM}<|end|>\n<|user|>\n{question}<|end|>\n<|assistant|>\n"
            prompt_ids = tokenizer.encode(prompt, add_special_tokens=False).ids
            answer, gaps = greedy(model, prompt_ids, eos)
            print(question, answer, min(gaps))
            if min(gaps) >= MIN_GAP:
                break
        else:
            raise SystemExit(f"no question has a greedy answer with top-2 gaps of at least {MIN_GAP}")
        logits = model(torch.tensor([reference.IDS])).logits[0].numpy().astype(np.float64)
    peak = logits.max(axis=1)
    logsumexp = peak + np.log(np.exp(logits - peak[:, None]).sum(axis=1))
    nll = [logsumexp[p] - logits[p, reference.IDS[p + 1]] for p in range(len(reference.IDS) - 1)]
    result = {
        "fixture": FIXTURE.name,
        "generate": {"system": SYSTEM, "question": question, "max_tokens": MAX_TOKENS, "prompt_ids": prompt_ids,
                     "ids": answer, "top2_gaps": [round(g, 6) for g in gaps]},
        "score": {"ids": reference.IDS, "perplexity": float(np.exp(np.mean(nll)))},
        "versions": {"transformers": transformers.__version__, "torch": torch.__version__,
                     "tokenizers": tokenizers.__version__},
    }
    OUTPUT.parent.mkdir(parents=True, exist_ok=True)
    OUTPUT.write_text(json.dumps(result, indent=1) + "\n")
    print(OUTPUT, result["generate"], result["score"]["perplexity"])


if __name__ == "__main__":
    main()
