//! Link extraction from HTML with html5ever's streaming tokenizer.
//!
//! Extracted: `<a href>` and `<area href>` (text links; image links when the anchor holds
//! an `<img>`, whose ALT becomes the anchor text), `<frame src>` and `<iframe src>`,
//! `<meta http-equiv=refresh>` targets (as redirects), `<base href>`, and `rel`
//! nofollow/ugc/sponsored. A `<meta name=robots content=nofollow>` makes every link
//! nofollow. Text inside `<script>`, `<style>`, `<title>` and `<textarea>` is not anchor
//! text.

use html5ever::tendril::StrTendril;
use html5ever::tokenizer::states::RawKind;
use html5ever::tokenizer::{
    BufferQueue, Tag, TagKind, Token, TokenSink, TokenSinkResult, Tokenizer, TokenizerOpts,
};
use std::cell::RefCell;

/// Longest anchor or ALT text kept, in characters; the rest is cut.
pub const MAX_ANCHOR_CHARS: usize = 256;

/// Which element a link comes from.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum LinkTag {
    A,
    Area,
    Frame,
    IFrame,
    MetaRefresh,
}

impl LinkTag {
    /// The element name as Common Crawl's WAT `path` writes it (`A@/href`).
    pub fn wat_path(self) -> &'static str {
        match self {
            LinkTag::A => "A@/href",
            LinkTag::Area => "AREA@/href",
            LinkTag::Frame => "FRAME@/src",
            LinkTag::IFrame => "IFRAME@/src",
            LinkTag::MetaRefresh => "__meta_refresh__",
        }
    }
}

/// One link as written in the page (URL not yet resolved).
#[derive(Debug, Clone, PartialEq, Default)]
pub struct RawLink {
    pub tag: Option<LinkTag>,
    pub url: String,
    pub text: String,
    pub alt: String,
    pub rel: String,
    /// An `<img>` inside the anchor.
    pub has_image: bool,
}

/// Everything extracted from one page.
#[derive(Debug, Clone, PartialEq, Default)]
pub struct HtmlLinks {
    pub base: Option<String>,
    pub links: Vec<RawLink>,
    /// `<meta name=robots content=...nofollow...>`.
    pub robots_nofollow: bool,
}

#[derive(Default)]
struct State {
    out: HtmlLinks,
    /// Index in `out.links` of the open `<a>`, collecting text.
    open_anchor: Option<usize>,
    text: String,
}

struct Sink(RefCell<State>);

fn attr<'t>(tag: &'t Tag, name: &str) -> Option<&'t str> {
    tag.attrs
        .iter()
        .find(|a| a.name.local.as_ref() == name)
        .map(|a| a.value.as_ref())
}

impl TokenSink for Sink {
    type Handle = ();

    fn process_token(&self, token: Token, _line: u64) -> TokenSinkResult<()> {
        let mut st = self.0.borrow_mut();
        match token {
            Token::TagToken(tag) => return st.tag(&tag),
            Token::CharacterTokens(t)
                if st.open_anchor.is_some() && st.text.len() < MAX_ANCHOR_CHARS * 4 =>
            {
                st.text.push_str(&t);
            }
            _ => {}
        }
        TokenSinkResult::Continue
    }
}

impl State {
    fn tag(&mut self, tag: &Tag) -> TokenSinkResult<()> {
        let name = tag.name.as_ref();
        if tag.kind == TagKind::EndTag {
            if name == "a" {
                self.close_anchor();
            }
            return TokenSinkResult::Continue;
        }
        match name {
            "a" | "area" => {
                self.close_anchor();
                if let Some(href) = attr(tag, "href") {
                    let is_a = name == "a";
                    self.out.links.push(RawLink {
                        tag: Some(if is_a { LinkTag::A } else { LinkTag::Area }),
                        url: href.to_string(),
                        alt: clean_text(attr(tag, "alt").unwrap_or("")),
                        rel: attr(tag, "rel").unwrap_or("").to_ascii_lowercase(),
                        ..Default::default()
                    });
                    if is_a && !tag.self_closing {
                        self.open_anchor = Some(self.out.links.len() - 1);
                    }
                }
            }
            "img" => {
                if let Some(i) = self.open_anchor {
                    let link = &mut self.out.links[i];
                    link.has_image = true;
                    if link.alt.is_empty() {
                        link.alt = clean_text(attr(tag, "alt").unwrap_or(""));
                    }
                }
            }
            "frame" | "iframe" => {
                if let Some(src) = attr(tag, "src") {
                    self.out.links.push(RawLink {
                        tag: Some(if name == "frame" {
                            LinkTag::Frame
                        } else {
                            LinkTag::IFrame
                        }),
                        url: src.to_string(),
                        ..Default::default()
                    });
                }
            }
            "base" if self.out.base.is_none() => {
                self.out.base = attr(tag, "href").map(str::to_string);
            }
            "meta" => self.meta(tag),
            "script" => return TokenSinkResult::RawData(RawKind::ScriptData),
            "style" | "xmp" | "noembed" | "noframes" => {
                return TokenSinkResult::RawData(RawKind::Rawtext)
            }
            "title" | "textarea" => return TokenSinkResult::RawData(RawKind::Rcdata),
            _ => {}
        }
        TokenSinkResult::Continue
    }

