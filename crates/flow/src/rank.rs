//! Power iteration for PageRank-style scores, pulled over the transposed graph and split
//! over threads by edge count.
//!
//! `x'[v] = base[v] + d * (sum over u->v of x[u] / outdeg(u)) + d * dangling[v]`
//!
//! - **Teleport** (`base`): uniform (Citation Flow) or concentrated on seeds (Trust Flow).
//! - **Dangling nodes** (no out-links): either their mass is spread like the teleport
//!   vector (classic, normalised PageRank, sums to 1), or dropped ("leaky"), which keeps
//!   every score independent of parts of the graph it cannot reach: adding an unrelated
//!   site changes nobody's score. The flow metrics use the leaky form.
//! - **Pinned nodes** ([`through_pinned`]): the citation that has passed through a seed,
//!   the trust part of a node's citation.
//! - **Convergence**: stop when the L1 norm of the change is below `tolerance` times the
//!   L1 norm of the scores, or after `max_iterations`.

use crate::graph::Graph;

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Dangling {
    /// Spread dangling mass over the teleport vector (classic PageRank).
    Redistribute,
    /// Let it leak: scores are unnormalised and stable when the graph grows elsewhere.
    Drop,
}

#[derive(Debug, Clone, Copy)]
pub struct RankParams {
    pub damping: f64,
    pub tolerance: f64,
    pub max_iterations: usize,
    pub threads: usize,
    pub dangling: Dangling,
}

impl Default for RankParams {
    fn default() -> Self {
        RankParams {
            damping: 0.85,
            tolerance: 1e-10,
            max_iterations: 200,
            threads: std::thread::available_parallelism().map_or(1, |n| n.get()),
            dangling: Dangling::Drop,
        }
    }
}

#[derive(Debug, Clone)]
pub struct RankResult {
    pub scores: Vec<f64>,
    pub iterations: usize,
    /// Relative L1 change of the last iteration.
    pub delta: f64,
    /// Wall time of the iterations only (not setup), for ns/edge/iteration.
    pub iteration_seconds: f64,
}

/// Runs the iteration. `transposed` is `graph.transpose()`; `outdegree[u]` the out-degree
/// of `u` in the original graph; `teleport` the (unnormalised) teleport weight of each
/// node, scaled by `1 - damping`.
pub fn rank(
    transposed: &Graph,
    outdegree: &[u32],
    teleport: &[f64],
    params: &RankParams,
) -> RankResult {
    let d = params.damping;
    let base: Vec<f64> = teleport.iter().map(|t| (1.0 - d) * t).collect();
    let teleport_sum: f64 = teleport.iter().sum();
    let redistribute = params.dangling == Dangling::Redistribute && teleport_sum > 0.0;
    iterate(
        transposed,
        outdegree,
        base.clone(),
        params,
        |v, pulled, dangling_mass| {
            let spread = if redistribute {
                d * dangling_mass / teleport_sum
            } else {
                0.0
            };
            base[v] + d * pulled + spread * teleport[v]
        },
    )
}

/// The citation that has passed through at least one pinned node on its way in.
///
/// `citation` is a leaky [`rank`] with uniform teleport. A pinned node passes on all of
/// its own citation (`citation[v]`); any other node passes on only what reached it
/// through pinned nodes. Returns, per node, the received part: `d * sum over u -> v of
/// through[u] / outdeg(u)` for unpinned nodes and the whole received citation
/// ([`received`]) for pinned ones. Never more than the received citation, and
/// exactly 0 where no pinned node reaches.
pub fn through_pinned(
    transposed: &Graph,
    outdegree: &[u32],
    citation: &[f64],
    pinned: &[bool],
    params: &RankParams,
) -> RankResult {
    let d = params.damping;
    let start: Vec<f64> = (0..citation.len())
        .map(|v| if pinned[v] { citation[v] } else { 0.0 })
        .collect();
    let mut passed = iterate(transposed, outdegree, start, params, |v, pulled, _| {
        if pinned[v] {
            citation[v]
        } else {
            d * pulled
        }
    });
    for (v, x) in passed.scores.iter_mut().enumerate() {
        if pinned[v] {
            *x = received(citation[v], d);
        }
    }
    passed
}

/// What a node's inbound links bring it in a leaky iteration with uniform teleport: its
/// score less its own `1 - d` unit.
pub fn received(citation: f64, damping: f64) -> f64 {
    (citation - (1.0 - damping)).max(0.0)
}

