//! Common Crawl WAT metadata records: the `Links` array of a response's HTML metadata.
//!
//! A WAT envelope is mostly what a link index does not read (the container, request and
//! metadata records, digests, most headers, the head's metas and scripts), so it is read
//! in one pass that keeps only the fields below and skips the rest without building it.
//! Reading is as lenient as indexing a `serde_json::Value`: a field of another type than
//! expected reads as absent, a repeated key keeps its last value, and only what a `Value`
//! refuses is an error (invalid JSON, strings that are not UTF-8 or hold lone
//! surrogates, numbers out of range, nesting past serde_json's depth limit), since what
//! is skipped is still read as a `Value` reads it ([`Skip`]).

use crate::html::{LinkTag, RawLink};
use serde::de::{Deserialize, Deserializer, MapAccess, SeqAccess, Visitor};
use std::borrow::Cow;
use std::fmt;
use std::marker::PhantomData;

/// Visitor methods by which the listed containers (`map`, `seq`: skipped to their end),
/// the listed scalars (`visit_bool: bool`, ...) and `null` read as `$default`.
macro_rules! read_as {
    ($lt:lifetime, $default:expr; $($container:ident)*; $($visit:ident: $t:ty),*) => {
        $(read_as!(@ $lt, $default, $container);)*
        $(
            fn $visit<E>(self, _: $t) -> Result<Self::Value, E> {
                Ok($default)
            }
        )*
        fn visit_unit<E>(self) -> Result<Self::Value, E> {
            Ok($default)
        }
    };
    (@ $lt:lifetime, $default:expr, map) => {
        fn visit_map<A: MapAccess<$lt>>(self, mut map: A) -> Result<Self::Value, A::Error> {
            while map.next_entry::<Skip, Skip>()?.is_some() {}
            Ok($default)
        }
    };
    (@ $lt:lifetime, $default:expr, seq) => {
        fn visit_seq<A: SeqAccess<$lt>>(self, mut seq: A) -> Result<Self::Value, A::Error> {
            while seq.next_element::<Skip>()?.is_some() {}
            Ok($default)
        }
    };
}

/// A JSON value read and dropped. It is read as a `serde_json::Value` is (strings
/// checked, numbers parsed, depth counted), so a record a `Value` refuses is refused here
/// too, but nothing is built: serde's `IgnoredAny` checks none of that.
struct Skip;

impl<'de> Deserialize<'de> for Skip {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        struct V;
        impl<'de> Visitor<'de> for V {
            type Value = Skip;
            fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
                f.write_str("any JSON value")
            }
            read_as!('de, Skip; map seq;
                visit_str: &str, visit_bool: bool, visit_i64: i64, visit_u64: u64, visit_f64: f64);
        }
        d.deserialize_any(V)
    }
}

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
    let top: Object<Top> =
        serde_json::from_slice(json).map_err(|e| format!("invalid WAT JSON: {e}"))?;
    let env = top.0.envelope.0;
    let warc = env.warc.0;
    if warc.kind.0.as_deref() != Some("response") {
        return Ok(None);
    }
    let url = warc
        .target_uri
        .0
        .ok_or("WAT response without WARC-Target-URI")?
        .into_owned();
    let http = env.payload.0.http.0;
    let html = http.html.0;
    Ok(Some(WatPage {
        url,
        date: warc.date.owned(),
        ip: warc.ip.owned(),
        status: http.message.0.status.0,
        location: http.headers.0.location.value.owned(),
        content_type: http.headers.0.content_type.value.owned(),
        base: html.head.0.base.owned(),
        links: html
            .links
            .0
            .into_iter()
            .filter_map(|l| l.0.link())
            .collect(),
    }))
}

/// An object's fields as one kind of record reads them: each key it knows is read with
/// [`MapAccess::next_value`], every other value skipped.
trait Fields<'de>: Default {
    fn field<A: MapAccess<'de>>(&mut self, key: &str, map: &mut A) -> Result<(), A::Error>;
}

/// An object read as `T`'s fields; any other JSON value reads as `T::default()`.
#[derive(Default)]
struct Object<T>(T);

impl<'de, T: Fields<'de>> Deserialize<'de> for Object<T> {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        struct V<T>(PhantomData<T>);
        impl<'de, T: Fields<'de>> Visitor<'de> for V<T> {
            type Value = Object<T>;
            fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
                f.write_str("any JSON value")
            }
            fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<Self::Value, A::Error> {
                let mut fields = T::default();
                while let Some(key) = map.next_key::<Text>()? {
                    fields.field(key.0.as_deref().unwrap_or_default(), &mut map)?;
                }
                Ok(Object(fields))
            }
            read_as!('de, Object::default(); seq;
                visit_str: &str, visit_bool: bool, visit_i64: i64, visit_u64: u64, visit_f64: f64);
        }
        d.deserialize_any(V(PhantomData))
    }
}

