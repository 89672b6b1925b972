#!/usr/bin/env bash
# Installs the system packages phi-gpu needs to build and test on Debian 12 / Ubuntu 22.04+:
# the Vulkan loader and headers, shaderc and glslang (shaders are compiled by `swift build`),
# Mesa's software Vulkan driver (llvmpipe, for machines without a GPU) and the validation layers.
set -euo pipefail
SUDO=""
if [ "$(id -u)" -ne 0 ]; then SUDO="sudo"; fi
export DEBIAN_FRONTEND=noninteractive
$SUDO apt-get update -qq
$SUDO apt-get install -y -qq --no-install-recommends \
  libvulkan-dev libvulkan1 vulkan-tools \
  libshaderc-dev glslang-dev glslang-tools spirv-tools \
  mesa-vulkan-drivers vulkan-validationlayers \
  pkg-config tmux unzip python3-pip >/dev/null
echo "phi-gpu: system packages installed (Vulkan $(pkg-config --modversion vulkan), shaderc $(pkg-config --modversion shaderc))"
