//! Flow metrics of an item as published by a flow build (encoding version 2: topics as
//! taxonomy ids).

use crate::codec::Reader;
use crate::error::Result;
use crate::topic::{put_topics, read_topics};

pub const METRICS_VERSION: u8 = 2;

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
        put_topics(&mut out, &self.topics);
        out
    }

    pub fn decode(buf: &[u8]) -> Result<ItemMetrics> {
        let mut r = Reader::new(buf, "metrics");
        r.version(METRICS_VERSION)?;
        let trust_flow = r.u8()?;
        let citation_flow = r.u8()?;
        let topics = read_topics(&mut r, "metrics")?;
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
