#!/usr/bin/env bash
# Installs the Debian packages the project needs, only those missing.
#   scripts/install-deps.sh          what the library, the CLI and examples need
#   scripts/install-deps.sh --test   plus what the tests need (Catch2, clang)
#   scripts/install-deps.sh --bench  plus Google Benchmark and hyperfine
set -euo pipefail

packages=(g++ make cmake libboost-dev libfmt-dev nlohmann-json3-dev libcli11-dev)
for arg in "$@"; do
    case "$arg" in
        --test) packages+=(catch2 clang) ;;
        --bench) packages+=(libbenchmark-dev hyperfine) ;;
        *) echo "install-deps.sh: unknown option '$arg'; use --test or --bench" >&2; exit 2 ;;
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
apt-get update -qq
apt-get install -y -qq --no-install-recommends "${missing[@]}"
