//! Majestic response envelopes: the data model of a reply (global variables, named tables
//! with parameters, columns and rows) and its JSON and XML renderings.
//!
//! JSON: `Code`, `ErrorMessage`, `FullError`, then the global variables flattened in
//! alphabetical order, then `DataTables` keyed by name, each with `Headers` (the table
//! parameters) and `Data` (row objects in column order). XML: `<Result>` with a
//! `<GlobalVars>` element whose attributes are the variables, and `<DataTable>` elements
//! with pipe-joined `Headers` and `<Row>`s; a literal `|` is doubled and an empty value is
//! a single space.

use std::fmt::Write;
use std::sync::Arc;

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
    /// A number Majestic sends as a JSON string, written without allocating one.
    IntText(i64),
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
            Value::IntText(i) => i.to_string(),
        }
    }

    fn json(&self, out: &mut String) {
        match self {
            Value::Int(i) => out.push_str(itoa::Buffer::new().format(*i)),
            Value::Str(s) => push_json_str(out, s),
            Value::Static(s) => push_json_str(out, s),
            Value::IntText(i) => {
                out.push('"');
                out.push_str(itoa::Buffer::new().format(*i));
                out.push('"');
            }
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

/// A table's column names, with the JSON object key of each (`"Name":`) encoded once:
/// a row type's columns are made once per process and shared by every reply
/// ([`crate::row::Row::shared_columns`]).
#[derive(Debug)]
pub struct Columns {
    names: Vec<String>,
    /// `"Name":`, after a comma for every column but the first: a row object is `{`,
    /// then each key and its value, then `}`.
    json_keys: Vec<String>,
}

impl Columns {
    pub fn new(names: Vec<String>) -> Arc<Columns> {
        let json_keys = names
            .iter()
            .enumerate()
            .map(|(i, c)| {
                let mut k = String::with_capacity(c.len() + 4);
                if i > 0 {
                    k.push(',');
                }
                push_json_str(&mut k, c);
                k.push(':');
                k
            })
            .collect();
        Arc::new(Columns { names, json_keys })
    }

    /// The keys of the columns from `first` on, for rendering part of a row ahead (see
    /// [`JsonKeys::rendered`]).
    pub fn json_keys_from(&self, first: usize) -> JsonKeys<'_> {
        JsonKeys(self.json_keys[first..].iter())
    }
}

impl std::ops::Deref for Columns {
    type Target = [String];
    fn deref(&self) -> &[String] {
        &self.names
    }
}

/// One data table. Rows added as typed rows ([`crate::row::Row`]) are kept as they are and
/// turned into cells one at a time while the reply renders, so a large reply never holds
/// all its cells at once.
pub struct Table {
    pub name: String,
    pub params: Vars,
    pub columns: Arc<Columns>,
    rows: Vec<StoredRow>,
}

enum StoredRow {
    Cells(Vec<Value>),
    Typed(Box<dyn DeferredRow>),
}

/// A typed row not yet turned into cells.
pub(crate) trait DeferredRow: Send {
    fn into_cells(self: Box<Self>, out: &mut Vec<Value>);
    /// Appends the row's JSON object, one key of `keys` ([`Columns`]'s, comma first but
    /// for the first column) per cell, without making the cells.
    fn write_json(self: Box<Self>, keys: &mut JsonKeys<'_>, out: &mut String);
}

/// A table's JSON object keys, handed out in column order as a row writes its cells.
pub struct JsonKeys<'k>(std::slice::Iter<'k, String>);

impl JsonKeys<'_> {
    /// Writes the next column's key and `value`.
    pub fn cell(&mut self, value: &Value, out: &mut String) {
        out.push_str(self.0.next().expect("one value per column"));
        value.json(out);
    }

    /// Appends `json`, the keys and values of the next `columns` columns rendered ahead
    /// with [`Columns::json_keys_from`] of the same columns.
    pub fn rendered(&mut self, columns: usize, json: &str, out: &mut String) {
        for _ in 0..columns {
            self.0.next().expect("one value per column");
        }
        out.push_str(json);
    }
}

