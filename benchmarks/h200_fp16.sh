#!/usr/bin/env bash
# The H200 session for fp16 stage 2 (issue 13, fourth pass), run from the checkout's root through the device
# tool with .gpu/ carried: .gpu/code (a copy of the code under test), .gpu/cN/chunk.N (the pack: one tar, split
# into 60 MiB chunks carried one call each, back to back while the machine is warm), .gpu/all.sha (the tar's
# sha256), .gpu/fp16.yaml (engine.precision: fp16). The tar holds data/ (the int8 model xz-compressed, vocab,
# voices, their sha256) first, then the text front end's and kokoro's wheels, then onnxruntime-gpu 1.31.1.
#   U N: store chunk N;  X: unpack what has arrived (data and small wheels), export both precisions' batched
#        graphs with torch and check fp16 stage 2 in PyTorch on the GPU (NaN, audio against fp32, time);
#   I: all chunks here: check, unpack, install (the image's CPU onnxruntime removed: one ORT, as the gpu extra);
#   P: engine alone, fp32 against fp16 (benchmarks/gpu_variants.py --part P); D: doctor under fp16;
#   T1 / T2: our server vs eager in one process (benchmarks/gpu_table.py) under fp16, T1 with the WAVs.
# usage (from the checkout's root): bash .gpu/code/benchmarks/h200_fp16.sh STEP [N]
set -uo pipefail
step=$1 pack=/opt/pack data=$HOME/.local/share/wyoming-fasttts root=$PWD code=$PWD/.gpu/code
export PYTHONUNBUFFERED=1 PYTHONPATH=$code:$pack/site
log="$OUT"/$step.log
mkdir -p $pack/chunks
cd "$code" || exit 1  # the code under test, not the checkout's copy beside it: scripts and -m import from here
case $step in
U) cp "$root"/.gpu/c"$2"/chunk."$2" $pack/chunks/ && du -b $pack/chunks/* | tee -a "$log" ;;
X)
  (cat $pack/chunks/chunk.* | tar -C $pack -xf - 2>/dev/null; true)
  find $pack/data $pack/wheels -maxdepth 1 | tee -a "$log"
  xz -dc $pack/data/kokoro-v1.0.int8.onnx.xz > $pack/data/kokoro-v1.0.int8.onnx
  (cd $pack/data && sha256sum -c sha) 2>&1 | tee -a "$log"
  small=(); for w in "$pack"/wheels/*.whl; do [[ $w == *onnxruntime_gpu* ]] || small+=("$w"); done
  python3 -m pip install -q --no-index --no-deps --no-compile --target $pack/site "${small[@]}" 2>&1 | tail -2
  mkdir -p "$data/voices" && cp $pack/data/kokoro-v1.0.int8.onnx $pack/data/vocab.json "$data/" \
    && cp $pack/data/voices/* "$data/voices/"
  nvidia-smi --query-gpu=name,driver_version,memory.used --format=csv 2>&1 | tee -a "$log"
  for p in fp32 fp16; do
    t0=$SECONDS
    python3 -m wyoming_fasttts.graphs.batched --precision $p 2>&1 | grep -v -i warn | tail -4 | tee -a "$log"
    echo "export $p: $((SECONDS - t0)) s" | tee -a "$log"
  done
  python3 benchmarks/gpu_fp16_torch.py --out "$OUT"/torch.json 2>&1 | grep -v -i warn | tee -a "$log"
  ;;
I)
  echo "tar sha256 $(cat $pack/chunks/chunk.* | sha256sum | cut -c1-64) want $(cut -c1-64 "$root"/.gpu/all.sha)" | tee -a "$log"
  (cd $pack && cat chunks/chunk.* | tar -xf -) 2>&1 | tee -a "$log"
  python3 -m pip uninstall -y -q onnxruntime 2>&1 | tail -1
  python3 -m pip install -q --no-index --no-deps --no-compile --upgrade --target $pack/site $pack/wheels/*.whl 2>&1 \
    | tail -2
  python3 -c 'import onnxruntime as o, torch; print("ORT", o.__version__, o.get_available_providers(), "torch", torch.__version__)' 2>&1 | tee -a "$log"
  ;;
P)
  timeout 560 python3 benchmarks/gpu_variants.py --part P --rounds "${2:-1}" --inputs "$root"/.gpu/inputs.json \
    --data-dir "$data" --runs 100 --out "$OUT"/precision.json 2>&1 | grep -v -i warning | tee -a "$log"
  ;;
D)
  (cd /tmp && timeout 300 python3 -m wyoming_fasttts doctor --config "$root"/.gpu/fp16.yaml) 2>&1 \
    | grep -v -E 'Warning|warn\(|No registered plugin|^\s*$' | tee "$OUT"/doctor-fp16.txt
  ;;
T1|T2)
  wavs=(); [ "$step" = T1 ] && wavs=(--wavs /tmp/wavs)
  timeout 400 python3 benchmarks/gpu_table.py measure --inputs "$root"/.gpu/inputs.json \
     --model "$data/kokoro-v1.0.int8.onnx" --vocab "$data/vocab.json" --data-dir "$data" --engine onnxruntime-cuda \
     --runs 256 --warmup 10 --budget-s 60 --concurrency 1,4,16 --requests 256 "${wavs[@]}" --config "$root"/.gpu/fp16.yaml \
     --out "$OUT"/table-"$step".json > "$OUT"/table-"$step".out 2>&1
  grep -v -i warning "$OUT"/table-"$step".out | tail -40
  [ "$step" = T1 ] && tar -C /tmp -cf "$OUT"/wavs.tar wavs
  ;;
esac
true
