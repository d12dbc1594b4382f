//! A directed graph in compressed sparse rows, and its transpose for pull-style rank
//! iteration.
//!
//! Memory: out-edges 4 bytes per edge + 8 per node; the transpose as much again; a rank
//! computation adds 3 `f64` vectors per node (24 bytes) and 4 bytes per node of
//! outdegree. So about 8 bytes per edge and 44 per node in all.

/// Out-edges of every node, targets sorted per node.
#[derive(Debug, Clone)]
pub struct Graph {
    offsets: Vec<u64>,
    targets: Vec<u32>,
}

impl Graph {
    /// From CSR arrays: node `v`'s successors are `targets[offsets[v]..offsets[v + 1]]`.
    pub fn from_csr(offsets: Vec<u64>, targets: Vec<u32>) -> Graph {
        debug_assert_eq!(*offsets.last().unwrap_or(&0) as usize, targets.len());
        Graph { offsets, targets }
    }

    /// From an edge list over `nodes` nodes; duplicate edges are merged.
    pub fn from_edges(nodes: usize, mut edges: Vec<(u32, u32)>) -> Graph {
        edges.sort_unstable();
        edges.dedup();
        let mut offsets = vec![0u64; nodes + 1];
        for &(s, _) in &edges {
            offsets[s as usize + 1] += 1;
        }
        for i in 0..nodes {
            offsets[i + 1] += offsets[i];
        }
        let targets = edges.into_iter().map(|(_, t)| t).collect();
        Graph { offsets, targets }
    }

    pub fn nodes(&self) -> usize {
        self.offsets.len() - 1
    }

    pub fn edges(&self) -> usize {
        self.targets.len()
    }

    pub fn successors(&self, v: usize) -> &[u32] {
        &self.targets[self.offsets[v] as usize..self.offsets[v + 1] as usize]
    }

    pub fn outdegree(&self, v: usize) -> usize {
        (self.offsets[v + 1] - self.offsets[v]) as usize
    }

    /// In-edges of every node (the transpose), for pull iteration.
    pub fn transpose(&self) -> Graph {
        let n = self.nodes();
        let mut offsets = vec![0u64; n + 1];
        for &t in &self.targets {
            offsets[t as usize + 1] += 1;
        }
        for i in 0..n {
            offsets[i + 1] += offsets[i];
        }
        let mut fill: Vec<u64> = offsets[..n].to_vec();
        let mut sources = vec![0u32; self.targets.len()];
        for v in 0..n {
            for &t in self.successors(v) {
                let slot = &mut fill[t as usize];
                sources[*slot as usize] = v as u32;
                *slot += 1;
            }
        }
        Graph {
            offsets,
            targets: sources,
        }
    }

    /// Splits nodes into `parts` contiguous ranges of about equal edge counts.
    pub(crate) fn balanced_ranges(&self, parts: usize) -> Vec<std::ops::Range<usize>> {
        let n = self.nodes();
        let per = (self.edges() as u64 + n as u64) / parts.max(1) as u64 + 1;
        let mut ranges = Vec::with_capacity(parts);
        let mut start = 0;
        for p in 1..=parts {
            let goal = per * p as u64;
            let mut end = self
                .offsets
                .partition_point(|&o| o + (self.offsets.len() as u64) < goal + start as u64)
                .min(n);
            if p == parts {
                end = n;
            }
            let end = end.max(start);
            ranges.push(start..end);
            start = end;
        }
        ranges
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn transpose_inverts_every_edge() {
        let g = Graph::from_edges(4, vec![(0, 1), (0, 2), (2, 1), (3, 0), (0, 1)]);
        assert_eq!(g.edges(), 4, "duplicate merged");
        let t = g.transpose();
        assert_eq!(t.successors(1), &[0, 2]);
        assert_eq!(t.successors(0), &[3]);
        assert_eq!(t.successors(3), &[] as &[u32]);
        let ranges = g.balanced_ranges(3);
        assert_eq!(ranges.first().unwrap().start, 0);
        assert_eq!(ranges.last().unwrap().end, 4);
        assert!(ranges.windows(2).all(|w| w[0].end == w[1].start));
    }
}
