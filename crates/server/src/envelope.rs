//! Majestic response envelopes: the data model of a reply (global variables, named tables
//! with parameters, columns and rows) and its JSON and XML renderings.
//!
//! JSON: `Code`, `ErrorMessage`, `FullError`, then the global variables flattened in
//! alphabetical order, then `DataTables` keyed by name, each with `Headers` (the table
//! parameters) and `Data` (row objects in column order). XML: `<Result>` with a
//! `<GlobalVars>` element whose attributes are the variables, and `<DataTable>` elements
//! with pipe-joined `Headers` and `<Row>`s; a literal `|` is doubled and an empty value is
//! a single space.

use std::collections::BTreeMap;
use std::fmt::Write;

/// A cell or variable value. Majestic clients depend on which values are JSON numbers
/// and which are strings, so the distinction is kept.
#[derive(Debug, Clone, PartialEq)]
pub enum Value {
    Int(i64),
    Str(String),
    /// A fixed text (column vocabularies): no allocation per cell.
    Static(&'static str),
    /// A day number, written `yyyy-mm-dd` straight into the output.
    Day(u32),
}

impl Value {
    pub fn empty() -> Value {
        Value::Str(String::new())
    }

    fn text(&self) -> String {
        match self {
            Value::Int(i) => i.to_string(),
            Value::Str(s) => s.clone(),
            Value::Static(s) => s.to_string(),
            Value::Day(d) => linkstore::format_day(*d),
        }
    }

    fn json(&self, out: &mut String) {
        match self {
            Value::Int(i) => out.push_str(itoa::Buffer::new().format(*i)),
            Value::Str(s) => push_json_str(out, s),
            Value::Static(s) => push_json_str(out, s),
            Value::Day(d) => {
                out.push('"');
                linkstore::push_day(out, *d);
                out.push('"');
            }
        }
    }
}

impl Default for Value {
    fn default() -> Value {
        Value::empty()
    }
}

impl From<i64> for Value {
    fn from(v: i64) -> Value {
        Value::Int(v)
    }
}

impl From<&str> for Value {
    fn from(v: &str) -> Value {
        Value::Str(v.to_string())
    }
}

impl From<String> for Value {
    fn from(v: String) -> Value {
        Value::Str(v)
    }
}

/// One data table.
#[derive(Debug, Clone, Default)]
pub struct Table {
    pub name: String,
    pub params: BTreeMap<String, Value>,
    pub columns: Vec<String>,
    pub rows: Vec<Vec<Value>>,
}

impl Table {
    pub fn new(name: &str, columns: Vec<String>) -> Table {
        Table {
            name: name.to_string(),
            columns,
            ..Default::default()
        }
    }

    /// Appends a row; it must have one value per column.
    pub fn push(&mut self, row: Vec<Value>) {
        assert_eq!(
            row.len(),
            self.columns.len(),
            "table {}: one value per column",
            self.name
        );
        self.rows.push(row);
    }

    pub fn param(&mut self, k: &str, v: impl Into<Value>) {
        self.params.insert(k.to_string(), v.into());
    }
}

/// A reply: success with globals and tables, or an error.
#[derive(Debug, Clone, Default)]
pub struct Reply {
    pub code: String,
    pub error_message: String,
    pub full_error: String,
    pub globals: BTreeMap<String, Value>,
    pub tables: Vec<Table>,
    /// Rows to charge when not every row is charged (a GetIndexItemInfo row refused for
    /// a bad item); not rendered.
    pub billed_rows: Option<u64>,
}

impl Reply {
    pub fn ok() -> Reply {
        Reply {
            code: "OK".into(),
            ..Default::default()
        }
    }

    pub fn error(code: &str, message: impl Into<String>) -> Reply {
        let message = message.into();
        Reply {
            code: code.into(),
            full_error: format!("{code}: {message}"),
            error_message: message,
            ..Default::default()
        }
    }

    pub fn global(&mut self, k: &str, v: impl Into<Value>) {
        self.globals.insert(k.to_string(), v.into());
    }

