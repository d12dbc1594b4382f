//! Which root domains of a snapshot read the views of their one linked host.
//!
//! A snapshot build gives each root domain a `distinct` member
//! ([`DistinctKind::LinkedHost`](crate::keys::DistinctKind::LinkedHost)) per host its
//! backlinks point to. Those rows share the domain's partition hash and sort before its
//! backlinks (a lower table), so by the domain's first backlink the reducer knows
//! whether it has one linked host. Such a domain's views are the host's, row for row:
//! they are still counted into the domain's counters, but only its one `LinkedHost` row
//! is written, and readers follow it to the host.

use std::collections::HashSet;

/// Root domains whose views are their one linked host's (see the module documentation).
#[derive(Default)]
pub(crate) struct LinkedHosts {
    /// The root domains of the partition hash being reduced in the first stage: item key
    /// and host, `None` once a second host turned up.
    group: Vec<(Vec<u8>, Option<String>)>,
    /// Such domains whose sums did not fit in memory: their rows are reduced in later
    /// stages, which must leave them out too.
    staged: HashSet<Vec<u8>>,
}

impl LinkedHosts {
    /// A host the backlinks of the root domain `item_key` point to.
    pub(crate) fn note(&mut self, item_key: &[u8], host: &str) {
        match self.group.iter_mut().find(|(key, _)| key == item_key) {
            Some((_, one)) => {
                if one.as_deref() != Some(host) {
                    *one = None;
                }
            }
            None => self.group.push((item_key.to_vec(), Some(host.to_string()))),
        }
    }

    /// Whether the item reads its one linked host's views (and keeps none of its own).
    pub(crate) fn one_host(&self, item_key: &[u8]) -> bool {
        let in_group = self
            .group
            .iter()
            .any(|(key, one)| key == item_key && one.is_some());
        in_group || self.staged.contains(item_key)
    }

    /// Ends the partition hash's group; unless its items were `whole` (their rows worked
    /// out in memory), later stages are told which of them read a host's views.
    pub(crate) fn end_group(&mut self, whole: bool) {
        for (key, one) in self.group.drain(..) {
            if !whole && one.is_some() {
                self.staged.insert(key);
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_second_host_ends_the_alias_and_staged_domains_outlive_their_group() {
        let mut hosts = LinkedHosts::default();
        hosts.note(b"a", "www.a.com");
        hosts.note(b"a", "www.a.com");
        hosts.note(b"b", "www.b.com");
        hosts.note(b"b", "shop.b.com");
        assert!(hosts.one_host(b"a"));
        assert!(!hosts.one_host(b"b"));
        assert!(!hosts.one_host(b"c"));
        hosts.end_group(true);
        assert!(!hosts.one_host(b"a"), "a whole group is done with");
        hosts.note(b"c", "c.com");
        hosts.note(b"d", "d.com");
        hosts.note(b"d", "www.d.com");
        hosts.end_group(false);
        assert!(hosts.one_host(b"c"), "reduced stage by stage");
        assert!(!hosts.one_host(b"d"));
    }
}
