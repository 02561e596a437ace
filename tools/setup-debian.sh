#!/bin/sh
# Installs what building, testing and benchmarking Laya Runtime needs on Debian 12 (run as root):
# GCC for the builds, clang-14 with its runtimes for the fuzz build (libFuzzer, sanitizers) and
# clang-format-14 for the format check.
set -eu
export DEBIAN_FRONTEND=noninteractive
apt-get update -q
apt-get install -y -q --no-install-recommends \
  g++ meson ninja-build pkg-config cmake \
  libhwy-dev libtbb-dev libflatbuffers-dev flatbuffers-compiler \
  doctest-dev libbenchmark-dev libopenblas-dev libpcre2-dev libutf8proc-dev \
  clang-14 libclang-rt-14-dev clang-format-14 python3-pip
