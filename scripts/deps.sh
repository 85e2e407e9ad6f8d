#!/usr/bin/env bash
# Installs the Debian packages basp builds against, when they are missing.
# As root it runs apt-get itself; otherwise it prints the exact command and stops.
set -euo pipefail

packages=(cmake g++ make libboost-graph-dev libyaml-cpp-dev libcli11-dev libeigen3-dev
          catch2 libopenmpi-dev openmpi-bin nlohmann-json3-dev pkg-config)
# SimGrid is only a test-time oracle for the flow model (tests/simgrid_crosscheck.cpp);
# rsvg-convert (librsvg2-bin) renders the SVG plots in a test to prove they are valid.
if [[ "${1:-}" == "--tests" ]]; then packages+=(libsimgrid-dev librsvg2-bin); fi
# clang's libFuzzer for scripts/fuzz.sh (the test suite replays the fuzz inputs with g++).
if [[ "${1:-}" == "--fuzz" ]]; then packages+=(clang libclang-rt-14-dev); fi

missing=()
for p in "${packages[@]}"; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
done
if ((${#missing[@]} == 0)); then exit 0; fi

if [[ $(id -u) -eq 0 ]]; then
  echo "basp: installing missing Debian packages: ${missing[*]}"
  export DEBIAN_FRONTEND=noninteractive
  apt-get update -qq
  apt-get install -y -qq --no-install-recommends "${missing[@]}" >/dev/null
else
  echo "basp: missing Debian packages: ${missing[*]}" >&2
  echo "basp: install them with: sudo apt-get install ${missing[*]}" >&2
  exit 1
fi
