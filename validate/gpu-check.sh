#!/usr/bin/env bash
# The GPU checks of basp, run on a GPU machine from a build made elsewhere (carry build/ along):
# the CUDA kernel tests, the layer checked at P = 1 (or N = all GPUs), and one short timing table.
#
# Usage: validate/gpu-check.sh [BUILD_DIR] [OUT_DIR]   (defaults: build, $OUT or gpu-check-out)
# Needs only the node's CUDA driver, runtime, cuBLAS and NCCL; other libraries come from
# BUILD_DIR/bundle/lib. Every step has its own time limit; the whole script stays within 5 minutes.
set -uo pipefail
build=${1:-build}
out=${2:-${OUT:-gpu-check-out}}
mkdir -p "$out"
# Model files are read from this checkout (run from the repository root), wherever the build was made.
export BASP_DATA_DIR=${BASP_DATA_DIR:-$(pwd)}
export LD_LIBRARY_PATH="$build/bundle/lib:${CUDA_HOME:-/usr/local/cuda}/lib64:${LD_LIBRARY_PATH:-}"
runner=$build/validate/basp-validate-local
status=0
step() {  # step NAME SECONDS COMMAND...: runs, tees to OUT/NAME.txt, remembers failures
  local name=$1 limit=$2
  shift 2
  echo "=== $name: $*"
  timeout "$limit" "$@" 2>&1 | tee "$out/$name.txt"
  local rc=${PIPESTATUS[0]}
  echo "=== $name: exit $rc"
  if ((rc != 0)); then status=1; fi
}

nvidia-smi -L | tee "$out/gpus.txt" || { echo "gpu-check: nvidia-smi found no GPU"; exit 1; }
gpus=$(nvidia-smi -L | grep -c '^GPU')
step cuda-tests 120 "$build/tests/basp_cuda_tests"
if ((gpus == 1)); then
  # NCCL cannot put two ranks on one GPU: the layer runs with P = 1, checked against the reference.
  step layer-check-p1 60 "$runner" layer --gpus 1 --model llama-3.2-1b --seq 1K --batch 1 -w 1 -n 3 \
    --json "$out/layer-check-p1.json"
else
  step layer-check 60 "$runner" layer --gpus "$gpus" --model llama-3.2-1b --seq 2K --batch 2 -w 1 -n 3 \
    --json "$out/layer-check.json"
  step comm 60 "$runner" comm --gpus "$gpus" -b 64K -e 256M -f 4 -B 2 --json "$out/comm.json"
fi
batch=$((gpus > 1 ? 2 : 1))  # BASP: B = 2 groups of K = N/2 on several GPUs
for seq in 4K 16K; do
  step "layer-time-$seq" 60 "$runner" layer --gpus "$gpus" --model llama-3.1-8b --seq "$seq" --batch "$batch" \
    --no-check -w 2 -n 5 --json "$out/layer-time-$seq.json"
done
step compute-16K 60 "$runner" compute --gpus 1 --model llama-3.1-8b --seq 16K --batch 1 -w 2 -n 5 \
  --json "$out/compute-16K.json"
echo "gpu-check: $([[ $status == 0 ]] && echo OK || echo FAILED) (outputs in $out)"
exit $status
