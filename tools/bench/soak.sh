#!/usr/bin/env bash
# A soak: mixed API load (tools/bench/soak.lua through wrk, metered) against `linkbase
# serve` on the demo web for MINUTES (default 10) while a fresh crawl round is ingested
# into the running server every minute. Samples the server's RSS every 5 s into
# target/bench-data/soak/rss.csv, plots it to docs/img/soak.png, and fails if any reply
# was not OK or the server exited. Not part of the test suite.
#
#   tools/bench/soak.sh [MINUTES]
set -euo pipefail
cd "$(dirname "$0")/../.."
minutes=${1:-10}
scripts/setup.sh
command -v wrk >/dev/null || { sudo=""; [ "$(id -u)" -ne 0 ] && sudo=sudo; $sudo apt-get install -y -qq wrk; }
[ -x target/bench-venv/bin/python ] || python3 -m venv target/bench-venv
target/bench-venv/bin/python -c 'import matplotlib' 2>/dev/null || target/bench-venv/bin/pip install -q matplotlib
cargo build --release -q -p linkbase -p webgen
work=target/bench-data/soak
rm -rf "$work" && mkdir -p "$work"
B=target/release/linkbase
# One crawl round per minute of soak, plus two to start from.
target/release/webgen --out "$work/crawl" --pages 20000 --domains 2000 --crawls $((minutes + 2)) > /dev/null
rounds=("$work"/crawl/*)
$B ingest --data "$work/data" "${rounds[0]}" "${rounds[1]}" > /dev/null
$B ingest --data "$work/data" --index fresh "${rounds[0]}" "${rounds[1]}" > /dev/null
$B flow --data "$work/data" --seeds data/demo-seeds.tsv > /dev/null
$B flow --data "$work/data" --index fresh --seeds data/demo-seeds.tsv > /dev/null
account=$($B keys --data "$work/data" account-create --name soak --index-item-info 1000000000000 \
    --analysis 1000000000000000 --retrieval 1000000000000000 2>/dev/null)
key=$($B keys --data "$work/data" create --account "$account" 2>/dev/null)
# One key on 16 connections: let its heavy requests all run (by default one per core).
$B serve --data "$work/data" --listen 127.0.0.1:18184 --no-sandbox --max-heavy 16 \
    --max-heavy-per-account 16 > "$work/serve.log" 2>&1 &
server=$!
trap 'kill $server 2>/dev/null' EXIT
for _ in $(seq 50); do grep -q serving "$work/serve.log" && break; sleep 0.2; done
# RSS beside what the server attributes (/metrics: block caches and memtables of both
# indexes), every 5 s.
echo "seconds,rss_mb,attributed_mb" > "$work/rss.csv"
(
    start=$(date +%s)
    while kill -0 $server 2>/dev/null; do
        rss=$(ps -o rss= -p $server | awk '{print $1/1024}')
        attributed=$(curl -s --max-time 2 http://127.0.0.1:18184/metrics |
            awk '/^linkbase_index_(memtable|block_cache)_bytes/ {s += $2} END {print s / 1048576}')
        echo "$(( $(date +%s) - start )),$rss,${attributed:-0}" >> "$work/rss.csv"
        sleep 5
    done
) &
sampler=$!
(
    for ((i = 2; i < ${#rounds[@]}; i++)); do
        sleep 60
        [ -e "$work/stop" ] && break
        $B ingest --data "$work/data" --index fresh "${rounds[$i]}" > "$work/ingest-$i.log" 2>&1 ||
            echo "ingest of ${rounds[$i]} failed" >> "$work/ingest-errors.log"
    done
) &
ingester=$!
item=$(python3 -c 'import urllib.parse,sys; print(urllib.parse.quote(sys.argv[1], safe=""))' \
    "$(grep -m1 -v '^#' data/demo-seeds.tsv | cut -f1)")
KEY=$key ITEM=$item wrk -t2 -c16 -d"${minutes}m" --timeout 10s -s tools/bench/soak.lua \
    http://127.0.0.1:18184/ | tee "$work/wrk.txt"
# No new round after the load; one being ingested finishes.
touch "$work/stop"
wait $ingester
kill -0 $server || { echo "the server exited"; exit 1; }
curl -s http://127.0.0.1:18184/metrics | grep -E '^linkbase_index_(memtable|block_cache)_bytes' || true
kill $sampler 2>/dev/null || true
target/bench-venv/bin/python - "$work/rss.csv" docs/img/soak.png "$minutes" <<'PY'
import csv, sys
import matplotlib
matplotlib.use("Agg")
import matplotlib.pyplot as plt
rows = list(csv.DictReader(open(sys.argv[1])))
t = [int(r["seconds"]) / 60 for r in rows]
rss = [float(r["rss_mb"]) for r in rows]
attributed = [float(r["attributed_mb"]) for r in rows]
fig, ax = plt.subplots(figsize=(8, 3))
ax.plot(t, rss, label="server RSS")
ax.plot(t, attributed, label="block caches + memtables (/metrics)")
ax.legend(loc="lower right")
ax.set_xlabel("minutes")
ax.set_ylabel("MB")
ax.set_ylim(0, max(rss) * 1.2)
ax.set_title(f"soak: mixed API load, a fresh crawl round ingested every minute ({sys.argv[3]} min)")
fig.tight_layout()
fig.savefig(sys.argv[2], dpi=80)
print(f"RSS: first minute {max(rss[:12]):.0f} MB, last minute {max(rss[-12:]):.0f} MB, max {max(rss):.0f} MB")
print(f"RSS less caches and memtables: first minute {max(r - a for r, a in zip(rss[:12], attributed[:12])):.0f} MB, "
      f"last minute {max(r - a for r, a in zip(rss[-12:], attributed[-12:])):.0f} MB")
PY
errors=$(grep -o 'API errors [0-9]*' "$work/wrk.txt" | grep -o '[0-9]*$')
[ ! -e "$work/ingest-errors.log" ] || { cat "$work/ingest-errors.log"; exit 1; }
[ "$errors" = 0 ] || { echo "$errors replies were not OK"; exit 1; }
echo "soak passed: 0 errors"
