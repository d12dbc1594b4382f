//! The seed file: trusted items, optionally labelled with a topic.
//!
//! ```text
//! # comments and blank lines are ignored
//! www.bbc.co.uk<TAB>News
//! example.org<TAB>Computers/Internet/Web Design and Development
//! http://www.example.net/trusted-page.html
//! ```
//!
//! One item per line (URL, subdomain or root domain, recognised as everywhere else),
//! optionally a tab and a topic from the taxonomy ([`TOPICS`]). Every URL of a seed item
//! known to the index is a seed node.

use crate::error::{Error, Result};
use linkstore::Item;
use std::path::Path;

/// The topic taxonomy: category paths, one per line (the store's, which keeps topics as
/// ids into it).
pub use linkstore::{is_topic, TAXONOMY as TOPICS};

#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Seed {
    pub item: Item,
    pub topic: Option<String>,
    /// 1-based line in the seed file, for error messages.
    pub line: usize,
}

/// Parses a seed file's text; `file` names it in errors.
pub fn parse_seeds(text: &str, file: &str) -> Result<Vec<Seed>> {
    let mut seeds = Vec::new();
    for (i, raw) in text.lines().enumerate() {
        let line = raw.trim();
        if line.is_empty() || line.starts_with('#') {
            continue;
        }
        let err = |message: String| Error::Seeds {
            file: file.to_string(),
            line: i + 1,
            message,
        };
        let mut parts = line.split('\t');
        let item_text = parts.next().unwrap_or("").trim();
        let topic = parts.next().map(str::trim).filter(|t| !t.is_empty());
        if parts.next().is_some() {
            return Err(err(
                "expected ITEM or ITEM<TAB>TOPIC, found more fields".into()
            ));
        }
        if item_text.contains(char::is_whitespace) {
            return Err(err(format!(
                "{item_text:?} is not one item (separate the topic with a tab)"
            )));
        }
        let item = Item::parse(item_text).map_err(|e| err(e.to_string()))?;
        if let Some(t) = topic {
            if !is_topic(t) {
                return Err(err(format!(
                    "unknown topic {t:?}: topics are category paths such as \"Computers/Internet\" (see docs/flow.md)"
                )));
            }
        }
        seeds.push(Seed {
            item,
            topic: topic.map(str::to_string),
            line: i + 1,
        });
    }
    if seeds.is_empty() {
        return Err(Error::Seeds {
            file: file.to_string(),
            line: 0,
            message: "no seeds: Trust Flow needs at least one trusted item".into(),
        });
    }
    Ok(seeds)
}

pub fn read_seeds(path: &Path) -> Result<Vec<Seed>> {
    let text =
        std::fs::read_to_string(path).map_err(|e| Error::Io(path.display().to_string(), e))?;
    parse_seeds(&text, &path.display().to_string())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn seed_files_parse_with_topics_and_errors_name_the_line() {
        let s = parse_seeds(
            "# trusted\n\nwww.bbc.co.uk\tNews\nexample.org\nhttp://a.com/x\tComputers/Internet\n",
            "seeds.tsv",
        )
        .unwrap();
        assert_eq!(s.len(), 3);
        assert_eq!(s[0].topic.as_deref(), Some("News"));
        assert_eq!(s[0].line, 3);
        assert_eq!(s[2].item, Item::url("http://a.com/x"));

        let e = parse_seeds("a.com\nb.com\tCooking\n", "s")
            .unwrap_err()
            .to_string();
        assert!(e.starts_with("s:2:") && e.contains("Cooking"), "{e}");
        let e = parse_seeds("bad host!\n", "s").unwrap_err().to_string();
        assert!(e.starts_with("s:1:"), "{e}");
        let e = parse_seeds("a.com News\n", "s").unwrap_err().to_string();
        assert!(e.contains("tab"), "{e}");
        assert!(parse_seeds("# nothing\n", "s").is_err());
    }
}
