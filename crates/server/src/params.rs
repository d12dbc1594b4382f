//! Request parameters: from the query string and a form-encoded body, names matched
//! case-insensitively, unknown names ignored, the first occurrence of a name winning.

use crate::error::ApiError;
use std::collections::HashMap;

#[derive(Debug, Default)]
pub struct Params {
    map: HashMap<String, String>,
}

fn hex(b: u8) -> Option<u8> {
    (b as char).to_digit(16).map(|d| d as u8)
}

/// Decodes one `application/x-www-form-urlencoded` component strictly: `+` is a space, a
/// `%` must start two hex digits, and the result must be UTF-8.
fn decode(raw: &[u8]) -> Option<String> {
    let mut out = Vec::with_capacity(raw.len());
    let mut i = 0;
    while i < raw.len() {
        match raw[i] {
            b'+' => out.push(b' '),
            b'%' => {
                let h = hex(*raw.get(i + 1)?)?;
                let l = hex(*raw.get(i + 2)?)?;
                out.push(h << 4 | l);
                i += 2;
            }
            b => out.push(b),
        }
        i += 1;
    }
    String::from_utf8(out).ok()
}

impl Params {
    /// Parses the query string and (for POST) the body; either may be empty.
    pub fn parse(query: &[u8], body: &[u8]) -> Result<Params, ApiError> {
        let pairs = [query, body]
            .iter()
            .map(|s| s.iter().filter(|&&b| b == b'&').count() + 1)
            .sum();
        let mut map = HashMap::with_capacity(pairs);
        for source in [query, body] {
            for pair in source.split(|&b| b == b'&').filter(|p| !p.is_empty()) {
                let (k, v) = match pair.iter().position(|&b| b == b'=') {
                    Some(i) => (&pair[..i], &pair[i + 1..]),
                    None => (pair, &b""[..]),
                };
                let (Some(mut k), Some(v)) = (decode(k), decode(v)) else {
                    return Err(ApiError::new(
                        "MalformedRequest",
                        format!(
                            "malformed form encoding near {:?}",
                            String::from_utf8_lossy(&pair[..pair.len().min(60)])
                        ),
                    ));
                };
                k.make_ascii_lowercase();
                map.entry(k).or_insert(v);
            }
        }
        Ok(Params { map })
    }

    pub fn get(&self, name: &str) -> Option<&str> {
        // Names are the commands' own (short) literals: lower-cased on the stack, since a
        // request looks up a dozen of them, a hundred with 100 items.
        let mut buf = [0u8; 64];
        let value = match buf.get_mut(..name.len()) {
            Some(lower) => {
                lower.copy_from_slice(name.as_bytes());
                lower.make_ascii_lowercase();
                // ASCII lower-casing keeps UTF-8 valid.
                self.map.get(std::str::from_utf8(lower).ok()?)
            }
            None => self.map.get(&name.to_ascii_lowercase()),
        };
        value.map(String::as_str)
    }

    /// A required, non-empty parameter.
    pub fn required(&self, name: &str) -> Result<&str, ApiError> {
        self.get(name)
            .map(str::trim)
            .filter(|v| !v.is_empty())
            .ok_or_else(|| {
                ApiError::new(
                    "MissingParameter",
                    format!("parameter '{name}' is required"),
                )
            })
    }

    /// An integer parameter with a default; a value that is not an integer is an error.
    pub fn int(&self, name: &str, default: i64) -> Result<i64, ApiError> {
        match self.get(name).map(str::trim).filter(|v| !v.is_empty()) {
            None => Ok(default),
            Some(v) => v.parse().map_err(|_| {
                ApiError::new(
                    "InvalidParameter",
                    format!("parameter '{name}' must be an integer, not {v:?}"),
                )
            }),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_are_case_insensitive_and_values_decoded() {
        let p = Params::parse(
            b"CMD=GetIndexItemInfo&item0=http%3A%2F%2Fa.com%2F%3Fx%3D1&Count=5",
            b"count=9&extra=+x+",
        )
        .unwrap();
        assert_eq!(p.get("cmd"), Some("GetIndexItemInfo"));
        assert_eq!(p.get("Item0"), Some("http://a.com/?x=1"));
        assert_eq!(p.int("COUNT", 100).unwrap(), 5, "query wins over body");
        assert_eq!(p.get("extra"), Some(" x "));
        assert!(p.int("extra", 0).is_err());
        assert_eq!(p.int("missing", 7).unwrap(), 7);
        assert!(p.required("missing").is_err());
        // Names longer than the lower-casing buffer are found too.
        let long = "N".repeat(70);
        let p = Params::parse(format!("{}=v", long.to_lowercase()).as_bytes(), b"").unwrap();
        assert_eq!(p.get(&long), Some("v"));
    }

    #[test]
    fn malformed_encoding_is_refused() {
        assert!(Params::parse(b"item=%zz", b"").is_err());
        assert!(Params::parse(b"item=%e9", b"").is_err(), "not UTF-8");
        assert!(Params::parse(b"", b"a=%4").is_err());
    }
}
