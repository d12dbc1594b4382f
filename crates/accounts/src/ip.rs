//! IP addresses and CIDR ranges that a key may be restricted to.

use crate::{Error, Result};
use std::fmt;
use std::net::IpAddr;
use std::str::FromStr;

/// An address range: `192.0.2.7` (one address), `10.0.0.0/8`, `2001:db8::/32`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct IpRange {
    network: IpAddr,
    prefix: u8,
}

impl IpRange {
    pub fn contains(&self, ip: IpAddr) -> bool {
        // An IPv4 client reaching a dual-stack socket shows up as ::ffff:a.b.c.d.
        match (self.network, ip.to_canonical()) {
            (IpAddr::V4(n), IpAddr::V4(a)) => {
                let mask = u32::MAX
                    .checked_shl(32 - u32::from(self.prefix))
                    .unwrap_or(0);
                u32::from(n) & mask == u32::from(a) & mask
            }
            (IpAddr::V6(n), IpAddr::V6(a)) => {
                let mask = u128::MAX
                    .checked_shl(128 - u32::from(self.prefix))
                    .unwrap_or(0);
                u128::from(n) & mask == u128::from(a) & mask
            }
            _ => false,
        }
    }
}

impl FromStr for IpRange {
    type Err = Error;

    fn from_str(s: &str) -> Result<IpRange> {
        let bad = |why: &str| Error::Invalid(format!("IP range {s:?}: {why}"));
        let (addr, prefix) = match s.trim().split_once('/') {
            Some((a, p)) => (a, Some(p)),
            None => (s.trim(), None),
        };
        let network: IpAddr = addr
            .parse()
            .map_err(|_| bad("not an IPv4 or IPv6 address"))?;
        let network = network.to_canonical();
        let max = if network.is_ipv4() { 32 } else { 128 };
        let prefix = match prefix {
            None => max,
            Some(p) => p
                .parse::<u8>()
                .ok()
                .filter(|p| *p <= max)
                .ok_or_else(|| bad(&format!("prefix must be 0 to {max}")))?,
        };
        Ok(IpRange { network, prefix })
    }
}

impl fmt::Display for IpRange {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}/{}", self.network, self.prefix)
    }
}

/// Parses a comma-separated list as stored with a key.
pub(crate) fn parse_list(s: &str) -> Result<Vec<IpRange>> {
    s.split(',')
        .map(str::trim)
        .filter(|p| !p.is_empty())
        .map(str::parse)
        .collect()
}

pub(crate) fn format_list(ranges: &[IpRange]) -> String {
    ranges
        .iter()
        .map(ToString::to_string)
        .collect::<Vec<_>>()
        .join(",")
}

#[cfg(test)]
mod tests {
    use super::*;

    fn ip(s: &str) -> IpAddr {
        s.parse().unwrap()
    }

    #[test]
    fn ranges_contain_what_they_say() {
        let net: IpRange = "10.1.0.0/16".parse().unwrap();
        assert!(net.contains(ip("10.1.255.3")));
        assert!(!net.contains(ip("10.2.0.1")));
        assert!(net.contains(ip("::ffff:10.1.2.3")), "v4-mapped peer");
        let one: IpRange = "192.0.2.7".parse().unwrap();
        assert!(one.contains(ip("192.0.2.7")));
        assert!(!one.contains(ip("192.0.2.8")));
        let all: IpRange = "0.0.0.0/0".parse().unwrap();
        assert!(all.contains(ip("8.8.8.8")));
        assert!(!all.contains(ip("2001:db8::1")));
        let v6: IpRange = "2001:db8::/32".parse().unwrap();
        assert!(v6.contains(ip("2001:db8:ffff::1")));
        assert!(!v6.contains(ip("2001:db9::1")));
        assert_eq!(one.to_string(), "192.0.2.7/32");
    }

    #[test]
    fn bad_ranges_are_refused_by_name() {
        for bad in [
            "",
            "10.0.0.0/33",
            "1.2.3",
            "::/129",
            "10.0.0.0/x",
            "host.example",
        ] {
            let e = bad.parse::<IpRange>().unwrap_err().to_string();
            assert!(e.contains(&format!("{bad:?}")), "{e}");
        }
        assert_eq!(
            parse_list(" 10.0.0.0/8, 192.0.2.1 ,").unwrap().len(),
            2,
            "blanks between commas are ignored"
        );
    }
}
