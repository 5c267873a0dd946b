#!/usr/bin/env bash
# The GPU container's start: link the batched graphs built into the image into the data volume, build (or
# just check) the TensorRT plans for this GPU, then serve on them. When the plans cannot be built (a GPU the
# flavour does not support, a driver too old, ...) the container still serves, on ONNX Runtime CUDA when it
# runs on this machine, else on the CPU, and says so in the log: a restart loop would help no one.
# Arguments (the image's CMD) go to the server; a first argument `doctor` or `build-engine` runs that command
# on the container's data and plan cache instead, and `say`, `bench` or `--version` run as given.
set -uo pipefail

fasttts=${FASTTTS_BIN:-wyoming-fasttts}
backend=${FASTTTS_BACKEND:-tensorrt-rtx}
data_dir=${FASTTTS_DATA_DIR:-/data}
engine_dir=${FASTTTS_ENGINE_DIR:-/engines}
shipped_graphs=${FASTTTS_SHIPPED_GRAPHS:-/opt/wyoming-fasttts/graphs}

log() {
    echo "wyoming-fasttts: $*" >&2
}

case "${1:-}" in
    doctor | build-engine)
        exec "${fasttts}" "$1" --data-dir "${data_dir}" --engine-dir "${engine_dir}" "${@:2}" ;;
    say | bench | --version)
        exec "${fasttts}" "$@" ;;
esac

# The image's batched graphs (exported at build time: the image has no torch) under the names the server
# looks for; a folder the server exported itself is left alone, a link from an older image is replaced.
mkdir -p "${data_dir}/graphs"
for graphs in "${shipped_graphs}"/batched-*; do
    [[ -d "${graphs}" ]] || continue
    target="${data_dir}/graphs/$(basename "${graphs}")"
    if [[ -L "${target}" || ! -e "${target}" ]]; then
        ln -sfn "${graphs}" "${target}"
    fi
done

log "checking the ${backend} plan cache in ${engine_dir} (the first start builds it for this GPU, which takes minutes)"
"${fasttts}" build-engine --backend "${backend}" --batched always --data-dir "${data_dir}" --engine-dir "${engine_dir}"
status=$?
if [[ ${status} -eq 0 ]]; then
    exec "${fasttts}" serve --engine "${backend}" --data-dir "${data_dir}" --engine-dir "${engine_dir}" "$@"
fi

if "${fasttts}" doctor --onnxruntime-cuda-only; then
    fallback=onnxruntime-cuda
else
    fallback=onnxruntime
fi
log "build-engine failed (exit ${status}; its reason is above), so ${backend} is not used: serving on ${fallback}" \
    "instead. 'docker compose run --rm wyoming-fasttts doctor' explains what this GPU and driver need."
exec "${fasttts}" serve --engine "${fallback}" --data-dir "${data_dir}" --engine-dir "${engine_dir}" "$@"
