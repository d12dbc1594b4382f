#!/usr/bin/env bash
# Linkbase against PostgreSQL 15, DuckDB and ClickHouse (chdb) on the same synthetic web,
# in one run, then the flow benchmark against networkit. Installs wrk and PostgreSQL from
# Debian's packages and duckdb and chdb from PyPI, runs PostgreSQL on a private socket, and
# prints a table with ratios
# (target/bench-data/suite/results.md). Method in docs/benchmarks.md, "Peer suite".
#
#   tools/bench/peer-suite.sh [PAGES]
#
# PAGES defaults to 1,250,000: about 21M links in one crawl, the hot page with over 1M
# backlinks from over 100,000 referring domains. SUITE_SECONDS (default 5) is the time
# spent on each query.
set -euo pipefail
cd "$(dirname "$0")/../.."
pages=${1:-1250000}
domains=$((pages / 8))
secs=${SUITE_SECONDS:-5}
root=$(pwd)/target/bench-data/suite
port=15432

sudo=""
[ "$(id -u)" -ne 0 ] && sudo=sudo
scripts/setup.sh
missing=()
command -v wrk >/dev/null || missing+=(wrk)
[ -x /usr/lib/postgresql/15/bin/initdb ] || missing+=(postgresql)
command -v pgbench >/dev/null || missing+=(postgresql-contrib)
if [ ${#missing[@]} -gt 0 ]; then
    $sudo apt-get update -qq
    DEBIAN_FRONTEND=noninteractive $sudo apt-get install -y -qq "${missing[@]}"
fi
PGBIN=/usr/lib/postgresql/15/bin
cargo build --release -q -p linkbase -p webgen -p linkbase-benches --bins
B=target/release/linkbase
S=target/release/peer-suite
now() { date +%s.%N; }
secs_between() { python3 -c "print(f'{$2 - $1:.2f}')"; }

rm -rf "$root" && mkdir -p "$root"
log() { echo "[$(date +%H:%M:%S)] $*" >&2; }

# --- The web -------------------------------------------------------------------------
log "generating $pages pages over $domains domains"
target/release/webgen --out "$root/crawl" --pages "$pages" --domains "$domains" --crawls 1 \
    --hot-share 1.0 --seeds "$root/seeds.tsv" 2>/dev/null | tee "$root/webgen.txt"
$S items --pages "$pages" --domains "$domains" --hot-share 1.0 > "$root/items.txt"
hot=$(head -1 "$root/items.txt")
cold=$(sed -n 2p "$root/items.txt")

# --- Linkbase: ingest to a fully queryable store ---------------------------------------
log "Linkbase ingest"
t0=$(now)
$B ingest --data "$root/lb" "$root"/crawl/*.gz > "$root/lb-ingest.txt"
t1=$(now)
lb_links=$(grep -o 'total: [0-9]* files, [0-9]* links' "$root/lb-ingest.txt" | awk '{print $4}')
lb_ingest=$(secs_between "$t0" "$t1")
log "Linkbase flow metrics"
t0=$(now)
$B flow --data "$root/lb" --seeds "$root/seeds.tsv" > "$root/lb-flow.txt" 2>&1
t1=$(now)
lb_flow=$(secs_between "$t0" "$t1")
lb_bytes=$(du -sb "$root/lb/historic" | cut -f1)
# The same crawl as a historic snapshot: bulk build and flow in one command, the flow
# build taking the graph and backlink rows the bulk build kept.
log "Linkbase historic build"
t0=$(now)
$B historic build --data "$root/lb-historic" --seeds "$root/seeds.tsv" "$root"/crawl/*.gz \
    > "$root/lb-historic.txt" 2>&1
t1=$(now)
lb_historic=$(secs_between "$t0" "$t1")
lb_historic_flow=$(grep -o 'flow metrics: [0-9.]*' "$root/lb-historic.txt" | awk '{print $3}')
# A snapshot keeps none of the rows only the incremental writer reads.
lb_historic_bytes=$(du -sb "$root"/lb-historic/historic-[0-9]* | awk '{s += $1} END {print s}')
rm -rf "$root/lb-historic"
# The same crawl into the fresh index, which goes on taking crawls one by one and so
# also gets the rows only the incremental writer reads (the historic index above is a
# snapshot: docs/format.md, "Snapshots").
log "Linkbase ingest into the fresh index"
t0=$(now)
$B ingest --data "$root/lb-fresh" --index fresh "$root"/crawl/*.gz > "$root/lb-ingest-fresh.txt"
t1=$(now)
lb_ingest_fresh=$(secs_between "$t0" "$t1")
lb_fresh_bytes=$(du -sb "$root/lb-fresh/fresh" | cut -f1)
rm -rf "$root/lb-fresh"

# The same web as Common Crawl WAT files (three JSON envelopes per fetch, about nine
# times the bytes: 0.8 GB at 250,000 pages, 4 GB at the default size, removed after): the
# same store, from the format public crawls ship.
log "Linkbase ingest from WAT"
target/release/webgen --out "$root/wat" --pages "$pages" --domains "$domains" --crawls 1 \
    --hot-share 1.0 --format wat > "$root/webgen-wat.txt" 2>&1
t0=$(now)
$B ingest --data "$root/lb-wat" "$root"/wat/*.gz > "$root/lb-ingest-wat.txt"
t1=$(now)
lb_ingest_wat=$(secs_between "$t0" "$t1")
lb_wat_links=$(grep -o 'total: [0-9]* files, [0-9]* links' "$root/lb-ingest-wat.txt" | awk '{print $4}' || true)
[ "$lb_wat_links" = "$lb_links" ] || { echo "WAT read $lb_wat_links links, JSON-lines $lb_links" >&2; exit 1; }
rm -rf "$root/lb-wat" "$root/wat"

# --- PostgreSQL: COPY, indexes, aggregate tables ----------------------------------------
log "exporting rows for PostgreSQL"
$S rows --data "$root/lb" --out "$root/rows.csv"
pg_rows=$(wc -l < "$root/rows.csv")
pgdata=/var/tmp/linkbase-suite-pg
asuser=()
if [ "$(id -u)" -eq 0 ]; then asuser=(runuser -u postgres --); fi
"${asuser[@]}" "$PGBIN/pg_ctl" -D "$pgdata" stop -m fast >/dev/null 2>&1 || true
$sudo rm -rf "$pgdata" && mkdir -p "$pgdata"
[ "$(id -u)" -eq 0 ] && chown postgres "$pgdata"
"${asuser[@]}" "$PGBIN/initdb" -D "$pgdata" -U bench --auth=trust -E UTF8 --locale=C >/dev/null
# Tuned for a one-shot bulk load and read-mostly queries on this 24 GB, 2-core machine.
cat >> "$pgdata/postgresql.conf" <<EOF
# TCP on loopback for the wire comparison (same transport as Linkbase's HTTP); the
# load and the in-process-style queries use the Unix socket.
listen_addresses = '127.0.0.1'
unix_socket_directories = '/tmp'
port = $port
shared_buffers = 4GB
effective_cache_size = 16GB
work_mem = 256MB
maintenance_work_mem = 2GB
max_parallel_maintenance_workers = 2
max_parallel_workers_per_gather = 2
wal_level = minimal
max_wal_senders = 0
max_wal_size = 20GB
checkpoint_timeout = 30min
synchronous_commit = off
random_page_cost = 1.1
jit = off
EOF
"${asuser[@]}" "$PGBIN/pg_ctl" -D "$pgdata" -l "$pgdata/log" -w start >/dev/null
server=""
trap '"${asuser[@]}" "$PGBIN/pg_ctl" -D "$pgdata" stop -m fast >/dev/null 2>&1 || true; [ -n "$server" ] && kill $server 2>/dev/null || true' EXIT
PSQL=(psql -X -q -v ON_ERROR_STOP=1 -h /tmp -p "$port" -U bench -d postgres)
log "PostgreSQL COPY of $pg_rows rows"
t0=$(now)
# Created and loaded in one transaction with wal_level=minimal: COPY writes no WAL.
"${PSQL[@]}" <<EOF
BEGIN;
CREATE TABLE links (
    source_url text NOT NULL, target_url text NOT NULL, target_host text NOT NULL,
    target_domain text NOT NULL, source_domain text NOT NULL, anchor text NOT NULL,
    source_ip inet, nofollow boolean NOT NULL, deleted boolean NOT NULL, link_type text NOT NULL,
    first_seen date, last_seen date, date_lost date,
    source_tf smallint NOT NULL, source_cf smallint NOT NULL,
    target_tf smallint NOT NULL, target_cf smallint NOT NULL);
\copy links FROM '$root/rows.csv' WITH (FORMAT csv)
COMMIT;
EOF
t1=$(now)
log "PostgreSQL indexes"
"${PSQL[@]}" <<'EOF'
CREATE INDEX links_target_tf ON links (target_url, source_tf DESC);
CREATE INDEX links_target_live_tf ON links (target_url, source_tf DESC) WHERE NOT deleted;
CREATE INDEX links_target_domain_tf ON links (target_url, source_domain, source_tf DESC);
CREATE INDEX links_target_found ON links (target_url, first_seen);
CREATE INDEX links_target_lost ON links (target_url, date_lost) WHERE date_lost IS NOT NULL;
EOF
t2=$(now)
log "PostgreSQL aggregate tables"
"${PSQL[@]}" <<'EOF'
CREATE TABLE refdomains AS
  SELECT target_url AS item, source_domain, count(*) AS links,
         count(*) FILTER (WHERE deleted) AS deleted, min(first_seen) AS first_seen,
         max(last_seen) AS last_seen, max(source_tf) AS trust_flow
  FROM links GROUP BY 1, 2;
CREATE INDEX refdomains_rank ON refdomains (item, links DESC);
CREATE TABLE anchors AS
  SELECT target_url AS item, anchor, count(*) AS links,
         count(DISTINCT source_domain) AS ref_domains,
         count(*) FILTER (WHERE deleted) AS deleted, count(*) FILTER (WHERE nofollow) AS nofollow
  FROM links GROUP BY 1, 2;
CREATE INDEX anchors_rank ON anchors (item, ref_domains DESC);
CREATE TABLE summary AS
  SELECT target_url AS item, count(*) AS ext_backlinks,
         count(DISTINCT source_domain) AS ref_domains, count(DISTINCT source_ip) AS ref_ips,
         count(*) FILTER (WHERE deleted) AS deleted, count(*) FILTER (WHERE nofollow) AS nofollow,
         min(first_seen) AS first_seen, max(last_seen) AS last_seen
  FROM links GROUP BY 1;
CREATE UNIQUE INDEX summary_item ON summary (item);
VACUUM ANALYZE;
EOF
t3=$(now)
pg_copy=$(secs_between "$t0" "$t1")
pg_index=$(secs_between "$t1" "$t2")
pg_agg=$(secs_between "$t2" "$t3")
read -r pg_bytes pg_bytes_all < <("${PSQL[@]}" -At -F ' ' -c "SELECT pg_total_relation_size('links'), pg_total_relation_size('links') + pg_total_relation_size('refdomains') + pg_total_relation_size('anchors') + pg_total_relation_size('summary')")

# --- DuckDB and ClickHouse (chdb): the same rows, aggregate tables and queries (PyPI) -------
python3 -c "import duckdb, chdb" 2>/dev/null || pip install -q duckdb chdb
for engine in duckdb clickhouse; do
    log "$engine load, aggregate tables and queries"
    python3 tools/bench/columnar_peer.py "$engine" "$root/rows.csv" "$root/$engine" \
        "$root/items.txt" "$secs" "$root/$engine-queries.tsv" > "$root/$engine.txt"
done
duck_line=$(cat "$root/duckdb.txt")
ch_line=$(cat "$root/clickhouse.txt")
rm -f "$root/rows.csv"

# --- Queries: Linkbase in-process, PostgreSQL through pgbench (1 client) -----------------
log "Linkbase queries (in-process, ${secs}s each)"
$S queries --data "$root/lb" --items "$root/items.txt" --seconds "$secs" > "$root/lb-queries.tsv"
last_day=$("${PSQL[@]}" -At -c "SELECT max(last_seen) FROM summary")
first_day=$("${PSQL[@]}" -At -c "SELECT (date '$last_day' - 30)::text")
in_list=$(sed "s/'/''/g; s/.*/'&'/" "$root/items.txt" | paste -sd, -)
mkdir -p "$root/sql"
cat > "$root/sql/top100.sql" <<'EOF'
SELECT * FROM links WHERE target_url = :hot ORDER BY source_tf DESC LIMIT 100;
EOF
cat > "$root/sql/top100_live.sql" <<'EOF'
SELECT * FROM links WHERE target_url = :hot AND NOT deleted ORDER BY source_tf DESC LIMIT 100;
EOF
cat > "$root/sql/top100_per_domain.sql" <<'EOF'
SELECT * FROM (SELECT DISTINCT ON (source_domain) * FROM links WHERE target_url = :hot ORDER BY source_domain, source_tf DESC) t ORDER BY source_tf DESC LIMIT 100;
EOF
cat > "$root/sql/rows50000.sql" <<'EOF'
SELECT * FROM links WHERE target_url = :hot ORDER BY source_tf DESC LIMIT 50000;
EOF
cat > "$root/sql/refdomains100.sql" <<'EOF'
SELECT * FROM refdomains WHERE item = :hot ORDER BY links DESC LIMIT 100;
EOF
cat > "$root/sql/refdomains100_past1000.sql" <<'EOF'
SELECT * FROM refdomains WHERE item = :hot ORDER BY links DESC OFFSET 1000 LIMIT 100;
EOF
cat > "$root/sql/refdomains100_raw.sql" <<'EOF'
SELECT source_domain, count(*) AS links FROM links WHERE target_url = :hot GROUP BY 1 ORDER BY 2 DESC LIMIT 100;
EOF
cat > "$root/sql/anchors100.sql" <<'EOF'
SELECT * FROM anchors WHERE item = :hot ORDER BY ref_domains DESC LIMIT 100;
EOF
cat > "$root/sql/newlost30.sql" <<EOF
SELECT d, sum(found), sum(lost) FROM (
  SELECT first_seen AS d, 1 AS found, 0 AS lost FROM links WHERE target_url = :hot AND first_seen BETWEEN '$first_day' AND '$last_day'
  UNION ALL
  SELECT date_lost, 0, 1 FROM links WHERE target_url = :hot AND date_lost BETWEEN '$first_day' AND '$last_day') x
GROUP BY d ORDER BY d;
EOF
cat > "$root/sql/info_hot.sql" <<'EOF'
SELECT * FROM summary WHERE item = :hot;
EOF
cat > "$root/sql/info_cold.sql" <<'EOF'
SELECT * FROM summary WHERE item = :cold;
EOF
cat > "$root/sql/info100.sql" <<EOF
SELECT * FROM summary WHERE item IN ($in_list);
EOF
# p50 and p99 (microseconds) from pgbench's per-transaction log.
percentiles() { cat "$1".* | awk '{print $3}' | sort -n | awk '{a[NR]=$1} END {print a[int((NR-1)*0.5)+1], a[int((NR-1)*0.99)+1], NR}'; }
: > "$root/pg-queries.tsv"
for q in top100 top100_live top100_per_domain rows50000 refdomains100 refdomains100_raw refdomains100_past1000 anchors100 newlost30 info_hot info_cold info100; do
    log "PostgreSQL $q"
    rm -f "$root/pglog-$q".*
    pgbench -n -h /tmp -p "$port" -U bench -M prepared -c 1 -T "$secs" -D "hot=$hot" -D "cold=$cold" \
        -f "$root/sql/$q.sql" -l --log-prefix="$root/pglog-$q" postgres > /dev/null 2>&1
    read -r p50 p99 n < <(percentiles "$root/pglog-$q")
    printf '%s\t%s\t%s\t%s\n' "$q" "$p50" "$p99" "$n" >> "$root/pg-queries.tsv"
done

# --- Over the network: Linkbase HTTP (wrk) and PostgreSQL's protocol (pgbench), 32 clients,
# both over TCP on loopback
log "HTTP and wire-protocol load"
account=$($B keys --data "$root/lb" account-create --name bench --index-item-info 1000000000000 \
    --analysis 1000000000000000 --retrieval 1000000000000000 2>/dev/null)
key=$($B keys --data "$root/lb" create --account "$account" 2>/dev/null)
# One key on 32 connections, as pgbench's 32 clients: heavy requests may all run at once.
$B serve --data "$root/lb" --listen 127.0.0.1:18183 --no-sandbox --max-heavy 32 --max-heavy-per-account 32 > "$root/serve.log" 2>&1 &
server=$!
for _ in $(seq 100); do grep -q serving "$root/serve.log" && break; sleep 0.2; done
enc_hot=$(python3 -c "import urllib.parse,sys; print(urllib.parse.quote(sys.argv[1], safe=''))" "$hot")
base="http://127.0.0.1:18183/api/json?app_api_key=$key"
wrk_run() { wrk -t2 -c32 -d"${secs}s" --latency "$1" | awk '/Requests\/sec/ {r=$2} / 50%/ {p50=$2} / 99%/ {p99=$2} END {print r, p50, p99}'; }
# Throughput and mean latency: with many clients per thread pgbench reuses timestamps,
# so its per-transaction log cannot give percentiles here.
pg_load() {
    pgbench -n -h 127.0.0.1 -p "$port" -U bench -M prepared -c 32 -j 2 -T "$secs" -D "hot=$hot" -D "cold=$cold" \
        -f "$root/sql/$1.sql" postgres 2>/dev/null |
        awk '/^latency average/ {avg=$4 $5} /^tps/ {tps=$3} END {print tps, "mean " avg, "-"}'
}
read -r lb_rps_top lb_p50_top lb_p99_top < <(wrk_run "$base&cmd=GetBackLinkData&item=$enc_hot&Count=100")
read -r pg_tps_top pg_p50_top pg_p99_top < <(pg_load top100)
read -r lb_rps_info lb_p50_info lb_p99_info < <(wrk_run "$base&cmd=GetIndexItemInfo&items=1&item0=$enc_hot")
read -r pg_tps_info pg_p50_info pg_p99_info < <(pg_load info_hot)
kill $server 2>/dev/null || true

# --- Flow against networkit --------------------------------------------------------------
flow_line="(skipped: ../shared/data/graph/cnr-2000 not found)"
if [ -e ../shared/data/graph/cnr-2000.graph ]; then
    log "flow against networkit"
    tools/bench/flow-vs-networkit.sh > "$root/flow.txt" 2>&1 || true
    flow_line=$(python3 - "$root/flow.txt" <<'EOF'
import re, sys
text = open(sys.argv[1]).read()
ours = [float(x) for x in re.findall(r"([0-9.]+) ns/edge/iteration", text)]
theirs = [float(x) for x in re.findall(r"networkit[^\n]*?([0-9.]+) ns/edge/iteration", text)]
ours = [x for x in ours if x not in theirs]
if ours and theirs:
    print(f"Linkbase {min(ours):.2f} ns/edge/iteration, networkit {min(theirs):.2f}: {min(theirs)/min(ours):.1f}x")
else:
    print("(could not read tools/bench/flow-vs-networkit.sh output)")
EOF
)
fi

# --- The table -------------------------------------------------------------------------------
python3 - "$root" <<EOF > "$root/results.md"
import sys
root = sys.argv[1]
def tsv(name):
    rows = [l.rstrip('\n').split('\t') for l in open(f"{root}/{name}") if l.strip()]
    return {r[0]: r[1:] for r in rows if r[0] != 'query'}
lb, pg = tsv('lb-queries.tsv'), tsv('pg-queries.tsv')
duck, ch = tsv('duckdb-queries.tsv'), tsv('clickhouse-queries.tsv')
links, rows = int("$lb_links"), int("$pg_rows")
lb_ingest, pg_copy, pg_index, pg_agg = $lb_ingest, $pg_copy, $pg_index, $pg_agg
pg_total = pg_copy + pg_index + pg_agg
print(f"Peer suite, {links:,} links ingested ({rows:,} backlinks), hot page: $hot")
print()
print("| measure | Linkbase | PostgreSQL | PostgreSQL / Linkbase |")
print("|---|---|---|---|")
print(f"| load to a queryable store, links/s | {links/lb_ingest:,.0f} ({lb_ingest:.0f} s, from gzipped crawl files) | {rows/pg_total:,.0f} ({pg_copy:.0f} s COPY + {pg_index:.0f} s indexes + {pg_agg:.0f} s aggregates, from parsed CSV) | {(rows/pg_total)/(links/lb_ingest):.2f} |")
print(f"| load from WAT files instead, links/s | {links/$lb_ingest_wat:,.0f} ({$lb_ingest_wat:.0f} s, the same web as Common Crawl WAT) | - | - |")
print(f"| load into the fresh index instead (with the incremental writer's rows), links/s | {links/$lb_ingest_fresh:,.0f} ({$lb_ingest_fresh:.0f} s; {int('$lb_fresh_bytes')/rows:,.0f} bytes per backlink before flow metrics) | - | - |")
print(f"| flow metrics | {$lb_flow:.1f} s (\`linkbase flow\` over the built store) | - | - |")
print(f"| historic build: bulk build and flow metrics | {links/$lb_historic:,.0f} links/s ({$lb_historic:.0f} s; flow stage {float('$lb_historic_flow'):.1f} s, reading the graph and backlinks the build kept) | - | - |")
print(f"| bytes per backlink | {int('$lb_bytes')/rows:,.0f} (every link, three levels, all views; the historic index after flow metrics); historic build {int('$lb_historic_bytes')/rows:,.0f} | {int('$pg_bytes')/rows:,.0f} table+indexes, {int('$pg_bytes_all')/rows:,.0f} with aggregates | {int('$pg_bytes_all')/int('$lb_bytes'):.2f} |")
names = {"top100": "top 100 by SourceTrustFlow", "top100_live": "top 100, live links only",
  "top100_per_domain": "top 100, one per referring domain", "rows50000": "50,000 backlinks",
  "refdomains100": "referring domains, top 100 (PostgreSQL: static aggregate table)",
  "refdomains100_raw": "referring domains, top 100 (PostgreSQL: GROUP BY over links)",
  "refdomains100_past1000": "referring domains 1,001 to 1,100 (Linkbase: past a snapshot's ranked copies)",
  "anchors100": "anchor text, top 100 (PostgreSQL: static aggregate table)", "newlost30": "new/lost in 30 days",
  "info_hot": "item info, hot page", "info_cold": "item info, cold page", "info100": "item info, 100 items"}
print()
print("| query (hot page unless said) | Linkbase p50 / p99 µs | PostgreSQL p50 / p99 µs | DuckDB p50 / p99 µs | ClickHouse p50 / p99 µs | p50 ratios PostgreSQL, DuckDB, ClickHouse / Linkbase |")
print("|---|---|---|---|---|---|")
def cell(r): return f"{float(r[0]):,.0f} / {float(r[1]):,.0f}" if r else "-"
def ratio(r, l): return f"{float(r[0])/max(float(l[0]),0.001):,.1f}" if r else "-"
for q, label in names.items():
    l = lb.get("refdomains100" if q == "refdomains100_raw" else q)
    if not l: continue
    p, d, c = pg.get(q), duck.get(q), ch.get(q)
    print(f"| {label} | {float(l[0]):,.1f} / {float(l[1]):,.1f} | {cell(p)} | {cell(d)} | {cell(c)} | {ratio(p, l)}, {ratio(d, l)}, {ratio(c, l)} |")
print()
print("| over loopback, 32 connections, 2 client threads (same 2 cores as the servers) | Linkbase (HTTP, wrk) | PostgreSQL (its protocol, pgbench) | Linkbase / PostgreSQL |")
print("|---|---|---|---|")
print(f"| GetBackLinkData Count=100 / top-100 query: requests/s, p50, p99 | $lb_rps_top, $lb_p50_top, $lb_p99_top | $pg_tps_top, $pg_p50_top, $pg_p99_top | {float('$lb_rps_top')/float('$pg_tps_top'):.2f} |")
print(f"| GetIndexItemInfo 1 item / summary row: requests/s, p50, p99 | $lb_rps_info, $lb_p50_info, $lb_p99_info | $pg_tps_info, $pg_p50_info, $pg_p99_info | {float('$lb_rps_info')/float('$pg_tps_info'):.2f} |")
print()
print("Flow: $flow_line")
print("DuckDB (same rows, same aggregate tables, from the same CSV): $duck_line")
print("ClickHouse (chdb, MergeTree ordered by target and TF; same rows and tables): $ch_line")
EOF
cat "$root/results.md"
echo "commit $(git rev-parse --short HEAD), $(date -u +%Y-%m-%d)" | tee -a "$root/results.md"