/// An array whose elements are read as `T`; any other JSON value reads as empty.
struct Array<T>(Vec<T>);

impl<T> Default for Array<T> {
    fn default() -> Self {
        Array(Vec::new())
    }
}

impl<'de, T: Deserialize<'de>> Deserialize<'de> for Array<T> {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        struct V<T>(PhantomData<T>);
        impl<'de, T: Deserialize<'de>> Visitor<'de> for V<T> {
            type Value = Array<T>;
            fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
                f.write_str("any JSON value")
            }
            fn visit_seq<A: SeqAccess<'de>>(self, mut seq: A) -> Result<Self::Value, A::Error> {
                let mut items = Vec::new();
                while let Some(item) = seq.next_element()? {
                    items.push(item);
                }
                Ok(Array(items))
            }
            read_as!('de, Array::default(); map;
                visit_str: &str, visit_bool: bool, visit_i64: i64, visit_u64: u64, visit_f64: f64);
        }
        d.deserialize_any(V(PhantomData))
    }
}

/// A JSON string, borrowed from the record when it has no escapes; any other JSON
/// value reads as `None`.
#[derive(Default)]
struct Text<'de>(Option<Cow<'de, str>>);

impl Text<'_> {
    fn owned(self) -> Option<String> {
        self.0.map(Cow::into_owned)
    }
}

impl<'de> Deserialize<'de> for Text<'de> {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        struct V;
        impl<'de> Visitor<'de> for V {
            type Value = Text<'de>;
            fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
                f.write_str("any JSON value")
            }
            fn visit_borrowed_str<E>(self, s: &'de str) -> Result<Self::Value, E> {
                Ok(Text(Some(Cow::Borrowed(s))))
            }
            fn visit_str<E>(self, s: &str) -> Result<Self::Value, E> {
                Ok(Text(Some(Cow::Owned(s.to_string()))))
            }
            read_as!('de, Text(None); map seq;
                visit_bool: bool, visit_i64: i64, visit_u64: u64, visit_f64: f64);
        }
        d.deserialize_any(V)
    }
}

/// An HTTP status: a number, or a string holding one (surrounding spaces allowed).
#[derive(Default)]
struct Status(Option<u16>);

impl<'de> Deserialize<'de> for Status {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        struct V;
        impl<'de> Visitor<'de> for V {
            type Value = Status;
            fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
                f.write_str("any JSON value")
            }
            fn visit_str<E>(self, s: &str) -> Result<Self::Value, E> {
                Ok(Status(s.trim().parse().ok()))
            }
            fn visit_u64<E>(self, n: u64) -> Result<Self::Value, E> {
                Ok(Status(u16::try_from(n).ok()))
            }
            fn visit_i64<E>(self, n: i64) -> Result<Self::Value, E> {
                Ok(Status(u16::try_from(n).ok()))
            }
            read_as!('de, Status(None); map seq; visit_bool: bool, visit_f64: f64);
        }
        d.deserialize_any(V)
    }
}

/// Reads `map`'s next value as `T` into `slot`: a repeated key keeps its last value.
fn read<'de, A: MapAccess<'de>, T: Deserialize<'de>>(
    map: &mut A,
    slot: &mut T,
) -> Result<(), A::Error> {
    *slot = map.next_value()?;
    Ok(())
}

/// Declares a record of the fields one kind of object has that a link index reads, each
/// under its JSON key: they are read with [`read`], every other key skipped. A record
/// that borrows from the JSON names its lifetime `'de`, the one its `Fields` impl takes.
macro_rules! record {
    ($(#[$doc:meta])* struct $name:ident $(<$lt:lifetime>)? { $($key:literal => $field:ident: $ty:ty,)* }) => {
        $(#[$doc])*
        #[derive(Default)]
        struct $name $(<$lt>)? {
            $($field: $ty,)*
        }

        impl<'de> Fields<'de> for $name $(<$lt>)? {
            fn field<A: MapAccess<'de>>(&mut self, key: &str, map: &mut A) -> Result<(), A::Error> {
                match key {
                    $($key => read(map, &mut self.$field),)*
                    _ => map.next_value::<Skip>().map(drop),
                }
            }
        }
    };
}

record! {
    struct Top<'de> {
        "Envelope" => envelope: Object<Envelope<'de>>,
    }
}

