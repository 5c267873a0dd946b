#!/usr/bin/env bash
# The H200 session for what ONNX Runtime CUDA's arena holds (issue 13, seventh pass: benchmarks/gpu_arena.py), run
# from the checkout's root through the device tool with .gpu/ carried as benchmarks/h200_memory_pack.sh left it
# (.gpu/cN/chunk.N, .gpu/code with this script in it, .gpu/inputs.json, .gpu/all.sha), one chunk per
# call, back to back while the machine is warm (it goes back 30 s after a call):
#   U0, U1: `bash benchmarks/h200_memory.sh U0` / `U1` from the checkout itself, carrying .gpu/c0 / .gpu/c1 alone
#       (a 58 MiB chunk and .gpu/code together pass the 64 MiB a call carries; U1 starts the batched-graph export);
#   M:  store chunk 2, check and unpack all, wait for the export, then gpu_arena.py --part W (working sets through
#       a tracking allocator) and --part R (settings rows, INFO arena log, NVML per shape; writes winner.yaml),
#       the rows cut to end the call inside its limit;
#   M2: (a fresh machine after U0, U1) as M up to the export, then part R's second set of rows (--rows 2: no CUDA
#       graphs, and the arena's first region preset with the memory pattern off), then T with the winner's config;
#   M3: as M2 with the third set (--rows 3: max_dead_bytes_per_chunk 1 MiB, alone and with a first region preset);
#   N:  our server vs eager in one process (gpu_table.py, 256 requests per level): the winner's config, then the
#       shipped one ({}), as benchmarks/h200_memory.sh T.
# 2026-12-02 (docs/BENCHMARKS.md, seventh pass): three machines in turn, U0, U1, then M / M2 / M3 (RUN_S=140) on
# each; no row won, so neither M2's and M3's table runs nor N ran.
# usage (from the checkout's root, .gpu/c2, .gpu/code, .gpu/inputs.json, .gpu/all.sha carried):
#   bash .gpu/code/benchmarks/h200_arena.sh STEP
set -uo pipefail
step=$1 pack=/opt/pack data=$HOME/.local/share/wyoming-fasttts root=$PWD code=$PWD/.gpu/code
export PYTHONUNBUFFERED=1
log="$OUT"/$step.log
t0=$SECONDS
case $step in
M|M2|M3)
  mkdir -p $pack/chunks && cp "$root"/.gpu/c2/chunk.2 $pack/chunks/
  got=$(cat $pack/chunks/chunk.* | sha256sum | cut -c1-64)
  echo "pack sha256 $got want $(cat "$root"/.gpu/all.sha)" | tee -a "$log"
  [ "$got" = "$(cat "$root"/.gpu/all.sha)" ] || { echo "sha256 differs" | tee -a "$log"; exit 3; }
  (cd $pack && cat chunks/chunk.* | xz -dc | tar -xf -) 2>&1 | tail -2 | tee -a "$log"
  export PYTHONPATH=$code:$pack/site
  python3 -c 'import onnxruntime as o; o.preload_dlls(); print("ORT", o.__version__, o.get_available_providers())' \
    2>&1 | tee -a "$log"
  while kill -0 "$(cat $pack/export.pid)" 2>/dev/null; do sleep 2; done
  echo "export waited until $((SECONDS - t0)) s:" | tee -a "$log"; grep -v -i warn $pack/export.log | tail -3 | tee -a "$log"
  { nvidia-smi --query-gpu=name,driver_version,memory.total,memory.used,clocks.max.sm --format=csv; nproc; } \
    > "$OUT"/nvidia-smi.txt 2>&1
  if [ "$step" != M ]; then
    (cd "$code" && timeout 300 python3 benchmarks/gpu_arena.py --part R --rows "${step#M}" --inputs "$root"/.gpu/inputs.json \
       --data-dir "$data" --runs 30 --deadline-s 240 --out "$OUT"/arena-r"${step#M}".json --config-out $pack/winner.yaml) 2>&1 \
       | grep -v -i warning | tee -a "$log"
    cp $pack/winner.yaml "$OUT"/
    if ! grep -q '"engine": {}' $pack/winner.yaml; then
      cd "$root" && RUNS="$pack/winner.yaml" RUN_S=${RUN_S:-170} bash "$code"/benchmarks/h200_memory.sh T
    fi
    echo "$step took $((SECONDS - t0)) s" | tee -a "$log"
    exit 0
  fi
  (cd "$code" && timeout 240 python3 benchmarks/gpu_arena.py --part W --inputs "$root"/.gpu/inputs.json \
     --data-dir "$data" --out "$OUT"/arena-w.json) 2>&1 | grep -v -i warning | tee -a "$log"
  left=$((${END_S:-575} - (SECONDS - t0) - 60))  # a row takes ~50 s: start none that would end past END_S
  echo "part R: rows start until $left s from now" | tee -a "$log"
  (cd "$code" && timeout $((left + 90)) python3 benchmarks/gpu_arena.py --part R --inputs "$root"/.gpu/inputs.json \
     --data-dir "$data" --working "$OUT"/arena-w.json --runs 30 --deadline-s "$left" --out "$OUT"/arena-r.json \
     --config-out $pack/winner.yaml) 2>&1 | grep -v -i warning | tee -a "$log"
  cp $pack/winner.yaml "$OUT"/ 2>/dev/null
  ;;
N)
  echo '{"engine": {}}' > $pack/shipped.yaml
  runs="$pack/shipped.yaml"
  grep -q '"engine": {}' $pack/winner.yaml 2>/dev/null || runs="$pack/winner.yaml $pack/shipped.yaml"
  cd "$root" && RUNS="$runs" RUN_S=${RUN_S:-165} bash "$code"/benchmarks/h200_memory.sh T
  ;;
esac
echo "$step took $((SECONDS - t0)) s" | tee -a "$log"
true
