//! Flow metrics of an item as published by a flow build (encoding version 1).

use crate::codec::{put_bytes, put_uvarint, Reader};
use crate::error::Result;

pub const METRICS_VERSION: u8 = 1;

/// Trust Flow, Citation Flow and the top topics (value descending) of one item.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct ItemMetrics {
    pub trust_flow: u8,
    pub citation_flow: u8,
    /// Topical Trust Flow: (topic path, 0..=100), highest first.
    pub topics: Vec<(String, u8)>,
}

impl ItemMetrics {
    pub fn encode(&self) -> Vec<u8> {
        let mut out = vec![METRICS_VERSION, self.trust_flow, self.citation_flow];
        put_uvarint(&mut out, self.topics.len() as u64);
        for (t, v) in &self.topics {
            put_bytes(&mut out, t.as_bytes());
            out.push(*v);
        }
        out
    }

    pub fn decode(buf: &[u8]) -> Result<ItemMetrics> {
        let mut r = Reader::new(buf, "metrics");
        r.version(METRICS_VERSION)?;
        let trust_flow = r.u8()?;
        let citation_flow = r.u8()?;
        let n = r.uvarint()? as usize;
        let mut topics = Vec::with_capacity(n.min(64));
        for _ in 0..n {
            topics.push((r.string()?, r.u8()?));
        }
        Ok(ItemMetrics {
            trust_flow,
            citation_flow,
            topics,
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn metrics_round_trip() {
        let m = ItemMetrics {
            trust_flow: 40,
            citation_flow: 55,
            topics: vec![("News".into(), 40), ("Arts/Music".into(), 12)],
        };
        assert_eq!(ItemMetrics::decode(&m.encode()).unwrap(), m);
    }
}
