#!/usr/bin/env bash
# Installs the Debian packages the project needs, only those missing.
#   scripts/install-deps.sh          what the library, the CLI and examples need
#   scripts/install-deps.sh --test   plus what the tests need (Catch2, clang and its sanitizer and
#                                    libFuzzer runtimes, Chromium to draw the plots)
#   scripts/install-deps.sh --bench  plus Google Benchmark, hyperfine, valgrind and jq
#   scripts/install-deps.sh --cuda   plus Debian's CUDA toolkit for anatomy-validate,
#                                    unless an nvcc is already there (PATH or /usr/local/cuda)
set -euo pipefail

packages=(g++ make cmake libboost-dev libfmt-dev nlohmann-json3-dev libcli11-dev)
cuda_from_debian=0
for arg in "$@"; do
    case "$arg" in
        --test) packages+=(catch2 clang libclang-rt-dev chromium) ;;
        --bench) packages+=(libbenchmark-dev hyperfine valgrind jq) ;;
        --cuda)
            if ! command -v nvcc >/dev/null && [ ! -x /usr/local/cuda/bin/nvcc ]; then
                packages+=(nvidia-cuda-toolkit)
                cuda_from_debian=1
            fi ;;
        *) echo "install-deps.sh: unknown option '$arg'; use --test, --bench or --cuda" >&2; exit 2 ;;
    esac
done

missing=()
for p in "${packages[@]}"; do
    dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
done
[ ${#missing[@]} -eq 0 ] && exit 0

if [ "$(id -u)" -ne 0 ]; then
    echo "install-deps.sh: missing packages: ${missing[*]}; run as root or install them" >&2
    exit 1
fi
export DEBIAN_FRONTEND=noninteractive
# Debian ships the CUDA toolkit in non-free.
sources=/etc/apt/sources.list.d/debian.sources
if [ "$cuda_from_debian" = 1 ] && [ -f "$sources" ] && ! grep -q "non-free" "$sources"; then
    sed -i 's/^Components: main$/Components: main contrib non-free non-free-firmware/' "$sources"
fi
apt-get update -qq
apt-get install -y -qq --no-install-recommends "${missing[@]}"
