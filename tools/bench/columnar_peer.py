"""A columnar peer for the peer suite: DuckDB (PyPI `duckdb`) or ClickHouse (PyPI `chdb`,
MergeTree). Loads the suite's backlink rows (CSV), builds the same aggregate tables the
suite builds in PostgreSQL (referring domains, anchor texts, per-item summary), reports
rows/s to a queryable state and bytes per row, then times the suite's queries in process.

    python3 tools/bench/columnar_peer.py duckdb|clickhouse ROWS.csv WORKDIR ITEMS SECONDS OUT.tsv

ITEMS: the suite's item list (hot page first, cold page second). OUT.tsv gets one line per
query: name, p50 and p99 in microseconds, repetitions. Prints one summary line.
"""

import datetime
import os
import shutil
import sys
import time

COLUMNS = [
    ("source_url", "VARCHAR", "String"), ("target_url", "VARCHAR", "String"),
    ("target_host", "VARCHAR", "String"), ("target_domain", "VARCHAR", "String"),
    ("source_domain", "VARCHAR", "String"), ("anchor", "VARCHAR", "String"),
    ("source_ip", "VARCHAR", "String"), ("nofollow", "BOOLEAN", "Bool"),
    ("deleted", "BOOLEAN", "Bool"), ("link_type", "VARCHAR", "String"),
    ("first_seen", "DATE", "Nullable(Date)"), ("last_seen", "DATE", "Nullable(Date)"),
    ("date_lost", "DATE", "Nullable(Date)"), ("source_tf", "SMALLINT", "Int16"),
    ("source_cf", "SMALLINT", "Int16"), ("target_tf", "SMALLINT", "Int16"),
    ("target_cf", "SMALLINT", "Int16"),
]

# The aggregate tables, in the SQL both engines accept; `{table}` is each engine's
# CREATE TABLE ... AS prefix for a table sorted by `{order}`.
AGGREGATES = [
    ("refdomains", "item, links DESC", """
  SELECT target_url AS item, source_domain, count(*) AS links,
         countIf(deleted) AS deleted, min(first_seen) AS first_seen,
         max(last_seen) AS last_seen, max(source_tf) AS trust_flow
  FROM links GROUP BY item, source_domain"""),
    ("anchors", "item, ref_domains DESC", """
  SELECT target_url AS item, anchor, count(*) AS links,
         count(DISTINCT source_domain) AS ref_domains,
         countIf(deleted) AS deleted, countIf(nofollow) AS nofollow
  FROM links GROUP BY item, anchor"""),
    ("summary", "item", """
  SELECT target_url AS item, count(*) AS ext_backlinks,
         count(DISTINCT source_domain) AS ref_domains, count(DISTINCT source_ip) AS ref_ips,
         countIf(deleted) AS deleted, countIf(nofollow) AS nofollow,
         min(first_seen) AS first_seen, max(last_seen) AS last_seen
  FROM links GROUP BY item"""),
]


def lit(s: str) -> str:
    return "'" + s.replace("\\", "\\\\").replace("'", "''") + "'"


def queries(hot: str, cold: str, items: list, first_day: str, last_day: str) -> dict:
    h, c = lit(hot), lit(cold)
    in_list = ", ".join(lit(i) for i in items)
    return {
        "top100": f"SELECT * FROM links WHERE target_url = {h} ORDER BY source_tf DESC LIMIT 100",
        "top100_live": f"SELECT * FROM links WHERE target_url = {h} AND NOT deleted "
        "ORDER BY source_tf DESC LIMIT 100",
        "top100_per_domain": f"SELECT * FROM (SELECT *, row_number() OVER (PARTITION BY "
        f"source_domain ORDER BY source_tf DESC) AS n FROM links WHERE target_url = {h}) t "
        "WHERE n = 1 ORDER BY source_tf DESC LIMIT 100",
        "rows50000": f"SELECT * FROM links WHERE target_url = {h} ORDER BY source_tf DESC "
        "LIMIT 50000",
        "refdomains100": f"SELECT * FROM refdomains WHERE item = {h} ORDER BY links DESC LIMIT 100",
        "refdomains100_raw": f"SELECT source_domain, count(*) AS links FROM links WHERE "
        f"target_url = {h} GROUP BY source_domain ORDER BY links DESC LIMIT 100",
        "anchors100": f"SELECT * FROM anchors WHERE item = {h} ORDER BY ref_domains DESC LIMIT 100",
        "newlost30": f"SELECT d, sum(found), sum(lost) FROM (SELECT first_seen AS d, 1 AS found, "
        f"0 AS lost FROM links WHERE target_url = {h} AND first_seen BETWEEN '{first_day}' AND "
        f"'{last_day}' UNION ALL SELECT date_lost AS d, 0 AS found, 1 AS lost FROM links WHERE "
        f"target_url = {h} AND date_lost BETWEEN '{first_day}' AND '{last_day}') x GROUP BY d "
        "ORDER BY d",
        "info_hot": f"SELECT * FROM summary WHERE item = {h}",
        "info_cold": f"SELECT * FROM summary WHERE item = {c}",
        "info100": f"SELECT * FROM summary WHERE item IN ({in_list})",
    }


