//! Helpers of `tools/bench/peer-suite.sh`, the Linkbase-versus-PostgreSQL benchmark.
//!
//! ```text
//! peer-suite rows    --data DIR --out FILE.csv          every backlink, for PostgreSQL's COPY
//! peer-suite items   --pages N --domains N --hot-share X  the hot URL and 99 cold URLs
//! peer-suite queries --data DIR --items FILE --seconds S  in-process timings, p50/p99
//! ```

use linkbase_benches as _; // the product's allocator (see the library)
use linkstore::{format_day, BacklinkQuery, Item, Store, StoreOptions};
use std::io::{BufRead, BufWriter, Write};
use std::path::Path;
use std::time::{Duration, Instant};

fn arg(args: &[String], name: &str) -> String {
    args.windows(2)
        .find(|w| w[0] == name)
        .map(|w| w[1].clone())
        .unwrap_or_else(|| panic!("missing {name}"))
}

fn open(data: &str) -> Store {
    let dir = Path::new(data);
    let name = std::fs::read_to_string(dir.join("historic.current"))
        .map(|s| s.trim().to_string())
        .unwrap_or_else(|_| "historic".into());
    Store::open(dir.join(name), &StoreOptions::default()).expect("open the historic index")
}

/// A CSV text field: quoted when it holds a comma, quote or line break, or is empty (an
/// unquoted empty field is NULL to COPY).
fn field(out: &mut String, s: &str) {
    if s.is_empty() || s.contains([',', '"', '\n', '\r']) {
        out.push('"');
        out.push_str(&s.replace('"', "\"\""));
        out.push('"');
    } else {
        out.push_str(s);
    }
}

fn domain(url: &str) -> &str {
    let host = linkstore::host_of(url);
    linkstore::root_domain(host).unwrap_or(host)
}

fn rows(data: &str, out: &str) {
    let store = open(data);
    let mut w = BufWriter::with_capacity(1 << 20, std::fs::File::create(out).expect("create"));
    let mut n = 0u64;
    let day = |d: u32| if d == 0 { String::new() } else { format_day(d) };
    store
        .read()
        .scan_links(|r| {
            if r.is_internal() {
                return;
            }
            let mut line = String::with_capacity(256);
            for (i, v) in [
                r.source_url.as_str(),
                r.target_url.as_str(),
                linkstore::host_of(&r.target_url),
                domain(&r.target_url),
                domain(&r.source_url),
                r.anchor_text.as_str(),
            ]
            .iter()
            .enumerate()
            {
                if i > 0 {
                    line.push(',');
                }
                field(&mut line, v);
            }
            let ip = r.source_ip.map(|ip| ip.to_string()).unwrap_or_default();
            line.push_str(&format!(
                ",{ip},{},{},{},{},{},{},{},{},{},{}\n",
                r.is_nofollow(),
                r.is_deleted(),
                r.kind.link_type(),
                day(r.first_seen),
                day(r.last_seen),
                day(r.date_lost),
                r.source_flow.trust_flow,
                r.source_flow.citation_flow,
                r.target_flow.trust_flow,
                r.target_flow.citation_flow,
            ));
            w.write_all(line.as_bytes()).expect("write");
            n += 1;
        })
        .expect("scan");
    w.flush().expect("flush");
    eprintln!("{n} backlink rows written to {out}");
}

fn items(args: &[String]) {
    let spec = webgen::WebSpec {
        pages: arg(args, "--pages").parse().unwrap(),
        domains: arg(args, "--domains").parse().unwrap(),
        hot_share: arg(args, "--hot-share").parse().unwrap(),
        crawls: 1,
        ..Default::default()
    };
    let web = webgen::Web::new(spec);
    println!("{}", web.hot_url());
    // Spread over the whole web: mostly pages with few backlinks.
    for i in 1..100usize {
        println!("{}", web.url((i * 7919 + 13) % web.pages()));
    }
}

