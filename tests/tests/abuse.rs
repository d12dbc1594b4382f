//! The server under abuse, over loopback and bounded in time: 2,000 idle connections,
//! clients that ask for 50,000-row replies and never read them, 100 concurrent
//! worst-case GetRefDomains from ten accounts, and a flood of downloads from one key.
//! Meanwhile a well-behaved client keeps its p99 under 50 ms, the server never exits, and
//! its memory stays under the bound documented in docs/api.md ("Limits").

use linkbase_tests::{code, create_account, create_key, run, Server};
use std::io::{Read, Write};
use std::net::TcpStream;
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

/// The server's resident memory must stay under this (docs/api.md, "Limits").
const RSS_BOUND_MB: u64 = 2_048;
const ABUSE: Duration = Duration::from_secs(20);

fn rss_mb(pid: u32) -> u64 {
    let status = std::fs::read_to_string(format!("/proc/{pid}/status")).unwrap();
    let kb: u64 = status
        .lines()
        .find_map(|l| l.strip_prefix("VmRSS:"))
        .and_then(|v| v.split_whitespace().next())
        .and_then(|v| v.parse().ok())
        .unwrap();
    kb / 1024
}

fn url(addr: &str, key: &str, query: &str) -> String {
    format!("http://{addr}/api/json?app_api_key={key}&{query}")
}

/// The `Code` of a reply, read from its first bytes (the rest is read and dropped: the
/// abusers must not spend the machine's two cores parsing megabytes of JSON).
fn code_of(r: ureq::Response) -> String {
    let mut reader = r.into_reader();
    let mut head = [0u8; 64];
    let mut n = 0;
    while n < head.len() {
        match reader.read(&mut head[n..]) {
            Ok(0) | Err(_) => break,
            Ok(k) => n += k,
        }
    }
    let _ = std::io::copy(&mut reader, &mut std::io::sink());
    let head = String::from_utf8_lossy(&head[..n]);
    head.split('"').nth(3).unwrap_or("").to_string()
}

fn enc(s: &str) -> String {
    url::form_urlencoded::byte_serialize(s.as_bytes()).collect()
}

/// The soft limit on open descriptors (`ulimit -n`) this process and the server it
/// starts run under.
fn open_files_limit() -> u64 {
    let limits = std::fs::read_to_string("/proc/self/limits").unwrap();
    limits
        .lines()
        .find(|l| l.starts_with("Max open files"))
        .and_then(|l| l.split_whitespace().nth(3))
        .and_then(|v| v.parse().ok())
        .unwrap_or(u64::MAX)
}

