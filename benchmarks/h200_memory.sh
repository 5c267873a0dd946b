#!/usr/bin/env bash
# The H200 session for device memory (issue 13, fifth pass), run from the checkout's root through the device tool
# with .gpu/ carried as benchmarks/h200_memory_pack.sh left it (.gpu/cN/chunk.N, .gpu/code, .gpu/inputs.json,
# .gpu/all.sha; this script as .gpu/h200_memory.sh), one chunk per call, back to back while the machine is warm:
#   U0: store chunk 0;  U1: store chunk 1, unpack what has arrived (front end, small wheels, data; the partial
#       onnxruntime is dropped), put the model in the data dir, start the batched-graph export in the background
#       (torch on the CPU, the checkout's own code, its own process session so it outlives the call);
#   M:  store chunk 2, check and unpack all, wait for the export, then the engine alone:
#       benchmarks/gpu_variants.py --part M (arena per session vs one shared, arena settings, fewer shapes);
#   OT: (a fresh machine's third call) as M up to the export, then the warm-up order against the arenas
#       (gpu_variants.py --part O, which writes the winning config), then T with that config, twice;
#   T:  our server vs eager in one process (benchmarks/gpu_table.py), once per config file in RUNS
#       (e.g. RUNS="/opt/pack/winner.yaml /opt/pack/winner.yaml"), 256 requests per level; WAVS=1: the first run's audio.
# (The first machine ran U0, U1, M; it went back while M's results were read, so the second ran U0, U1, OT.
# OT's table runs failed at `import wyoming` (the pack lacked the dist-info wyoming reads its version from;
# the pack script copies them now): the session wrote minimal METADATA files for the copied packages into
# /opt/pack/site and ran T with RUNS="winner winner", then with {"engine": {"shared_arena": false}} once.)
# usage (from the checkout's root): bash .gpu/h200_memory.sh STEP
set -uo pipefail
step=$1 pack=/opt/pack data=$HOME/.local/share/wyoming-fasttts root=$PWD code=$PWD/.gpu/code
export PYTHONUNBUFFERED=1
log="$OUT"/$step.log
mkdir -p $pack/chunks
case $step in
U*)
  n=${step#U}
  cp "$root"/.gpu/c"$n"/chunk."$n" $pack/chunks/ && ls -l $pack/chunks | tee -a "$log"
  nvidia-smi --query-gpu=name,driver_version,memory.used --format=csv 2>&1 | tee -a "$log"
  if [ "$n" = 1 ]; then
    (cd $pack && cat chunks/chunk.* | xz -dc 2>/dev/null | tar -xf - 2>/dev/null; true)
    rm -rf $pack/site/onnxruntime $pack/site/onnxruntime_gpu-*
    (cd $pack/data && sha256sum -c sha) 2>&1 | tee -a "$log"
    mkdir -p "$data/voices" && cp $pack/data/kokoro-v1.0.int8.onnx $pack/data/vocab.json "$data/" \
      && cp $pack/data/voices/*.bin "$data/voices/"
    rm -rf $pack/main && mkdir -p $pack/main && cp -r "$root"/wyoming_fasttts $pack/main/
    cd $pack/main && PYTHONPATH=$pack/main:$pack/site setsid nohup python3 -m wyoming_fasttts.graphs.batched \
      > $pack/export.log 2>&1 < /dev/null &
    echo $! > $pack/export.pid
    sleep 5; tail -3 $pack/export.log | tee -a "$log"
  fi ;;
M|OT)
  cp "$root"/.gpu/c2/chunk.2 $pack/chunks/
  echo "pack sha256 $(cat $pack/chunks/chunk.* | sha256sum | cut -c1-64) want $(cat "$root"/.gpu/all.sha)" | tee -a "$log"
  (cd $pack && cat chunks/chunk.* | xz -dc | tar -xf -) 2>&1 | tail -2 | tee -a "$log"
  export PYTHONPATH=$code:$pack/site
  python3 -c 'import onnxruntime as o; o.preload_dlls(); print("ORT", o.__version__, o.__file__, o.get_available_providers())' 2>&1 | tee -a "$log"
  t0=$SECONDS; while kill -0 "$(cat $pack/export.pid)" 2>/dev/null; do sleep 2; done
  echo "export waited $((SECONDS - t0)) s:" | tee -a "$log"; grep -v -i warn $pack/export.log | tail -4 | tee -a "$log"
  if [ "$step" = M ]; then
    cp $pack/export.log "$OUT"/ 2>/dev/null
    (cd "$code" && timeout 540 python3 benchmarks/gpu_variants.py --part M --inputs "$root"/.gpu/inputs.json \
       --data-dir "$data" --runs 30 --deadline-s "${DEADLINE:-420}" --out "$OUT"/memory.json) 2>&1 \
       | grep -v -i warning | tee -a "$log"
    exit 0
  fi
  (cd "$code" && timeout 230 python3 benchmarks/gpu_variants.py --part O --inputs "$root"/.gpu/inputs.json \
     --data-dir "$data" --runs 30 --out "$OUT"/order.json --config-out $pack/winner.yaml) 2>&1 \
     | grep -v -i warning | tee -a "$log"
  RUNS="$pack/winner.yaml $pack/winner.yaml" bash "$0" T
  ;;
T)
  export PYTHONPATH=$code:$pack/site
  k=0
  for config in ${RUNS:?config files}; do
    k=$((k + 1)); wavs=(); [ "$k" = 1 ] && [ -n "${WAVS:-}" ] && wavs=(--wavs /tmp/wavs)
    name=$(basename "$config" .yaml)
    echo "== gpu_table run $k: $config $(cat "$config")" | tee -a "$log"
    (cd "$code" && timeout "${RUN_S:-160}" python3 benchmarks/gpu_table.py measure --inputs "$root"/.gpu/inputs.json \
       --model "$data/kokoro-v1.0.int8.onnx" --vocab "$data/vocab.json" --data-dir "$data" --engine onnxruntime-cuda \
       --runs 256 --warmup 10 --budget-s 40 --concurrency 1,4,16 --requests 256 "${wavs[@]}" \
       --config "$config" --out "$OUT/table-$k-$name.json") > "$OUT/table-$k-$name.out" 2>&1
    grep -v -i warning "$OUT/table-$k-$name.out" | tail -14 | tee -a "$log"
  done
  [ -d /tmp/wavs ] && tar -C /tmp -cf "$OUT"/wavs.tar wavs
  ;;
esac
true
