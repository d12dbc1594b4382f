//! Anchor-text reads: an item's anchors as GetAnchorText and the CLI show them, from the
//! ranked rows the write paths keep (anchors are stored lower-cased, so the stored form
//! is the shown one), with the reader's paging and filter.

use crate::aggregate::AnchorText;
use crate::error::Result;
use crate::item::Item;
use crate::read_view::ReadView;
use std::collections::HashMap;

/// Most anchor rows one query reads, skipped and counted ones included: the work is
/// bounded before it runs.
pub const ANCHOR_SCAN_LIMIT: usize = 100_000;

/// Which anchor texts of an item to read, most referring domains first.
#[derive(Debug, Clone, Default)]
pub struct AnchorQuery {
    /// Matching rows to skip (paging).
    pub from: usize,
    /// Rows to return.
    pub count: usize,
    /// Only anchors equal to, or containing, a text (compared lower-cased).
    pub filter: Option<AnchorFilter>,
    /// Merge anchors that differ only by punctuation and separators (GetAnchorText's
    /// `TextMode=1`); a merged row's referring domains are the largest of its variants'
    /// (a lower bound: variants may share domains).
    pub cleaned: bool,
}

#[derive(Debug, Clone)]
pub enum AnchorFilter {
    Exact(String),
    Contains(String),
}

/// One page of anchors and how many match in all (`None` when more than
/// [`ANCHOR_SCAN_LIMIT`] rows would have to be read to say).
#[derive(Debug, Clone, Default)]
pub struct AnchorPage {
    pub rows: Vec<AnchorText>,
    pub total: Option<usize>,
}

/// An anchor as GetAnchorText shows it: lower-cased, and with `cleaned` its punctuation
/// and separators turned into single spaces (`TextMode=1`).
pub fn anchor_form(text: &str, cleaned: bool) -> String {
    let lower = text.to_lowercase();
    if !cleaned {
        return lower;
    }
    let spaced: String = lower
        .chars()
        .map(|c| if c.is_alphanumeric() { c } else { ' ' })
        .collect();
    spaced.split_whitespace().collect::<Vec<_>>().join(" ")
}

impl AnchorFilter {
    /// Whether an anchor, in the form the filter was written in, passes.
    pub fn accepts(&self, text: &str) -> bool {
        match self {
            AnchorFilter::Exact(f) => text == f,
            AnchorFilter::Contains(f) => text.contains(f.as_str()),
        }
    }
}

impl ReadView {
    /// The anchors of `item` that `q` selects (see [`AnchorQuery`]).
    pub fn anchor_texts(&self, item: &Item, q: &AnchorQuery) -> Result<AnchorPage> {
        let form = |t: &str| anchor_form(t, q.cleaned);
        let filter = q.filter.as_ref().map(|f| match f {
            AnchorFilter::Exact(t) => AnchorFilter::Exact(form(t)),
            AnchorFilter::Contains(t) => AnchorFilter::Contains(form(t)),
        });
        if let (Some(AnchorFilter::Exact(text)), false) = (&filter, q.cleaned) {
            // One stored row at most: read it, no scan.
            let row = self.anchor(item, text)?;
            let total = usize::from(row.is_some());
            let rows = row.into_iter().skip(q.from).take(q.count).collect();
            return Ok(AnchorPage {
                rows,
                total: Some(total),
            });
        }
        let mut scanned = 0usize;
        let mut complete = true;
        let mut matches: Vec<AnchorText> = Vec::new();
        let mut merged: HashMap<String, usize> = HashMap::new();
        let mut total = 0usize;
        self.scan_ranked(item, |mut a: AnchorText| {
            if scanned == ANCHOR_SCAN_LIMIT {
                complete = false;
                return false;
            }
            scanned += 1;
            a.text = form(&a.text);
            if !filter.as_ref().is_none_or(|f| f.accepts(&a.text)) {
                return true;
            }
            if q.cleaned {
                match merged.get(&a.text) {
                    Some(&i) => {
                        let m = &mut matches[i];
                        m.links += a.links;
                        m.deleted_links += a.deleted_links;
                        m.nofollow_links += a.nofollow_links;
                        m.ref_domains = m.ref_domains.max(a.ref_domains);
                    }
                    None => {
                        merged.insert(a.text.clone(), matches.len());
                        matches.push(a);
                    }
                }
                return true;
            }
            // Ranked rows come in their final order: keep only the page.
            if total >= q.from && matches.len() < q.count {
                matches.push(a);
            }
            total += 1;
            true
        })?;
        if q.cleaned {
            matches.sort_by(|a, b| {
                b.ref_domains
                    .cmp(&a.ref_domains)
                    .then(b.links.cmp(&a.links))
                    .then_with(|| a.text.cmp(&b.text))
            });
            total = matches.len();
            matches = matches.into_iter().skip(q.from).take(q.count).collect();
        }
        Ok(AnchorPage {
            rows: matches,
            total: complete.then_some(total),
        })
    }
}
