#!/usr/bin/env bash
# Copies the shared libraries that executables need, other than the C and C++ runtimes and CUDA's own
# (driver, runtime, cuBLAS, NCCL: the GPU node's are used), into DIR, for GPU nodes without our Debian packages.
# Usage: scripts/bundle-libs.sh DIR EXECUTABLE...
set -euo pipefail
dir=$1
shift
mkdir -p "$dir"
skip='^(linux-vdso|ld-linux|libc\.so|libstdc\+\+\.so|libgcc_s\.so|libm\.so|libdl\.so|librt\.so|libpthread\.so|libcuda\.so|libcudart\.so|libcublas\.so|libcublasLt\.so|libnccl\.so|libnvidia)'
for exe in "$@"; do
  ldd "$exe" | awk '/=> \// {print $1, $3}' | while read -r name path; do
    if [[ ! $name =~ $skip ]]; then cp -L --preserve=mode "$path" "$dir/$name"; fi
  done
done
