#!/usr/bin/env bash
# Installs what building Linkbase needs beyond the Rust toolchain: clang/libclang for the
# RocksDB bindings; with `test`, also Chromium and ChromeDriver for the web tool's browser
# tests. Does nothing when everything is already there.
set -euo pipefail

packages=(libclang-dev clang build-essential)
[ "${1:-}" = test ] && packages+=(chromium chromium-driver)
need=()
for pkg in "${packages[@]}"; do
    dpkg -s "$pkg" >/dev/null 2>&1 || need+=("$pkg")
done

if [ ${#need[@]} -gt 0 ]; then
    echo "installing system packages: ${need[*]}"
    sudo=""
    [ "$(id -u)" -ne 0 ] && sudo=sudo
    $sudo apt-get update -qq
    DEBIAN_FRONTEND=noninteractive $sudo apt-get install -y -qq "${need[@]}"
fi
command -v cargo >/dev/null || { echo "cargo not found: install Rust from https://rustup.rs" >&2; exit 1; }
