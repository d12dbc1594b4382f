//! Common Crawl WAT metadata records: the `Links` array of a response's HTML metadata.

use crate::html::{LinkTag, RawLink};
use serde_json::Value;

/// What a WAT record says about one fetched page.
pub struct WatPage {
    pub url: String,
    pub date: Option<String>,
    pub ip: Option<String>,
    pub status: Option<u16>,
    pub location: Option<String>,
    pub content_type: Option<String>,
    pub base: Option<String>,
    pub links: Vec<RawLink>,
}

/// Parses a WAT JSON payload. `Ok(None)` for WAT records that do not describe a
/// response (request or metadata envelopes).
pub fn parse_wat(json: &[u8]) -> Result<Option<WatPage>, String> {
    let v: Value = serde_json::from_slice(json).map_err(|e| format!("invalid WAT JSON: {e}"))?;
    let env = &v["Envelope"];
    let warc = &env["WARC-Header-Metadata"];
    if warc["WARC-Type"].as_str() != Some("response") {
        return Ok(None);
    }
    let url = warc["WARC-Target-URI"]
        .as_str()
        .ok_or("WAT response without WARC-Target-URI")?
        .to_string();
    let http = &env["Payload-Metadata"]["HTTP-Response-Metadata"];
    let status = match &http["Response-Message"]["Status"] {
        Value::String(s) => s.trim().parse().ok(),
        Value::Number(n) => n.as_u64().and_then(|n| u16::try_from(n).ok()),
        _ => None,
    };
    let header = |name: &str| -> Option<String> {
        http["Headers"].as_object().and_then(|h| {
            h.iter()
                .find(|(k, _)| k.eq_ignore_ascii_case(name))
                .and_then(|(_, v)| v.as_str().map(str::to_string))
        })
    };
    let html = &http["HTML-Metadata"];
    let links = html["Links"]
        .as_array()
        .map(|a| a.iter().filter_map(wat_link).collect())
        .unwrap_or_default();
    Ok(Some(WatPage {
        url,
        date: warc["WARC-Date"].as_str().map(str::to_string),
        ip: warc["WARC-IP-Address"].as_str().map(str::to_string),
        status,
        location: header("Location"),
        content_type: header("Content-Type"),
        base: html["Head"]["Base"].as_str().map(str::to_string),
        links,
    }))
}

fn wat_link(l: &Value) -> Option<RawLink> {
    let path = l["path"].as_str()?;
    let tag = match path {
        "A@/href" => LinkTag::A,
        "AREA@/href" => LinkTag::Area,
        "FRAME@/src" => LinkTag::Frame,
        "IFRAME@/src" => LinkTag::IFrame,
        _ => return None,
    };
    let text = l["text"].as_str().unwrap_or("").to_string();
    let alt = l["alt"].as_str().unwrap_or("").to_string();
    Some(RawLink {
        tag: Some(tag),
        url: l["url"].as_str()?.to_string(),
        has_image: tag == LinkTag::A && text.is_empty() && !alt.is_empty(),
        text,
        alt,
        rel: l["rel"].as_str().unwrap_or("").to_string(),
    })
}
