#!/usr/bin/env bash
# Installs what is missing, builds, and runs every test: first a warnings-as-
# errors build, then the same tests under AddressSanitizer + UBSan, then each
# libFuzzer target for 30 seconds (scripts/fuzz.sh).
set -euo pipefail
cd "$(dirname "$0")/.."

bash scripts/install-deps.sh --test --cuda
# anatomy-validate is built when CMake finds nvcc; CUDA's own install is not on PATH by default.
[ -x /usr/local/cuda/bin/nvcc ] && export PATH="$PATH:/usr/local/cuda/bin"
jobs=$(nproc)

cmake -S . -B build -DCMAKE_BUILD_TYPE=Release -DANATOMY_WERROR=ON
cmake --build build -j "$jobs"
ctest --test-dir build --output-on-failure -j "$jobs"

sanitize="-fsanitize=address,undefined -fno-sanitize-recover=all -fno-omit-frame-pointer"
cmake -S . -B build-sanitize -DCMAKE_BUILD_TYPE=Debug -DANATOMY_WERROR=ON \
      -DCMAKE_CXX_FLAGS="$sanitize" -DCMAKE_EXE_LINKER_FLAGS="$sanitize"
cmake --build build-sanitize -j "$jobs"
# Compiler-driven and consumer tests compile code; they ran in the first build.
ctest --test-dir build-sanitize --output-on-failure -j "$jobs" -E '^(compile_fail|compile_pass|consumer)\.'
bash scripts/fuzz.sh