/// Runs `f` repeatedly for `budget` (at least 5 times); p50 and p99 in microseconds.
fn time(budget: Duration, mut f: impl FnMut() -> usize) -> (f64, f64, usize, usize) {
    let mut samples = Vec::new();
    let started = Instant::now();
    let mut rows = 0;
    while samples.len() < 5 || started.elapsed() < budget {
        let t = Instant::now();
        rows = f();
        samples.push(t.elapsed().as_secs_f64() * 1e6);
    }
    samples.sort_by(f64::total_cmp);
    let at = |q: f64| samples[((samples.len() - 1) as f64 * q) as usize];
    (at(0.5), at(0.99), samples.len(), rows)
}

fn queries(args: &[String]) {
    let store = open(&arg(args, "--data"));
    let budget = Duration::from_secs_f64(arg(args, "--seconds").parse().unwrap());
    let list: Vec<String> =
        std::io::BufReader::new(std::fs::File::open(arg(args, "--items")).expect("items file"))
            .lines()
            .map(|l| l.unwrap())
            .collect();
    let items: Vec<Item> = list.iter().map(|u| Item::parse(u).unwrap()).collect();
    let hot = &items[0];
    let cold = &items[1];
    let q = |count, exclude_deleted, per_domain| BacklinkQuery {
        count,
        exclude_deleted,
        max_per_ref_domain: per_domain,
        ..Default::default()
    };
    let last = u32::try_from(store.read().index_counters().unwrap().last_link_day).unwrap();
    let run = |name: &str, f: &mut dyn FnMut() -> usize| {
        let (p50, p99, reps, rows) = time(budget, f);
        println!("{name}\t{p50:.1}\t{p99:.1}\t{reps}\t{rows}");
    };
    println!("query\tp50_us\tp99_us\treps\trows");
    run("top100", &mut || {
        store
            .read()
            .backlinks(hot, &q(100, false, None))
            .unwrap()
            .len()
    });
    run("top100_live", &mut || {
        store
            .read()
            .backlinks(hot, &q(100, true, None))
            .unwrap()
            .len()
    });
    run("top100_per_domain", &mut || {
        store
            .read()
            .backlinks(hot, &q(100, false, Some(1)))
            .unwrap()
            .len()
    });
    run("rows50000", &mut || {
        store
            .read()
            .backlinks(hot, &q(50_000, false, None))
            .unwrap()
            .len()
    });
    run("refdomains100", &mut || {
        store.read().ref_domains(hot, 0, 100).unwrap().len()
    });
    // Past the ranked copies a snapshot keeps: the item's later rows, sorted.
    run("refdomains100_past1000", &mut || {
        store.read().ref_domains(hot, 1_000, 100).unwrap().len()
    });
    run("anchors100", &mut || {
        store.read().anchors(hot, 0, 100).unwrap().len()
    });
    run("newlost30", &mut || {
        store
            .read()
            .timeline(hot, last.saturating_sub(30), last)
            .unwrap()
            .len()
    });
    run("info_hot", &mut || {
        let view = store.read();
        view.counters_many(std::slice::from_ref(hot)).unwrap().len()
            + view.metrics_many(std::slice::from_ref(hot)).unwrap().len()
    });
    run("info_cold", &mut || {
        let view = store.read();
        view.counters_many(std::slice::from_ref(cold))
            .unwrap()
            .len()
            + view.metrics_many(std::slice::from_ref(cold)).unwrap().len()
    });
    run("info100", &mut || {
        let view = store.read();
        view.counters_many(&items).unwrap().len() + view.metrics_many(&items).unwrap().len()
    });
}

fn main() {
    let args: Vec<String> = std::env::args().collect();
    match args.get(1).map(String::as_str) {
        Some("rows") => rows(&arg(&args, "--data"), &arg(&args, "--out")),
        Some("items") => items(&args),
        Some("queries") => queries(&args),
        _ => {
            eprintln!("usage: peer-suite rows|items|queries ... (see the source)");
            std::process::exit(2);
        }
    }
}