    fn meta(&mut self, tag: &Tag) {
        let content = attr(tag, "content").unwrap_or("");
        if attr(tag, "http-equiv").is_some_and(|v| v.eq_ignore_ascii_case("refresh")) {
            if let Some(url) = refresh_target(content) {
                self.out.links.push(RawLink {
                    tag: Some(LinkTag::MetaRefresh),
                    url,
                    ..Default::default()
                });
            }
        } else if attr(tag, "name").is_some_and(|v| v.eq_ignore_ascii_case("robots"))
            && content.to_ascii_lowercase().contains("nofollow")
        {
            self.out.robots_nofollow = true;
        }
    }

    fn close_anchor(&mut self) {
        if let Some(i) = self.open_anchor.take() {
            self.out.links[i].text = clean_text(&std::mem::take(&mut self.text));
        }
        self.text.clear();
    }
}

/// `0; url=http://x/` → `http://x/`.
fn refresh_target(content: &str) -> Option<String> {
    let (_, rest) = content.split_once(';')?;
    let rest = rest.trim_start();
    let rest = if rest.len() >= 4 && rest[..4].eq_ignore_ascii_case("url=") {
        &rest[4..]
    } else {
        rest
    };
    let url = rest.trim().trim_matches(['\'', '"']);
    (!url.is_empty()).then(|| url.to_string())
}

/// Collapses whitespace, drops control characters, and cuts to [`MAX_ANCHOR_CHARS`].
pub fn clean_text(s: &str) -> String {
    let mut out = String::with_capacity(s.len().min(MAX_ANCHOR_CHARS));
    let mut chars = 0;
    for word in s.split(|c: char| c.is_whitespace() || c.is_control()) {
        if word.is_empty() {
            continue;
        }
        for c in (!out.is_empty())
            .then_some(' ')
            .into_iter()
            .chain(word.chars())
        {
            if chars == MAX_ANCHOR_CHARS {
                return out;
            }
            out.push(c);
            chars += 1;
        }
    }
    out
}

/// Extracts links from a decoded HTML document.
pub fn extract_links(html: &str) -> HtmlLinks {
    let html = bound_attributes(html);
    let sink = Sink(RefCell::new(State::default()));
    let tok = Tokenizer::new(sink, TokenizerOpts::default());
    let input = BufferQueue::default();
    input.push_back(StrTendril::from_slice(&html));
    let _ = tok.feed(&input);
    tok.end();
    let mut st = tok.sink.0.into_inner();
    st.close_anchor();
    st.out
}

/// Most attributes of one tag passed to the tokenizer: html5ever checks each attribute
/// against the tag's earlier ones, so a tag with a million costs quadratic time.
pub const MAX_TAG_ATTRIBUTES: usize = 1_000;

