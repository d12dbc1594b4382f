//! Reader for graphs in the WebGraph BVGraph format (`.graph` + `.properties`), as the
//! Laboratory for Web Algorithmics distributes them: used to test and benchmark the rank
//! computation on real web graphs. Sequential decoding, default codes only (gamma
//! outdegrees, unary references, gamma blocks and intervals, zeta-k residuals).

use crate::error::{Error, Result};
use crate::graph::Graph;
use std::collections::HashMap;
use std::path::Path;

/// Reads bits most-significant first.
struct BitReader<'a> {
    data: &'a [u8],
    pos: usize,
}

impl BitReader<'_> {
    fn bit(&mut self) -> Result<u64> {
        let byte = *self
            .data
            .get(self.pos >> 3)
            .ok_or_else(|| Error::Graph("BVGraph bit stream ends early".into()))?;
        let b = (byte >> (7 - (self.pos & 7))) & 1;
        self.pos += 1;
        Ok(u64::from(b))
    }

    fn bits(&mut self, n: u32) -> Result<u64> {
        let mut v = 0;
        for _ in 0..n {
            v = (v << 1) | self.bit()?;
        }
        Ok(v)
    }

    /// Zeros before the first one.
    fn unary(&mut self) -> Result<u64> {
        let mut n = 0;
        while self.bit()? == 0 {
            n += 1;
            if n > 64 {
                return Err(Error::Graph("unary code longer than 64 bits".into()));
            }
        }
        Ok(n)
    }

    fn gamma(&mut self) -> Result<u64> {
        let msb = self.unary()? as u32;
        Ok(((1u64 << msb) | self.bits(msb)?) - 1)
    }

    fn zeta(&mut self, k: u32) -> Result<u64> {
        let h = self.unary()? as u32;
        let left = 1u64 << (h * k);
        let m = self.bits(h * k + k - 1)?;
        if m < left {
            Ok(m + left - 1)
        } else {
            Ok((m << 1) + self.bit()? - 1)
        }
    }
}

fn nat2int(n: u64) -> i64 {
    if n & 1 == 0 {
        (n >> 1) as i64
    } else {
        -(((n + 1) >> 1) as i64)
    }
}

/// Loads `<base>.graph` using `<base>.properties`.
pub fn load(base: &Path) -> Result<Graph> {
    let props_path = base.with_extension("properties");
    let props_text = std::fs::read_to_string(&props_path)
        .map_err(|e| Error::Io(props_path.display().to_string(), e))?;
    let props: HashMap<&str, &str> = props_text
        .lines()
        .filter(|l| !l.starts_with('#'))
        .filter_map(|l| l.split_once('='))
        .collect();
    let num = |k: &str| -> Result<u64> {
        props
            .get(k)
            .and_then(|v| v.trim().parse().ok())
            .ok_or_else(|| Error::Graph(format!("{}: missing {k}", props_path.display())))
    };
    if props
        .get("compressionflags")
        .is_some_and(|f| !f.trim().is_empty())
    {
        return Err(Error::Graph(
            "only default BVGraph compression flags are supported".into(),
        ));
    }
    let nodes = num("nodes")? as usize;
    let arcs = num("arcs")?;
    let window = num("windowsize")? as usize;
    let min_interval = num("minintervallength")?;
    let zk = num("zetak")? as u32;
    let graph_path = base.with_extension("graph");
    let data =
        std::fs::read(&graph_path).map_err(|e| Error::Io(graph_path.display().to_string(), e))?;
    let mut r = BitReader {
        data: &data,
        pos: 0,
    };

    let mut offsets = Vec::with_capacity(nodes + 1);
    let mut targets: Vec<u32> = Vec::with_capacity(arcs as usize);
    offsets.push(0u64);
    let mut copied = Vec::new();
    let mut extra_list = Vec::new();
    for x in 0..nodes {
        let d = r.gamma()? as usize;
        let mut list: Vec<u32> = Vec::with_capacity(d);
        if d > 0 {
            let reference = if window > 0 { r.unary()? as usize } else { 0 };
            copied.clear();
            if reference > 0 {
                let rx = x
                    .checked_sub(reference)
                    .ok_or_else(|| Error::Graph(format!("node {x}: reference before node 0")))?;
                let start = offsets[rx] as usize;
                let end = offsets[rx + 1] as usize;
                let ref_list = &targets[start..end];
                let block_count = r.gamma()? as usize;
                let mut pos = 0usize;
                let mut copying = true;
                for i in 0..block_count {
                    let len = r.gamma()? as usize + usize::from(i > 0);
                    let end = (pos + len).min(ref_list.len());
                    if copying {
                        copied.extend_from_slice(&ref_list[pos..end]);
                    }
                    pos = end;
                    copying = !copying;
                }
                // An even number of blocks leaves an implicit final copy block.
                if block_count.is_multiple_of(2) {
                    copied.extend_from_slice(&ref_list[pos.min(ref_list.len())..]);
                }
            }
            let mut extra = d
                .checked_sub(copied.len())
                .ok_or_else(|| Error::Graph(format!("node {x}: copied more than its outdegree")))?;
            extra_list.clear();
            if extra > 0 && min_interval > 0 {
                let intervals = r.gamma()?;
                let mut prev: i64 = 0;
                for i in 0..intervals {
                    let left = if i == 0 {
                        x as i64 + nat2int(r.gamma()?)
                    } else {
                        prev + r.gamma()? as i64 + 1
                    };
                    let len = r.gamma()? + min_interval;
                    for v in left..left + len as i64 {
                        extra_list.push(v as u32);
                    }
                    prev = left + len as i64;
                    extra = extra.checked_sub(len as usize).ok_or_else(|| {
                        Error::Graph(format!("node {x}: intervals exceed outdegree"))
                    })?;
                }
            }
            if extra > 0 {
                let mut prev = x as i64 + nat2int(r.zeta(zk)?);
                extra_list.push(prev as u32);
                for _ in 1..extra {
                    prev += r.zeta(zk)? as i64 + 1;
                    extra_list.push(prev as u32);
                }
            }
            list.extend_from_slice(&copied);
            list.extend_from_slice(&extra_list);
            list.sort_unstable();
        }
        targets.extend_from_slice(&list);
        offsets.push(targets.len() as u64);
    }
    if targets.len() as u64 != arcs {
        return Err(Error::Graph(format!(
            "decoded {} arcs, properties say {arcs}",
            targets.len()
        )));
    }
    if let Some(&bad) = targets.iter().find(|&&t| t as usize >= nodes) {
        return Err(Error::Graph(format!("successor {bad} out of range")));
    }
    Ok(Graph::from_csr(offsets, targets))
}
