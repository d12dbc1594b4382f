#!/usr/bin/env bash
# The whole test suite: unit, integration and end-to-end tests, one optimised build.
# Tests that read ../shared/data fail (not skip) when CI=true and the data is missing.
set -euo pipefail
cd "$(dirname "$0")/.."
scripts/setup.sh test
# The abuse test holds 2,000 connections from each side: lift the descriptor limit to
# what the system allows.
ulimit -n "$(ulimit -Hn)" 2>/dev/null || true
cargo build --release --workspace --bins
cargo test --release --workspace "$@"
