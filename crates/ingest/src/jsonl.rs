//! The JSON-lines crawl record format for users with their own crawler (specified in
//! `docs/crawl-format.md`): one JSON object per line, one fetch per object.

use crate::html::{LinkTag, RawLink};
use serde::Deserialize;

#[derive(Debug, Deserialize)]
pub struct JsonPage {
    pub url: String,
    /// ISO 8601 string or Unix seconds.
    pub fetched_at: serde_json::Value,
    #[serde(default = "ok_status")]
    pub status: u16,
    #[serde(default)]
    pub ip: Option<String>,
    #[serde(default)]
    pub content_type: Option<String>,
    /// Redirect target for 3xx.
    #[serde(default)]
    pub location: Option<String>,
    #[serde(default)]
    pub base: Option<String>,
    #[serde(default)]
    pub links: Vec<JsonLink>,
}

#[derive(Debug, Deserialize)]
pub struct JsonLink {
    pub url: String,
    #[serde(default)]
    pub text: String,
    #[serde(default)]
    pub alt: String,
    #[serde(default)]
    pub rel: String,
    /// `a` (default), `area`, `img` (an image inside an anchor), `frame`, `iframe`.
    #[serde(default, rename = "type")]
    pub kind: Option<String>,
}

fn ok_status() -> u16 {
    200
}

impl JsonLink {
    pub fn to_raw(&self) -> Result<RawLink, String> {
        let (tag, has_image) = match self.kind.as_deref().unwrap_or("a") {
            "a" => (LinkTag::A, false),
            "area" => (LinkTag::Area, false),
            "img" | "image" => (LinkTag::A, true),
            "frame" => (LinkTag::Frame, false),
            "iframe" => (LinkTag::IFrame, false),
            other => return Err(format!("unknown link type {other:?}")),
        };
        Ok(RawLink {
            tag: Some(tag),
            url: self.url.clone(),
            text: self.text.clone(),
            alt: self.alt.clone(),
            rel: self.rel.clone(),
            has_image,
        })
    }
}

pub fn parse_line(line: &[u8]) -> Result<JsonPage, String> {
    serde_json::from_slice(line).map_err(|e| format!("invalid JSON: {e}"))
}
