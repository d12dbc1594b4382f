#!/usr/bin/env bash
# Generates a synthetic crawl, ingests it, and shows what the index knows.
set -euo pipefail
cd "$(dirname "$0")/.."
scripts/setup.sh
cargo build --release -p linkbase
exec target/release/linkbase demo "$@"
