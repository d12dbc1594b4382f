//! Timestamps found in crawl files: ISO 8601 (`WARC-Date`, JSON-lines) and RFC 1123
//! (HTTP `Date`), to Unix seconds.

use linkstore::parse_day;

/// `2024-05-01T12:34:56Z`, `2024-05-01T12:34:56.123Z`, `2024-05-01T12:34:56+02:00`,
/// `2024-05-01T12:34:56-0700`, or a bare `2024-05-01`.
pub fn parse_iso8601(s: &str) -> Option<i64> {
    let s = s.trim();
    let (date, rest) = s.split_at(s.find(['T', ' ']).unwrap_or(s.len()));
    let day = i64::from(parse_day(date)?);
    if rest.is_empty() {
        return Some(day * 86_400);
    }
    let rest = &rest[1..];
    let tz_at = rest.find(['Z', 'z', '+', '-']).unwrap_or(rest.len());
    let (clock, tz) = rest.split_at(tz_at);
    let clock = clock.split('.').next()?;
    let mut parts = clock.split(':');
    let h: i64 = parts.next()?.parse().ok()?;
    let m: i64 = parts.next()?.parse().ok()?;
    let sec: i64 = parts.next().unwrap_or("0").parse().ok()?;
    if h > 23 || m > 59 || sec > 60 {
        return None;
    }
    let offset = match tz.chars().next() {
        None | Some('Z' | 'z') => 0,
        Some(sign) => {
            let digits: String = tz[1..].chars().filter(char::is_ascii_digit).collect();
            if digits.len() != 4 {
                return None;
            }
            let oh: i64 = digits[..2].parse().ok()?;
            let om: i64 = digits[2..].parse().ok()?;
            let o = oh * 3600 + om * 60;
            if sign == '-' {
                -o
            } else {
                o
            }
        }
    };
    Some(day * 86_400 + h * 3600 + m * 60 + sec - offset)
}

/// `Wed, 28 Jan 2009 17:05:56 GMT`.
pub fn parse_http_date(s: &str) -> Option<i64> {
    let parts: Vec<&str> = s.split_whitespace().collect();
    let [_, d, mon, y, clock, ..] = parts.as_slice() else {
        return None;
    };
    const MONTHS: [&str; 12] = [
        "jan", "feb", "mar", "apr", "may", "jun", "jul", "aug", "sep", "oct", "nov", "dec",
    ];
    let m = MONTHS.iter().position(|x| mon.eq_ignore_ascii_case(x))? + 1;
    let d: u32 = d.parse().ok()?;
    let y: i64 = y.parse().ok()?;
    parse_iso8601(&format!("{y:04}-{m:02}-{d:02}T{clock}Z"))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn crawl_timestamps_parse() {
        assert_eq!(parse_iso8601("1970-01-02T00:00:01Z"), Some(86_401));
        assert_eq!(parse_iso8601("2008-04-30T20:48:25Z"), Some(1_209_588_505));
        assert_eq!(
            parse_iso8601("2024-05-18T01:58:53.123+02:00"),
            parse_iso8601("2024-05-17T23:58:53Z")
        );
        assert_eq!(
            parse_iso8601("2009-01-28T05:21:46-0700"),
            parse_iso8601("2009-01-28T12:21:46Z")
        );
        assert_eq!(parse_iso8601("2008-10-294T05:21:46-0700"), None);
        assert_eq!(
            parse_http_date("Wed, 28 Jan 2009 17:05:56 GMT"),
            parse_iso8601("2009-01-28T17:05:56Z")
        );
        assert_eq!(parse_http_date("garbage"), None);
    }
}
