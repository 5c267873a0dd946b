#!/usr/bin/env bash
# The H200 session for the torch-cuda engine (issue 13, eighth pass: fused by inductor, one CUDA graph per bucket
# shape in one pool), run from the checkout's root through the device tool with .gpu/ carried as
# `ORT=0 benchmarks/h200_memory_pack.sh` left it (.gpu/cN/chunk.N, .gpu/code, .gpu/inputs.json, .gpu/all.sha), one
# chunk per call, back to back while the machine is warm (it goes back 30 s after a call):
#   U0:  store chunk 0 (nvidia-smi for the record);
#   T:   store the last chunk, check the pack's sha256 and the data's, unpack, then
#        gpu_table.py measure --engine torch-cuda (256 one-shot requests beside eager, 256 per load level 1, 4, 16);
#   T2:  the same again (the second run the goals compare; inductor's cache makes its start-up shorter);
#   E:   (a fresh machine: U0 first) unpack as T does, then the same with engine.torch_compile false (eager kernels
#        captured, no inductor);
#   D:   (a fresh machine: U0 first) unpack, then `wyoming-fasttts doctor --engine torch-cuda` with
#        engine.torch_compile false: parity with the CPU reference (ONNX Runtime on the batched graphs, exported there);
#   P:   (a fresh machine: U0 first) unpack, then benchmarks/gpu_torch_pool.py, largest shapes first and smallest
#        first: where the one graph pool grows, shape by shape;
#   H:   (a fresh machine: U0 first) unpack, then E's measurement with engine.precision fp16 (stage 2's convolutions
#        and elementwise work in fp16, fp32 islands);
#   M:   (after H) fp16 with engine.batch_frames 1024: half the largest call, for the 1.5 GB memory goal;
#   F:   (after H) fp32 with engine.batch_frames 1024: M's shapes at full precision;
#   C:   (a fresh machine: U0 first) unpack, then fp16 fused by inductor (engine.torch_compile true): T's engine with H's precision;
#   DH:  (a fresh machine: U0 first) unpack, then D's doctor with engine.precision fp16 (eager kernels captured);
#   DC:  (a fresh machine: U0 first; carry .gpu/ic) unpack, then D's doctor on C's setting (fp16, fused by inductor):
#        parity of the fused rows and of the shipped fast setting with the CPU reference;
#   CF:  (a fresh machine: U0 first, or after C) C with frame buckets [64, 96, 128, 160, 192, 256, 384, 512, 768]:
#        the benchmark sentence's 139 frames pad to 160 instead of 192 (eighteenth pass: the engine's 18.6 ms of one
#        sentence against the 15.75 ms floor at its own shape), what the padding costs and what more graphs hold;
#   CR:  (a fresh machine: U0 first, or after C) CF with row buckets [2, 4, 8, 16]: a lone sentence runs fused as a
#        batch of two (its row repeated), since a fused batch of 4 (17.3 ms) beat one row on eager kernels (18.1)
#        and one row fused (27.9, a size of 1 that dynamo specialises) in the nineteenth pass; since that pass the
#        compiled engine has no one-row bucket whatever the config says (paired_rows), so C, CF and CR alike run
#        a lone sentence as a pair; CR's explicit rows are what its measurement ran;
#   DR:  (after CR, or a fresh machine: U0 first) D's doctor on CR's setting: parity of a lone sentence run as a
#        fused batch of two;
#   CB:  (after CR, or a fresh machine: U0 first) CR with engine.batch_frames 4096: the benchmark sentence's batch of 16
#        (160 frames) in one stage-2 call instead of two of 8 (nineteenth pass: ~40 of its 49 ms are stage 2); the
#        largest capture, and so the pool, grows;
#   CBP: (after CB, or a fresh machine: U0 first) CB with scheduler.preferred_batch_sizes [4, 8, 16]: with [4, 8] the
#        scheduler stops waiting at 8 and takes 8 of up to 15 queued, so CB's 16 clients ran mostly as batches of 8
#        (twentieth pass);
#   CBP1: (after CBP, same machine) CBP with scheduler.workers 1: the engine one batch at a time, its stages' graphs
#        in one pool, as before the stages were pipelined (twenty-third pass: CBP's default is two slots, a batch's
#        stage 1 and host step beside the last batch's stage 2);
#   C8:  (after CBP, same machine) examples/torch-cuda.yaml (its memory keys given as LEAN's environment): CBP's frames
#        with batches of at most 8 (scheduler.max_batch 8, preferred [4, 8]), engine.batch_frames 2048: with two slots
#        16 clients run as two batches of 8 anyway (twenty-third pass), so the 16-row graphs, half the stage-2 pool
#        and half of stage 1's may go (memory goal) at the same 16-client throughput (twenty-fourth pass); since the
#        twenty-sixth pass also engine.batch_tokens 1024 and a 4 MiB cuBLAS workspace (C8T, C8TW);
#        since the thirty-second pass also engine.half_lstms all;
#   C8H: (after C8, same machine) C8 with engine.half_lstms audio: the two LSTMs that reach no duration in float16, run
#        by cuDNN's persistent kernel (thirty-first pass: one such LSTM alone 4-5x faster); C8HA: all six (C8 since
#        the thirty-second pass); C8N: none, the example before that pass;
#   D8H, D8HA: D8's doctor on C8H's and C8HA's settings (durations equal to the CPU reference? log-mel?);
#   C8S8: (after C8, same machine) C8 with scheduler.preferred_batch_sizes [8]: with the LSTMs in float16 16 clients fell
#        into batches of 4 and 8, a batch of 4 costing the busy GPU about what one of 8 did (thirty-second pass);
#   C81: (after C8, same machine) C8 with scheduler.workers 1: what the second slot costs in memory at batches of 8;
#   C8E: (after C8, same machine) C8 with CE's frames [64, 128, 192, 256, 512]: 9 stage-2 graphs fewer;
#   P8:  (a fresh machine: U0 first) P's pool report for C8's engine (two slots, LEAN's environment), each capture
#        into its stage's pool with its NVML growth, and what PyTorch holds before the first capture by the code that
#        allocated it (--origins): where C8's 1.7 GiB went (twenty-fifth pass: C8P's setting), and 1.3 (twenty-sixth);
#   D8:  (a fresh machine: U0 first) D's doctor on C8's setting (examples/torch-cuda.yaml, nothing in the environment:
#        the engine sets its memory keys itself): parity of the shipped fused setting, stage 1's attention fused since
#        the twenty-fifth pass, and the engine's device memory (twenty-sixth pass: 1442 MiB with LEAN; 2150 in the twenty-fifth, no keys;
#        twenty-seventh: 1442 MiB with the keys alone);
#   C8P: (after C8, same machine) the twenty-fifth pass's C8, side by side: the example without engine.batch_tokens,
#        PyTorch's own cuBLAS workspace (32 MiB on Hopper), expandable segments (in the environment);
#   C8T: (after C8, same machine) C8 with PyTorch's own cuBLAS workspace: what engine.batch_tokens 1024 alone saves
#        (twenty-sixth pass: stage 1's 512-token shapes only as a pair; P8 found those at 4 and 8 rows holding 122
#        MiB of graphs and setting stage 1's pool);
#   C8TW: C8 (its name in the twenty-sixth pass, before the example took batch_tokens): CUBLAS_WORKSPACE_CONFIG
#        :4096:1, as P8 found one 32 MiB cuBLAS workspace in each stage's graph pool (one per capture stream); the
#        eager reference in the same process runs with it too (and slower: 39-41 -> 57-58 ms on an H100);
#   CRE: (a fresh machine: U0 first) CR's pairs at CE's memory setting (batch_frames 1024, frames [64, 128, 160,
#        192, 256, 512], expandable segments): the 1.5 GB goal with the faster lone sentence;
#   CM:  (a fresh machine: U0 first) unpack, then C with engine.batch_frames 1024 (C's fusion, M's shapes: memory).
#   CL:  (a fresh machine: U0 first) unpack, then CM with fewer frame buckets (64, 128, 256, 512, 1024: 53 shapes, not
#        67; ~12 MiB of the driver's per captured graph on average, by difference) and PyTorch's expandable segments
#        (eleventh pass: the pool 808 -> 410 MiB in PM): for the 1.5 GB goal;
#   CX:  (a fresh machine: U0 first) unpack, then CM's buckets with CL's expandable segments: which of CL's two changes
#        costs its batch-1 latency (twelfth pass);
#   R:   (a fresh machine: U0 first) unpack, then benchmarks/gpu_compile_rows.py: stage 2 (fp16) and stage 1 as one
#        CUDA graph each at rows 16 and 1, eager kernels beside inductor compiled dynamic=True (the engine's), with
#        static rows and dynamic tokens/frames, and dynamic=False: where the fused batch of one loses its time
#        (thirteenth pass; gpu-compile-rows.json, MEASURE_S bounds it, VARIANTS and ROWS pick settings and rows;
#        VARIANTS=2:cudnn,1:cudnn: eager kernels with cudnn.benchmark off and on, nineteenth pass);
#   PF:  (a fresh machine: U0 first) benchmarks/gpu_profile.py on stage 2 in fp16 at the 160-frame bucket (the
#        fused engine's precision and the benchmark sentence's bucket since the nineteenth pass): eager under the
#        profiler at 2, 8 and 16 rows (where the kernels go, by role), then compiled by inductor (dynamic=False) at
#        16, 8, 2 (convolutions against fused Triton): what a batch of 16 spends (twentieth pass); CL=1: the
#        compiled part alone with stage 2's Conv1d weights channels-last (no cuDNN NCHW<->NHWC transforms);
#   PP:  (a fresh machine: U0 first) benchmarks/gpu_profile.py --part planar at the 160-frame bucket, fp16: stage 2
#        compiled as the engine compiles it, 1-D against planar (2-D convolutions on [B, C, 1, T], inductor's layout
#        optimisation forced: channels-last end to end), each captured, replayed interleaved at 16, 8 and 2 rows, their
#        audio compared, each profiled (twenty-first pass); BENCH=1: both with cudnn.benchmark on; AS_ENGINE=1: both
#        built as the engine builds them (one-call LSTMs, fused products; thirty-first pass); BATCHES=16,8,2 the rows;
#        each profile's largest kernels with their launches a call and the six largest inductor kernels' Triton
#        source (thirty-second pass: the largest, 1.52 ms at 8 rows, is AdaIN + Snake by its name; why so slow?);
#   DBP: (after CBP, or a fresh machine: U0 first) D's doctor on CBP's setting: parity of the planar stage 2 and of a
#        batch of 16 in one call;
#   PM:  (after CM) P's pool report for CM's engine (fused fp16, batch_frames 1024), largest first, with each capture's
#        own peak and the process's memory by NVML step by step; PYTORCH_CUDA_ALLOC_CONF as set (TAG names the file).
#   CE:  (a fresh machine: U0 first) unpack, then CM with frames [64, 128, 192, 256, 512] (CL's lean list, but the
#        benchmark sentence's 139 frames still pad to 192) and expandable segments: the 1.5 GB goal, fourteenth pass;
#   HC:  (a fresh machine: U0 first) unpack, then benchmarks/host_ceiling.py: the server before a stand-in engine of
#        fixed cost, clients in the process and in a child: the GPU host's own ceiling (no GPU used); HC_ARGS adds
#        host_ceiling.py's options (e.g. C8's setting at near-zero costs: the host's own 16-client ceiling), TAG
#        names the file;
#   HCAB: (after U0) HC at CBP's engine costs (an H100's, twenty-first pass) with CBP's preferred batch sizes, clients
#        in a child at 1, 4 and 16, the checkout's scheduler against an earlier tree's (BASE, carried: a directory
#        under the checkout with that tree's wyoming_fasttts/ and benchmarks/), PAIRS alternating pairs: a server
#        change's effect on the GPU host's CPU, side by side (twenty-second pass); STAGE2_COSTS (e.g.
#        2:7.9,4:10.5,8:14.7,16:23.0, the twenty-first pass's stage 2 alone, 4 rows interpolated): the stand-in as the
#        pipelined engine, two slots (twenty-third pass), for the scheduler's rules with two batches in flight;
#   IC:  (after a compiled step, same machine) inductor's cache as inductor.tar.xz.N parts of 15 MiB: kept here under
#        .gpu/ic/ and carried (with any call before the compiled step), a fresh machine's compiled step starts with
#        it (the fourteenth pass: 337 s to start without, 96-122 s with). Inductor keys its cache on the compiled
#        stages' inputs, their layout included: parts taken before a9a17a8 (inputs as views into one inbox per
#        stage) are not reused after it (fifteenth pass: the first run with it was still compiling at 290 s);
#   CIC: (a fresh machine: U0 first) C, then IC's parts in the same call (MEASURE_S=540 leaves the ~30 s the parts
#        take): a machine given back between the two calls can no longer lose the cache a fresh compile made; the
#        step's wavs are dropped where more than two parts need the room (8 files come back at most);
#   CW:  (a fresh machine: U0 first, or after C) C with the watchdog's sampling an hour apart instead of 5 s: whether
#        its NVML and CUDA reads make the one-shot tail (sixteenth pass: the one-shot's series of start and latency is
#        in the JSON since, to see whether the slow requests come at a period);
# From the fourteenth to the eighteenth pass the compiled steps (C, CM, CL, CX, PM) ran calls of one row on eager
# kernels (engine.torch_eager_rows, removed in the nineteenth for a fused pair, torch_cuda.paired_rows).
# Each step leaves gpu-table-STEP.json (since the fifteenth pass with the scheduler's batches per load level and the
# engine alone by batch size; since 2026-12-05 evening each level also with its clients in a child process, as a
# user's are elsewhere: "load_from_child"), its log and the server's wavs for the ear in $OUT.
# SWITCH_MS=N: a measured step's server with the interpreter's GIL switch interval at N ms (gpu_table.py --switch-ms;
# twenty-second pass: 1 and 20 against the default 5).
# TREE=DIR: a measured step runs the tree under DIR (carried, e.g. `git archive REV wyoming_fasttts benchmarks
# examples` unpacked under .gpu/): an earlier commit side by side with the checkout on one machine.
# usage (from the checkout's root): bash benchmarks/h200_torch.sh STEP   (.gpu/code is not needed: the tree travels)
set -uo pipefail
step=$1 pack=/opt/pack root=$PWD code=$PWD${TREE:+/$TREE}  # the working tree travels with every call
# examples/torch-cuda.yaml's engine.torch_expandable_segments and engine.cublas_workspace_kib as the environment: the
# engine sets them only where nothing in its process has used CUDA yet, and gpu_table.py runs eager PyTorch first
LEAN="CUBLAS_WORKSPACE_CONFIG=:4096:1 PYTORCH_CUDA_ALLOC_CONF=expandable_segments:True"
export PYTHONUNBUFFERED=1 TORCHINDUCTOR_CACHE_DIR=/opt/pack/inductor
log="$OUT"/$step.log
mkdir -p $pack/chunks $pack/ic
for c in "$root"/.gpu/c*/chunk.*; do [ -e "$c" ] && cp "$c" $pack/chunks/; done
for c in "$root"/.gpu/ic/inductor.tar.xz.*; do [ -e "$c" ] && cp "$c" $pack/ic/; done  # an earlier machine's cache
ls -l $pack/chunks | tee -a "$log"
quiet() { grep -v -i -E "warn|^  (super|WeightNorm)" | tee -a "$log"; }  # a step's output, less the libraries' warnings
measure() { config=$1; (cd "$code" && PYTHONPATH=$code:$pack/site timeout "${MEASURE_S:-540}" python3 benchmarks/gpu_table.py measure \
  --inputs "$root"/.gpu/inputs.json --model $pack/data/kokoro-v1.0.int8.onnx --vocab $pack/data/vocab.json \
  --data-dir $pack/data --engine torch-cuda $config --runs 256 --warmup 10 --budget-s 60 --concurrency 1,4,16 \
  --requests 256 ${SWITCH_MS:+--switch-ms $SWITCH_MS} --wavs "$OUT"/wavs-$step --out "$OUT"/gpu-table-$step.json) 2>&1 \
  | quiet; }
