"""DuckDB as a peer: load the peer suite's backlink rows (CSV) into a DuckDB file and
build the same aggregate tables the suite builds in PostgreSQL (referring domains, anchor
texts, per-item summary), then report rows/s to a queryable state and bytes per row.

    python3 tools/bench/duckdb_load.py ROWS.csv WORKDIR

Prints one line: `duckdb: N rows, load S s, aggregates S s, R rows/s, B bytes per row`.
"""

import os
import sys
import time

import duckdb

COLUMNS = {
    "source_url": "VARCHAR", "target_url": "VARCHAR", "target_host": "VARCHAR",
    "target_domain": "VARCHAR", "source_domain": "VARCHAR", "anchor": "VARCHAR",
    "source_ip": "VARCHAR", "nofollow": "BOOLEAN", "deleted": "BOOLEAN",
    "link_type": "VARCHAR", "first_seen": "DATE", "last_seen": "DATE",
    "date_lost": "DATE", "source_tf": "SMALLINT", "source_cf": "SMALLINT",
    "target_tf": "SMALLINT", "target_cf": "SMALLINT",
}

AGGREGATES = """
CREATE TABLE refdomains AS
  SELECT target_url AS item, source_domain, count(*) AS links,
         count(*) FILTER (WHERE deleted) AS deleted, min(first_seen) AS first_seen,
         max(last_seen) AS last_seen, max(source_tf) AS trust_flow
  FROM links GROUP BY 1, 2 ORDER BY item, links DESC;
CREATE TABLE anchors AS
  SELECT target_url AS item, anchor, count(*) AS links,
         count(DISTINCT source_domain) AS ref_domains,
         count(*) FILTER (WHERE deleted) AS deleted, count(*) FILTER (WHERE nofollow) AS nofollow
  FROM links GROUP BY 1, 2 ORDER BY item, ref_domains DESC;
CREATE TABLE summary AS
  SELECT target_url AS item, count(*) AS ext_backlinks,
         count(DISTINCT source_domain) AS ref_domains, count(DISTINCT source_ip) AS ref_ips,
         count(*) FILTER (WHERE deleted) AS deleted, count(*) FILTER (WHERE nofollow) AS nofollow,
         min(first_seen) AS first_seen, max(last_seen) AS last_seen
  FROM links GROUP BY 1 ORDER BY item;
"""


def main() -> None:
    rows_csv, workdir = sys.argv[1], sys.argv[2]
    os.makedirs(workdir, exist_ok=True)
    path = os.path.join(workdir, "links.duckdb")
    for stale in (path, path + ".wal"):
        if os.path.exists(stale):
            os.remove(stale)
    con = duckdb.connect(path)
    columns = ", ".join(f"'{k}': '{v}'" for k, v in COLUMNS.items())
    t0 = time.time()
    # Sorted by target and Trust Flow, as the queries read it (zone maps then prune).
    con.execute(
        f"CREATE TABLE links AS SELECT * FROM read_csv('{rows_csv}', header=false, "
        f"columns={{{columns}}}) ORDER BY target_url, source_tf DESC"
    )
    t1 = time.time()
    con.execute(AGGREGATES)
    con.execute("CHECKPOINT")
    t2 = time.time()
    n = con.execute("SELECT count(*) FROM links").fetchone()[0]
    con.close()
    size = os.path.getsize(path)
    print(
        f"duckdb {duckdb.__version__}: {n} rows, load {t1 - t0:.1f} s, aggregates "
        f"{t2 - t1:.1f} s, {n / (t2 - t0):.0f} rows/s, {size / n:.0f} bytes per row"
    )


if __name__ == "__main__":
    main()
