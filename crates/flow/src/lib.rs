//! Flow metrics (product brief §1.12): Citation Flow (PageRank-like influence), Trust
//! Flow (trust propagated from seeds, TrustRank-like) and Topical Trust Flow, at URL,
//! subdomain and root-domain level, published into a [`linkstore::Store`].
//!
//! The computation is documented in `docs/flow.md`: the graph (live, followed links,
//! internal and external, between URLs), the iteration ([`rank`]), the scale ([`scale`])
//! and how topics are propagated (at root-domain level, one iteration per topic).

pub mod bvgraph;
mod error;
pub mod graph;
pub mod rank;
pub mod scale;
pub mod seeds;

pub use error::{Error, Result};
pub use graph::Graph;
pub use rank::{pagerank, rank, received, through_pinned, Dangling, RankParams, RankResult};
pub use seeds::{parse_seeds, read_seeds, Seed};

use linkstore::{
    host_of, root_domain, url_check_hash, url_hash, EndName, FlowLink, FlowPair, FlowUpdate,
    FlowUpdateReport, Item, ItemMetrics, Level, LinkEnd, Store,
};
use std::collections::{HashMap, HashSet};
use std::hash::{BuildHasherDefault, Hasher};

/// How many topics are kept per item.
pub const MAX_TOPICS: usize = 10;

/// The link graph of a store at URL level, with each URL's host and root domain.
pub struct UrlGraph {
    pub graph: Graph,
    pub urls: Vec<String>,
    /// Host index of each URL node, into `hosts`.
    pub host_of: Vec<u32>,
    pub hosts: Vec<String>,
    /// Root-domain index of each host, into `domains`.
    pub domain_of_host: Vec<u32>,
    pub domains: Vec<String>,
    /// URL nodes by URL hash.
    nodes: NodesByHash,
}

fn intern(map: &mut HashMap<String, u32>, names: &mut Vec<String>, name: &str) -> u32 {
    if let Some(&id) = map.get(name) {
        return id;
    }
    let id = names.len() as u32;
    names.push(name.to_string());
    map.insert(name.to_string(), id);
    id
}

impl UrlGraph {
    /// Extracts the graph of links that carry flow ([`linkstore::FlowLink`]: live and
    /// followed, internal ones included) from the store, noting the sources of external
    /// links that carry none.
    pub fn from_store(store: &Store) -> Result<UrlGraph> {
        UrlGraph::collect(|visit| Ok(store.read().scan_flow_links(visit)?))
    }

    /// The graph from `(source URL, target URL)` rows, the edges a bulk build kept (an
    /// empty target: the source of an external link that carries no flow).
    pub fn from_edges(
        edges: impl Iterator<Item = std::io::Result<(Vec<u8>, Vec<u8>)>>,
    ) -> Result<UrlGraph> {
        let url = |b: Vec<u8>| {
            String::from_utf8(b).map_err(|_| Error::Graph("an edge's URL is not UTF-8".into()))
        };
        UrlGraph::collect(|visit| {
            for edge in edges {
                let (source, target) =
                    edge.map_err(|e| Error::Io("the bulk build's link graph".into(), e))?;
                let (source, target) = (url(source)?, url(target)?);
                visit(if target.is_empty() {
                    FlowLink::Source(&source)
                } else {
                    FlowLink::Edge {
                        source: &source,
                        target: &target,
                    }
                });
            }
            Ok(())
        })
    }

