//! Typed table rows: a row is a struct whose fields are declared once with their column
//! names ([`table_row!`]), so a table's header and its cells cannot drift apart.

use crate::envelope::{Columns, DeferredRow, Table, Value};
use std::sync::Arc;

/// A field type's cells: one column for a plain value, several for a group (topic pairs).
pub trait Cells {
    fn columns(name: &str, out: &mut Vec<String>) {
        out.push(name.to_string());
    }
    fn cells(self, out: &mut Vec<Value>);
}

/// A table row declared with [`table_row!`].
pub trait Row: Sized {
    fn columns() -> Vec<String>;
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
}

impl Cells for i64 {
    fn cells(self, out: &mut Vec<Value>) {
        out.push(Value::Int(self));
    }
}

impl Cells for String {
    fn cells(self, out: &mut Vec<Value>) {
        out.push(Value::Str(self));
    }
}

impl Cells for &'static str {
    fn cells(self, out: &mut Vec<Value>) {
        out.push(Value::Static(self));
    }
}

impl Cells for Value {
    fn cells(self, out: &mut Vec<Value>) {
        out.push(self);
    }
}

/// A number that Majestic sends as a JSON string.
#[derive(Default)]
pub struct NumText(pub i64);

impl Cells for NumText {
    fn cells(self, out: &mut Vec<Value>) {
        out.push(Value::IntText(self.0));
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

impl Cells for Date {
    fn cells(self, out: &mut Vec<Value>) {
        out.push(self.into());
    }
}

/// `True`/`False`, as Majestic writes its boolean columns.
#[derive(Default, Clone, Copy)]
pub struct TrueFalse(pub bool);

impl Cells for TrueFalse {
    fn cells(self, out: &mut Vec<Value>) {
        out.push(Value::Static(if self.0 { "True" } else { "False" }));
    }
}

/// A 0/1 flag column.
#[derive(Default, Clone, Copy)]
pub struct Flag(pub bool);

impl Cells for Flag {
    fn cells(self, out: &mut Vec<Value>) {
        out.push(Value::Int(i64::from(self.0)));
    }
}

/// A numeric column this index cannot give: `-1` (see `docs/api.md`).
#[derive(Default, Clone, Copy)]
pub struct UnknownNumber;

impl Cells for UnknownNumber {
    fn cells(self, out: &mut Vec<Value>) {
        out.push(Value::Int(-1));
    }
}

/// A text column this index cannot give: empty.
#[derive(Default, Clone, Copy)]
pub struct UnknownText;

impl Cells for UnknownText {
    fn cells(self, out: &mut Vec<Value>) {
        out.push(Value::empty());
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
