#!/usr/bin/env bash
# Flow iteration speed against networkit's PageRank on the same graph, iteration count
# and thread count, in one run. Installs networkit from PyPI into target/bench-venv.
#
#   tools/bench/flow-vs-networkit.sh [GRAPH_BASE]   (default ../shared/data/graph/cnr-2000)
set -euo pipefail
cd "$(dirname "$0")/../.."
base=${1:-../shared/data/graph/cnr-2000}
iterations=50
scripts/setup.sh
[ -x target/bench-venv/bin/python ] || python3 -m venv target/bench-venv
target/bench-venv/bin/python -c 'import networkit' 2>/dev/null || target/bench-venv/bin/pip install -q networkit
cargo build --release -q -p linkbase-benches --bin flow-bench
mkdir -p target/bench-data
edges=target/bench-data/$(basename "$base").tsv
target/release/flow-bench cnr "$base" --threads 1 --export "$edges" > /dev/null
nodes=$(grep '^nodes=' "$base.properties" | cut -d= -f2)
for threads in 1 2; do
    for run in 1 2 3; do
        target/release/flow-bench cnr "$base" --threads "$threads" 2>/dev/null
        target/bench-venv/bin/python tools/bench/networkit_pagerank.py "$edges" "$nodes" "$threads" "$iterations"
    done
done