class DuckDB:
    name = "duckdb"

    def __init__(self, workdir: str):
        import duckdb

        self.version = duckdb.__version__
        self.path = os.path.join(workdir, "links.duckdb")
        self.con = duckdb.connect(self.path)

    def load(self, rows_csv: str) -> None:
        cols = ", ".join(f"'{n}': '{t}'" for n, t, _ in COLUMNS)
        # Sorted by target and Trust Flow, as the queries read it (zone maps then prune).
        self.con.execute(
            f"CREATE TABLE links AS SELECT * FROM read_csv({lit(rows_csv)}, header=false, "
            f"columns={{{cols}}}) ORDER BY target_url, source_tf DESC"
        )

    def aggregate(self) -> None:
        for name, order, select in AGGREGATES:
            select = select.replace("countIf(deleted)", "count(*) FILTER (WHERE deleted)")
            select = select.replace("countIf(nofollow)", "count(*) FILTER (WHERE nofollow)")
            self.con.execute(f"CREATE TABLE {name} AS {select} ORDER BY {order}")
        self.con.execute("CHECKPOINT")

    def fetch(self, sql: str) -> list:
        return self.con.execute(sql).fetchall()

    def scalar(self, sql: str) -> str:
        return str(self.con.execute(sql).fetchone()[0])

    def bytes(self) -> int:
        self.con.close()
        return os.path.getsize(self.path)


class ClickHouse:
    name = "clickhouse"

    def __init__(self, workdir: str):
        import chdb
        from chdb import session

        self.version = chdb.__version__
        self.path = os.path.join(workdir, "chdb")
        self.sess = session.Session(self.path)
        self.sess.query("CREATE DATABASE IF NOT EXISTS suite ENGINE = Atomic")
        self.sess.query("USE suite")

    def load(self, rows_csv: str) -> None:
        cols = ", ".join(f"{n} {t}" for n, _, t in COLUMNS)
        self.sess.query(
            f"CREATE TABLE links ({cols}) ENGINE = MergeTree "
            "ORDER BY (target_url, -source_tf)"
        )
        self.sess.query(
            f"INSERT INTO links SELECT * FROM file({lit(rows_csv)}, 'CSV', {lit(cols)})"
        )

    def aggregate(self) -> None:
        for name, order, select in AGGREGATES:
            key = ", ".join(
                f"-{c.split()[0]}" if c.endswith("DESC") else c for c in order.split(", ")
            )
            self.sess.query(
                f"CREATE TABLE {name} ENGINE = MergeTree ORDER BY ({key}) AS {select}"
            )
        for name in ["links"] + [a[0] for a in AGGREGATES]:
            self.sess.query(f"OPTIMIZE TABLE {name} FINAL")

    def fetch(self, sql: str) -> list:
        return str(self.sess.query(sql, "TabSeparated")).splitlines()

    def scalar(self, sql: str) -> str:
        return str(self.sess.query(sql, "TabSeparated")).strip()

    def bytes(self) -> int:
        out = self.sess.query(
            "SELECT sum(bytes_on_disk) FROM system.parts WHERE database = 'suite' AND active",
            "TabSeparated",
        )
        return int(str(out).strip())


def time_query(db, sql: str, seconds: float):
    took = []
    rows = 0
    end = time.perf_counter() + seconds
    while time.perf_counter() < end or not took:
        t = time.perf_counter()
        rows = len(db.fetch(sql))
        took.append((time.perf_counter() - t) * 1e6)
    took.sort()
    return took[(len(took) - 1) // 2], took[int((len(took) - 1) * 0.99)], len(took), rows


def main() -> None:
    engine, rows_csv, workdir, items_path, seconds, out_path = sys.argv[1:7]
    shutil.rmtree(workdir, ignore_errors=True)
    os.makedirs(workdir)
    db = {"duckdb": DuckDB, "clickhouse": ClickHouse}[engine](workdir)
    t0 = time.time()
    db.load(os.path.abspath(rows_csv))
    t1 = time.time()
    db.aggregate()
    t2 = time.time()
    n = int(db.scalar("SELECT count(*) FROM links"))
    items = [line.rstrip("\n") for line in open(items_path) if line.strip()]
    last_day = datetime.date.fromisoformat(db.scalar("SELECT max(last_seen) FROM summary"))
    first_day = last_day - datetime.timedelta(days=30)
    with open(out_path, "w") as out:
        for name, sql in queries(items[0], items[1], items, str(first_day), str(last_day)).items():
            p50, p99, reps, rows = time_query(db, sql, float(seconds))
            out.write(f"{name}\t{p50:.1f}\t{p99:.1f}\t{reps}\t{rows}\n")
    size = db.bytes()
    print(
        f"{db.name} {db.version}: {n} rows, load {t1 - t0:.1f} s, aggregates "
        f"{t2 - t1:.1f} s, {n / (t2 - t0):.0f} rows/s, {size / n:.0f} bytes per row"
    )


if __name__ == "__main__":
    main()
