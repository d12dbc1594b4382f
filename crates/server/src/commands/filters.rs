//! GetBackLinkData's `Filters` expression: terms such as `NoFollow("1")` or
//! `FirstIndexed("gt","2017-01-01")` joined by `and`, each a test of one backlink.

use crate::error::ApiError;
use linkstore::{parse_day, LinkKind, LinkRecord};

/// Longest expression accepted, and most terms: a filter is checked against every
/// scanned row, so its size is bounded before any row is read.
const MAX_LEN: usize = 2_000;
const MAX_TERMS: usize = 16;

/// A parsed `Filters` expression: every term must hold.
#[derive(Debug, Default)]
pub struct Filters(Vec<Term>);

#[derive(Debug)]
enum Term {
    Flag(FlagKind, bool),
    Day(DayField, Op, u32),
    Number(NumberField, Op, i64),
}

#[derive(Debug, Clone, Copy)]
enum FlagKind {
    NoFollow,
    Deleted,
    Redirect,
    Frame,
    Image,
}

#[derive(Debug, Clone, Copy)]
enum DayField {
    FirstIndexed,
    LastSeen,
    DateLost,
}

#[derive(Debug, Clone, Copy)]
enum NumberField {
    SourceTrustFlow,
    SourceCitationFlow,
    ExternalOutLinks,
}

#[derive(Debug, Clone, Copy)]
enum Op {
    Gt,
    Ge,
    Lt,
    Le,
    Eq,
    Ne,
}

impl Op {
    fn holds<T: Ord>(self, a: T, b: T) -> bool {
        match self {
            Op::Gt => a > b,
            Op::Ge => a >= b,
            Op::Lt => a < b,
            Op::Le => a <= b,
            Op::Eq => a == b,
            Op::Ne => a != b,
        }
    }
}

fn invalid(msg: String) -> ApiError {
    ApiError::new("InvalidParameter", format!("Filters: {msg}"))
}

impl Filters {
    pub fn is_empty(&self) -> bool {
        self.0.is_empty()
    }

    /// Parses an expression; an unknown name, operator or value is refused with the term
    /// at fault.
    pub fn parse(expr: &str) -> Result<Filters, ApiError> {
        if expr.len() > MAX_LEN {
            return Err(invalid(format!("longer than {MAX_LEN} characters")));
        }
        let mut terms = Vec::new();
        for raw in split_and(expr) {
            if terms.len() == MAX_TERMS {
                return Err(invalid(format!("more than {MAX_TERMS} terms")));
            }
            terms.push(Term::parse(raw.trim())?);
        }
        Ok(Filters(terms))
    }

    pub fn accepts(&self, r: &LinkRecord) -> bool {
        self.0.iter().all(|t| t.accepts(r))
    }
}

/// Splits on the word `and` outside quotes, ignoring case.
fn split_and(expr: &str) -> Vec<&str> {
    let mut parts = Vec::new();
    let (mut start, mut quoted) = (0, false);
    let bytes = expr.as_bytes();
    let mut i = 0;
    while i < bytes.len() {
        match bytes[i] {
            b'"' => quoted = !quoted,
            b' ' if !quoted
                && bytes.len() >= i + 5
                && bytes[i + 1..i + 4].eq_ignore_ascii_case(b"and")
                && bytes[i + 4] == b' ' =>
            {
                parts.push(&expr[start..i]);
                start = i + 5;
                i += 4;
            }
            _ => {}
        }
        i += 1;
    }
    parts.push(&expr[start..]);
    parts.into_iter().filter(|p| !p.trim().is_empty()).collect()
}

impl Term {
    fn parse(raw: &str) -> Result<Term, ApiError> {
        let (name, rest) = raw
            .split_once('(')
            .ok_or_else(|| invalid(format!("{raw:?} is not Name(\"value\")")))?;
        let args_text = rest
            .strip_suffix(')')
            .ok_or_else(|| invalid(format!("{raw:?} lacks its closing parenthesis")))?;
        let args: Vec<&str> = args_text
            .split(',')
            .map(|a| a.trim().trim_matches('"'))
            .collect();
        let name = name.trim();
        let flag = |kind| match args.as_slice() {
            [v] if *v == "0" || *v == "1" => Ok(Term::Flag(kind, *v == "1")),
            _ => Err(invalid(format!(
                "{name} takes \"0\" or \"1\", not {args_text}"
            ))),
        };
        let compare = || -> Result<(Op, &str), ApiError> {
            match args.as_slice() {
                [op, v] => Ok((parse_op(op)?, v)),
                _ => Err(invalid(format!(
                    "{name} takes (\"gt|ge|lt|le|eq|ne\", value), not {args_text}"
                ))),
            }
        };
        let day = |field| {
            let (op, v) = compare()?;
            let d = parse_day(v)
                .ok_or_else(|| invalid(format!("{name}: {v:?} is not a date yyyy-mm-dd")))?;
            Ok(Term::Day(field, op, d))
        };
        let number = |field| {
            let (op, v) = compare()?;
            let n = v
                .parse()
                .map_err(|_| invalid(format!("{name}: {v:?} is not a number")))?;
            Ok(Term::Number(field, op, n))
        };
        match name.to_ascii_lowercase().as_str() {
            "nofollow" => flag(FlagKind::NoFollow),
            "deleted" => flag(FlagKind::Deleted),
            "redirect" => flag(FlagKind::Redirect),
            "frame" => flag(FlagKind::Frame),
            "image" | "images" | "imagelink" => flag(FlagKind::Image),
            "firstindexed" | "firstseen" => day(DayField::FirstIndexed),
            "lastseen" => day(DayField::LastSeen),
            "datelost" | "datedeleted" => day(DayField::DateLost),
            "trustflow" | "sourcetrustflow" => number(NumberField::SourceTrustFlow),
            "citationflow" | "sourcecitationflow" => number(NumberField::SourceCitationFlow),
            "externaloutlinks" => number(NumberField::ExternalOutLinks),
            _ => Err(invalid(format!("unknown filter {name:?}"))),
        }
    }

