//! From links as written (relative, with `rel` strings) to normalised [`OutLink`]s.

use crate::html::{clean_text, LinkTag, RawLink};
use linkstore::{normalize_url, LinkKind, OutLink};
use url::Url;

/// Why a link was dropped, for the file summary.
pub type LinkProblem = String;

/// Resolves links against the page (or its `<base>`) and normalises them. Links to other
/// schemes (mailto:, javascript:) are dropped silently; unparsable or oversized URLs are
/// returned as problems.
pub fn resolve_links(
    page: &Url,
    base: Option<&str>,
    raw: &[RawLink],
    robots_nofollow: bool,
) -> (Vec<OutLink>, Vec<LinkProblem>) {
    let base = base
        .and_then(|b| page.join(b.trim()).ok())
        .filter(|b| matches!(b.scheme(), "http" | "https"))
        .unwrap_or_else(|| page.clone());
    let mut links = Vec::with_capacity(raw.len());
    let mut problems = Vec::new();
    for r in raw {
        let href = r.url.trim();
        if href.is_empty() || href.starts_with('#') && r.tag != Some(LinkTag::MetaRefresh) {
            continue;
        }
        let target = match normalize_url(href, Some(&base)) {
            Ok(t) => t,
            Err(e) if e.starts_with("unsupported scheme") => continue,
            Err(e) => {
                problems.push(e);
                continue;
            }
        };
        let rel = r.rel.to_ascii_lowercase();
        let has = |token: &str| rel.split_ascii_whitespace().any(|t| t == token);
        let kind = match r.tag {
            Some(LinkTag::Frame | LinkTag::IFrame) => LinkKind::Frame,
            Some(LinkTag::MetaRefresh) => LinkKind::Redirect,
            _ if r.has_image => LinkKind::Image,
            _ => LinkKind::Text,
        };
        let alt = clean_text(&r.alt);
        let text = clean_text(&r.text);
        let anchor_text = if text.is_empty() { alt.clone() } else { text };
        links.push(OutLink {
            target,
            anchor_text,
            alt_text: alt,
            kind,
            nofollow: robots_nofollow || has("nofollow"),
            ugc: has("ugc"),
            sponsored: has("sponsored"),
        });
    }
    (links, problems)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn links_resolve_against_base_and_keep_their_kind() {
        let page = Url::parse("http://a.com/x/y.html").unwrap();
        let raw = vec![
            RawLink {
                tag: Some(LinkTag::A),
                url: "../z?q=1#frag".into(),
                text: "  Z  ".into(),
                rel: "UGC nofollow".into(),
                ..Default::default()
            },
            RawLink {
                tag: Some(LinkTag::A),
                url: "mailto:me@a.com".into(),
                ..Default::default()
            },
            RawLink {
                tag: Some(LinkTag::A),
                url: "http://[bad".into(),
                ..Default::default()
            },
            RawLink {
                tag: Some(LinkTag::A),
                url: "pic.html".into(),
                alt: "Alt".into(),
                has_image: true,
                ..Default::default()
            },
        ];
        let (links, problems) = resolve_links(&page, Some("/base/"), &raw, false);
        assert_eq!(links.len(), 2);
        assert_eq!(links[0].target, "http://a.com/z?q=1");
        assert!(links[0].nofollow && links[0].ugc && !links[0].sponsored);
        assert_eq!(links[0].anchor_text, "Z");
        assert_eq!(links[1].target, "http://a.com/base/pic.html");
        assert_eq!(links[1].kind, LinkKind::Image);
        assert_eq!(links[1].anchor_text, "Alt");
        assert_eq!(problems.len(), 1);
    }
}