    /// The graph of the links `scan` visits.
    fn collect(scan: impl FnOnce(&mut dyn FnMut(FlowLink<'_>)) -> Result<()>) -> Result<UrlGraph> {
        let mut nodes = NodesByHash::default();
        let mut urls = Vec::new();
        let mut edges = Vec::new();
        scan(&mut |link| match link {
            FlowLink::Edge { source, target } => {
                let s = nodes.intern(source, url_hash(source), &mut urls);
                let t = nodes.intern(target, url_hash(target), &mut urls);
                edges.push((s, t));
            }
            FlowLink::Source(source) => nodes.note_outside(source, url_hash(source)),
            FlowLink::Nothing => {}
        })?;
        nodes.settle();
        let new_of = nodes.renumber(&mut urls);
        for (s, t) in &mut edges {
            (*s, *t) = (new_of[*s as usize], new_of[*t as usize]);
        }
        let mut host_ids = HashMap::new();
        let mut hosts = Vec::new();
        let host_of_url: Vec<u32> = urls
            .iter()
            .map(|u| intern(&mut host_ids, &mut hosts, host_of(u)))
            .collect();
        let mut domain_ids = HashMap::new();
        let mut domains = Vec::new();
        let domain_of_host = hosts
            .iter()
            .map(|h| intern(&mut domain_ids, &mut domains, root_domain(h).unwrap_or(h)))
            .collect();
        Ok(UrlGraph {
            graph: Graph::from_edges(urls.len(), edges),
            urls,
            host_of: host_of_url,
            hosts,
            domain_of_host,
            domains,
            nodes,
        })
    }

    fn domain_of_url(&self, v: usize) -> usize {
        self.domain_of_host[self.host_of[v] as usize] as usize
    }
}

/// Hashes a key that is already a hash (a URL's `xxh3`) to itself.
#[derive(Default)]
struct Prehashed(u64);

impl Hasher for Prehashed {
    fn finish(&self) -> u64 {
        self.0
    }
    fn write(&mut self, bytes: &[u8]) {
        for &b in bytes {
            self.0 = self.0.rotate_left(8) ^ u64::from(b);
        }
    }
    fn write_u64(&mut self, v: u64) {
        self.0 = v;
    }
}

/// Graph nodes by URL hash ([`url_hash`]), the form in which backlink keys name both ends
/// of a link: the graph is built and its backlinks re-keyed without hashing a URL string
/// into a map.
///
/// Each entry also holds a second, independent 32-bit hash of its URL, compared instead of
/// the URL itself: a lookup then touches one entry, not a string elsewhere in memory
/// (`perf`: comparing the strings was a quarter of an 18M-link flow build's CPU). A URL
/// is a node's when both hashes agree (96 bits: two URLs of a billion-node graph agree with
/// odds below 10⁻¹¹); a graph URL whose 64-bit hash another one holds is found by name.
///
/// A pointer row names its link's source by 64-bit hash alone (or, in a snapshot's
/// numbered generation, by the page's number, which the store's flow build turns back
/// into the hash before it asks). That source is a node, or
/// the source of links that carry no flow, which the graph notes without holding it
/// ([`FlowLink::Source`]); a hash two such URLs share, whether nodes or not, is
/// `ambiguous`, and a pointer row's source of that hash is found by the name its URL row
/// holds.
#[derive(Default)]
struct NodesByHash {
    by_hash: HashMap<u64, (u32, u32), BuildHasherDefault<Prehashed>>,
    collided: HashMap<String, u32>,
    /// Sources outside the graph until [`NodesByHash::settle`]: their check hashes.
    outside: HashMap<u64, u32, BuildHasherDefault<Prehashed>>,
    ambiguous: HashSet<u64, BuildHasherDefault<Prehashed>>,
}

impl NodesByHash {
    /// The node of `url` (whose hash is `hash`), added to `urls` if new.
    fn intern(&mut self, url: &str, hash: u64, urls: &mut Vec<String>) -> u32 {
        if let Some(v) = self.find(hash, url) {
            return v as u32;
        }
        let v = urls.len() as u32;
        urls.push(url.to_string());
        let entry = *self.by_hash.entry(hash).or_insert((v, url_check_hash(url)));
        if entry.0 != v {
            self.collided.insert(url.to_string(), v);
            self.ambiguous.insert(hash);
        }
        v
    }

    /// Notes the source of a link that carries no flow, which pointer rows name by `hash`.
    fn note_outside(&mut self, url: &str, hash: u64) {
        let check = url_check_hash(url);
        if *self.outside.entry(hash).or_insert(check) != check {
            self.ambiguous.insert(hash);
        }
    }

    /// Ends the collection: a noted source whose hash a node holds under another URL
    /// makes that hash ambiguous.
    fn settle(&mut self) {
        for (hash, check) in std::mem::take(&mut self.outside) {
            if self.by_hash.get(&hash).is_some_and(|&(_, c)| c != check) {
                self.ambiguous.insert(hash);
            }
        }
    }

    /// Numbers the nodes in their URLs' byte order, whatever order their links came in,
    /// so that every scan of the same links gives the same graph and the same sums (a
    /// snapshot's internal links come page by page, a full store's by their hashes). A
    /// site's URLs get neighbouring numbers, and most links stay within a site, which
    /// keeps the rank iterations' reads close together. Reorders `urls` and returns each
    /// old number's new one.
    fn renumber(&mut self, urls: &mut Vec<String>) -> Vec<u32> {
        let mut order: Vec<u32> = (0..urls.len() as u32).collect();
        order.sort_unstable_by(|&a, &b| urls[a as usize].cmp(&urls[b as usize]));
        let mut new_of = vec![0u32; urls.len()];
        for (new, &old) in order.iter().enumerate() {
            new_of[old as usize] = new as u32;
        }
        let mut old_urls = std::mem::take(urls);
        *urls = (order.iter())
            .map(|&old| std::mem::take(&mut old_urls[old as usize]))
            .collect();
        for (v, _) in self.by_hash.values_mut() {
            *v = new_of[*v as usize];
        }
        for v in self.collided.values_mut() {
            *v = new_of[*v as usize];
        }
        new_of
    }

    /// The node of `url`, whose hash is `hash`.
    fn find(&self, hash: u64, url: &str) -> Option<usize> {
        match self.by_hash.get(&hash) {
            Some(&(v, check)) if check == url_check_hash(url) => Some(v as usize),
            _ => self.collided.get(url).map(|&v| v as usize),
        }
    }

    /// [`NodesByHash::find`] for a link's source known by its 64-bit hash alone: `None`
    /// when only its name can tell, the hash being ambiguous.
    fn find_by_hash(&self, hash: u64) -> Option<Option<usize>> {
        if self.ambiguous.contains(&hash) {
            return None;
        }
        Some(self.by_hash.get(&hash).map(|&(v, _)| v as usize))
    }
}

/// What a flow build computed.
#[derive(Debug, Clone)]
pub struct FlowReport {
    pub nodes: usize,
    pub edges: usize,
    pub seed_nodes: usize,
    pub citation_iterations: usize,
    pub trust_iterations: usize,
    pub topics: usize,
    /// ns per edge per iteration of the Citation Flow iteration.
    pub ns_per_edge_iteration: f64,
    pub backlink_rows: u64,
    pub metrics_rows: u64,
}

/// Raw leaky scores (see [`scale`]): every node with `teleport[v] > 0` gets that many
/// `1 - d` units per iteration.
fn leaky(graph_t: &Graph, outdegree: &[u32], teleport: &[f64], params: &RankParams) -> RankResult {
    rank(
        graph_t,
        outdegree,
        teleport,
        &RankParams {
            dangling: Dangling::Drop,
            ..*params
        },
    )
}

/// Computes every metric and publishes it: metrics per URL, subdomain and root domain,
/// and backlink orderings re-keyed by the new SourceTrustFlow, switched in atomically.
pub fn build(
    store: &Store,
    seeds: &[Seed],
    params: &RankParams,
    progress: &mut dyn FnMut(&str),
) -> Result<FlowReport> {
    progress("reading the link graph");
    let g = UrlGraph::from_store(store)?;
    compute_and_publish(
        store,
        g,
        seeds,
        params,
        progress,
        |update, end_of, progress| update.finish(end_of, params.threads, progress),
    )
}

/// What a bulk build kept for the flow build that follows it, as rows in its files: the
/// edges of the link graph (`source URL, target URL`), and every backlink row in key
/// order, the sources holding ascending, disjoint ranges of item hashes.
pub struct BuiltRows<E, B> {
    pub edges: Vec<E>,
    pub backlinks: Vec<B>,
}

/// [`build`] for a store whose bulk build kept its graph and backlink rows outside it:
/// neither is read from the store, and the backlinks are written once, in their final
/// order.
pub fn build_from_rows<E, B>(
    store: &Store,
    rows: BuiltRows<E, B>,
    seeds: &[Seed],
    params: &RankParams,
    progress: &mut dyn FnMut(&str),
) -> Result<FlowReport>
where
    E: Iterator<Item = std::io::Result<(Vec<u8>, Vec<u8>)>>,
    B: Iterator<Item = std::io::Result<(Vec<u8>, Vec<u8>)>> + Send,
{
    progress("reading the link graph");
    let g = UrlGraph::from_edges(rows.edges.into_iter().flatten())?;
    compute_and_publish(
        store,
        g,
        seeds,
        params,
        progress,
        |update, end_of, progress| update.finish_from_rows(end_of, rows.backlinks, progress),
    )
}

/// Computes the metrics of `g` and publishes them; `publish` re-keys the backlink rows,
/// given the update to finish, each URL's end by URL hash, and a progress callback (rows
/// done).
fn compute_and_publish(
    store: &Store,
    g: UrlGraph,
    seeds: &[Seed],
    params: &RankParams,
    progress: &mut dyn FnMut(&str),
    publish: impl FnOnce(
        FlowUpdate<'_>,
        &(dyn Fn(u64, EndName<'_>) -> Option<LinkEnd> + Sync),
        &mut dyn FnMut(u64),
    ) -> linkstore::Result<FlowUpdateReport>,
) -> Result<FlowReport> {
    let n = g.urls.len();
    progress(&format!("graph: {n} URLs, {} links", g.graph.edges()));

    // Seed nodes: every URL under a seed item. A seed matching nothing is an error.
    let mut seed_node = vec![false; n];
    let mut topic_seeds: HashMap<String, Vec<usize>> = HashMap::new();
    let mut by_item: HashMap<&Item, Vec<usize>> = HashMap::new();
    for s in seeds {
        by_item.entry(&s.item).or_default();
    }
    for (v, url) in g.urls.iter().enumerate() {
        for s in seeds {
            if s.item.contains_url(url) {
                by_item.get_mut(&s.item).expect("inserted above").push(v);
            }
        }
    }
    for s in seeds {
        let nodes = &by_item[&s.item];
        if nodes.is_empty() {
            return Err(Error::SeedNotInIndex {
                item: s.item.name.clone(),
                line: s.line,
            });
        }
        for &v in nodes {
            seed_node[v] = true;
        }
        if let Some(t) = &s.topic {
            topic_seeds
                .entry(t.clone())
                .or_default()
                .extend(nodes.iter().map(|&v| g.domain_of_url(v)));
        }
    }
    let seed_nodes = seed_node.iter().filter(|&&s| s).count();

    // Both metrics read the citation each URL receives; trust is its part that passed
    // through a seed (docs/flow.md, "The scale").
    let outdegree: Vec<u32> = (0..n).map(|v| g.graph.outdegree(v) as u32).collect();
    let transposed = g.graph.transpose();
    progress("computing Citation Flow");
    let cf = leaky(&transposed, &outdegree, &vec![1.0; n], params);
    progress(&format!("Citation Flow: {} iterations", cf.iterations));
    progress("computing Trust Flow");
    let tf = through_pinned(&transposed, &outdegree, &cf.scores, &seed_node, params);
    progress(&format!("Trust Flow: {} iterations", tf.iterations));
    drop(transposed);
    let cited: Vec<f64> = cf
        .scores
        .iter()
        .map(|&x| received(x, params.damping))
        .collect();
    let trusted = &tf.scores;

    // Topics at root-domain level: the share of each domain's trusted citation that
    // passed through the seeds of each topic, one iteration per topic over the domain
    // graph.
    let domains = g.domains.len();
    let mut dedges = Vec::with_capacity(g.graph.edges() / 4);
    for v in 0..n {
        let dv = g.domain_of_url(v) as u32;
        for &t in g.graph.successors(v) {
            let dt = g.domain_of_url(t as usize) as u32;
            if dv != dt {
                dedges.push((dv, dt));
            }
        }
    }
    let dgraph = Graph::from_edges(domains, dedges);
    let doutdeg: Vec<u32> = (0..domains).map(|d| dgraph.outdegree(d) as u32).collect();
    let dgraph_t = dgraph.transpose();
    let mut topic_names: Vec<&String> = topic_seeds.keys().collect();
    topic_names.sort();
    let mut domain_topics: Vec<Vec<(usize, f64)>> = vec![Vec::new(); domains];
    if !topic_names.is_empty() {
        let dcitation = leaky(&dgraph_t, &doutdeg, &vec![1.0; domains], params).scores;
        let mut seed_domain = vec![false; domains];
        for v in (0..n).filter(|&v| seed_node[v]) {
            seed_domain[g.domain_of_url(v)] = true;
        }
        let all = through_pinned(&dgraph_t, &doutdeg, &dcitation, &seed_domain, params).scores;
        for (ti, topic) in topic_names.iter().enumerate() {
            progress(&format!("Topical Trust Flow: {topic}"));
            let mut pinned = vec![false; domains];
            for &d in &topic_seeds[*topic] {
                pinned[d] = true;
            }
            let r = through_pinned(&dgraph_t, &doutdeg, &dcitation, &pinned, params);
            for (d, &score) in r.scores.iter().enumerate() {
                if score > 0.0 && all[d] > 0.0 {
                    domain_topics[d].push((ti, (score / all[d]).min(1.0)));
                }
            }
        }
    }

    // Sums per host and domain: (received citation, trusted part).
    let mut host_raw = vec![(0.0f64, 0.0f64); g.hosts.len()];
    let mut domain_raw = vec![(0.0f64, 0.0f64); domains];
    for v in 0..n {
        let h = g.host_of[v] as usize;
        host_raw[h].0 += cited[v];
        host_raw[h].1 += trusted[v];
        let d = g.domain_of_url(v);
        domain_raw[d].0 += cited[v];
        domain_raw[d].1 += trusted[v];
    }
    // An item's value for a topic takes the share of its trusted citation that its root
    // domain owes to that topic's seeds.
    let metrics_of = |d: usize, (cited, trusted): (f64, f64)| -> ItemMetrics {
        let mut topics: Vec<(String, u8)> = domain_topics[d]
            .iter()
            .map(|&(ti, share)| {
                (
                    topic_names[ti].clone(),
                    scale::trust_flow(cited, trusted * share),
                )
            })
            .filter(|x| x.1 > 0)
            .collect();
        topics.sort_by(|a, b| b.1.cmp(&a.1).then_with(|| a.0.cmp(&b.0)));
        topics.truncate(MAX_TOPICS);
        ItemMetrics {
            trust_flow: scale::trust_flow(cited, trusted),
            citation_flow: scale::citation_flow(cited),
            topics,
        }
    };

    progress("publishing metrics");
    let mut update = store.begin_flow_update()?;
    // Each URL's flows and topics, made once: every backlink row carries its two ends'.
    let mut ends: Vec<LinkEnd> = Vec::with_capacity(n);
    for v in 0..n {
        let m = metrics_of(g.domain_of_url(v), (cited[v], trusted[v]));
        update.put_metrics(&Item::url(g.urls[v].clone()), &m)?;
        let flow = FlowPair {
            trust_flow: m.trust_flow,
            citation_flow: m.citation_flow,
        };
        update.put_top_page(&g.urls[v], flow)?;
        ends.push(LinkEnd::new(flow, &m.topics));
    }
    for (h, name) in g.hosts.iter().enumerate() {
        let m = metrics_of(g.domain_of_host[h] as usize, host_raw[h]);
        update.put_metrics(
            &Item {
                level: Level::SubDomain,
                name: name.clone(),
            },
            &m,
        )?;
    }
    for (d, name) in g.domains.iter().enumerate() {
        update.put_metrics(&Item::domain(name.clone()), &metrics_of(d, domain_raw[d]))?;
    }
    let end_of = |hash: u64, name: EndName<'_>| {
        let node = match name {
            EndName::Url(url) => g.nodes.find(hash, url),
            EndName::Hash => g.nodes.find_by_hash(hash)?,
        };
        Some(node.map_or_else(LinkEnd::default, |v| ends[v]))
    };
    let report = publish(update, &end_of, &mut |rows| {
        progress(&format!("re-ordered {rows} backlink rows"))
    })?;
    Ok(FlowReport {
        nodes: n,
        edges: g.graph.edges(),
        seed_nodes,
        citation_iterations: cf.iterations,
        trust_iterations: tf.iterations,
        topics: topic_names.len(),
        ns_per_edge_iteration: cf.iteration_seconds * 1e9
            / (g.graph.edges().max(1) as f64 * cf.iterations.max(1) as f64),
        backlink_rows: report.backlink_rows,
        metrics_rows: report.metrics_rows,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    /// URLs whose hashes collide are each found, by name; unknown URLs are not.
    #[test]
    fn nodes_are_found_by_hash_and_by_name_when_hashes_collide() {
        let urls: Vec<String> = ["http://a.com/", "http://b.com/", "http://c.com/"]
            .iter()
            .map(|u| u.to_string())
            .collect();
        let interned = |hash: &dyn Fn(&str) -> u64| {
            let (mut nodes, mut interned) = (NodesByHash::default(), Vec::new());
            for url in urls.iter().chain(&urls) {
                nodes.intern(url, hash(url), &mut interned);
            }
            assert_eq!(interned, urls, "each URL once, in order");
            nodes
        };
        let real = interned(&url_hash);
        assert!(real.collided.is_empty());
        let colliding = interned(&|_| 7);
        assert_eq!(colliding.collided.len(), 2);
        for (v, url) in urls.iter().enumerate() {
            assert_eq!(real.find(url_hash(url), url), Some(v));
            assert_eq!(colliding.find(7, url), Some(v));
        }
        assert_eq!(real.find(url_hash("http://d.com/"), "http://d.com/"), None);
        assert_eq!(colliding.find(7, "http://d.com/"), None);
        // A URL outside the graph whose 64-bit hash a node holds is not that node.
        assert_eq!(real.find(url_hash(&urls[0]), "http://d.com/"), None);

        // By the 64-bit hash alone: found where no two URLs share it, and not settled
        // (the name is asked for) where some do.
        for (v, url) in urls.iter().enumerate() {
            assert_eq!(real.find_by_hash(url_hash(url)), Some(Some(v)));
        }
        let d = "http://d.com/";
        assert_eq!(
            real.find_by_hash(url_hash(d)),
            Some(None),
            "outside the graph"
        );
        assert_eq!(colliding.find_by_hash(7), None);

        // A source outside the graph (noted, not held) whose hash a node holds makes the
        // hash ambiguous; a noted source that is the node itself does not.
        let mut noted = interned(&url_hash);
        noted.note_outside(d, url_hash(&urls[0]));
        noted.note_outside(&urls[1], url_hash(&urls[1]));
        noted.settle();
        assert_eq!(noted.find_by_hash(url_hash(&urls[0])), None);
        assert_eq!(noted.find_by_hash(url_hash(&urls[1])), Some(Some(1)));
        assert_eq!(noted.find_by_hash(url_hash(&urls[2])), Some(Some(2)));
        // Two noted sources of one hash, neither a node.
        let mut two = interned(&url_hash);
        two.note_outside("http://e.com/", 9);
        two.note_outside("http://f.com/", 9);
        two.note_outside("http://g.com/", 10);
        two.settle();
        assert_eq!(two.find_by_hash(9), None);
        assert_eq!(two.find_by_hash(10), Some(None));
    }

    /// The same links in another order give the same graph: nodes numbered in their
    /// URLs' order, found by hash and by name under their new numbers, colliding URLs
    /// too.
    #[test]
    fn a_graph_does_not_depend_on_the_order_of_its_links() {
        let edges = [
            ("http://b.com/", "http://a.com/x"),
            ("http://a.com/", "http://b.com/"),
            ("http://c.com/", "http://a.com/"),
            ("http://a.com/x", "http://c.com/"),
            ("http://d.com/", ""),
        ];
        let graph = |edges: &mut dyn Iterator<Item = &(&str, &str)>| {
            let rows = edges.map(|(s, t)| Ok((s.as_bytes().to_vec(), t.as_bytes().to_vec())));
            UrlGraph::from_edges(rows.collect::<Vec<_>>().into_iter()).unwrap()
        };
        let (forward, backward) = (graph(&mut edges.iter()), graph(&mut edges.iter().rev()));
        assert_eq!(forward.urls, backward.urls);
        assert!(forward.urls.is_sorted(), "numbered in URL order");
        for g in [&forward, &backward] {
            for (v, url) in g.urls.iter().enumerate() {
                assert_eq!(g.nodes.find(url_hash(url), url), Some(v));
                let successors: Vec<&str> = (g.graph.successors(v).iter())
                    .map(|&t| forward.urls[t as usize].as_str())
                    .collect();
                let expected: Vec<&str> = (edges.iter())
                    .filter(|(s, t)| s == url && !t.is_empty())
                    .map(|(_, t)| *t)
                    .collect();
                assert_eq!(successors, expected, "{url}");
            }
        }

        let mut colliding = NodesByHash::default();
        let mut urls = Vec::new();
        for url in ["http://z.com/", "http://y.com/", "http://x.com/"] {
            colliding.intern(url, 7, &mut urls);
        }
        let new_of = colliding.renumber(&mut urls);
        for (old, url) in ["http://z.com/", "http://y.com/", "http://x.com/"]
            .iter()
            .enumerate()
        {
            let v = new_of[old] as usize;
            assert_eq!(urls[v], *url);
            assert_eq!(colliding.find(7, url), Some(v));
        }
    }
}