    fn accepts(&self, r: &LinkRecord) -> bool {
        match *self {
            Term::Flag(kind, want) => {
                let has = match kind {
                    FlagKind::NoFollow => r.is_nofollow(),
                    FlagKind::Deleted => r.is_deleted(),
                    FlagKind::Redirect => r.kind == LinkKind::Redirect,
                    FlagKind::Frame => r.kind == LinkKind::Frame,
                    FlagKind::Image => r.kind == LinkKind::Image,
                };
                has == want
            }
            Term::Day(field, op, d) => {
                let v = match field {
                    DayField::FirstIndexed => r.first_seen,
                    DayField::LastSeen => r.last_seen,
                    DayField::DateLost => r.date_lost,
                };
                // A link never lost matches no DateLost comparison.
                v > 0 && op.holds(v, d)
            }
            Term::Number(field, op, n) => {
                let v = match field {
                    NumberField::SourceTrustFlow => i64::from(r.source_flow.trust_flow),
                    NumberField::SourceCitationFlow => i64::from(r.source_flow.citation_flow),
                    NumberField::ExternalOutLinks => i64::from(r.source_out.external),
                };
                op.holds(v, n)
            }
        }
    }
}

fn parse_op(op: &str) -> Result<Op, ApiError> {
    Ok(match op.to_ascii_lowercase().as_str() {
        "gt" => Op::Gt,
        "ge" | "gte" => Op::Ge,
        "lt" => Op::Lt,
        "le" | "lte" => Op::Le,
        "eq" => Op::Eq,
        "ne" => Op::Ne,
        _ => return Err(invalid(format!("unknown comparison {op:?}"))),
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn link(first_seen: u32, nofollow: bool, tf: u8) -> LinkRecord {
        let mut r = LinkRecord {
            first_seen,
            last_seen: first_seen,
            ..Default::default()
        };
        if nofollow {
            r.flags |= linkstore::flags::NOFOLLOW;
        }
        r.source_flow.trust_flow = tf;
        r
    }

    #[test]
    fn terms_joined_by_and_must_all_hold() {
        let jan = parse_day("2017-01-15").unwrap();
        let f = Filters::parse(
            r#"FirstIndexed("gt","2017-01-01") AND FirstIndexed("lt","2017-02-01") and NoFollow("0")"#,
        )
        .unwrap();
        assert!(f.accepts(&link(jan, false, 0)));
        assert!(!f.accepts(&link(jan, true, 0)));
        assert!(!f.accepts(&link(parse_day("2017-03-01").unwrap(), false, 0)));
        let tf = Filters::parse(r#"TrustFlow("gt","10")"#).unwrap();
        assert!(tf.accepts(&link(jan, false, 11)) && !tf.accepts(&link(jan, false, 10)));
    }

    #[test]
    fn bad_expressions_name_the_term_at_fault() {
        for (expr, fault) in [
            (r#"Colour("red")"#, "Colour"),
            (r#"NoFollow("yes")"#, "NoFollow"),
            (r#"FirstIndexed("gt","yesterday")"#, "yesterday"),
            (r#"TrustFlow("about","10")"#, "about"),
            ("NoFollow", "NoFollow"),
        ] {
            let e = Filters::parse(expr).unwrap_err();
            assert_eq!(e.code, "InvalidParameter");
            assert!(e.message.contains(fault), "{expr}: {}", e.message);
        }
    }

    #[test]
    fn oversized_expressions_are_refused_before_use() {
        let many = vec![r#"NoFollow("1")"#; MAX_TERMS + 1].join(" and ");
        assert!(Filters::parse(&many).is_err());
        assert!(Filters::parse(&"x".repeat(MAX_LEN + 1)).is_err());
    }
}