    pub fn to_json(&self) -> String {
        let rows: usize = self
            .tables
            .iter()
            .map(|t| t.rows.len() * t.columns.len())
            .sum();
        let mut out = String::with_capacity(1024 + rows * 24);
        out.push('{');
        let mut first = true;
        let mut field = |out: &mut String, k: &str, v: &Value| {
            if !first {
                out.push(',');
            }
            first = false;
            push_json_str(out, k);
            out.push(':');
            v.json(out);
        };
        field(&mut out, "Code", &Value::from(self.code.as_str()));
        field(
            &mut out,
            "ErrorMessage",
            &Value::from(self.error_message.as_str()),
        );
        field(
            &mut out,
            "FullError",
            &Value::from(self.full_error.as_str()),
        );
        for (k, v) in &self.globals {
            field(&mut out, k, v);
        }
        if !self.tables.is_empty() {
            out.push_str(",\"DataTables\":{");
            for (i, t) in self.tables.iter().enumerate() {
                if i > 0 {
                    out.push(',');
                }
                push_json_str(&mut out, &t.name);
                out.push_str(":{\"Headers\":{");
                for (j, (k, v)) in t.params.iter().enumerate() {
                    if j > 0 {
                        out.push(',');
                    }
                    push_json_str(&mut out, k);
                    out.push(':');
                    v.json(&mut out);
                }
                out.push_str("},\"Data\":[");
                // Column names are encoded once per table, not once per row.
                let keys: Vec<String> = t
                    .columns
                    .iter()
                    .map(|c| {
                        let mut k = String::with_capacity(c.len() + 3);
                        push_json_str(&mut k, c);
                        k.push(':');
                        k
                    })
                    .collect();
                for (r, row) in t.rows.iter().enumerate() {
                    if r > 0 {
                        out.push(',');
                    }
                    out.push('{');
                    for (c, (key, v)) in keys.iter().zip(row).enumerate() {
                        if c > 0 {
                            out.push(',');
                        }
                        out.push_str(key);
                        v.json(&mut out);
                    }
                    out.push('}');
                }
                out.push_str("]}");
            }
            out.push('}');
        }
        out.push('}');
        out
    }

