//! Rank-iteration speed on a real or synthetic graph, in ns per edge per iteration, and
//! an edge-list export so a peer (networkit) can run on exactly the same graph.
//!
//! ```text
//! flow-bench cnr PATH/cnr-2000 [--threads N] [--export FILE]
//! flow-bench synthetic EDGES [--threads N]
//! ```

use flow::{bvgraph, pagerank, Graph, RankParams};
use linkbase_benches as _; // the product's allocator (see the library)
use std::io::Write;
use std::time::Instant;

fn synthetic(edges: usize) -> Graph {
    // Power-law in-degree: targets drawn log-uniformly, sources uniformly.
    let nodes = (edges / 16).max(2);
    let mut x: u64 = 0x2545_F491_4F6C_DD1D;
    let mut next = || {
        x ^= x << 13;
        x ^= x >> 7;
        x ^= x << 17;
        x
    };
    let mut list = Vec::with_capacity(edges);
    for _ in 0..edges {
        let s = (next() % nodes as u64) as u32;
        let u = (next() >> 11) as f64 / (1u64 << 53) as f64;
        let t = ((nodes as f64).powf(u) - 1.0) as u32;
        list.push((s, t.min(nodes as u32 - 1)));
    }
    Graph::from_edges(nodes, list)
}

fn main() {
    let args: Vec<String> = std::env::args().collect();
    let flag = |name: &str| {
        args.iter()
            .position(|a| a == name)
            .and_then(|i| args.get(i + 1))
            .cloned()
    };
    let threads: usize = flag("--threads").and_then(|t| t.parse().ok()).unwrap_or(1);
    let started = Instant::now();
    let graph = match args.get(1).map(String::as_str) {
        Some("cnr") => bvgraph::load(std::path::Path::new(&args[2])).expect("load BVGraph"),
        Some("synthetic") => synthetic(args[2].parse().expect("edge count")),
        _ => {
            eprintln!("usage: flow-bench cnr BASE | synthetic EDGES [--threads N] [--export FILE]");
            std::process::exit(2);
        }
    };
    eprintln!(
        "graph: {} nodes, {} edges, loaded in {:.1}s",
        graph.nodes(),
        graph.edges(),
        started.elapsed().as_secs_f64()
    );
    if let Some(path) = flag("--export") {
        let mut out = std::io::BufWriter::new(std::fs::File::create(&path).expect("create export"));
        for v in 0..graph.nodes() {
            for &t in graph.successors(v) {
                writeln!(out, "{v}\t{t}").expect("write export");
            }
        }
        out.flush().expect("flush export");
    }
    // Fixed iteration count (tolerance 0), as the peer is run, so both do the same work.
    let iterations = 50;
    let params = RankParams {
        damping: 0.85,
        tolerance: 0.0,
        max_iterations: iterations,
        threads,
        ..Default::default()
    };
    let r = pagerank(&graph, &params);
    let ns = r.iteration_seconds * 1e9 / (graph.edges() as f64 * r.iterations as f64);
    println!(
        "linkbase pagerank: {} edges, {} iterations, {threads} thread(s): {:.3}s, {ns:.2} ns/edge/iteration",
        graph.edges(),
        r.iterations,
        r.iteration_seconds
    );
}
