#!/usr/bin/env bash
# API throughput and latency over loopback with wrk (installed from Debian's packages),
# against `linkbase serve` on the 1M-backlink benchmark store (built by
# `cargo bench -p linkbase-benches --bench backlinks` if missing). Also times a
# GetBackLinkData Count=50000 and a full DownloadBackLinks export.
#
#   tools/bench/api-load.sh [SECONDS]
set -euo pipefail
cd "$(dirname "$0")/../.."
secs=${1:-10}
scripts/setup.sh
command -v wrk >/dev/null || { sudo=""; [ "$(id -u)" -ne 0 ] && sudo=sudo; $sudo apt-get install -y -qq wrk; }
cargo build --release -q -p linkbase
format=$(sed -n 's/^pub const FORMAT_VERSION: u8 = \([0-9]*\);/\1/p' crates/linkstore/src/store.rs)
store=target/bench-data/hot-1000000-format$format
if [ ! -e "$store/BUILT" ]; then
    cargo bench -q -p linkbase-benches --bench backlinks -- --test >/dev/null
fi
data=target/bench-data/api-data
rm -rf "$data" && mkdir -p "$data"
ln -s "$(pwd)/$store" "$data/historic"
# Metering is on: every request below is charged to this account (allowances large
# enough never to run out).
account=$(target/release/linkbase keys --data "$data" account-create --name bench \
    --index-item-info 1000000000000 --analysis 1000000000000000 --retrieval 1000000000000000 2>/dev/null)
key=$(target/release/linkbase keys --data "$data" create --account "$account" 2>/dev/null)
# One key on 32 connections, as pgbench's 32 clients: heavy requests may all run at once
# (by default an account runs one per core).
target/release/linkbase serve --data "$data" --listen 127.0.0.1:18181 --no-sandbox \
    --max-heavy 32 --max-heavy-per-account 32 > target/bench-data/serve.log 2>&1 &
server=$!
trap 'kill $server 2>/dev/null' EXIT
for _ in $(seq 50); do grep -q serving target/bench-data/serve.log && break; sleep 0.2; done
base="http://127.0.0.1:18181/api/json?app_api_key=$key"
hot="http%3A%2F%2Fwww.hot-target.com%2F"
for name in "GetIndexItemInfo 1 item|cmd=GetIndexItemInfo&items=1&item0=$hot" \
            "GetBackLinkData Count=100|cmd=GetBackLinkData&item=$hot&Count=100" \
            "GetBackLinkData Count=100 one per domain|cmd=GetBackLinkData&item=$hot&Count=100&MaxSourceURLsPerRefDomain=1"; do
    label=${name%%|*}
    query=${name#*|}
    echo "== $label (wrk -t2 -c32 -d${secs}s, keep-alive)"
    wrk -t2 -c32 -d"${secs}s" --latency "$base&$query" | grep -E "Requests/sec|50%|99%|Non-2xx|Socket errors" || true
done
echo "== GetBackLinkData Count=50000 with JSON encoding (3 runs, seconds at the client)"
for _ in 1 2 3; do
    curl -s -o target/bench-data/50k.json -w '%{time_total}\n' "$base&cmd=GetBackLinkData&item=$hot&Count=50000"
done
grep -o '"Count":[0-9]*' target/bench-data/50k.json | head -1
echo "== DownloadBackLinks of the whole hot target"
start=$(date +%s.%N)
id=$(curl -s "$base&cmd=DownloadBackLinks&Query=$hot&SkipIfAnalysisCostGreaterThan=100000000" | grep -o '"DownloadJobID":"[0-9A-F]*"' | cut -d'"' -f4)
while ! curl -s "$base&cmd=GetDownloadsList&DownloadJobID=$id" | grep -q '"Status":4'; do sleep 0.2; done
end=$(date +%s.%N)
rows=$(curl -s "$base&cmd=GetDownloadsList&DownloadJobID=$id" | grep -o '"AnalysisProgressInfo":"[0-9]*' | grep -o '[0-9]*$')
echo "rows=$rows seconds=$(echo "$end - $start" | bc) rows_per_second=$(echo "$rows / ($end - $start)" | bc)"
ps -o rss= -p $server | awk '{print "server RSS MB", $1/1024}'