/// The power iteration: `x'[v] = update(v, sum over u -> v of x[u] / outdeg(u), mass on
/// dangling nodes)`, pulled over the transposed graph, one edge-balanced range per thread.
fn iterate<F>(
    transposed: &Graph,
    outdegree: &[u32],
    start: Vec<f64>,
    params: &RankParams,
    update: F,
) -> RankResult
where
    F: Fn(usize, f64, f64) -> f64 + Sync,
{
    let n = transposed.nodes();
    let mut x = start;
    let mut next = vec![0.0f64; n];
    let mut contrib = vec![0.0f64; n];
    let ranges = transposed.balanced_ranges(params.threads.max(1));
    let started = std::time::Instant::now();
    let mut iterations = 0;
    let mut delta = f64::INFINITY;
    while iterations < params.max_iterations {
        iterations += 1;
        let mut dangling_mass = 0.0;
        for u in 0..n {
            let deg = outdegree[u];
            if deg == 0 {
                dangling_mass += x[u];
                contrib[u] = 0.0;
            } else {
                contrib[u] = x[u] / f64::from(deg);
            }
        }
        let contrib = &contrib;
        let update = &update;
        let parts: Vec<(f64, f64)> = std::thread::scope(|s| {
            let mut rest: &mut [f64] = &mut next;
            let mut handles = Vec::with_capacity(ranges.len());
            for range in &ranges {
                let (chunk, tail) = rest.split_at_mut(range.len());
                rest = tail;
                let range = range.clone();
                let x = &x;
                handles.push(s.spawn(move || {
                    let (mut diff, mut total) = (0.0, 0.0);
                    for (i, v) in range.enumerate() {
                        let mut sum = 0.0;
                        for &u in transposed.successors(v) {
                            sum += contrib[u as usize];
                        }
                        let val = update(v, sum, dangling_mass);
                        diff += (val - x[v]).abs();
                        total += val;
                        chunk[i] = val;
                    }
                    (diff, total)
                }));
            }
            handles
                .into_iter()
                .map(|h| h.join().expect("rank thread"))
                .collect()
        });
        std::mem::swap(&mut x, &mut next);
        let (diff, total): (f64, f64) =
            parts.iter().fold((0.0, 0.0), |a, p| (a.0 + p.0, a.1 + p.1));
        delta = if total > 0.0 { diff / total } else { 0.0 };
        if delta < params.tolerance {
            break;
        }
    }
    RankResult {
        scores: x,
        iterations,
        delta,
        iteration_seconds: started.elapsed().as_secs_f64(),
    }
}

/// Classic PageRank (uniform teleport, dangling mass redistributed, scores sum to 1).
pub fn pagerank(graph: &Graph, params: &RankParams) -> RankResult {
    let n = graph.nodes();
    let outdegree: Vec<u32> = (0..n).map(|v| graph.outdegree(v) as u32).collect();
    let teleport = vec![1.0 / n as f64; n];
    let p = RankParams {
        dangling: Dangling::Redistribute,
        ..*params
    };
    rank(&graph.transpose(), &outdegree, &teleport, &p)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn pagerank_of_a_small_graph_sums_to_one_and_is_symmetric() {
        // A cycle of three: every node gets 1/3.
        let g = Graph::from_edges(3, vec![(0, 1), (1, 2), (2, 0)]);
        let r = pagerank(&g, &RankParams::default());
        for s in &r.scores {
            assert!((s - 1.0 / 3.0).abs() < 1e-9);
        }
        // A star with a dangling centre.
        let g = Graph::from_edges(4, vec![(1, 0), (2, 0), (3, 0)]);
        let r = pagerank(
            &g,
            &RankParams {
                threads: 2,
                ..Default::default()
            },
        );
        let sum: f64 = r.scores.iter().sum();
        assert!((sum - 1.0).abs() < 1e-9, "{sum}");
        assert!(r.scores[0] > r.scores[1]);
        assert!((r.scores[1] - r.scores[3]).abs() < 1e-12);
    }

    #[test]
    fn trust_is_the_citation_that_passed_through_a_pinned_node() {
        // 0 -> 1 -> 2 and 3 -> 2, 4 -> 0; node 1 pinned.
        let g = Graph::from_edges(5, vec![(0, 1), (1, 2), (3, 2), (4, 0)]);
        let t = g.transpose();
        let out: Vec<u32> = (0..5).map(|v| g.outdegree(v) as u32).collect();
        let p = RankParams {
            tolerance: 1e-15,
            ..Default::default()
        };
        let cit = rank(&t, &out, &[1.0; 5], &p).scores;
        let pinned = [false, true, false, false, false];
        let trust = through_pinned(&t, &out, &cit, &pinned, &p).scores;
        assert_eq!(trust[0], 0.0, "upstream of the pinned node");
        assert!((trust[1] - received(cit[1], 0.85)).abs() < 1e-12);
        assert!(
            (trust[2] - 0.85 * cit[1]).abs() < 1e-12,
            "only the part via 1"
        );
        assert!(trust[2] < received(cit[2], 0.85));
        assert_eq!(trust[3], 0.0);
    }
}