#[test]
fn a_well_behaved_client_is_served_while_others_abuse_the_server() {
    assert!(
        open_files_limit() >= 4_500,
        "2,000 idle connections need both ends' descriptors: run with `ulimit -n` of at \
         least 4,500 (scripts/test.sh raises it to the hard limit), not {}",
        open_files_limit()
    );
    let dir = tempfile::tempdir().unwrap();
    // A web whose hot page has about 60,000 backlinks.
    let spec = webgen::WebSpec {
        pages: 60_000,
        domains: 6_000,
        links_per_page: 1,
        crawls: 1,
        hot_share: 1.0,
        ..webgen::WebSpec::demo(60_000)
    };
    let hot = webgen::Web::new(spec.clone()).hot_url();
    let files = webgen::generate(&spec, &dir.path().join("crawl"), &mut |_, _| {}).unwrap();
    let data = dir.path().join("data");
    let d = data.to_str().unwrap();
    let mut args: Vec<String> = vec!["ingest".into(), "--data".into(), d.into()];
    args.extend(files.files.iter().map(|p| p.display().to_string()));
    run(&args.iter().map(String::as_str).collect::<Vec<_>>());
    let big = [1 << 40, 1 << 50, 1 << 50];
    let good = create_key(&data, create_account(&data, "good", big, &[]));
    let abusers: Vec<String> = (0..10)
        .map(|i| {
            create_key(
                &data,
                create_account(&data, &format!("abuser{i}"), big, &[]),
            )
        })
        .collect();
    // As an operator runs it (logging at the default level).
    let mut srv = Server::spawn(&[
        "serve",
        "--data",
        d,
        "--listen",
        "127.0.0.1:0",
        "--no-sandbox",
        "--write-timeout",
        "5",
    ]);
    let pid = srv.pid();
    let addr = srv.addr.clone();
    let stop = Arc::new(AtomicBool::new(false));
    let mut abuse = Vec::new();

    // 2,000 idle connections, held open (reopened when the server closes them).
    let idle_open = Arc::new(AtomicUsize::new(0));
    {
        let (addr, stop, idle_open) = (addr.clone(), stop.clone(), idle_open.clone());
        abuse.push(std::thread::spawn(move || {
            let mut held = Vec::new();
            while !stop.load(Ordering::Relaxed) {
                held.retain(|c: &TcpStream| {
                    let mut b = [0u8; 1];
                    c.set_nonblocking(true).unwrap();
                    // Closed by the server: read returns 0.
                    !matches!((&*c).read(&mut b), Ok(0))
                });
                while held.len() < 2_000 {
                    match TcpStream::connect(&addr) {
                        Ok(c) => held.push(c),
                        Err(_) => break,
                    }
                }
                idle_open.fetch_max(held.len(), Ordering::Relaxed);
                std::thread::sleep(Duration::from_millis(200));
            }
        }));
    }

    // Slow readers: ask for 50,000 rows, never read.
    let slow_sent = Arc::new(AtomicUsize::new(0));
    for i in 0..20 {
        let (addr, stop, key, hot, slow_sent) = (
            addr.clone(),
            stop.clone(),
            abusers[i % abusers.len()].clone(),
            hot.clone(),
            slow_sent.clone(),
        );
        abuse.push(std::thread::spawn(move || {
            let mut held = Vec::new();
            while !stop.load(Ordering::Relaxed) {
                if let Ok(mut c) = TcpStream::connect(&addr) {
                    let q = format!(
                        "GET /api/json?app_api_key={key}&cmd=GetBackLinkData&item={}&Count=50000 HTTP/1.1\r\nHost: x\r\n\r\n",
                        enc(&hot)
                    );
                    if c.write_all(q.as_bytes()).is_ok() {
                        slow_sent.fetch_add(1, Ordering::Relaxed);
                        held.push(c);
                    }
                }
                std::thread::sleep(Duration::from_millis(500));
            }
        }));
    }

    // 100 concurrent worst-case GetRefDomains: 100 items, the deepest analysis.
    let refdomains: Arc<Mutex<std::collections::BTreeMap<String, usize>>> = Arc::default();
    let items: String = (0..100)
        .map(|i| format!("&item{i}={}", enc(&hot)))
        .collect();
    for i in 0..100 {
        let (addr, stop, key, items, refdomains) = (
            addr.clone(),
            stop.clone(),
            abusers[i % abusers.len()].clone(),
            items.clone(),
            refdomains.clone(),
        );
        abuse.push(std::thread::spawn(move || {
            let agent = ureq::AgentBuilder::new()
                .timeout(Duration::from_secs(60))
                .build();
            let q = format!("cmd=GetRefDomains&items=100{items}&AnalysisDepth=100000&Count=100000");
            while !stop.load(Ordering::Relaxed) {
                let c = match agent.get(&url(&addr, &key, &q)).call() {
                    Ok(r) => code_of(r),
                    Err(e) => format!("transport: {e}"),
                };
                *refdomains.lock().unwrap().entry(c).or_default() += 1;
                std::thread::sleep(Duration::from_millis(50));
            }
        }));
    }

    // A download flood from one key.
    let downloads: Arc<Mutex<std::collections::BTreeMap<String, usize>>> = Arc::default();
    {
        let (addr, stop, key, hot, downloads) = (
            addr.clone(),
            stop.clone(),
            abusers[0].clone(),
            hot.clone(),
            downloads.clone(),
        );
        abuse.push(std::thread::spawn(move || {
            let agent = ureq::agent();
            for _ in 0..300 {
                if stop.load(Ordering::Relaxed) {
                    break;
                }
                let q = format!("cmd=DownloadBackLinks&Query={}", enc(&hot));
                let c = agent
                    .get(&url(&addr, &key, &q))
                    .call()
                    .map_or("transport".to_string(), code_of);
                *downloads.lock().unwrap().entry(c).or_default() += 1;
            }
        }));
    }

    // The well-behaved client.
    std::thread::sleep(Duration::from_secs(2));
    let agent = ureq::AgentBuilder::new()
        .timeout(Duration::from_secs(10))
        .build();
    let info = format!("cmd=GetIndexItemInfo&items=1&item0={}", enc(&hot));
    let mut latencies = Vec::new();
    let mut max_rss = 0;
    let started = Instant::now();
    while started.elapsed() < ABUSE {
        let t = Instant::now();
        let body = agent
            .get(&url(&addr, &good, &info))
            .call()
            .unwrap()
            .into_string()
            .unwrap();
        latencies.push(t.elapsed());
        let v: serde_json::Value = serde_json::from_str(&body).unwrap();
        assert_eq!(code(&v), "OK", "{body}");
        if latencies.len() % 20 == 0 {
            max_rss = max_rss.max(rss_mb(pid));
        }
        std::thread::sleep(Duration::from_millis(10));
    }
    stop.store(true, Ordering::Relaxed);
    for t in abuse {
        t.join().unwrap();
    }
    assert!(srv.is_running(), "the server exited");
    latencies.sort();
    let p = |q: f64| latencies[((latencies.len() - 1) as f64 * q) as usize];
    let refdomains = refdomains.lock().unwrap().clone();
    let downloads = downloads.lock().unwrap().clone();
    eprintln!(
        "well-behaved client: {} requests, p50 {:?}, p99 {:?}, max {:?}; server RSS max {max_rss} MB; \
         idle connections held {}; slow readers {}; GetRefDomains {refdomains:?}; downloads {downloads:?}",
        latencies.len(),
        p(0.5),
        p(0.99),
        latencies.last().unwrap(),
        idle_open.load(Ordering::Relaxed),
        slow_sent.load(Ordering::Relaxed),
    );
    assert!(
        idle_open.load(Ordering::Relaxed) >= 2_000,
        "2,000 idle connections were held"
    );
    assert!(slow_sent.load(Ordering::Relaxed) >= 100);
    assert!(p(0.99) < Duration::from_millis(50), "p99 {:?}", p(0.99));
    assert!(max_rss < RSS_BOUND_MB, "RSS {max_rss} MB");
    // The worst-case reads ran, bounded: some answered, the rest refused before work.
    assert!(
        refdomains.get("OK").is_some_and(|&n| n > 0),
        "{refdomains:?}"
    );
    assert!(
        refdomains
            .keys()
            .all(|c| c == "OK" || c == "TooManyConcurrentRequests"),
        "{refdomains:?}"
    );
    // One key queues at most 20 downloads; the rest are refused, not queued.
    assert_eq!(
        downloads.get("QueuedForProcessing"),
        Some(&20),
        "{downloads:?}"
    );
}
