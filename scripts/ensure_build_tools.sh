#!/usr/bin/env bash
# Make sure Debian's cmake, ninja and a C++ compiler are installed for building llama.cpp's
# llama-server (tests/thirdparty/llama_build.py; the one place that installs them). As root
# it installs what is missing; otherwise it prints the one command to run and fails.
set -euo pipefail

missing=()
command -v cmake >/dev/null 2>&1 || missing+=(cmake)
command -v ninja >/dev/null 2>&1 || missing+=(ninja-build)
command -v c++ >/dev/null 2>&1 || missing+=(g++)
if [ ${#missing[@]} -eq 0 ]; then
    exit 0
fi
if [ "$(id -u)" -ne 0 ]; then
    echo "ensure_build_tools: missing ${missing[*]}; run: sudo apt-get update && sudo apt-get install -y ${missing[*]}" >&2
    exit 1
fi
echo "ensure_build_tools: installing ${missing[*]} (apt-get)"
apt-get update -qq
DEBIAN_FRONTEND=noninteractive apt-get install -y -qq "${missing[@]}" >/dev/null
