//! Which root domains read views of their linked hosts instead of keeping their own.
//!
//! A build gives each root domain a `distinct` member
//! ([`DistinctKind::LinkedHost`](crate::keys::DistinctKind::LinkedHost)) per host its
//! backlinks point to. Those rows share the domain's partition hash and sort before its
//! backlinks (a lower table), so by the domain's first backlink the reducer knows its
//! linked hosts:
//!
//! - one host: the domain's views are the host's, row for row. They are still counted
//!   into the domain's counters, but only its one `LinkedHost` row is written, and
//!   readers follow it to the host.
//! - in a snapshot, two to [`MAX_BACKLINK_HOSTS`] hosts: the domain's backlink rows are
//!   its hosts' backlink rows, in the same order once merged. It keeps its other views,
//!   but no backlink rows; a `BacklinkHost` row names each host, and readers merge the
//!   hosts' rows. (The incremental writer, which would have to write them all when a
//!   domain gains a host, keeps them.)

use std::collections::HashMap;

/// The most linked hosts whose backlink rows a snapshot's root domain reads instead of
/// keeping its own: a read of the domain's backlinks opens one iterator per host.
pub(crate) const MAX_BACKLINK_HOSTS: usize = 8;

/// What a root domain's linked hosts make of its views (see the module documentation).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Alias {
    /// It reads every view of its one linked host.
    OneHost,
    /// It reads the backlink rows of its linked hosts.
    BacklinkHosts,
}

/// A root domain's linked hosts met so far: `None` once more than the most that can
/// stand for it turned up.
type Hosts = Option<Vec<String>>;

/// Root domains whose views are read from their hosts (see the module documentation).
pub(crate) struct LinkedHosts {
    /// The most linked hosts a domain may have and still read its hosts' views: one in a
    /// store the incremental writer keeps.
    most_hosts: usize,
    /// The root domains of the partition hash being reduced in the first stage, with
    /// their hosts.
    group: Vec<(Vec<u8>, Hosts)>,
    /// Such domains whose sums did not fit in memory: their rows are reduced in later
    /// stages, which must leave them out too.
    staged: HashMap<Vec<u8>, Alias>,
}

impl LinkedHosts {
    /// `snapshot`: whether the store is a snapshot, whose root domains may read their
    /// hosts' backlink rows.
    pub(crate) fn new(snapshot: bool) -> LinkedHosts {
        LinkedHosts {
            most_hosts: if snapshot { MAX_BACKLINK_HOSTS } else { 1 },
            group: Vec::new(),
            staged: HashMap::new(),
        }
    }

    /// A host the backlinks of the root domain `item_key` point to.
    pub(crate) fn note(&mut self, item_key: &[u8], host: &str) {
        let most = self.most_hosts;
        let Some((_, slot)) = self.group.iter_mut().find(|(key, _)| key == item_key) else {
            self.group
                .push((item_key.to_vec(), Some(vec![host.to_string()])));
            return;
        };
        let too_many = match slot {
            Some(hosts) => {
                if !hosts.iter().any(|h| h == host) {
                    hosts.push(host.to_string());
                }
                hosts.len() > most
            }
            None => false,
        };
        if too_many {
            *slot = None;
        }
    }

    /// What the item reads of its hosts' views, if anything.
    pub(crate) fn alias(&self, item_key: &[u8]) -> Option<Alias> {
        match self.group.iter().find(|(key, _)| key == item_key) {
            Some((_, hosts)) => alias_of(hosts),
            None => self.staged.get(item_key).copied(),
        }
    }

    /// Whether the item reads its one linked host's views (and keeps none of its own).
    pub(crate) fn one_host(&self, item_key: &[u8]) -> bool {
        self.alias(item_key) == Some(Alias::OneHost)
    }

    /// Ends the partition hash's group; unless its items were `whole` (their rows worked
    /// out in memory), later stages are told which of them read their hosts' views.
    pub(crate) fn end_group(&mut self, whole: bool) {
        for (key, hosts) in std::mem::take(&mut self.group) {
            match alias_of(&hosts) {
                Some(alias) if !whole => {
                    self.staged.insert(key, alias);
                }
                _ => {}
            }
        }
    }
}

fn alias_of(hosts: &Hosts) -> Option<Alias> {
    match hosts.as_deref()? {
        [_] => Some(Alias::OneHost),
        _ => Some(Alias::BacklinkHosts),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_second_host_ends_the_alias_and_staged_domains_outlive_their_group() {
        let mut hosts = LinkedHosts::new(false);
        hosts.note(b"a", "www.a.com");
        hosts.note(b"a", "www.a.com");
        hosts.note(b"b", "www.b.com");
        hosts.note(b"b", "shop.b.com");
        assert!(hosts.one_host(b"a"));
        assert!(!hosts.one_host(b"b"));
        assert_eq!(
            hosts.alias(b"b"),
            None,
            "the writer's stores keep their rows"
        );
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

    #[test]
    fn a_snapshot_domain_reads_the_backlinks_of_up_to_the_most_hosts() {
        let mut hosts = LinkedHosts::new(true);
        hosts.note(b"a", "www.a.com");
        assert_eq!(hosts.alias(b"a"), Some(Alias::OneHost));
        for i in 1..MAX_BACKLINK_HOSTS {
            hosts.note(b"a", &format!("h{i}.a.com"));
            hosts.note(b"a", "www.a.com");
            assert_eq!(hosts.alias(b"a"), Some(Alias::BacklinkHosts));
        }
        hosts.note(b"b", "www.b.com");
        hosts.note(b"b", "shop.b.com");
        hosts.note(b"a", "one-too-many.a.com");
        assert_eq!(hosts.alias(b"a"), None);
        hosts.note(b"a", "www.a.com");
        assert_eq!(hosts.alias(b"a"), None, "past the most, for good");
        hosts.end_group(false);
        assert_eq!(hosts.alias(b"a"), None);
        assert_eq!(hosts.alias(b"b"), Some(Alias::BacklinkHosts), "staged");
    }
}
