#!/usr/bin/env bash
# One H200 session (device tool), as run for issue 13: unpack the carried wheels and model, then
#   A: doctor the way a GPU user following the README runs it (one ONNX Runtime: onnxruntime-gpu), then the
#      engine-level replay benchmark (benchmarks/gpu_replay.py); ID: install and doctor only;
#   K: ONNX Runtime CUDA provider knobs (benchmarks/gpu_variants.py part K); P: stage 2 kernel by kernel against
#      PyTorch (benchmarks/gpu_kernels.py, CUDA=JSON provider options) and the request path's steps
#      (benchmarks/gpu_request_path.py);
#   V, W: engine-level variants (benchmarks/gpu_variants.py part A: memory per shape under ONNX Runtime's
#      options; part B: candidate bucket sets), W writes the chosen config to /tmp/best.yaml;
#   B, C: our server vs eager in one process (benchmarks/gpu_table.py), run 1 (with WAVs for the ear), run 2;
#      BC: both. With CONFIG=FILE the server runs with that config (e.g. CONFIG=/tmp/best.yaml).
# (I: install only.) The pack: wheels (onnxruntime-gpu, the text front end, kokoro), the model, the voices;
# more wheels and voices may lie in CODE_DIR/../extra/ and CODE_DIR/../extra/voices/.
# usage: bash benchmarks/h200_session.sh I|ID|A|K|P|V|W|B|C|BC CODE_DIR    (the pack's chunks in /opt/pack/chunks)
set -uo pipefail
step=$1 code=$2 pack=/opt/pack data=$HOME/.local/share/wyoming-fasttts
export PYTHONUNBUFFERED=1 PYTHONPATH=$pack/site
log="$OUT"/$step.log
config=(); [ -n "${CONFIG:-}" ] && config=(--config "$CONFIG") && cp "$CONFIG" "$OUT"/
if [ "$step" = A ] || [ "$step" = I ] || [ "$step" = ID ]; then
  (cat $pack/chunks/chunk.* | tar -C $pack -xf - && cd $pack && sha256sum -c data/sha) 2>&1 | tee -a "$log"
  python3 -m pip uninstall -y -q onnxruntime 2>&1 | tail -1     # the image's CPU build: a user's venv has one ORT
  python3 -m pip install -q --no-index --no-deps --no-compile --target $pack/site $pack/wheels/*.whl 2>&1 | tail -2
  python3 -m pip install -q --no-index --no-deps --no-build-isolation --target /opt/user "$code" 2>&1 | tail -2
  mkdir -p "$data/voices" && cp $pack/data/kokoro-v1.0.int8.onnx $pack/data/vocab.json "$data/" \
    && cp $pack/data/voices/* "$data/voices/"
  compgen -G "$code/../extra/*.whl" >/dev/null \
    && python3 -m pip install -q --no-index --no-deps --target $pack/site "$code"/../extra/*.whl
  [ -d "$code/../extra/voices" ] && cp "$code"/../extra/voices/*.bin "$data/voices/"
  nvidia-smi --query-gpu=name,driver_version,memory.used --format=csv 2>&1 | tee -a "$log"
  python3 -c 'import onnxruntime as o, torch; print("ORT", o.__version__, o.get_available_providers(), "torch", torch.__version__)' 2>&1 | tee -a "$log"
  [ "$step" = I ] && exit 0
  echo "== doctor (README: pip install '.[gpu,export]'; wyoming-fasttts doctor)" | tee -a "$log"
  (cd /tmp && PYTHONPATH=/opt/user:$pack/site timeout 300 /opt/user/bin/wyoming-fasttts doctor) 2>&1 \
    | grep -v -E 'Warning|warn\(|No registered plugin|^\s*$' | tee -a "$log"
  [ "$step" = ID ] && exit 0
  echo "== gpu_replay" | tee -a "$log"
  (cd "$code" && timeout 200 python3 benchmarks/gpu_replay.py --inputs inputs.json --data-dir "$data" --runs 200 \
     --out "$OUT"/replay.json) 2>&1 | grep -v Warning | tee -a "$log"
fi
[ "$step" = A ] && exit 0
if [ "$step" = K ]; then   # provider knobs (gpu_variants part K), stage 2 kernel by kernel, the request path
  (cd "$code" && timeout 400 python3 benchmarks/gpu_variants.py --part K --inputs inputs.json --data-dir "$data" \
     --runs 60 --out "$OUT"/knobs.json) 2>&1 | grep -v -i warning | grep -E '^K |Error|error' | tee -a "$log"
  exit 0
fi
if [ "$step" = P ]; then
  cuda=${CUDA:-'{}'}
  (cd "$code" && timeout 200 python3 benchmarks/gpu_kernels.py --inputs inputs.json --data-dir "$data" \
     --cuda "$cuda" --runs 50 --out "$OUT"/kernels.json) 2>&1 | grep -v -i warning | tail -40 | tee -a "$log"
  (cd "$code" && timeout 240 python3 benchmarks/gpu_request_path.py --inputs inputs.json --model \
     "$data/kokoro-v1.0.int8.onnx" --vocab "$data/vocab.json" --data-dir "$data" --runs 200 "${config[@]}" \
     --out "$OUT"/request_path.json) 2>&1 | grep -v -i warning | tail -20 | tee -a "$log"
  exit 0
fi
if [ "$step" = V ] || [ "$step" = W ]; then
  part=A; [ "$step" = W ] && part=B && cp /tmp/variants.json "$OUT"/ 2>/dev/null
  (cd "$code" && timeout 580 python3 benchmarks/gpu_variants.py --part $part --inputs inputs.json --data-dir "$data" \
     --runs 40 --out /tmp/variants.json --config-out /tmp/best.yaml) 2>&1 | grep -v -i warning | tee -a "$log"
  cp /tmp/variants.json /tmp/best.yaml "$OUT"/ 2>/dev/null
  exit 0
fi
table() {
  run=$1; wavs=(); [ "$run" = 1 ] && wavs=(--wavs /tmp/wavs)
  echo "== gpu_table run $run ${config[*]}" | tee -a "$log"
  (cd "$code" && timeout 290 python3 benchmarks/gpu_table.py measure --inputs inputs.json \
     --model "$data/kokoro-v1.0.int8.onnx" --vocab "$data/vocab.json" --data-dir "$data" --engine onnxruntime-cuda \
     --runs 256 --warmup 10 --budget-s 60 --concurrency 1,4,16 --requests 256 "${wavs[@]}" "${config[@]}" \
     --out "$OUT"/table"$run".json) > "$OUT"/table"$run".out 2>&1
  grep -v -i warning "$OUT"/table"$run".out | tail -30 | tee -a "$log"
  [ "$run" = 1 ] && tar -C /tmp -cf "$OUT"/wavs.tar wavs
}
case $step in B) table 1 ;; C) table 2 ;; BC) table 1; table 2 ;; esac
true