prof() { limit=$1; shift; (cd "$code" && PYTHONPATH=$code:$pack/site timeout "$limit" python3 \
  benchmarks/gpu_profile.py --inputs "$root"/.gpu/inputs.json --model $pack/data/kokoro-v1.0.int8.onnx \
  --vocab $pack/data/vocab.json --kmodel-cache $pack/kmodel.pt --precision fp16 --frames 160 \
  --results "$OUT"/profile-fp16 "$@") 2>&1 | quiet; }  # stage 2 in fp16 at the 160-frame bucket (PF, PP)
pool() { limit=$1; shift; (cd "$code" && PYTHONPATH=$code:$pack/site timeout "$limit" python3 benchmarks/gpu_torch_pool.py \
  --data-dir $pack/data "$@") 2>&1 | quiet; }
pack_cache() {  # inductor's cache as 15 MiB parts in $OUT; a step's wavs make room where the parts need it
  tar -C $pack -cf - inductor | xz -T0 -6 | split -b 15M -d -a 1 - "$OUT"/inductor.tar.xz.
  [ "$(ls "$OUT"/inductor.tar.xz.* | wc -l)" -gt 2 ] && rm -rf "$OUT"/wavs-*
  ls -l "$OUT" | tee -a "$log"; }
case $step in
IC)  # after a compiled step on this machine: its inductor cache in 15 MiB parts (8 files come back at most)
  pack_cache ;;
