#!/usr/bin/env bash
# Where Citation Flow and Trust Flow put the items of the UK Web Archive 1996 host graph
# (with benches/data/ukwa-1996-seeds.tsv) and of the demo web (with data/demo-seeds.tsv):
# the calibration targets of docs/flow.md as markdown tables, the order of hosts against
# networkit's PageRank and TrustRank, and histograms in docs/img/. Installs networkit,
# scipy and matplotlib from PyPI into target/bench-venv.
#
#   tools/bench/flow-calibration.sh
set -euo pipefail
cd "$(dirname "$0")/../.."
shared=../shared/data
[ -f "$shared/graph/ukwa-1996-uk-web-hosts.tsv.gz" ] || { echo "missing $shared/graph/ukwa-1996-uk-web-hosts.tsv.gz" >&2; exit 1; }
scripts/setup.sh
[ -x target/bench-venv/bin/python ] || python3 -m venv target/bench-venv
target/bench-venv/bin/python -c 'import networkit, scipy, matplotlib' 2>/dev/null ||
    target/bench-venv/bin/pip install -q networkit scipy matplotlib
cargo build --release -q -p linkbase -p webgen -p linkbase-benches
work=target/bench-data/flow-calibration
rm -rf "$work"
mkdir -p "$work" docs/img

target/release/flow-calibration ukwa "$shared/graph/ukwa-1996-uk-web-hosts.tsv.gz" \
    benches/data/ukwa-1996-seeds.tsv "$work/ukwa"
target/bench-venv/bin/python tools/bench/flow_calibration.py "$work/ukwa" \
    benches/data/ukwa-1996-seeds.tsv "UK hosts 1996" docs/img/flow-ukwa-1996.png --rank

# The demo's web: same generator settings as `linkbase demo` (20,000 pages, 2,000 domains).
target/release/webgen --out "$work/demo/crawl" --pages 20000 --domains 2000 > /dev/null
target/release/linkbase ingest --data "$work/demo/data" "$work/demo/crawl"/* > /dev/null
target/release/linkbase flow --data "$work/demo/data" --seeds data/demo-seeds.tsv > /dev/null
target/release/flow-calibration index "$work/demo/data" "$work/demo/export"
target/bench-venv/bin/python tools/bench/flow_calibration.py "$work/demo/export" \
    data/demo-seeds.tsv "demo web" docs/img/flow-demo.png
