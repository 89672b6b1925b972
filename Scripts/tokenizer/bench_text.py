#!/usr/bin/env python3
"""Writes the benchmark texts (1 MB each, deterministic for a given Python) to DIR (default .build-bench/):
english.txt: English prose from the Python standard library's docstrings;
mixed.txt: the same prose interleaved with the many-script strings of the tokenizer corpus."""
import importlib
import pathlib
import pkgutil
import random
import sys
import warnings

warnings.simplefilter("ignore")

sys.path.insert(0, str(pathlib.Path(__file__).resolve().parent))
import corpus  # noqa: E402

SIZE = 1_000_000


def docstrings():
    texts = []
    for module in sorted(m.name for m in pkgutil.iter_modules() if m.module_finder.path.startswith(sys.base_prefix)
                          and "site-packages" not in m.module_finder.path):
        if module.startswith(("_", "test", "idle", "tkinter", "turtle", "antigravity", "this")):
            continue
        try:
            mod = importlib.import_module(module)
        except Exception:
            continue
        for obj in [mod] + [getattr(mod, n, None) for n in sorted(dir(mod))]:
            doc = getattr(obj, "__doc__", None)
            if isinstance(doc, str) and len(doc) > 200 and doc not in texts:
                texts.append(doc)
    return texts


def main():
    out = pathlib.Path(sys.argv[1] if len(sys.argv) > 1 else pathlib.Path(__file__).resolve().parents[2] / ".build-bench")
    out.mkdir(parents=True, exist_ok=True)
    docs = docstrings()
    english = "\n\n".join(docs)
    while len(english.encode()) < SIZE:
        english += "\n\n" + english
    english = english.encode()[:SIZE].decode(errors="ignore")
    rng = random.Random(7)
    strings = corpus.corpus()
    mixed, size = [], 0
    while size < SIZE:
        piece = rng.choice(docs)[:400] if rng.random() < 0.4 else rng.choice(strings)
        mixed.append(piece)
        size += len(piece.encode()) + 1
    mixed = "\n".join(mixed).encode()[:SIZE].decode(errors="ignore")
    (out / "english.txt").write_text(english)
    (out / "mixed.txt").write_text(mixed)
    print(out / "english.txt", out / "mixed.txt")


if __name__ == "__main__":
    main()