/// `html` with every tag cut after its [`MAX_TAG_ATTRIBUTES`]th attribute (the rest of
/// the tag, to its `>`, dropped), in one linear pass; borrowed when no tag is cut.
/// Attributes are counted by the `=` outside quotes; `<script>` and `<style>` contents are
/// skipped, as the tokenizer reads them as text.
fn bound_attributes(html: &str) -> std::borrow::Cow<'_, str> {
    let b = html.as_bytes();
    let starts_ci = |at: usize, word: &[u8]| {
        b.get(at..at + word.len())
            .is_some_and(|w| w.eq_ignore_ascii_case(word))
    };
    let mut out: Option<String> = None;
    let mut copied = 0;
    let mut i = 0;
    while let Some(lt) = b[i..].iter().position(|&c| c == b'<') {
        let start = i + lt;
        if let Some(end_tag) = [&b"</script"[..], b"</style"]
            .into_iter()
            .find(|t| starts_ci(start + 1, &t[2..]))
        {
            // Skip to the element's end tag.
            i = (start + 1..b.len())
                .find(|&k| b[k] == b'<' && starts_ci(k, end_tag))
                .unwrap_or(b.len());
            continue;
        }
        if !b.get(start + 1).is_some_and(u8::is_ascii_alphabetic) {
            i = start + 1;
            continue;
        }
        let (mut j, mut quote, mut attributes) = (start + 1, None, 0);
        let (mut last_space, mut cut) = (start, None);
        while j < b.len() {
            let c = b[j];
            match quote {
                Some(q) if c == q => quote = None,
                Some(_) => {}
                None => match c {
                    b'"' | b'\'' => quote = Some(c),
                    b'>' => break,
                    b'=' => {
                        attributes += 1;
                        if attributes > MAX_TAG_ATTRIBUTES && cut.is_none() {
                            cut = Some(last_space);
                        }
                    }
                    c if c.is_ascii_whitespace() => last_space = j,
                    _ => {}
                },
            }
            j += 1;
        }
        if let Some(cut) = cut {
            let o = out.get_or_insert_with(|| String::with_capacity(html.len()));
            o.push_str(&html[copied..cut]);
            copied = j;
        }
        i = j;
    }
    match out {
        None => std::borrow::Cow::Borrowed(html),
        Some(mut o) => {
            o.push_str(&html[copied..]);
            std::borrow::Cow::Owned(o)
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn anchors_images_frames_and_rel_are_extracted() {
        let html = r#"<html><head><base href="http://b.com/dir/">
            <meta http-equiv="Refresh" content="5; URL='http://r.com/'">
            <script>var s = '<a href="http://no.com/">';</script></head>
            <body><a href="/x" rel="NoFollow UGC">Hello
            <b>World</b></a> <a href="y.html"><img src="i.png" alt="Logo &amp; co"></a>
            <area href="map.html" alt="Region"><iframe src="http://f.com/"></iframe>
            <a name="no-href">skip</a><a href="http://z.com/">z</body>"#;
        let out = extract_links(html);
        assert_eq!(out.base.as_deref(), Some("http://b.com/dir/"));
        let urls: Vec<&str> = out.links.iter().map(|l| l.url.as_str()).collect();
        assert_eq!(
            urls,
            [
                "http://r.com/",
                "/x",
                "y.html",
                "map.html",
                "http://f.com/",
                "http://z.com/"
            ]
        );
        assert_eq!(out.links[1].text, "Hello World");
        assert_eq!(out.links[1].rel, "nofollow ugc");
        assert!(out.links[2].has_image);
        assert_eq!(out.links[2].alt, "Logo & co");
        assert_eq!(out.links[3].alt, "Region");
        assert_eq!(out.links[4].tag, Some(LinkTag::IFrame));
        assert_eq!(out.links[5].text, "z");
        assert!(!out.robots_nofollow);
    }

    #[test]
    fn huge_anchors_are_cut_and_robots_nofollow_is_seen() {
        let html = format!(
            r#"<meta name="robots" content="noindex, NOFOLLOW"><a href="/">{}</a>"#,
            "word ".repeat(100_000)
        );
        let out = extract_links(&html);
        assert!(out.robots_nofollow);
        assert_eq!(out.links[0].text.chars().count(), MAX_ANCHOR_CHARS);
    }
}

#[cfg(test)]
mod abuse_tests {
    use super::*;

    #[test]
    fn a_tag_with_huge_numbers_of_attributes_costs_linear_time() {
        // html5ever checks each new attribute against the tag's others: quadratic.
        let mut html = String::from("<p><a ");
        for i in 0..200_000 {
            html.push_str(&format!("x{i}=1 "));
        }
        html.push_str("href=\"http://hidden.com/\">t</a><a href=\"http://after.com/\">next</a>");
        let start = std::time::Instant::now();
        let out = extract_links(&html);
        assert!(
            start.elapsed() < std::time::Duration::from_secs(3),
            "{:?}",
            start.elapsed()
        );
        let urls: Vec<&str> = out.links.iter().map(|l| l.url.as_str()).collect();
        assert!(urls.contains(&"http://after.com/"), "{urls:?}");
    }

    #[test]
    fn only_attributes_past_the_bound_are_dropped() {
        let tag = |n: usize| {
            let attrs: String = (0..n).map(|i| format!(" a{i}=\"x=y\"")).collect();
            format!("<div{attrs}>text</div>")
        };
        let at_bound = tag(MAX_TAG_ATTRIBUTES);
        assert!(matches!(
            bound_attributes(&at_bound),
            std::borrow::Cow::Borrowed(_)
        ));
        let over = bound_attributes(&tag(MAX_TAG_ATTRIBUTES + 5)).into_owned();
        assert_eq!(
            over, at_bound,
            "the tag keeps its first attributes and its end"
        );
    }

    #[test]
    fn scripts_with_many_comparisons_are_left_alone() {
        let mut html = String::from("<script>");
        for _ in 0..5_000 {
            html.push_str("if (a<b) { x = y == z; } ");
        }
        html.push_str("</script><a href=\"http://kept.com/\" class=c>k</a>");
        let urls: Vec<String> = extract_links(&html)
            .links
            .into_iter()
            .map(|l| l.url)
            .collect();
        assert_eq!(urls, ["http://kept.com/"]);
    }
}