impl std::fmt::Debug for Table {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Table")
            .field("name", &self.name)
            .field("columns", &self.columns)
            .field("rows", &self.rows.len())
            .finish()
    }
}

impl Table {
    pub fn new(name: &str, columns: Vec<String>) -> Table {
        Table::with_columns(name, Columns::new(columns))
    }

    /// A table of columns made before (shared between replies).
    pub fn with_columns(name: &str, columns: Arc<Columns>) -> Table {
        Table {
            name: name.to_string(),
            params: Vars::default(),
            columns,
            rows: Vec::new(),
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
        self.rows.push(StoredRow::Cells(row));
    }

    /// Appends a typed row, turned into cells when the reply renders.
    pub(crate) fn push_deferred(&mut self, row: Box<dyn DeferredRow>) {
        self.rows.push(StoredRow::Typed(row));
    }

    /// Rows in the table.
    pub fn len(&self) -> usize {
        self.rows.len()
    }

    pub fn is_empty(&self) -> bool {
        self.rows.is_empty()
    }

    pub fn param(&mut self, k: &'static str, v: impl Into<Value>) {
        self.params.set(k, v);
    }

    /// The rows, leaving the table empty.
    fn take_rows(&mut self) -> Vec<StoredRow> {
        std::mem::take(&mut self.rows)
    }
}

impl StoredRow {
    /// The row's cells, made in `buf` (cleared first) for a typed row; checked against
    /// the table's column count.
    fn cells(self, ncols: usize, table: &str, mut buf: Vec<Value>) -> Vec<Value> {
        let cells = match self {
            StoredRow::Cells(cells) => cells,
            StoredRow::Typed(row) => {
                buf.clear();
                row.into_cells(&mut buf);
                buf
            }
        };
        assert_eq!(cells.len(), ncols, "table {table}: one value per column");
        cells
    }
}

/// Named values (a reply's global variables, a table's parameters): set in any order,
/// rendered in alphabetical order, a name set twice keeping its last value. A reply sets
/// about 25, so a vector sorted once when the reply renders costs less than a map kept in
/// order.
#[derive(Debug, Default)]
pub struct Vars(Vec<(&'static str, Value)>);

impl Vars {
    pub fn set(&mut self, name: &'static str, v: impl Into<Value>) {
        self.0.push((name, v.into()));
    }

    /// The value last set for `name`.
    pub fn get(&self, name: &str) -> Option<&Value> {
        self.0
            .iter()
            .rev()
            .find(|(k, _)| *k == name)
            .map(|(_, v)| v)
    }

    /// Each name once, with its last value, in alphabetical order.
    fn in_order(&mut self) -> impl Iterator<Item = &(&'static str, Value)> {
        // Stable: a name's values stay in the order they were set.
        self.0.sort_by(|a, b| a.0.cmp(b.0));
        let all = &self.0;
        all.iter()
            .enumerate()
            .filter(|(i, (k, _))| all.get(i + 1).is_none_or(|(next, _)| next != k))
            .map(|(_, var)| var)
    }
}

/// A reply: success with globals and tables, or an error.
#[derive(Debug, Default)]
pub struct Reply {
    pub code: String,
    pub error_message: String,
    pub full_error: String,
    pub globals: Vars,
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

    pub fn global(&mut self, k: &'static str, v: impl Into<Value>) {
        self.globals.set(k, v);
    }

    /// Cells in all tables: what rendering the reply costs, about.
    pub fn cells(&self) -> usize {
        self.tables.iter().map(|t| t.len() * t.columns.len()).sum()
    }

    /// The JSON rendering, whole.
    pub fn to_json(self) -> String {
        let mut whole = String::new();
        self.to_json_chunks(usize::MAX, |s| {
            whole = s;
            true
        });
        whole
    }

    /// Renders JSON in pieces of about `chunk` bytes, each given to `emit` as soon as it
    /// is full (the last may be shorter); stops early when `emit` returns false (the
    /// client went away). Consumes the reply, so rows are freed as they are written.
    pub fn to_json_chunks(mut self, chunk: usize, mut emit: impl FnMut(String) -> bool) {
        // A backlink row's cells average about 27 bytes with their keys: reserve enough
        // that a reply of up to `chunk` bytes is never copied to grow.
        let capacity = |cells: usize| chunk.min(1024 + cells * 32).saturating_add(4096);
        let mut out = String::with_capacity(capacity(self.cells()));
        out.push('{');
        for (k, text) in [
            ("\"Code\":", &self.code),
            (",\"ErrorMessage\":", &self.error_message),
            (",\"FullError\":", &self.full_error),
        ] {
            out.push_str(k);
            push_json_str(&mut out, text);
        }
        for (k, v) in self.globals.in_order() {
            out.push(',');
            push_json_str(&mut out, k);
            out.push(':');
            v.json(&mut out);
        }
        if !self.tables.is_empty() {
            out.push_str(",\"DataTables\":{");
            for (i, t) in self.tables.iter_mut().enumerate() {
                if i > 0 {
                    out.push(',');
                }
                push_json_str(&mut out, &t.name);
                out.push_str(":{\"Headers\":{");
                for (j, (k, v)) in t.params.in_order().enumerate() {
                    if j > 0 {
                        out.push(',');
                    }
                    push_json_str(&mut out, k);
                    out.push(':');
                    v.json(&mut out);
                }
                out.push_str("},\"Data\":[");
                let columns = Arc::clone(&t.columns);
                let keys = &columns.json_keys;
                let rows = t.take_rows();
                let name = t.name.as_str();
                for (r, row) in rows.into_iter().enumerate() {
                    if r > 0 {
                        out.push(',');
                    }
                    out.push('{');
                    let mut row_keys = JsonKeys(keys.iter());
                    match row {
                        StoredRow::Cells(cells) => {
                            for v in &cells {
                                row_keys.cell(v, &mut out);
                            }
                        }
                        StoredRow::Typed(row) => row.write_json(&mut row_keys, &mut out),
                    }
                    // A row short of cells leaves keys; one with too many ran out above.
                    assert!(
                        row_keys.0.next().is_none(),
                        "table {name}: one value per column"
                    );
                    out.push('}');
                    if out.len() >= chunk {
                        let piece = std::mem::replace(
                            &mut out,
                            String::with_capacity(capacity(usize::MAX)),
                        );
                        if !emit(piece) {
                            return;
                        }
                    }
                }
                out.push_str("]}");
            }
            out.push('}');
        }
        out.push('}');
        emit(out);
    }

    pub fn to_xml(mut self) -> String {
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
        for (k, v) in self.globals.in_order() {
            let _ = write!(out, " {k}=\"{}\"", xml_escape(&v.text()));
        }
        out.push_str("/>");
        if !self.tables.is_empty() {
            let _ = write!(out, "<DataTables Count=\"{}\">", self.tables.len());
            for t in &mut self.tables {
                let headers: Vec<String> = t.columns.iter().map(|c| pipe_cell(c)).collect();
                let _ = write!(
                    out,
                    "<DataTable Name=\"{}\" RowsCount=\"{}\" Headers=\"{}\"",
                    xml_escape(&t.name),
                    t.len(),
                    xml_escape(&headers.join("|"))
                );
                for (k, v) in t.params.in_order() {
                    let _ = write!(out, " {k}=\"{}\"", xml_escape(&v.text()));
                }
                out.push('>');
                let mut buf = Vec::new();
                for row in t.take_rows() {
                    let row = row.cells(t.columns.len(), &t.name, buf);
                    let cells: Vec<String> = row.iter().map(|v| pipe_cell(&v.text())).collect();
                    let _ = write!(out, "<Row>{}</Row>", xml_escape(&cells.join("|")));
                    buf = row;
                }
                out.push_str("</DataTable>");
            }
            out.push_str("</DataTables>");
        }
        out.push_str("</Result>");
        out
    }
}

/// Appends `s` as a JSON string literal, copying runs of plain bytes at once (every byte
/// that needs an escape is ASCII, so scanning bytes never splits a character).
fn push_json_str(out: &mut String, s: &str) {
    out.push('"');
    let bytes = s.as_bytes();
    // Most strings need no escape: one branch-free pass (which the compiler vectorises)
    // decides, and they are copied whole.
    let plain = bytes
        .iter()
        .fold(true, |ok, &b| ok & (b >= 0x20) & (b != b'"') & (b != b'\\'));
    if plain {
        out.push_str(s);
        out.push('"');
        return;
    }
    let mut start = 0;
    for (i, &b) in bytes.iter().enumerate() {
        let escape = match b {
            b'"' => "\\\"",
            b'\\' => "\\\\",
            b'\n' => "\\n",
            b'\r' => "\\r",
            b'\t' => "\\t",
            0x08 => "\\b",
            0x0c => "\\f",
            0..0x20 => "",
            _ => continue,
        };
        out.push_str(&s[start..i]);
        if escape.is_empty() {
            let _ = write!(out, "\\u{b:04x}");
        } else {
            out.push_str(escape);
        }
        start = i + 1;
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
        let cols = ["Item", "Count", "Note", "Date", "Type", "Total"];
        let mut t = Table::new("Results", cols.iter().map(|c| c.to_string()).collect());
        t.param("TopicsCount", 3);
        t.push(vec![
            "a|b".into(),
            5.into(),
            Value::empty(),
            Value::Day(19_782),
            Value::Static("TextLink"),
            Value::IntText(-12),
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
        assert_eq!(j["DataTables"]["Results"]["Data"][0]["Total"], "-12");
        let text = sample().to_json();
        assert!(text.starts_with(r#"{"Code":"OK","ErrorMessage":"","FullError":"","IndexType":0"#));
    }

    #[test]
    fn variables_render_in_alphabetical_order_with_their_last_value() {
        let mut r = Reply::ok();
        r.global("Zeta", 1);
        r.global("Alpha", 2);
        r.global("Zeta", 3);
        r.global("Mid", "m");
        assert_eq!(r.globals.get("Zeta"), Some(&Value::Int(3)));
        assert_eq!(
            r.to_json(),
            r#"{"Code":"OK","ErrorMessage":"","FullError":"","Alpha":2,"Mid":"m","Zeta":3}"#
        );
        let mut r = Reply::ok();
        r.global("Zeta", 1);
        r.global("Alpha", 2);
        r.global("Zeta", 3);
        assert!(r.to_xml().contains(r#"<GlobalVars Alpha="2" Zeta="3"/>"#));
    }

    fn many_rows(n: usize) -> Reply {
        let mut r = sample();
        let t = &mut r.tables[0];
        for i in 0..n {
            t.push(vec![
                format!("row \"{i}\"").into(),
                (i as i64).into(),
                Value::empty(),
                Value::Day(19_000 + i as u32),
                Value::Static("ImageLink"),
                Value::IntText(i as i64),
            ]);
        }
        r
    }

    #[test]
    fn json_in_pieces_is_the_whole_json_and_stops_when_the_client_goes() {
        let whole = many_rows(5_000).to_json();
        let mut pieces = Vec::new();
        many_rows(5_000).to_json_chunks(4096, |p| {
            pieces.push(p);
            true
        });
        assert!(pieces.len() > 10, "{} pieces", pieces.len());
        assert!(pieces[..pieces.len() - 1].iter().all(|p| p.len() >= 4096));
        assert_eq!(pieces.concat(), whole);
        let j: serde_json::Value = serde_json::from_str(&whole).unwrap();
        assert_eq!(
            j["DataTables"]["Results"]["Data"][5_000]["Item"],
            "row \"4999\""
        );

        let mut taken = 0;
        many_rows(5_000).to_json_chunks(4096, |_| {
            taken += 1;
            taken < 3
        });
        assert_eq!(taken, 3, "no piece is rendered after the client went away");
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
            r#"<DataTable Name="Results" RowsCount="1" Headers="Item|Count|Note|Date|Type|Total" TopicsCount="3">"#
        ));
        assert!(
            x.contains("<Row>a||b|5| |2024-02-29|TextLink|-12</Row>"),
            "{x}"
        );
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
