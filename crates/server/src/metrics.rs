//! Operations metrics in Prometheus' text format at `GET /metrics` (from this machine, or
//! with the operator's token): requests and latencies per command, units charged,
//! refusals for lack of units, connections, and each index's size.

use crate::commands::Command;
use crate::envelope::{Reply, Value};
use crate::metering::UNIT_GLOBALS;
use std::fmt::Write;
use std::sync::atomic::{AtomicI64, AtomicU64, Ordering::Relaxed};
use std::time::Duration;

/// Upper bounds (seconds) of the latency histogram's buckets.
const BUCKETS: [f64; 12] = [
    0.0005, 0.001, 0.002, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1.0, 5.0,
];
/// Charged-unit globals, with their metric label.
const UNITS: [(&str, &str); 3] = [
    (UNIT_GLOBALS[0].0, "index_item_info"),
    (UNIT_GLOBALS[1].0, "analysis"),
    (UNIT_GLOBALS[2].0, "retrieval"),
];

#[derive(Default)]
struct CommandMetrics {
    ok: AtomicU64,
    failed: AtomicU64,
    buckets: [AtomicU64; BUCKETS.len()],
    micros: AtomicU64,
}

/// The counters; one per server, updated without locks.
pub struct Metrics {
    /// By position in [`Command::ALL`], then requests naming no known command.
    commands: Vec<CommandMetrics>,
    charged: [AtomicU64; 3],
    refused: AtomicU64,
    open_connections: AtomicI64,
    connections: AtomicU64,
}

impl Default for Metrics {
    fn default() -> Metrics {
        Metrics {
            commands: (0..=Command::ALL.len())
                .map(|_| CommandMetrics::default())
                .collect(),
            charged: Default::default(),
            refused: AtomicU64::new(0),
            open_connections: AtomicI64::new(0),
            connections: AtomicU64::new(0),
        }
    }
}

/// A per-index gauge: its name, its help text and how to read it.
type IndexGauge = (&'static str, &'static str, fn(&IndexGauges) -> u64);

/// What `/metrics` reports of one index.
pub struct IndexGauges {
    pub index: &'static str,
    pub disk_bytes: u64,
    pub backlinks: u64,
    pub memtable_bytes: u64,
    pub block_cache_bytes: u64,
    pub table_readers_bytes: u64,
}

impl Metrics {
    /// Records one API request: the command it named, its reply and how long it took.
    pub fn request(&self, command: Option<Command>, reply: &Reply, elapsed: Duration) {
        let slot = command
            .and_then(|c| Command::ALL.iter().position(|x| *x == c))
            .unwrap_or(Command::ALL.len());
        let m = &self.commands[slot];
        let ok = reply.code == "OK" || reply.code == "QueuedForProcessing";
        if ok { &m.ok } else { &m.failed }.fetch_add(1, Relaxed);
        let secs = elapsed.as_secs_f64();
        for (bound, bucket) in BUCKETS.iter().zip(&m.buckets) {
            if secs <= *bound {
                bucket.fetch_add(1, Relaxed);
            }
        }
        m.micros.fetch_add(elapsed.as_micros() as u64, Relaxed);
        for ((global, _), total) in UNITS.iter().zip(&self.charged) {
            if let Some(Value::Int(n)) = reply.globals.get(global) {
                total.fetch_add(u64::try_from(*n).unwrap_or(0), Relaxed);
            }
        }
        if reply.code.starts_with("Insufficient") {
            self.refused.fetch_add(1, Relaxed);
        }
    }

    pub fn connection_opened(&self) {
        self.open_connections.fetch_add(1, Relaxed);
        self.connections.fetch_add(1, Relaxed);
    }

    pub fn connection_closed(&self) {
        self.open_connections.fetch_sub(1, Relaxed);
    }

