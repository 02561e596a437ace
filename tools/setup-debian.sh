#!/bin/sh
# Installs what building, testing and benchmarking Laya Runtime needs on Debian 12 (run as root).
set -eu
export DEBIAN_FRONTEND=noninteractive
apt-get update -q
apt-get install -y -q --no-install-recommends \
  g++ meson ninja-build pkg-config cmake \
  libhwy-dev libtbb-dev libflatbuffers-dev flatbuffers-compiler \
  doctest-dev libbenchmark-dev libopenblas-dev nlohmann-json3-dev python3-pip
