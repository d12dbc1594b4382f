//! Where Citation Flow and Trust Flow put the items of a real graph: exports every URL,
//! host and root domain with its flows, and the URL graph, for
//! `tools/bench/flow-calibration.sh` to check against the calibration targets and plot.
//!
//! ```text
//! flow-calibration ukwa HOSTS.tsv.gz SEEDS OUT   # the UK Web Archive 1996 host graph
//! flow-calibration index DATA_DIR OUT            # a historic index with flows built
//! ```
//!
//! `OUT/items.tsv`: level, name, whether a link from outside the item points in (1/0),
//! Citation Flow, Trust Flow, topic values (comma-separated, highest first).
//! `OUT/urls.tsv`: node id, URL, host, root domain. `OUT/edges.tsv`: source id, target id (the
//! live, followed links the flows are computed from).

use flate2::read::GzDecoder;
use flow::UrlGraph;
use indexes::{DataDir, IndexKind};
use linkbase_benches as _; // the product's allocator (see the library)
use linkstore::{CrawlOutcome, Item, Level, OutLink, PageCrawl, Store, StoreOptions};
use std::collections::BTreeMap;
use std::io::{BufRead, BufReader, BufWriter, Write};
use std::path::Path;

fn main() {
    let args: Vec<String> = std::env::args().collect();
    let run = match args.get(1).map(String::as_str) {
        Some("ukwa") if args.len() == 5 => ukwa(&args[2], &args[3], Path::new(&args[4])),
        Some("index") if args.len() == 4 => {
            let store = DataDir::new(&args[2])
                .open(IndexKind::Historic, &StoreOptions::default())
                .map_err(|e| format!("{}: {e}", args[2]));
            store.and_then(|s| export(&s, Path::new(&args[3])))
        }
        _ => Err("usage: flow-calibration ukwa HOSTS.tsv.gz SEEDS OUT | index DATA_DIR OUT".into()),
    };
    if let Err(e) = run {
        eprintln!("flow-calibration: {e}");
        std::process::exit(1);
    }
}

/// One page per host (its home page) whose links are the host's links, flows from SEEDS.
fn ukwa(tsv: &str, seeds: &str, out: &Path) -> Result<(), String> {
    let mut links: BTreeMap<String, Vec<String>> = BTreeMap::new();
    let file = std::fs::File::open(tsv).map_err(|e| format!("{tsv}: {e}"))?;
    for (n, line) in BufReader::new(GzDecoder::new(file)).lines().enumerate() {
        let line = line.map_err(|e| format!("{tsv}: {e}"))?;
        let pair = line.split('\t').next().unwrap_or_default();
        let mut parts = pair.split('|');
        let (Some(_year), Some(src), Some(dst)) = (parts.next(), parts.next(), parts.next()) else {
            return Err(format!("{tsv} line {}: not YEAR|SOURCE|TARGET", n + 1));
        };
        if src != dst {
            links
                .entry(format!("http://{src}/"))
                .or_default()
                .push(format!("http://{dst}/"));
        }
    }
    let dir = tempfile::tempdir().map_err(|e| e.to_string())?;
    let store = Store::open(dir.path(), &StoreOptions::default()).map_err(|e| e.to_string())?;
    let mut w = store.writer().map_err(|e| e.to_string())?;
    for (src, targets) in &links {
        let crawl = PageCrawl {
            url: src.clone(),
            fetched_at: 820_454_400, // 1996-01-01
            ip: None,
            outcome: CrawlOutcome::Html {
                links: targets
                    .iter()
                    .map(|t| OutLink {
                        target: t.clone(),
                        ..Default::default()
                    })
                    .collect(),
            },
        };
        // Host names that are not valid URLs are skipped.
        let _ = w.apply(&crawl);
    }
    w.commit().map_err(|e| e.to_string())?;
    drop(w);
    let seeds = flow::read_seeds(Path::new(seeds)).map_err(|e| e.to_string())?;
    let report = flow::build(&store, &seeds, &flow::RankParams::default(), &mut |_| {})
        .map_err(|e| e.to_string())?;
    eprintln!(
        "{} hosts, {} links, {} seed URLs",
        report.nodes, report.edges, report.seed_nodes
    );
    export(&store, out)
}

fn export(store: &Store, out: &Path) -> Result<(), String> {
    let io = |e: std::io::Error| format!("{}: {e}", out.display());
    std::fs::create_dir_all(out).map_err(io)?;
    let g = UrlGraph::from_store(store).map_err(|e| e.to_string())?;
    let n = g.urls.len();
    let domain_of = |v: usize| g.domain_of_host[g.host_of[v] as usize] as usize;
    let mut url_in = vec![false; n];
    let mut host_in = vec![false; g.hosts.len()];
    let mut domain_in = vec![false; g.domains.len()];
    let mut edges = BufWriter::new(std::fs::File::create(out.join("edges.tsv")).map_err(io)?);
    for u in 0..n {
        for &v in g.graph.successors(u) {
            let v = v as usize;
            writeln!(edges, "{u}\t{v}").map_err(io)?;
            url_in[v] = true;
            host_in[g.host_of[v] as usize] |= g.host_of[u] != g.host_of[v];
            domain_in[domain_of(v)] |= domain_of(u) != domain_of(v);
        }
    }
    edges.flush().map_err(io)?;
    let mut urls = BufWriter::new(std::fs::File::create(out.join("urls.tsv")).map_err(io)?);
    for (v, url) in g.urls.iter().enumerate() {
        let host = &g.hosts[g.host_of[v] as usize];
        writeln!(urls, "{v}\t{url}\t{host}\t{}", g.domains[domain_of(v)]).map_err(io)?;
    }
    urls.flush().map_err(io)?;
    let mut items = BufWriter::new(std::fs::File::create(out.join("items.tsv")).map_err(io)?);
    let levels = [
        (Level::Url, &g.urls, &url_in),
        (Level::SubDomain, &g.hosts, &host_in),
        (Level::RootDomain, &g.domains, &domain_in),
    ];
    let reader = store.read();
    for (level, names, inbound) in levels {
        for (name, &inbound) in names.iter().zip(inbound.iter()) {
            let item = Item {
                level,
                name: name.clone(),
            };
            let m = reader
                .metrics(&item)
                .map_err(|e| e.to_string())?
                .unwrap_or_default();
            let topics: Vec<String> = m.topics.iter().map(|t| t.1.to_string()).collect();
            writeln!(
                items,
                "{}\t{name}\t{}\t{}\t{}\t{}",
                level_name(level),
                u8::from(inbound),
                m.citation_flow,
                m.trust_flow,
                topics.join(",")
            )
            .map_err(io)?;
        }
    }
    items.flush().map_err(io)
}

fn level_name(level: Level) -> &'static str {
    match level {
        Level::Url => "url",
        Level::SubDomain => "host",
        Level::RootDomain | Level::Index => "domain",
    }
}
