//! Trust Flow and Citation Flow on the real 1996 UK host graph (UK Web Archive host
//! links): builds a host-level store and prints the top hosts by Trust Flow for a seed
//! set. `ukwa-trust PATH/ukwa-1996-uk-web-hosts.tsv.gz SEEDS`

use flate2::read::GzDecoder;
use linkstore::{CrawlOutcome, Item, OutLink, PageCrawl, Store, StoreOptions};
use std::collections::BTreeMap;
use std::io::{BufRead, BufReader};

fn main() {
    let args: Vec<String> = std::env::args().collect();
    let (Some(tsv), Some(seeds)) = (args.get(1), args.get(2)) else {
        eprintln!("usage: ukwa-trust HOSTS.tsv.gz SEEDS");
        std::process::exit(2);
    };
    // One page per host (its home page); a host's out-links are its crawl.
    let mut out: BTreeMap<String, Vec<String>> = BTreeMap::new();
    let reader = BufReader::new(GzDecoder::new(std::fs::File::open(tsv).expect("open TSV")));
    for line in reader.lines() {
        let line = line.expect("read TSV");
        let Some((pair, _count)) = line.split_once('\t') else {
            continue;
        };
        let mut parts = pair.split('|');
        let (Some(_year), Some(src), Some(dst)) = (parts.next(), parts.next(), parts.next()) else {
            continue;
        };
        if src != dst {
            out.entry(format!("http://{src}/"))
                .or_default()
                .push(format!("http://{dst}/"));
        }
    }
    let dir = tempfile::tempdir().expect("temp dir");
    let store = Store::open(dir.path(), &StoreOptions::default()).expect("open store");
    let mut w = store.writer();
    for (src, targets) in &out {
        let links = targets
            .iter()
            .map(|t| OutLink {
                target: t.clone(),
                ..Default::default()
            })
            .collect();
        let crawl = PageCrawl {
            url: src.clone(),
            fetched_at: 820_454_400, // 1996-01-01
            ip: None,
            outcome: CrawlOutcome::Html { links },
        };
        // Host names that are not valid URLs are skipped.
        let _ = w.apply(&crawl);
    }
    w.commit().expect("commit");
    drop(w);
    let seeds = flow::read_seeds(std::path::Path::new(seeds)).expect("seeds");
    let report =
        flow::build(&store, &seeds, &flow::RankParams::default(), &mut |_| {}).expect("flow");
    eprintln!(
        "{} hosts, {} links, {} seed URLs",
        report.nodes, report.edges, report.seed_nodes
    );
    let mut rows = Vec::new();
    for host in out.keys().chain(out.values().flatten()) {
        let host = linkstore::host_of(host).to_string();
        if let Ok(Some(m)) = store.read().metrics(&Item::host(host.clone())) {
            rows.push((m.trust_flow, m.citation_flow, host));
        }
    }
    rows.sort_by(|a, b| b.0.cmp(&a.0).then(b.1.cmp(&a.1)).then(a.2.cmp(&b.2)));
    rows.dedup();
    println!("| # | host | Trust Flow | Citation Flow |\n|---|---|---|---|");
    for (i, (tf, cf, host)) in rows.iter().take(20).enumerate() {
        println!("| {} | {host} | {tf} | {cf} |", i + 1);
    }
}
