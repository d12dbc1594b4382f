//! Typed table rows: a row is a struct whose fields are declared once with their column
//! names ([`table_row!`]), so a table's header and its cells cannot drift apart.

use crate::envelope::{Columns, DeferredRow, JsonKeys, Table, Value};
use std::sync::Arc;

/// A field type's cells: one column for a plain value, several for a group (topic pairs).
pub trait Cells: Sized {
    fn columns(name: &str, out: &mut Vec<String>) {
        out.push(name.to_string());
    }
    fn cells(self, out: &mut Vec<Value>);
    /// Writes the cells as JSON object members, each after its key: what [`Cells::cells`]
    /// then rendering them would write. Types on the hot paths write straight away.
    fn json(self, keys: &mut JsonKeys<'_>, out: &mut String) {
        let mut cells = Vec::new();
        self.cells(&mut cells);
        for v in &cells {
            keys.cell(v, out);
        }
    }
}

/// A table row declared with [`table_row!`].
pub trait Row: Sized {
    fn columns() -> Vec<String>;
    /// The row as JSON object members ([`Cells::json`] of each field).
    fn write_json(self, keys: &mut JsonKeys<'_>, out: &mut String);
    /// [`Row::columns`], made once per process.
    fn shared_columns() -> Arc<Columns>;
    fn cells(self, out: &mut Vec<Value>);

    /// An empty table of this row's columns.
    fn table(name: &str) -> Table {
        Table::with_columns(name, Self::shared_columns())
    }
}

/// Declares a row struct (deriving `Default`) and its [`Row`] implementation:
/// `field: Type = "Column",` per column, in column order.
macro_rules! table_row {
    ($(#[$m:meta])* pub struct $name:ident { $($(#[$fm:meta])* $field:ident: $ty:ty = $col:literal,)* }) => {
        $(#[$m])*
        #[derive(Default)]
        pub struct $name {
            $($(#[$fm])* pub $field: $ty,)*
        }

        impl $crate::row::Row for $name {
            fn columns() -> Vec<String> {
                let mut out = Vec::new();
                $(<$ty as $crate::row::Cells>::columns($col, &mut out);)*
                out
            }

            fn shared_columns() -> std::sync::Arc<$crate::envelope::Columns> {
                static COLUMNS: std::sync::OnceLock<std::sync::Arc<$crate::envelope::Columns>> =
                    std::sync::OnceLock::new();
                std::sync::Arc::clone(
                    COLUMNS.get_or_init(|| $crate::envelope::Columns::new(Self::columns())),
                )
            }

            fn cells(self, out: &mut Vec<$crate::envelope::Value>) {
                $($crate::row::Cells::cells(self.$field, out);)*
            }

            fn write_json(self, keys: &mut $crate::envelope::JsonKeys<'_>, out: &mut String) {
                $($crate::row::Cells::json(self.$field, keys, out);)*
            }
        }
    };
}
pub(crate) use table_row;

impl Table {
    /// Appends a typed row (see [`Row`]); its cells are made when the reply renders.
    pub fn add(&mut self, row: impl Row + Send + 'static) {
        self.push_deferred(Box::new(row));
    }
}

impl<R: Row + Send> DeferredRow for R {
    fn into_cells(self: Box<Self>, out: &mut Vec<Value>) {
        (*self).cells(out);
    }

    fn write_json(self: Box<Self>, keys: &mut JsonKeys<'_>, out: &mut String) {
        Row::write_json(*self, keys, out);
    }
}

/// A one-column field type: its one value, from which both renderings come.
pub trait Cell {
    fn value(self) -> Value;
}

impl<C: Cell> Cells for C {
    fn cells(self, out: &mut Vec<Value>) {
        out.push(self.value());
    }
    fn json(self, keys: &mut JsonKeys<'_>, out: &mut String) {
        keys.cell(&self.value(), out);
    }
}

impl Cell for i64 {
    fn value(self) -> Value {
        Value::Int(self)
    }
}

impl Cell for String {
    fn value(self) -> Value {
        Value::Str(self)
    }
}

impl Cell for &'static str {
    fn value(self) -> Value {
        Value::Static(self)
    }
}

impl Cell for Value {
    fn value(self) -> Value {
        self
    }
}

/// A number that Majestic sends as a JSON string.
#[derive(Default)]
pub struct NumText(pub i64);

impl Cell for NumText {
    fn value(self) -> Value {
        Value::IntText(self.0)
    }
}

/// A day (`yyyy-mm-dd`), or an empty cell for day 0 (none).
#[derive(Default, Clone, Copy)]
pub struct Date(pub u32);

impl Date {
    pub fn of(day: i64) -> Date {
        Date(u32::try_from(day).unwrap_or(0))
    }
}

impl From<Date> for Value {
    fn from(d: Date) -> Value {
        if d.0 > 0 {
            Value::Day(d.0)
        } else {
            Value::empty()
        }
    }
}

impl Cell for Date {
    fn value(self) -> Value {
        self.into()
    }
}

/// `True`/`False`, as Majestic writes its boolean columns.
#[derive(Default, Clone, Copy)]
pub struct TrueFalse(pub bool);

impl Cell for TrueFalse {
    fn value(self) -> Value {
        Value::Static(if self.0 { "True" } else { "False" })
    }
}

/// A 0/1 flag column.
#[derive(Default, Clone, Copy)]
pub struct Flag(pub bool);

impl Cell for Flag {
    fn value(self) -> Value {
        Value::Int(i64::from(self.0))
    }
}

/// A numeric column this index cannot give: `-1` (see `docs/api.md`).
#[derive(Default, Clone, Copy)]
pub struct UnknownNumber;

impl Cell for UnknownNumber {
    fn value(self) -> Value {
        Value::Int(-1)
    }
}

/// A text column this index cannot give: empty.
#[derive(Default, Clone, Copy)]
pub struct UnknownText;

impl Cell for UnknownText {
    fn value(self) -> Value {
        Value::empty()
    }
}

/// `N` topic pairs `<prefix>_Topic_<i>`, `<prefix>_Value_<i>`, strongest first; missing
/// pairs are empty cells.
#[derive(Default)]
pub struct Topics<const N: usize>(pub Vec<(String, u8)>);

impl<const N: usize> Cells for Topics<N> {
    fn columns(prefix: &str, out: &mut Vec<String>) {
        out.extend(topic_columns(prefix, N));
    }

    fn cells(self, out: &mut Vec<Value>) {
        push_topic_values(self.0, N, out);
    }
    fn json(self, keys: &mut JsonKeys<'_>, out: &mut String) {
        let mut topics = self.0.into_iter();
        for _ in 0..N {
            match topics.next() {
                Some((topic, value)) => {
                    keys.cell(&Value::Str(topic), out);
                    keys.cell(&Value::Int(i64::from(value)), out);
                }
                None => {
                    keys.cell(&Value::empty(), out);
                    keys.cell(&Value::empty(), out);
                }
            }
        }
    }
}

/// Topic pair columns for a count chosen by the request (`DesiredTopics`).
pub fn topic_columns(prefix: &str, n: usize) -> Vec<String> {
    (0..n)
        .flat_map(|i| [format!("{prefix}_Topic_{i}"), format!("{prefix}_Value_{i}")])
        .collect()
}

/// The cells of [`topic_columns`], taking the topics' names.
pub fn push_topic_values(topics: Vec<(String, u8)>, n: usize, out: &mut Vec<Value>) {
    let mut topics = topics.into_iter();
    for _ in 0..n {
        match topics.next() {
            Some((t, v)) => out.extend([Value::Str(t), Value::Int(i64::from(v))]),
            None => out.extend([Value::empty(), Value::empty()]),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::envelope::Reply;

    table_row! {
        /// Every field type of the hot paths.
        pub struct Sample {
            name: String = "Name",
            count: i64 = "Count",
            text: NumText = "Text",
            day: Date = "Day",
            none: Date = "None",
            flag: Flag = "Flag",
            yes: TrueFalse = "Yes",
            kind: &'static str = "Kind",
            unknown: UnknownNumber = "Unknown",
            blank: UnknownText = "Blank",
            topics: Topics<2> = "T",
        }
    }

    fn sample() -> Sample {
        Sample {
            name: "a \"b\"".into(),
            count: -3,
            text: NumText(42),
            day: Date(19_782),
            flag: Flag(true),
            yes: TrueFalse(false),
            kind: "TextLink",
            topics: Topics(vec![("News".into(), 7)]),
            ..Default::default()
        }
    }

    #[test]
    fn a_typed_row_writes_the_json_its_cells_would() {
        let render = |typed: bool| {
            let mut t = Sample::table("Rows");
            if typed {
                t.add(sample());
            } else {
                let mut cells = Vec::new();
                sample().cells(&mut cells);
                t.push(cells);
            }
            let mut r = Reply::ok();
            r.tables.push(t);
            r.to_json()
        };
        let typed = render(true);
        assert_eq!(typed, render(false));
        let j: serde_json::Value = serde_json::from_str(&typed).unwrap();
        let row = &j["DataTables"]["Rows"]["Data"][0];
        assert_eq!(row["Text"], "42");
        assert_eq!(row["Day"], "2024-02-29");
        assert_eq!(row["None"], "");
        assert_eq!(row["T_Topic_0"], "News");
        assert_eq!(row["T_Value_0"], 7);
        assert_eq!(row["T_Topic_1"], "");
        assert_eq!(row.as_object().unwrap().len(), 14);
    }
}
