#!/usr/bin/env bash
# The H200 session for issue 13's sixth pass (where a batch's GPU time goes: benchmarks/gpu_profile.py), run from
# the checkout's root through the device tool with .gpu/ carried as `ORT=0 benchmarks/h200_memory_pack.sh` left it
# (.gpu/cN/chunk.N, .gpu/code, .gpu/inputs.json, .gpu/all.sha; this script as .gpu/h200_profile.sh), one chunk per
# call, back to back while the machine is warm (it goes back 30 s after a call):
#   U0: store chunk 0 (nvidia-smi for the record);
#   P:  store the last chunk, check the pack's sha256 and the data's, unpack, then gpu_profile.py --part profile
#       (batches 1, 8, 16) and --part compile --mode default (batches 16, 8), each under its own timeout;
#   Q:  (same machine) --part compile --mode max-autotune-no-cudagraphs (batch 16, then 8, as time allows).
# Every step ends with --part report: the merged JSON (gpu-profile.json) and the tables, in $OUT.
# (2026-12-02: the first machine went back between U0 and P, a second ran U0, P, Q; Q's max-autotune compile
# of batch 16 was still autotuning at COMPILE_S=230 and left no result. docs/BENCHMARKS.md, sixth pass.)
# usage (from the checkout's root): bash .gpu/h200_profile.sh STEP
set -uo pipefail
step=$1 pack=/opt/pack root=$PWD code=$PWD/.gpu/code
export PYTHONUNBUFFERED=1 TORCHINDUCTOR_CACHE_DIR=/opt/pack/inductor
log="$OUT"/$step.log
mkdir -p $pack/chunks $pack/results
for c in "$root"/.gpu/c*/chunk.*; do [ -e "$c" ] && cp "$c" $pack/chunks/; done
ls -l $pack/chunks | tee -a "$log"
gp() { limit=$1; shift; (cd "$code" && PYTHONPATH=$code:$pack/site timeout "$limit" python3 benchmarks/gpu_profile.py "$@" \
  --inputs "$root"/.gpu/inputs.json --model $pack/data/kokoro-v1.0.int8.onnx --vocab $pack/data/vocab.json \
  --kmodel-cache $pack/kmodel.pt --results $pack/results) 2>&1 | grep -v -i -E "warn|^  (super|WeightNorm)" | tee -a "$log"; }
case $step in
U0)
  nvidia-smi --query-gpu=name,driver_version,memory.total,memory.used,clocks.sm,clocks.max.sm,power.limit \
    --format=csv 2>&1 | tee -a "$log" ;;
P)
  echo "pack sha256 $(cat $pack/chunks/chunk.* | sha256sum | cut -c1-64) want $(cat "$root"/.gpu/all.sha)" | tee -a "$log"
  [ "$(cat $pack/chunks/chunk.* | sha256sum | cut -c1-64)" = "$(cat "$root"/.gpu/all.sha)" ] || { echo "sha256 differs"; exit 3; }
  (cd $pack && cat chunks/chunk.* | xz -dc | tar -xf -) 2>&1 | tail -2 | tee -a "$log"
  (cd $pack/data && sha256sum -c sha) 2>&1 | tee -a "$log"
  { nvidia-smi; nvidia-smi --query-gpu=name,driver_version,memory.total,clocks.sm,clocks.max.sm,power.limit \
      --format=csv; nproc; python3 -c 'import torch; print(torch.__version__, torch.version.cuda, torch.backends.cudnn.version())'; } \
    > "$OUT"/nvidia-smi.txt 2>&1
  gp "${PROFILE_S:-200}" --part profile --batches 1,8,16 --runs 30 --iterations 5
  gp "${COMPILE_S:-300}" --part compile --mode default --batches 16,8 --runs 30
  ;;
Q)
  gp "${COMPILE_S:-240}" --part compile --mode max-autotune-no-cudagraphs --batches 16,8 --runs 30
  ;;
esac
if [ "$step" != U0 ]; then
  (cd "$code" && PYTHONPATH=$code:$pack/site python3 benchmarks/gpu_profile.py --part report --results $pack/results --out "$OUT"/gpu-profile.json) \
    2>&1 | tee -a "$log"
  cp $pack/results/part-*.json "$OUT"/ 2>/dev/null
fi
true
