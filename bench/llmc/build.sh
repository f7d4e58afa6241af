#!/usr/bin/env bash
# Builds karpathy/llm.c's train_gpt2.cu twice (without and with cuDNN attention),
# each with every cudaMalloc logged by cuda_malloc_log.cpp.
#   bench/llmc/build.sh LLMC_SOURCE_DIR CUDNN_FRONTEND_INCLUDE_DIR OUTPUT_DIR [SM]
# llm.c is not part of this repository: fetch it yourself (github.com/karpathy/llm.c).
set -euo pipefail
src=$(realpath "$1"); cudnn_fe=$(realpath "$2"); out=$(realpath -m "$3"); sm=${4:-90}
here=$(dirname "$(realpath "$0")")
mkdir -p "$out"
# CUDA 13 takes a cudaMemLocation in cudaMemAdvise; llm.c (May 2025) passes a
# device ordinal on its managed-memory fallback path, which these runs never take.
rm -rf "$out/src"; cp -r "$src" "$out/src"; src="$out/src"
if [ "$(nvcc --version | grep -o 'release [0-9]*' | cut -d' ' -f2)" -ge 13 ]; then
    sed -i 's/cudaMemAdviseSetPreferredLocation, cudaCpuDeviceId)/cudaMemAdviseSetPreferredLocation, cudaMemLocation{cudaMemLocationTypeHost, 0})/' \
        "$src/llmc/cuda_utils.cuh"
fi
# mfu.h reads clocks through NVML only where nvml.h is found; nothing here needs it.
flags=(--threads=0 -t=0 --use_fast_math -std=c++17 -O3
       --generate-code "arch=compute_${sm},code=[compute_${sm},sm_${sm}]")
libs=(-lcublas -lcublasLt -Xlinker --wrap=cudaMalloc)
nvcc -std=c++17 -c "$here/cuda_malloc_log.cpp" -o "$out/cuda_malloc_log.o"
nvcc "${flags[@]}" "$src/train_gpt2.cu" "$out/cuda_malloc_log.o" "${libs[@]}" \
     -I"$src" -o "$out/train_gpt2cu" &
nvcc "${flags[@]}" -DENABLE_CUDNN -I"$cudnn_fe" -I"$src" -c "$src/llmc/cudnn_att.cpp" -o "$out/cudnn_att.o"
nvcc "${flags[@]}" -DENABLE_CUDNN -I"$cudnn_fe" "$src/train_gpt2.cu" "$out/cudnn_att.o" \
     "$out/cuda_malloc_log.o" "${libs[@]}" -lcudnn -lnvrtc -L"$(dirname "$(command -v nvcc)")/../lib64/stubs" -lcuda -I"$src" -o "$out/train_gpt2cu_cudnn"
wait