U0)
  nvidia-smi --query-gpu=name,driver_version,memory.total,memory.used,clocks.sm,clocks.max.sm,power.limit \
    --format=csv 2>&1 | tee -a "$log" ;;
T|E|D|P|H|C|CIC|CW|CF|CR|CB|CBP|CBP1|C8|C81|C8E|C8P|C8T|C8TW|C8H|C8HA|C8N|C8S8|CRE|DH|DC|DR|DBP|D8|D8H|D8HA|CM|CL|CX|CE|PM|P8|R|PF|PP|HC|HCAB)
  [ "$(cat $pack/chunks/chunk.* | sha256sum | cut -c1-64)" = "$(cat "$root"/.gpu/all.sha)" ] || { echo "sha256 differs"; exit 3; }
  (cd $pack && cat chunks/chunk.* | xz -dc | tar -xf -) 2>&1 | tail -2 | tee -a "$log"
  (cd $pack/data && sha256sum -c sha) 2>&1 | tee -a "$log"
  if [ ! -d $pack/inductor ] && ls $pack/ic/inductor.tar.xz.* >/dev/null 2>&1; then  # IC's parts, all carried
    cat $pack/ic/inductor.tar.xz.* | xz -dc | tar -C $pack -xf - && echo "inductor cache from IC: $(du -sh $pack/inductor)" | tee -a "$log"
  fi
  { nvidia-smi; nproc; python3 -c 'import torch, triton; print(torch.__version__, torch.version.cuda, torch.backends.cudnn.version(), triton.__version__)'; } \
    > "$OUT"/nvidia-smi.txt 2>&1
  printf 'engine:\n  torch_compile: false\n' > $pack/eager.yaml
  printf 'engine:\n  precision: fp16\n' > $pack/fp16.yaml
  printf 'engine:\n  precision: fp16\n  torch_compile: true\n' > $pack/C.yaml
  printf 'engine:\n  precision: fp16\n  torch_compile: true\nwatchdog:\n  interval_s: 3600\n' > $pack/CW.yaml
  printf 'engine:\n  precision: fp16\n  torch_compile: true\n  batch_frames: 1024\n' > $pack/CM.yaml
  printf 'engine:\n  precision: fp16\n  torch_compile: true\n  batch_frames: 1024\n  buckets:\n    frames: [64, 128, 256, 512]\n' > $pack/CL.yaml
  printf 'engine:\n  precision: fp16\n  torch_compile: true\n  batch_frames: 1024\n  buckets:\n    frames: [64, 128, 192, 256, 512]\n' > $pack/CE.yaml
  printf 'engine:\n  precision: fp16\n  torch_compile: true\n  buckets:\n    frames: [64, 96, 128, 160, 192, 256, 384, 512, 768]\n' > $pack/CF.yaml
  printf 'engine:\n  precision: fp16\n  torch_compile: true\n  buckets:\n    rows: [2, 4, 8, 16]\n    frames: [64, 96, 128, 160, 192, 256, 384, 512, 768]\n' > $pack/CR.yaml
  printf 'engine:\n  precision: fp16\n  torch_compile: true\n  batch_frames: 4096\n  buckets:\n    frames: [64, 96, 128, 160, 192, 256, 384, 512, 768]\n' > $pack/CB.yaml
  printf 'engine:\n  precision: fp16\n  torch_compile: true\n  batch_frames: 1024\n  buckets:\n    frames: [64, 128, 160, 192, 256, 512]\n' > $pack/CRE.yaml
  { cat $pack/CB.yaml; printf 'scheduler:\n  preferred_batch_sizes: [4, 8, 16]\n'; } > $pack/CBP.yaml
  { cat $pack/CBP.yaml; printf '  workers: 1\n'; } > $pack/CBP1.yaml
  cp "$code"/examples/torch-cuda.yaml $pack/C8.yaml  # the shipped example (CF's engine, batches of at most 8)
  { cat $pack/C8.yaml; printf '  workers: 1\n'; } > $pack/C81.yaml
  { cat $pack/CE.yaml; printf 'scheduler:\n  max_batch: 8\n  preferred_batch_sizes: [4, 8]\n'; } | sed 's/batch_frames: 1024/batch_frames: 2048/' > $pack/C8E.yaml
  grep -v -E '^  (batch_tokens|torch_expandable_segments|cublas_workspace_kib):' $pack/C8.yaml > $pack/C8P.yaml  # 25th pass's
  grep -v '^  cublas_workspace_kib:' $pack/C8.yaml > $pack/C8T.yaml
  sed 's/^  half_lstms: all .*/  half_lstms: audio/' $pack/C8.yaml > $pack/C8H.yaml
  sed 's/^  half_lstms: all .*/  half_lstms: none/' $pack/C8.yaml > $pack/C8N.yaml
  cp $pack/C8.yaml $pack/C8HA.yaml  # the example since the thirty-second pass, under the name that pass ran it
  sed 's/^  preferred_batch_sizes: \[4, 8\]/  preferred_batch_sizes: [8]/' $pack/C8.yaml > $pack/C8S8.yaml
  case $step in  # the step's run, on the unpacked pack
  R) (cd "$code" && PYTHONPATH=$code:$pack/site timeout "${MEASURE_S:-540}" python3 benchmarks/gpu_compile_rows.py \
      --inputs "$root"/.gpu/inputs.json --model $pack/data/kokoro-v1.0.int8.onnx --vocab $pack/data/vocab.json \
      --budget-s $((${MEASURE_S:-540} - 15)) --probe ${VARIANTS:+--variants $VARIANTS} ${ROWS:+--rows $ROWS} --out "$OUT"/gpu-compile-rows.json) 2>&1 | quiet ;;
  PF) if [ "${CL:-0}" = 1 ]; then prof 400 --part compile --batches 16,8,2 --channels-last  # PF's compile, weights NHWC
    else prof 220 --part profile --batches 2,8,16 && prof 330 --part compile --batches 16,8,2; fi
    prof 60 --part report --out "$OUT"/gpu-profile-fp16${CL:+-cl$CL}.json ;;
  PP) prof "${MEASURE_S:-540}" --part planar --batches ${BATCHES:-16,8,2} --runs 40 ${BENCH:+--cudnn-benchmark} ${AS_ENGINE:+--as-engine} && prof 60 \
      --part report --out "$OUT"/gpu-profile-fp16-planar${BENCH:+-cudnn-benchmark}.json ;;
  HC) (cd "$code" && PYTHONPATH=$code:$pack/site timeout "${MEASURE_S:-300}" python3 benchmarks/host_ceiling.py \
      --data-dir $pack/data --model $pack/data/kokoro-v1.0.int8.onnx ${HC_ARGS:-} --out "$OUT"/host-ceiling${TAG:-}.json) 2>&1 | quiet ;;
  HCAB) for k in $(seq "${PAIRS:-3}"); do for tree in "$BASE" .; do (cd "$code/$tree" && PYTHONPATH=$code/$tree:$pack/site \
      timeout 120 python3 benchmarks/host_ceiling.py --data-dir $pack/data --model $pack/data/kokoro-v1.0.int8.onnx \
      --costs 1:13.3,2:13.3,4:16.2,8:22.6,16:34.7 ${STAGE2_COSTS:+--stage2-costs $STAGE2_COSTS} \
      --set 'scheduler.preferred_batch_sizes=[4, 8, 16]' --clients 1,4,16 \
      --where "child process" --out "$OUT/host-ceiling-ab-$k-$(basename "$(realpath "$tree")").json") 2>&1 \
      | grep QPS | sed "s|^|$tree $k: |" | tee -a "$log"; done; done ;;
  CL|CE|CRE|C8E|C8P|C8T) PYTORCH_CUDA_ALLOC_CONF=expandable_segments:True measure "--config $pack/$step.yaml" ;;
  C8|C81|C8TW|C8H|C8HA|C8N|C8S8) (export $LEAN; measure "--config $pack/${step/TW/}.yaml") ;;
  CX) PYTORCH_CUDA_ALLOC_CONF=expandable_segments:True measure "--config $pack/CM.yaml" ;;
  C|CM|CW|CF|CR|CB|CBP|CBP1) measure "--config $pack/$step.yaml" ;;
  CIC) measure "--config $pack/C.yaml"; pack_cache ;;
  E) measure "--config $pack/eager.yaml" ;;
  H) measure "--config $pack/fp16.yaml" ;;
  PM) pool 500 --config $pack/CM.yaml --out "$OUT"/pool-CM${TAG:-}.json ;;
  P8) (export $LEAN; pool "${MEASURE_S:-400}" --config $pack/C8.yaml --origins --out "$OUT"/pool-C8${TAG:-}.json) ;;
  P) for order in largest smallest; do pool 150 --order $order --out "$OUT"/pool-$order.json; done ;;
  D|DH|DC|DR|DBP|D8|D8H|D8HA) (cd "$code" && PYTHONPATH=$code:$pack/site timeout "${MEASURE_S:-400}" python3 -m wyoming_fasttts \
      doctor --engine torch-cuda --config "$pack/$(case $step in DH) echo fp16;; DC) echo C;; DR) echo CR;; DBP) echo CBP;;
      D8) echo C8;; D8H) echo C8H;; D8HA) echo C8HA;; *) echo eager;; esac).yaml" \
      --data-dir $pack/data --runs 20) 2>&1 | quiet ;;
  *) measure "" ;;  # T
  esac ;;
T2) measure "" ;;
M|F)
  printf 'engine:\n  precision: %s\n  batch_frames: 1024\n' "$([ "$step" = M ] && echo fp16 || echo fp32)" > $pack/$step.yaml
  measure "--config $pack/$step.yaml" ;;
esac
true
