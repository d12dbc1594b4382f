//! The topic taxonomy and the one-byte ids under which link records and metrics rows
//! store topics.

use crate::codec::{put_uvarint, Reader};
use crate::error::{Error, Result};
use std::collections::HashMap;
use std::sync::OnceLock;

/// The taxonomy: category paths, one per line. A topic's id is its line number from 0,
/// so lines are only ever appended: stored ids name them.
pub const TAXONOMY: &str = include_str!("topics.txt");

fn ids() -> &'static (Vec<&'static str>, HashMap<&'static str, u8>) {
    static IDS: OnceLock<(Vec<&'static str>, HashMap<&'static str, u8>)> = OnceLock::new();
    IDS.get_or_init(|| {
        let names: Vec<&str> = TAXONOMY.lines().collect();
        assert!(names.len() <= 256, "topic ids are one byte");
        let by_name = names
            .iter()
            .enumerate()
            .map(|(i, &n)| (n, i as u8))
            .collect();
        (names, by_name)
    })
}

/// Whether `name` is a topic of the taxonomy.
pub fn is_topic(name: &str) -> bool {
    topic_id(name).is_some()
}

pub(crate) fn topic_id(name: &str) -> Option<u8> {
    ids().1.get(name).copied()
}

pub(crate) fn topic_name(id: u8) -> Option<&'static str> {
    ids().0.get(usize::from(id)).copied()
}

/// Writes topics as `n uvar, n x (id u8, value u8)`. Topics come from seeds checked
/// against the taxonomy, so every name has an id; one without would be left out.
pub(crate) fn put_topics(out: &mut Vec<u8>, topics: &[(String, u8)]) {
    debug_assert!(
        topics.iter().all(|(t, _)| is_topic(t)),
        "topics outside the taxonomy: {topics:?}"
    );
    let known = || topics.iter().filter_map(|(t, v)| Some((topic_id(t)?, *v)));
    put_topic_ids(out, known().count(), known());
}

/// Writes `n` topics given as `(id, value)`, in the layout of [`put_topics`].
pub(crate) fn put_topic_ids(out: &mut Vec<u8>, n: usize, ids: impl Iterator<Item = (u8, u8)>) {
    put_uvarint(out, n as u64);
    for (id, v) in ids.take(n) {
        out.extend_from_slice(&[id, v]);
    }
}

/// Reads what [`put_topics`] wrote; an id outside the taxonomy is corruption.
pub(crate) fn read_topics(r: &mut Reader<'_>, cf: &'static str) -> Result<Vec<(String, u8)>> {
    let mut topics = Vec::new();
    each_topic(r, cf, |name, value| topics.push((name.to_string(), value)))?;
    Ok(topics)
}

/// Reads what [`put_topics`] wrote, giving each topic's name and value to `each`.
pub(crate) fn each_topic(
    r: &mut Reader<'_>,
    cf: &'static str,
    mut each: impl FnMut(&'static str, u8),
) -> Result<()> {
    let n = r.uvarint()?;
    for _ in 0..n {
        let id = r.u8()?;
        let name =
            topic_name(id).ok_or_else(|| Error::corrupt(cf, format!("unknown topic id {id}")))?;
        each(name, r.u8()?);
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn topics_are_stored_as_ids_and_read_back_by_name() {
        let topics = vec![("News".to_string(), 40), ("Arts/Music".to_string(), 7)];
        let mut out = Vec::new();
        put_topics(&mut out, &topics);
        assert_eq!(out.len(), 5, "count and two (id, value) pairs: {out:?}");
        assert_eq!(
            out[1],
            TAXONOMY.lines().position(|l| l == "News").unwrap() as u8
        );
        let mut r = Reader::new(&out, "links");
        assert_eq!(read_topics(&mut r, "links").unwrap(), topics);
        let bad = [1u8, 255, 9];
        let err = read_topics(&mut Reader::new(&bad, "links"), "links").unwrap_err();
        assert!(err.to_string().contains("unknown topic id 255"), "{err}");
    }
}