    /// The text exposition; `indexes` are (name, bytes on disk, external backlinks).
    pub fn render(&self, indexes: &[IndexGauges]) -> String {
        let mut out = String::new();
        let names = Command::ALL
            .iter()
            .map(|c| c.name())
            .chain(std::iter::once("unknown"));
        out.push_str("# HELP linkbase_requests_total API requests by command and outcome.\n");
        out.push_str("# TYPE linkbase_requests_total counter\n");
        for (name, m) in names.clone().zip(&self.commands) {
            for (outcome, n) in [("ok", &m.ok), ("error", &m.failed)] {
                let _ = writeln!(
                    out,
                    "linkbase_requests_total{{command=\"{name}\",outcome=\"{outcome}\"}} {}",
                    n.load(Relaxed)
                );
            }
        }
        out.push_str("# HELP linkbase_request_seconds API request latency by command.\n");
        out.push_str("# TYPE linkbase_request_seconds histogram\n");
        for (name, m) in names.zip(&self.commands) {
            let count = m.ok.load(Relaxed) + m.failed.load(Relaxed);
            for (bound, bucket) in BUCKETS.iter().zip(&m.buckets) {
                let _ = writeln!(
                    out,
                    "linkbase_request_seconds_bucket{{command=\"{name}\",le=\"{bound}\"}} {}",
                    bucket.load(Relaxed)
                );
            }
            let _ = writeln!(
                out,
                "linkbase_request_seconds_bucket{{command=\"{name}\",le=\"+Inf\"}} {count}"
            );
            let _ = writeln!(
                out,
                "linkbase_request_seconds_sum{{command=\"{name}\"}} {}",
                m.micros.load(Relaxed) as f64 / 1e6
            );
            let _ = writeln!(
                out,
                "linkbase_request_seconds_count{{command=\"{name}\"}} {count}"
            );
        }
        out.push_str("# HELP linkbase_units_charged_total Resource units charged.\n");
        out.push_str("# TYPE linkbase_units_charged_total counter\n");
        for ((_, kind), n) in UNITS.iter().zip(&self.charged) {
            let _ = writeln!(
                out,
                "linkbase_units_charged_total{{kind=\"{kind}\"}} {}",
                n.load(Relaxed)
            );
        }
        let gauges = [
            (
                "linkbase_refusals_total",
                "counter",
                "Requests refused for lack of units.",
                self.refused.load(Relaxed) as i64,
            ),
            (
                "linkbase_open_connections",
                "gauge",
                "Connections open now.",
                self.open_connections.load(Relaxed),
            ),
            (
                "linkbase_connections_total",
                "counter",
                "Connections accepted.",
                self.connections.load(Relaxed) as i64,
            ),
        ];
        for (name, kind, help, v) in gauges {
            let _ = writeln!(
                out,
                "# HELP {name} {help}\n# TYPE {name} {kind}\n{name} {v}"
            );
        }
        let per_index: [IndexGauge; 5] = [
            (
                "linkbase_index_disk_bytes",
                "Table files of an index.",
                |g| g.disk_bytes,
            ),
            (
                "linkbase_index_backlinks",
                "External backlinks of an index.",
                |g| g.backlinks,
            ),
            (
                "linkbase_index_memtable_bytes",
                "Memtables of an index (RocksDB), bounded by its memtable budget.",
                |g| g.memtable_bytes,
            ),
            (
                "linkbase_index_block_cache_bytes",
                "Block cache of an index in use (RocksDB), bounded by its size.",
                |g| g.block_cache_bytes,
            ),
            (
                "linkbase_index_table_readers_bytes",
                "Open table files' readers of an index outside the block cache (RocksDB).",
                |g| g.table_readers_bytes,
            ),
        ];
        for (name, help, value) in per_index {
            let _ = writeln!(out, "# HELP {name} {help}\n# TYPE {name} gauge");
            for g in indexes {
                let _ = writeln!(out, "{name}{{index=\"{}\"}} {}", g.index, value(g));
            }
        }
        out
    }
}
