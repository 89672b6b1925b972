#!/usr/bin/env python3
"""Writes Tests/Fixtures/tokenizer/: the corpus, the reference ids and decodings of the Phi-3.5,
Phi-4-mini and SmolLM2 tokenizers, and reference chat renderings.

  pip install tokenizers transformers jinja2 gguf numpy
  bash Scripts/fetch-smollm2.sh && python3 Scripts/tokenizer/make_fixtures.py

Ids come from the Rust `tokenizers` library (`encode(text, add_special_tokens=False)`, which
recognises added tokens in the text); chat renderings from transformers' `apply_chat_template`.
"""
import json
import random
import sys

sys.path.insert(0, str(__import__("pathlib").Path(__file__).resolve().parent))
import corpus as corpus_module  # noqa: E402
import reference_tokenizers as refs  # noqa: E402

OUT = refs.ROOT / "Tests" / "Fixtures" / "tokenizer"


def random_id_sequences(tok, seed, count=40):
    """Id sequences that need not form valid text: many byte tokens, partial characters, specials."""
    rng = random.Random(seed)
    size = tok.get_vocab_size(with_added_tokens=True)
    vocab = tok.get_vocab(with_added_tokens=True)
    byte_like = sorted(i for t, i in vocab.items() if (t.startswith("<0x") and len(t) == 6) or len(t) == 1)
    specials = sorted(i for t, i in vocab.items() if t.startswith("<|") or t in ("<s>", "</s>"))
    sequences = []
    for _ in range(count):
        ids = []
        for _ in range(rng.randint(1, 24)):
            r = rng.random()
            ids.append(rng.choice(byte_like) if r < 0.5 else rng.choice(specials) if r < 0.55 else rng.randrange(size))
        sequences.append(ids)
    return sequences


def write(name, value):
    (OUT / name).write_text(json.dumps(value, ensure_ascii=True, separators=(",", ":")) + "\n")


CONVERSATIONS = [
    [{"role": "system", "content": "You are a helpful assistant."},
     {"role": "user", "content": "What is 2+2?"},
     {"role": "assistant", "content": "2+2 = 4."},
     {"role": "user", "content": "And times 3?\nShow the steps."}],
    [{"role": "user", "content": "Hello!"}],
    [{"role": "user", "content": "Tell me a joke."},
     {"role": "assistant", "content": "Why did the llama cross the road? 🦙"},
     {"role": "user", "content": "  Another one, in français s'il te plaît  "}],
    [{"role": "system", "content": ""}, {"role": "user", "content": "Empty system turn."}],
    [{"role": "system", "content": "You can call functions.",
      "tools": '[{"name": "get_weather", "description": "Weather for a city", '
               '"parameters": {"city": {"type": "str"}}}]'},
     {"role": "user", "content": "Weather in Paris?"},
     {"role": "assistant", "content": '<|tool_call|>[{"name": "get_weather", "arguments": {"city": "Paris"}}]<|/tool_call|>'},
     {"role": "tool", "content": '{"temperature": 21}'}],
]

CHATML = ("{% for message in messages %}{{'<|im_start|>' + message['role'] + '\\n' + message['content'] + "
          "'<|im_end|>' + '\\n'}}{% endfor %}{% if add_generation_prompt %}{{ '<|im_start|>assistant\\n' }}{% endif %}")


def chat_cases(loaded):
    from transformers import PreTrainedTokenizerFast
    phi3_legacy = refs.gguf_fields(refs.ASSETS / "phi3" / "ggml-vocab-phi-3.gguf")["tokenizer.chat_template"]
    templates = [("phi3", "phi3", loaded["phi3"][1]), ("phi3-legacy", "phi3", phi3_legacy),
                 ("phi4-mini", "phi4mini", loaded["phi4mini"][1]), ("smollm2", "smollm2", loaded["smollm2"][1]),
                 ("chatml", "smollm2", CHATML)]
    cases = []
    for format_name, tokenizer_name, template in templates:
        tok, _, bos, eos = loaded[tokenizer_name]
        wrapper = PreTrainedTokenizerFast(tokenizer_object=tok, bos_token=bos, eos_token=eos)
        for index, conversation in enumerate(CONVERSATIONS):
            if "tools" in conversation[0] and format_name != "phi4-mini":
                continue
            for generation_prompt in (False, True):
                text = wrapper.apply_chat_template(conversation, chat_template=template, tokenize=False,
                                                   add_generation_prompt=generation_prompt)
                cases.append({"format": format_name, "tokenizer": tokenizer_name, "conversation": index,
                              "add_generation_prompt": generation_prompt, "text": text,
                              "ids": tok.encode(text, add_special_tokens=False).ids})
    return {"templates": {name: template for name, _, template in templates},
            "conversations": CONVERSATIONS, "cases": cases}


def main():
    OUT.mkdir(parents=True, exist_ok=True)
    strings = corpus_module.corpus()
    write("corpus.json", strings)
    loaded = {name: refs.load(name) for name in ("phi3", "phi4mini", "smollm2")}
    for seed, (name, (tok, *_)) in enumerate(loaded.items()):
        ids = [tok.encode(s, add_special_tokens=False).ids for s in strings]
        decoded = [tok.decode(i, skip_special_tokens=False) for i in ids]
        sequences = random_id_sequences(tok, seed)
        write(f"expected-{name}.json", {
            "ids": ids,
            "decoded": [None if d == s else d for d, s in zip(decoded, strings)],  # None: round-trips
            "random_ids": sequences,
            "random_decoded": [tok.decode(i, skip_special_tokens=False) for i in sequences],
        })
        print(name, "round-trips", sum(d == s for d, s in zip(decoded, strings)), "of", len(strings))
    write("chat.json", chat_cases(loaded))


if __name__ == "__main__":
    main()
