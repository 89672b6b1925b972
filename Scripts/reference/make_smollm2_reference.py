#!/usr/bin/env python3
"""The SmolLM2-135M-Instruct France answer from an independent implementation: transformers.

Loads the real Q4_1 GGUF (fetched by Scripts/fetch-smollm2.sh) with transformers, which
dequantizes it to float32, applies the GGUF's chat template with the default system prompt,
and decodes greedily. Writes the prompt ids, answer ids and text to
Tests/Fixtures/reference-logits/smollm2-france.json for PhiCPUTests' SmolLM2 test.

    pip install torch transformers accelerate gguf numpy
    bash Scripts/fetch-smollm2.sh && python3 Scripts/reference/make_smollm2_reference.py
"""
import json
import os
import pathlib

import torch
import transformers

ROOT = pathlib.Path(__file__).resolve().parents[2]
MODEL = pathlib.Path(os.environ.get("PHI_GPU_SMOLLM2", ROOT / ".models" / "SmolLM2-135M-Instruct.Q4_1.gguf"))
OUTPUT = ROOT / "Tests" / "Fixtures" / "reference-logits" / "smollm2-france.json"
SYSTEM = "You are a helpful assistant."
QUESTION = "What is the capital of France?"


def main():
    tokenizer = transformers.AutoTokenizer.from_pretrained(MODEL.parent, gguf_file=MODEL.name)
    model = transformers.AutoModelForCausalLM.from_pretrained(
        MODEL.parent, gguf_file=MODEL.name, torch_dtype=torch.float32).eval()
    messages = [{"role": "system", "content": SYSTEM}, {"role": "user", "content": QUESTION}]
    prompt = tokenizer.apply_chat_template(messages, add_generation_prompt=True, tokenize=False)
    prompt_ids = tokenizer(prompt, add_special_tokens=False)["input_ids"]
    stop_ids = {tokenizer.eos_token_id, tokenizer.convert_tokens_to_ids("<|im_end|>")}
    with torch.no_grad():
        output = model.generate(torch.tensor([prompt_ids]), max_new_tokens=48, do_sample=False,
                                eos_token_id=sorted(i for i in stop_ids if i is not None))
    answer = [int(i) for i in output[0, len(prompt_ids):] if int(i) not in stop_ids]
    result = {
        "model": MODEL.name,
        "system": SYSTEM,
        "question": QUESTION,
        "prompt": prompt,
        "prompt_ids": prompt_ids,
        "answer_ids": answer,
        "answer": tokenizer.decode(answer),
        "implementation": f"transformers {transformers.__version__}, torch {torch.__version__}, float32, greedy",
    }
    OUTPUT.parent.mkdir(parents=True, exist_ok=True)
    OUTPUT.write_text(json.dumps(result, indent=1) + "\n")
    print(repr(result["answer"]), answer)


if __name__ == "__main__":
    main()
