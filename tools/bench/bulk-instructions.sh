#!/usr/bin/env bash
# Instructions a bulk build executes per link, counted by callgrind: a measure of the
# build's work that this machine's noise does not move (its wall-clock times of one
# binary vary by a fifth within an hour), for changes too small for alternated timings.
# Builds a synthetic crawl of PAGES pages (25,000 by default: 433,458 links), bulk-builds
# it with one worker under `valgrind --tool=callgrind` with each BINARY given (default:
# this checkout's release build), and prints each binary's instructions in total and per
# link. Two runs of one binary on one input count within 0.04% of each other; time under
# callgrind is about 50 times the build's. Method and results in docs/benchmarks.md, "URLs already in normal form".
# FORMAT=warc or FORMAT=wat writes the crawl as WARC or WAT files instead of JSON lines:
# pages there write links to their own host root-relative, as real pages mostly do.
#
#   [FORMAT=jsonl|warc|wat] tools/bench/bulk-instructions.sh [PAGES] [BINARY...]
#
# Needs valgrind. Each binary's callgrind profile is kept beside the results, in
# target/bench-data/instructions/, for `callgrind_annotate --inclusive=yes`.
set -euo pipefail
cd "$(dirname "$0")/../.."
pages=${1:-25000}
shift || true
[ "$pages" -ge 10 ] || { echo "PAGES must be at least 10" >&2; exit 2; }
command -v valgrind > /dev/null || { echo "valgrind is not installed" >&2; exit 2; }
root=$(pwd)/target/bench-data/instructions
cargo build --release -q -p linkbase -p webgen
binaries=("$@")
[ ${#binaries[@]} -gt 0 ] || binaries=("$(pwd)/target/release/linkbase")

rm -rf "$root" && mkdir -p "$root"
target/release/webgen --out "$root/crawl" --pages "$pages" --domains $((pages / 8)) \
    --crawls 1 --hot-share 1.0 --format "${FORMAT:-jsonl}" 2> /dev/null > "$root/webgen.txt"
links=$(grep -o '[0-9]* links' "$root/webgen.txt" | cut -d' ' -f1)
for i in "${!binaries[@]}"; do
    out="$root/callgrind.$i.out"
    rm -rf "$root/store"
    valgrind --tool=callgrind --callgrind-out-file="$out" "${binaries[$i]}" ingest \
        --threads 1 --data "$root/store" "$root"/crawl/* > "$root/ingest.$i.log" 2>&1
    total=$(grep -m1 '^summary:' "$out" | cut -d' ' -f2)
    echo "${binaries[$i]}: $total instructions, $((total / links)) per link ($links links; $out)"
done
rm -rf "$root/store"