    pub fn to_xml(&self) -> String {
        let mut out = String::with_capacity(1024);
        out.push_str("<?xml version=\"1.0\" encoding=\"utf-8\"?>\n");
        let _ = write!(
            out,
            "<Result Code=\"{}\" ErrorMessage=\"{}\" FullError=\"{}\">",
            xml_escape(&self.code),
            xml_escape(&self.error_message),
            xml_escape(&self.full_error)
        );
        out.push_str("<GlobalVars");
        for (k, v) in &self.globals {
            let _ = write!(out, " {k}=\"{}\"", xml_escape(&v.text()));
        }
        out.push_str("/>");
        if !self.tables.is_empty() {
            let _ = write!(out, "<DataTables Count=\"{}\">", self.tables.len());
            for t in &self.tables {
                let headers: Vec<String> = t.columns.iter().map(|c| pipe_cell(c)).collect();
                let _ = write!(
                    out,
                    "<DataTable Name=\"{}\" RowsCount=\"{}\" Headers=\"{}\"",
                    xml_escape(&t.name),
                    t.rows.len(),
                    xml_escape(&headers.join("|"))
                );
                for (k, v) in &t.params {
                    let _ = write!(out, " {k}=\"{}\"", xml_escape(&v.text()));
                }
                out.push('>');
                for row in &t.rows {
                    let cells: Vec<String> = row.iter().map(|v| pipe_cell(&v.text())).collect();
                    let _ = write!(out, "<Row>{}</Row>", xml_escape(&cells.join("|")));
                }
                out.push_str("</DataTable>");
            }
            out.push_str("</DataTables>");
        }
        out.push_str("</Result>");
        out
    }
}

/// Appends `s` as a JSON string literal, copying runs of plain characters at once.
fn push_json_str(out: &mut String, s: &str) {
    out.push('"');
    let mut start = 0;
    for (i, c) in s.char_indices() {
        let escape = match c {
            '"' => "\\\"",
            '\\' => "\\\\",
            '\n' => "\\n",
            '\r' => "\\r",
            '\t' => "\\t",
            '\u{8}' => "\\b",
            '\u{c}' => "\\f",
            c if (c as u32) < 0x20 => "",
            _ => continue,
        };
        out.push_str(&s[start..i]);
        if escape.is_empty() {
            let _ = write!(out, "\\u{:04x}", c as u32);
        } else {
            out.push_str(escape);
        }
        start = i + c.len_utf8();
    }
    out.push_str(&s[start..]);
    out.push('"');
}

/// A cell of a pipe-joined XML row: `|` doubled, empty written as one space.
fn pipe_cell(s: &str) -> String {
    if s.is_empty() {
        " ".to_string()
    } else {
        s.replace('|', "||")
    }
}

/// Escapes text for XML (and HTML) content and attribute values.
pub(crate) fn xml_escape(s: &str) -> String {
    let mut out = String::with_capacity(s.len());
    for c in s.chars() {
        match c {
            '&' => out.push_str("&amp;"),
            '<' => out.push_str("&lt;"),
            '>' => out.push_str("&gt;"),
            '"' => out.push_str("&quot;"),
            '\'' => out.push_str("&apos;"),
            // Characters XML 1.0 cannot carry at all.
            c if (c as u32) < 0x20 && !matches!(c, '\t' | '\n' | '\r') => out.push(' '),
            '\u{FFFE}' | '\u{FFFF}' => out.push(' '),
            c => out.push(c),
        }
    }
    out
}

/// `yyyy-mm-dd HH:MM:SS` (UTC) of Unix seconds.
pub fn date_time(t: i64) -> String {
    let s = t.rem_euclid(86_400);
    format!(
        "{} {:02}:{:02}:{:02}",
        linkstore::format_day(t.div_euclid(86_400) as u32),
        s / 3600,
        s / 60 % 60,
        s % 60
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    fn sample() -> Reply {
        let mut r = Reply::ok();
        r.global("IndexType", 0);
        r.global("ServerName", "LINKBASE");
        let cols = ["Item", "Count", "Note", "Date", "Type"];
        let mut t = Table::new("Results", cols.iter().map(|c| c.to_string()).collect());
        t.param("TopicsCount", 3);
        t.push(vec![
            "a|b".into(),
            5.into(),
            Value::empty(),
            Value::Day(19_782),
            Value::Static("TextLink"),
        ]);
        r.tables.push(t);
        r
    }

    #[test]
    fn json_flattens_globals_and_keeps_types() {
        let j: serde_json::Value = serde_json::from_str(&sample().to_json()).unwrap();
        assert_eq!(j["Code"], "OK");
        assert_eq!(j["IndexType"], 0);
        assert_eq!(j["DataTables"]["Results"]["Headers"]["TopicsCount"], 3);
        assert_eq!(j["DataTables"]["Results"]["Data"][0]["Count"], 5);
        assert_eq!(j["DataTables"]["Results"]["Data"][0]["Note"], "");
        assert_eq!(j["DataTables"]["Results"]["Data"][0]["Date"], "2024-02-29");
        assert_eq!(j["DataTables"]["Results"]["Data"][0]["Type"], "TextLink");
        let text = sample().to_json();
        assert!(text.starts_with(r#"{"Code":"OK","ErrorMessage":"","FullError":"","IndexType":0"#));
    }

    #[test]
    fn json_strings_escape_like_serde() {
        for s in [
            "plain",
            "quote \" and \\ back",
            "line\nbreak\ttab\r",
            "ctl \u{1}\u{1f}\u{8}\u{c}",
            "ünï ☃ 🦀",
            "",
        ] {
            let mut out = String::new();
            push_json_str(&mut out, s);
            assert_eq!(out, serde_json::to_string(s).unwrap());
        }
    }

    #[test]
    fn xml_pipes_escape_and_empty_cells_are_a_space() {
        let x = sample().to_xml();
        assert!(
            x.contains(r#"<GlobalVars IndexType="0" ServerName="LINKBASE"/>"#),
            "{x}"
        );
        assert!(x.contains(
            r#"<DataTable Name="Results" RowsCount="1" Headers="Item|Count|Note|Date|Type" TopicsCount="3">"#
        ));
        assert!(x.contains("<Row>a||b|5| |2024-02-29|TextLink</Row>"), "{x}");
        let e = Reply::error("FailedRequestViaAPI", "bad <key> & \"quote\"").to_xml();
        assert!(
            e.contains(r#"ErrorMessage="bad &lt;key&gt; &amp; &quot;quote&quot;""#),
            "{e}"
        );
        assert!(!e.contains("DataTables"));
    }

    #[test]
    fn xml_replies_carry_only_characters_xml_allows() {
        // Crawled anchor texts may hold any character; XML 1.0 has no way to write
        // U+0000-U+001F (but tab, line feed, carriage return), U+FFFE or U+FFFF.
        let mut r = Reply::ok();
        let mut t = Table::new("T", vec!["A".into()]);
        t.push(vec!["a\u{1}b\u{FFFE}c\u{FFFF}d\u{FFFD}\u{10000}\te".into()]);
        r.tables.push(t);
        let x = r.to_xml();
        let row = x
            .split("<Row>")
            .nth(1)
            .unwrap()
            .split("</Row>")
            .next()
            .unwrap();
        assert_eq!(row, "a b c d\u{FFFD}\u{10000}\te");
    }
}