record! {
    struct Envelope<'de> {
        "WARC-Header-Metadata" => warc: Object<WarcHeader<'de>>,
        "Payload-Metadata" => payload: Object<Payload<'de>>,
    }
}

record! {
    struct WarcHeader<'de> {
        "WARC-Type" => kind: Text<'de>,
        "WARC-Target-URI" => target_uri: Text<'de>,
        "WARC-Date" => date: Text<'de>,
        "WARC-IP-Address" => ip: Text<'de>,
    }
}

record! {
    struct Payload<'de> {
        "HTTP-Response-Metadata" => http: Object<HttpResponse<'de>>,
    }
}

record! {
    struct HttpResponse<'de> {
        "Response-Message" => message: Object<ResponseMessage>,
        "Headers" => headers: Object<Headers<'de>>,
        "HTML-Metadata" => html: Object<HtmlMetadata<'de>>,
    }
}

record! {
    struct ResponseMessage {
        "Status" => status: Status,
    }
}

/// The two headers read, by name in any case.
#[derive(Default)]
struct Headers<'de> {
    location: Header<'de>,
    content_type: Header<'de>,
}

/// A header named in any case. Of several spellings the byte-wise least is read, and of
/// a repeated key its last value, as a `serde_json::Map` (sorted, one value per key)
/// keeps them.
#[derive(Default)]
struct Header<'de> {
    key: Option<String>,
    value: Text<'de>,
}

impl<'de> Header<'de> {
    fn offer<A: MapAccess<'de>>(&mut self, key: &str, map: &mut A) -> Result<(), A::Error> {
        match &self.key {
            Some(k) if k.as_str() < key => map.next_value::<Skip>().map(drop),
            _ => {
                self.key = Some(key.to_string());
                read(map, &mut self.value)
            }
        }
    }
}

impl<'de> Fields<'de> for Headers<'de> {
    fn field<A: MapAccess<'de>>(&mut self, key: &str, map: &mut A) -> Result<(), A::Error> {
        if key.eq_ignore_ascii_case("location") {
            self.location.offer(key, map)
        } else if key.eq_ignore_ascii_case("content-type") {
            self.content_type.offer(key, map)
        } else {
            map.next_value::<Skip>().map(drop)
        }
    }
}

record! {
    struct HtmlMetadata<'de> {
        "Head" => head: Object<Head<'de>>,
        "Links" => links: Array<Object<WatLink<'de>>>,
    }
}

record! {
    struct Head<'de> {
        "Base" => base: Text<'de>,
    }
}

record! {
    /// One entry of the `Links` array.
    struct WatLink<'de> {
        "path" => path: Text<'de>,
        "url" => url: Text<'de>,
        "text" => text: Text<'de>,
        "alt" => alt: Text<'de>,
        "rel" => rel: Text<'de>,
    }
}

