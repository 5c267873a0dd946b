#!/usr/bin/env bash
# Here (the CPU machine), for the device-memory session (issue 13, fifth pass; benchmarks/h200_memory.sh there):
# packs what the H200 lacks into one tar.xz split into 50 MiB chunks (one chunk and the tree must fit the 64 MiB a call carries), each carried by one device call.
#   .gpu/code        a copy of the code under test (this worktree, tracked files as they are now)
#   .gpu/inputs.json the ids our server sends for the benchmark sentence (gpu_table.py prepare)
#   .gpu/cN/chunk.N  the pack: site/ (the text front end, msgspec, zeroconf, kokoro, loguru; onnxruntime-gpu
#                    1.31.1 unpacked with its CUDA provider's non-sm-9.0 cubins zeroed: benchmarks/fatbin_keep.py),
#                    then data/ (the int8 model, vocab, voice)
# usage: bash benchmarks/h200_memory_pack.sh CHECKOUT_ROOT   (the checkout the device tool sends, e.g. /work/main)
#   ORT=0: leave onnxruntime-gpu out (PyTorch-only sessions, e.g. benchmarks/h200_profile.sh): about two chunks
set -euo pipefail
root=$1 here=$(cd "$(dirname "$0")/.." && pwd) ort=${ORT:-1}
venv=${VENV:-$root/.venv} work=${WORK:-/tmp/gpupack} data=${DATA:-$HOME/.local/share/wyoming-fasttts}
site_src=$(echo "$venv"/lib/python3*/site-packages)
rm -rf "$work/stage" "$root/.gpu" && mkdir -p "$work/wheels" "$work/stage/site" "$work/stage/data/voices" "$root/.gpu"
python3 -m pip download -q --no-deps --only-binary=:all: --python-version 3.12 --implementation cp \
  --platform manylinux_2_28_x86_64 --platform manylinux_2_17_x86_64 --platform manylinux2014_x86_64 \
  -d "$work/wheels" $([ "$ort" = 0 ] || echo onnxruntime-gpu==1.31.1) msgspec==0.22.0 loguru==0.7.3 kokoro==0.9.4 \
  2>&1 | grep -v WARNING || true
[ "$ort" = 0 ] && rm -f "$work"/wheels/onnxruntime_gpu-*.whl
for w in "$work"/wheels/*.whl; do unzip -q -o "$w" -d "$work/stage/site"; done
[ "$ort" = 0 ] || python3 "$here/benchmarks/fatbin_keep.py" \
  "$work/stage/site/onnxruntime/capi/libonnxruntime_providers_cuda.so" 90
for p in jieba misaki pypinyin pypinyin_dict cn2an proces addict ordered_set wyoming sentence_stream zeroconf ifaddr; do
  cp -r "$site_src/$p" "$site_src/$p"-*.dist-info "$work/stage/site/"  # dist-info too: wyoming reads its version
done
find "$work/stage/site" -name __pycache__ -prune -exec rm -rf {} +
cp "$data/kokoro-v1.0.int8.onnx" "$data/vocab.json" "$work/stage/data/" && cp "$data"/voices/*.bin "$work/stage/data/voices/"
(cd "$work/stage/data" && sha256sum kokoro-v1.0.int8.onnx vocab.json voices/*.bin > sha)
# small site packages first, then data, then onnxruntime: a partial pack already unpacks the first two
(cd "$work/stage" && { find site -mindepth 1 -maxdepth 1 ! -name 'onnxruntime*' | sort | xargs -I{} find {} -type f
   find data -type f | sort; find site -mindepth 1 -maxdepth 1 -name 'onnxruntime*' | xargs -I{} find {} -type f; } \
   > "$work/list" && tar -cf - --no-recursion -T "$work/list") | xz -6 -T2 > "$work/all.tar.xz"
sha256sum "$work/all.tar.xz" | cut -c1-64 > "$root/.gpu/all.sha"
(cd "$work" && rm -f chunk.* && split -b 50M -d -a 1 all.tar.xz chunk.)
for c in "$work"/chunk.*; do n=${c##*.}; mkdir -p "$root/.gpu/c$n"; mv "$c" "$root/.gpu/c$n/"; done
mkdir -p "$root/.gpu/code" && (cd "$here" && git ls-files -z | xargs -0 cp --parents -t "$root/.gpu/code")
(cd "$here" && PYTHONPATH=. "$venv/bin/python" benchmarks/gpu_table.py prepare --out "$root/.gpu/inputs.json")
ls -la "$root"/.gpu/c*/ && du -sh "$root/.gpu/code"
