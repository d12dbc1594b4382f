#!/usr/bin/env bash
# The incremental writer's benchmark: crawl rounds applied to an existing index. Builds the
# fresh index (the one that takes crawls one by one; a bulk-built historic index is a
# snapshot) from crawl 0 of a synthetic web, cuts crawl 1 into rounds of a tenth of the
# pages each, and times
#   1. the first round alone on a fresh copy of the index, RUNS times (alternate it with
#      another binary's runs to compare two builds: this machine's noise is about 5%), and
#   2. ROUNDS rounds one after another in one process: the sustained rate, with the
#      compactions that the rounds' writes cause and the store growing under them.
# Writes target/bench-data/rounds/results.md. Method and results in docs/benchmarks.md,
# "Ingest throughput".
#
#   tools/bench/incremental-rounds.sh [PAGES] [ROUNDS] [RUNS]
#
# PAGES defaults to 1,150,000: crawl 0 is then an 18.1M-link index and each round 115,000
# pages with about 2.1M links. ROUNDS defaults to 6 (at most 8), RUNS to 2. The index and
# each copy of it take about 2.1 GB at the default size.
set -euo pipefail
cd "$(dirname "$0")/../.."
pages=${1:-1150000}
rounds=${2:-6}
runs=${3:-2}
domains=$((pages / 8))
round_pages=$((pages / 10))
root=$(pwd)/target/bench-data/rounds
[ "$pages" -ge 10 ] || { echo "PAGES must be at least 10" >&2; exit 2; }
[ "$rounds" -ge 1 ] && [ "$rounds" -le 8 ] || { echo "ROUNDS must be 1 to 8" >&2; exit 2; }

cargo build --release -q -p linkbase -p webgen
B=$(pwd)/target/release/linkbase
log() { echo "[$(date +%H:%M:%S)] $*" >&2; }

rm -rf "$root" && mkdir -p "$root"
log "generating $pages pages over $domains domains, two crawls"
target/release/webgen --out "$root/crawl" --pages "$pages" --domains "$domains" --crawls 2 \
    --hot-share 1.0 > "$root/webgen.txt" 2>/dev/null
log "building the index from crawl 0"
$B ingest --data "$root/index" --index fresh "$root/crawl/crawl-000.jsonl.gz" > "$root/build.txt" 2> "$root/build-progress.txt"
grep '^total' "$root/build.txt" >&2
# Crawl 1 read once, its first ROUNDS tenths written as the rounds.
zcat "$root/crawl/crawl-001.jsonl.gz" | awk -v n="$round_pages" -v rounds="$rounds" -v dir="$root" '
    { i = int((NR - 1) / n); if (i < rounds) print | ("gzip -1 > " dir "/round-" i ".jsonl.gz") }'
files=()
for ((i = 0; i < rounds; i++)); do
    files+=("$root/round-$i.jsonl.gz")
done

# "FILE: ... N links (...) in Ss" per file: its links and seconds.
per_file() { sed -n 's/^.*: [0-9]* records.* \([0-9]*\) links (.*) in \([0-9.]*\)s$/\1 \2/p' "$1"; }
fresh_copy() { rm -rf "$root/run" && cp -r "$root/index" "$root/run" && sync; }

{
    echo "# Incremental rounds ($(git rev-parse --short HEAD), $(date -u +%F))"
    echo
    echo "Index: crawl 0 of a $pages-page web, $(grep -o '[0-9]* links in' "$root/build.txt" | awk '{print $1}') links."
    echo
    echo "| run | round | links | seconds | links/s | user s | sys s |"
    echo "|---|---|---|---|---|---|---|"
} > "$root/results.md"

for ((r = 1; r <= runs; r++)); do
    log "first round alone, run $r of $runs"
    fresh_copy
    /usr/bin/time -f "%U %S" -o "$root/time.txt" \
        $B ingest --data "$root/run" --index fresh "${files[0]}" > "$root/first-$r.txt"
    read -r links secs < <(per_file "$root/first-$r.txt")
    read -r user sys < "$root/time.txt"
    echo "| first round, fresh copy $r | 1 | $links | $secs | $(python3 -c "print(round($links / $secs))") | $user | $sys |" >> "$root/results.md"
done

log "$rounds rounds in one process"
fresh_copy
/usr/bin/time -f "%U %S" -o "$root/time.txt" \
    $B ingest --data "$root/run" --index fresh "${files[@]}" > "$root/sustained.txt"
n=0
while read -r links secs; do
    n=$((n + 1))
    echo "| sustained | $n | $links | $secs | $(python3 -c "print(round($links / $secs))") | | |" >> "$root/results.md"
done < <(per_file "$root/sustained.txt")
read -r user sys < "$root/time.txt"
total=$(sed -n 's/^total: //p' "$root/sustained.txt")
{
    echo
    echo "Sustained, all rounds: $total; $user s user, $sys s system."
    echo "Compactions during the rounds (RocksDB's LOG), seconds of CPU per table:"
    echo
    python3 - "$root/run" <<'EOF'
import json, pathlib, sys, collections
started, cpu, count = {}, collections.Counter(), collections.Counter()
for log in pathlib.Path(sys.argv[1]).glob("*/LOG"):
    for line in log.open(errors="replace"):
        if "EVENT_LOG_v1" not in line:
            continue
        event = json.loads(line[line.index("{"):])
        if event.get("event") == "compaction_started":
            started[event["job"]] = event.get("cf_name", "?")
        elif event.get("event") == "compaction_finished":
            table = started.get(event["job"], "?")
            cpu[table] += event.get("compaction_time_cpu_micros", 0) / 1e6
            count[table] += 1
print(f"- all tables: {sum(count.values())} compactions, {sum(cpu.values()):.1f} s")
for table, s in cpu.most_common():
    print(f"- {table}: {count[table]} compactions, {s:.1f} s")
EOF
    echo
    echo "Store after the rounds: $(du -sb "$root/run" | cut -f1) bytes."
} >> "$root/results.md"
rm -rf "$root/run"
cat "$root/results.md"