impl WatLink<'_> {
    /// The link, if its path is one a link index reads and it has a URL.
    fn link(self) -> Option<RawLink> {
        let tag = match self.path.0.as_deref()? {
            "A@/href" => LinkTag::A,
            "AREA@/href" => LinkTag::Area,
            "FRAME@/src" => LinkTag::Frame,
            "IFRAME@/src" => LinkTag::IFrame,
            _ => return None,
        };
        let text = self.text.owned().unwrap_or_default();
        let alt = self.alt.owned().unwrap_or_default();
        Some(RawLink {
            tag: Some(tag),
            url: self.url.owned()?,
            has_image: tag == LinkTag::A && text.is_empty() && !alt.is_empty(),
            text,
            alt,
            rel: self.rel.owned().unwrap_or_default(),
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::Value;

    /// What a `serde_json::Value` reading of the record gives, the semantics
    /// [`parse_wat`] keeps: `(url, date, ip, status, location, content type, base, links
    /// as (tag, url, text, alt, rel, has_image))`.
    type Read = (
        String,
        Option<String>,
        Option<String>,
        Option<u16>,
        Option<String>,
        Option<String>,
        Option<String>,
        Vec<(Option<LinkTag>, String, String, String, String, bool)>,
    );

    fn by_value(json: &[u8]) -> Result<Option<Read>, ()> {
        let v: Value = serde_json::from_slice(json).map_err(drop)?;
        let env = &v["Envelope"];
        let warc = &env["WARC-Header-Metadata"];
        if warc["WARC-Type"].as_str() != Some("response") {
            return Ok(None);
        }
        let Some(url) = warc["WARC-Target-URI"].as_str() else {
            return Err(());
        };
        let http = &env["Payload-Metadata"]["HTTP-Response-Metadata"];
        let status = match &http["Response-Message"]["Status"] {
            Value::String(s) => s.trim().parse().ok(),
            Value::Number(n) => n.as_u64().and_then(|n| u16::try_from(n).ok()),
            _ => None,
        };
        let header = |name: &str| {
            http["Headers"].as_object().and_then(|h| {
                h.iter()
                    .find(|(k, _)| k.eq_ignore_ascii_case(name))
                    .and_then(|(_, v)| v.as_str().map(str::to_string))
            })
        };
        let html = &http["HTML-Metadata"];
        let links = html["Links"]
            .as_array()
            .map(|a| {
                a.iter()
                    .filter_map(|l| {
                        let tag = match l["path"].as_str()? {
                            "A@/href" => LinkTag::A,
                            "AREA@/href" => LinkTag::Area,
                            "FRAME@/src" => LinkTag::Frame,
                            "IFRAME@/src" => LinkTag::IFrame,
                            _ => return None,
                        };
                        let s = |k: &str| l[k].as_str().unwrap_or("").to_string();
                        let (text, alt) = (s("text"), s("alt"));
                        let image = tag == LinkTag::A && text.is_empty() && !alt.is_empty();
                        Some((
                            Some(tag),
                            l["url"].as_str()?.to_string(),
                            text,
                            alt,
                            s("rel"),
                            image,
                        ))
                    })
                    .collect()
            })
            .unwrap_or_default();
        let s = |v: &Value| v.as_str().map(str::to_string);
        Ok(Some((
            url.to_string(),
            s(&warc["WARC-Date"]),
            s(&warc["WARC-IP-Address"]),
            status,
            header("Location"),
            header("Content-Type"),
            s(&html["Head"]["Base"]),
            links,
        )))
    }

    fn read(json: &[u8]) -> Result<Option<Read>, ()> {
        Ok(parse_wat(json).map_err(drop)?.map(|p| {
            let links = p
                .links
                .into_iter()
                .map(|l| (l.tag, l.url, l.text, l.alt, l.rel, l.has_image))
                .collect();
            (
                p.url,
                p.date,
                p.ip,
                p.status,
                p.location,
                p.content_type,
                p.base,
                links,
            )
        }))
    }

    #[test]
    fn a_wat_record_reads_as_its_json_value_does() {
        let response = |http: &str| {
            format!(
                r#"{{"Container":{{"Offset":"1"}},"Envelope":{{"WARC-Header-Metadata":{{"WARC-Type":"response","WARC-Target-URI":"http://a.example/","WARC-Date":"2024-01-02T03:04:05Z","WARC-IP-Address":"10.0.0.1"}},"Payload-Metadata":{{"HTTP-Response-Metadata":{http}}}}}}}"#
            )
        };
        let records = [
            response(
                r#"{"Response-Message":{"Status":"200"},"Headers":{"Content-Type":"text/html"},"HTML-Metadata":{"Head":{"Base":"http://b.example/","Metas":[{"name":"x"}]},"Links":[{"path":"A@/href","url":"/x","text":"t"},{"path":"IMG@/src","url":"/i.png","alt":"i"},{"path":"A@/href","url":"/y","alt":"pic","rel":"nofollow"},{"path":"AREA@/href","url":"/z"},{"path":"FRAME@/src","url":"/f"},{"path":"IFRAME@/src","url":"/g"},{"path":"A@/href"},"not an object",[1],{"path":5,"url":"/w"},{"path":"A@/href","url":"/\u0078\"q","text":"caf\u00e9"}]}}"#,
            ),
            // Status as a number, padded, out of range, negative, fractional, missing.
            response(r#"{"Response-Message":{"Status":301},"Headers":{"Location":"/home"}}"#),
            response(r#"{"Response-Message":{"Status":" 404 "}}"#),
            response(r#"{"Response-Message":{"Status":70000}}"#),
            response(r#"{"Response-Message":{"Status":-1}}"#),
            response(r#"{"Response-Message":{"Status":200.0}}"#),
            response(r#"{"Response-Message":{"Status":{"code":200}}}"#),
            response(r#"{}"#),
            // Headers in several spellings, repeated, or of other types.
            response(
                r#"{"Headers":{"location":"/b","Location":"/a","LOCATION":"/c","content-type":"text/plain","Content-Type":"text/html","Content-Type":"application/xhtml+xml"}}"#,
            ),
            response(r#"{"Headers":{"Location":5,"location":"/b"}}"#),
            response(r#"{"Headers":["Location"]}"#),
            // Fields of unexpected types, and repeated keys.
            response(r#"{"HTML-Metadata":{"Links":{"path":"A@/href"},"Head":"x"}}"#),
            response(r#"{"HTML-Metadata":[1,2]}"#),
            response(r#""#).replace("HTTP-Response-Metadata\":", "HTTP-Response-Metadata\":null,\"x\":"),
            response(r#"{"HTML-Metadata":{"Links":[{"path":"A@/href","url":"/1"}]},"HTML-Metadata":{"Links":[{"path":"A@/href","url":"/2"}]}}"#),
            r#"{"Envelope":{"WARC-Header-Metadata":{"WARC-Type":"request","WARC-Target-URI":"http://a.example/"}}}"#.to_string(),
            r#"{"Envelope":{"WARC-Header-Metadata":{"WARC-Type":"response"}}}"#.to_string(),
            r#"{"Envelope":{"WARC-Header-Metadata":{"WARC-Type":["response"],"WARC-Target-URI":"http://a.example/"}}}"#.to_string(),
            r#"{"Envelope":{"WARC-Header-Metadata":{"WARC-Type":"response","WARC-Target-URI":7}}}"#.to_string(),
            r#"{"Envelope":{"WARC-Header-Metadata":{"WARC-Type":"metadata","WARC-Type":"response","WARC-Target-URI":"http://a.example/"}}}"#.to_string(),
            r#"{"Envelope":"response"}"#.to_string(),
            r#"[{"Envelope":{}}]"#.to_string(),
            r#"null"#.to_string(),
            // Not JSON, or JSON with something after it.
            r#"{"Envelope":{"WARC-Header-Metadata":{"WARC-Type":"response""#.to_string(),
            r#"{"Envelope":{}} x"#.to_string(),
            r#"{"Envelope":{"a":[1,2,}}"#.to_string(),
            String::new(),
            // What a `Value` refuses in a skipped field: nesting past the depth limit, a
            // lone surrogate, a number out of range.
            response("{}").replace("{\"Container\":", &format!("{{\"x\":{}1{},\"Container\":", "[".repeat(200), "]".repeat(200))),
            response("{}").replace("{\"Container\":", "{\"x\":\"\\ud800\",\"Container\":"),
            response("{}").replace("{\"Container\":", "{\"x\":1e400,\"Container\":"),
            response("{}").replace("{\"Container\":", &format!("{{\"x\":1{},\"Container\":", "0".repeat(400))),
        ];
        let mut refused = 0;
        for json in &records {
            let expected = by_value(json.as_bytes());
            refused += usize::from(expected.is_err());
            assert_eq!(read(json.as_bytes()), expected, "{json}");
        }
        assert!(refused >= 8, "{refused} records refused");
        // Nor is a string that is not UTF-8, where it is skipped.
        let mut bytes = response("{}").into_bytes();
        let at = bytes.windows(3).position(|w| w == b"\"1\"").unwrap() + 1;
        bytes[at] = 0xff;
        assert!(by_value(&bytes).is_err());
        assert_eq!(read(&bytes), Err(()));
        // The first record reads as a response with its links, so the comparison above
        // is not of two empty readings.
        let first = read(records[0].as_bytes()).unwrap().unwrap();
        assert_eq!(first.7.len(), 6, "{:?}", first.7);
        assert_eq!(first.7[5].1, "/x\"q");
        assert_eq!(first.7[5].2, "café");
    }

    #[test]
    fn every_record_of_the_real_wat_files_reads_as_its_json_value_does() {
        let mut responses = 0;
        for rel in [
            "wat/fluo-webindex-wat-18.warc",
            "wat/pycommoncrawl-file1.warc.wat.gz",
        ] {
            let Some(path) = testdata::shared(rel) else {
                return;
            };
            let file = std::fs::File::open(&path).unwrap();
            let input: Box<dyn std::io::BufRead> = if rel.ends_with(".gz") {
                let gz = flate2::read::MultiGzDecoder::new(file);
                Box::new(std::io::BufReader::new(gz))
            } else {
                Box::new(std::io::BufReader::new(file))
            };
            let mut reader = crate::warc::WarcReader::new(input);
            while let Some(rec) = reader.next_record() {
                let rec = rec.unwrap_or_else(|e| panic!("{rel}: {e:?}"));
                let expected = by_value(&rec.block);
                responses += usize::from(matches!(expected, Ok(Some(_))));
                assert_eq!(read(&rec.block), expected, "{rel}");
            }
        }
        assert!(responses >= 6, "{responses} responses");
    }
}
