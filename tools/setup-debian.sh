#!/bin/sh
# Installs what building, testing and benchmarking Laya Runtime needs on Debian 12 (run as root):
# GCC for the builds, clang-14 with its runtimes for the fuzz build (libFuzzer, sanitizers) and
# clang-format-14 for the format check; Boost (Beast, Asio) and zstd for laya-serve; python3-venv for
# the tests that drive laya-serve with the official client (tools/setup-test-venv.sh); the aarch64
# cross toolchain, the :arm64 libraries and user-mode QEMU for the Arm build and its tests
# (tools/cross/aarch64-linux-gnu.ini, docs/portability.md).
set -eu
export DEBIAN_FRONTEND=noninteractive
apt-get update -q
apt-get install -y -q --no-install-recommends \
  g++ meson ninja-build pkg-config cmake \
  libhwy-dev libtbb-dev libflatbuffers-dev flatbuffers-compiler \
  doctest-dev libbenchmark-dev libopenblas-dev libpcre2-dev libutf8proc-dev \
  clang-14 libclang-rt-14-dev clang-format-14 python3-pip python3-venv ccache \
  libboost-dev libzstd-dev
dpkg --add-architecture arm64
apt-get update -q
apt-get install -y -q --no-install-recommends \
  crossbuild-essential-arm64 qemu-user-static \
  libhwy-dev:arm64 libtbb-dev:arm64 libflatbuffers-dev:arm64 libpcre2-dev:arm64 \
  libutf8proc-dev:arm64 libbenchmark-dev:arm64 libzstd-dev:arm64 libboost-dev:arm64
