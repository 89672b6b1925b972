#!/usr/bin/env python3
"""Encoding speed of the Rust `tokenizers` library, single-threaded, in MB/s (10^6 UTF-8 bytes/s),
to compare with phi-gpu's TokenizerBenchmark on the same text and machine.

  python3 Scripts/tokenizer/bench_text.py            # writes .build-bench/english.txt, mixed.txt
  python3 Scripts/tokenizer/bench_reference.py .build-bench/english.txt [phi3 phi4mini smollm2]
"""
import os
import sys
import time

os.environ["RAYON_NUM_THREADS"] = "1"
os.environ["TOKENIZERS_PARALLELISM"] = "false"
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import reference_tokenizers as refs  # noqa: E402


def throughput(tok, text, minimum_seconds=1.0):
    size = len(text.encode())
    tok.encode(text, add_special_tokens=False)  # warm up
    runs, start = 0, time.perf_counter()
    while True:
        tok.encode(text, add_special_tokens=False)
        runs += 1
        elapsed = time.perf_counter() - start
        if elapsed >= minimum_seconds:
            return size * runs / elapsed / 1e6


def main():
    text = open(sys.argv[1], encoding="utf-8").read()
    for name in sys.argv[2:] or ["phi3", "phi4mini", "smollm2"]:
        tok = refs.load(name)[0]
        print(f"{name}: {throughput(tok, text):.2f} MB/s")


if __name__ == "__main__":
    main()
