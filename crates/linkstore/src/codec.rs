//! Byte-level encoding primitives shared by every value format (see `docs/format.md`).
//!
//! Integers are LEB128 varints (unsigned) or zigzag varints (signed); strings and byte
//! strings are a varint length followed by the bytes. Keys use big-endian fixed-width
//! integers instead, so that byte order equals numeric order.

use crate::error::{Error, Result};

pub(crate) fn put_uvarint(out: &mut Vec<u8>, mut v: u64) {
    while v >= 0x80 {
        out.push((v as u8) | 0x80);
        v >>= 7;
    }
    out.push(v as u8);
}

pub(crate) fn put_ivarint(out: &mut Vec<u8>, v: i64) {
    put_uvarint(out, ((v << 1) ^ (v >> 63)) as u64);
}

pub(crate) fn put_bytes(out: &mut Vec<u8>, b: &[u8]) {
    put_uvarint(out, b.len() as u64);
    out.extend_from_slice(b);
}

/// An optional IP address: `len u8` (0, 4 or 16) then the address bytes.
pub(crate) fn put_ip(out: &mut Vec<u8>, ip: Option<std::net::IpAddr>) {
    match ip {
        None => out.push(0),
        Some(std::net::IpAddr::V4(v4)) => {
            out.push(4);
            out.extend_from_slice(&v4.octets());
        }
        Some(std::net::IpAddr::V6(v6)) => {
            out.push(16);
            out.extend_from_slice(&v6.octets());
        }
    }
}

/// A cursor over an encoded value; every read names the column family on failure.
pub(crate) struct Reader<'a> {
    buf: &'a [u8],
    cf: &'static str,
}

impl<'a> Reader<'a> {
    pub(crate) fn new(buf: &'a [u8], cf: &'static str) -> Self {
        Reader { buf, cf }
    }

    /// Bytes not read yet.
    pub(crate) fn remaining(&self) -> usize {
        self.buf.len()
    }

    fn truncated(&self, what: &str) -> Error {
        Error::corrupt(self.cf, format!("truncated while reading {what}"))
    }

    pub(crate) fn u8(&mut self) -> Result<u8> {
        let (&b, rest) = self.buf.split_first().ok_or_else(|| self.truncated("u8"))?;
        self.buf = rest;
        Ok(b)
    }

    pub(crate) fn u16(&mut self) -> Result<u16> {
        let b = self.take(2)?;
        Ok(u16::from_le_bytes([b[0], b[1]]))
    }

    pub(crate) fn take(&mut self, n: usize) -> Result<&'a [u8]> {
        if self.buf.len() < n {
            return Err(self.truncated("bytes"));
        }
        let (head, rest) = self.buf.split_at(n);
        self.buf = rest;
        Ok(head)
    }

    pub(crate) fn uvarint(&mut self) -> Result<u64> {
        // One byte, the common case, apart: every field of every row a build folds is a
        // varint, most of them under 128.
        match self.buf.split_first() {
            Some((&b, rest)) if b < 0x80 => {
                self.buf = rest;
                Ok(u64::from(b))
            }
            _ => self.long_uvarint(),
        }
    }

    fn long_uvarint(&mut self) -> Result<u64> {
        let mut v = 0u64;
        for shift in (0..64).step_by(7) {
            let b = self
                .buf
                .first()
                .copied()
                .ok_or_else(|| self.truncated("varint"))?;
            self.buf = &self.buf[1..];
            v |= u64::from(b & 0x7f) << shift;
            if b & 0x80 == 0 {
                return Ok(v);
            }
        }
        Err(Error::corrupt(self.cf, "varint longer than 10 bytes"))
    }

    pub(crate) fn u32v(&mut self) -> Result<u32> {
        u32::try_from(self.uvarint()?).map_err(|_| Error::corrupt(self.cf, "u32 out of range"))
    }

    pub(crate) fn ivarint(&mut self) -> Result<i64> {
        let u = self.uvarint()?;
        Ok(((u >> 1) as i64) ^ -((u & 1) as i64))
    }

    pub(crate) fn bytes(&mut self) -> Result<&'a [u8]> {
        let n = self.uvarint()? as usize;
        self.take(n)
    }

    pub(crate) fn string(&mut self) -> Result<String> {
        let b = self.bytes()?;
        String::from_utf8(b.to_vec()).map_err(|_| Error::corrupt(self.cf, "string is not UTF-8"))
    }

    /// An address written by [`put_ip`].
    pub(crate) fn ip(&mut self) -> Result<Option<std::net::IpAddr>> {
        Ok(match self.u8()? {
            0 => None,
            4 => Some(<[u8; 4]>::try_from(self.take(4)?).expect("4 bytes").into()),
            16 => Some(
                <[u8; 16]>::try_from(self.take(16)?)
                    .expect("16 bytes")
                    .into(),
            ),
            n => return Err(Error::corrupt(self.cf, format!("IP length {n}"))),
        })
    }

    /// Checks the leading version byte of a value.
    pub(crate) fn version(&mut self, supported: u8) -> Result<()> {
        let found = self.u8()?;
        if found != supported {
            return Err(Error::corrupt(
                self.cf,
                format!("value version {found}, expected {supported}"),
            ));
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn varints_round_trip_at_the_edges() {
        let unsigned = [0u64, 1, 127, 128, 16_383, 16_384, u32::MAX as u64, u64::MAX];
        let signed = [0i64, -1, 1, i64::MIN, i64::MAX, -64, 64];
        let mut buf = Vec::new();
        for &u in &unsigned {
            put_uvarint(&mut buf, u);
        }
        for &i in &signed {
            put_ivarint(&mut buf, i);
        }
        let mut r = Reader::new(&buf, "test");
        for &u in &unsigned {
            assert_eq!(r.uvarint().unwrap(), u);
        }
        for &i in &signed {
            assert_eq!(r.ivarint().unwrap(), i);
        }
    }

    #[test]
    fn truncated_input_is_an_error_naming_the_column_family() {
        let mut buf = Vec::new();
        put_bytes(&mut buf, b"hello");
        let mut r = Reader::new(&buf[..3], "links");
        let err = r.bytes().unwrap_err().to_string();
        assert!(err.contains("links"), "{err}");
    }

    #[test]
    fn broken_varints_are_errors_that_say_which() {
        let mut buf = Vec::new();
        put_uvarint(&mut buf, u64::MAX);
        let cut = Reader::new(&buf[..9], "counters").uvarint().unwrap_err();
        assert!(cut.to_string().contains("truncated"), "{cut}");
        let long = Reader::new(&[0x80; 11], "counters").uvarint().unwrap_err();
        assert!(long.to_string().contains("longer than 10"), "{long}");
        // Two varints in a row: each read takes exactly its own bytes.
        let mut r = Reader::new(&[0x05, 0x81, 0x01], "counters");
        assert_eq!((r.uvarint().unwrap(), r.uvarint().unwrap()), (5, 129));
        assert_eq!(r.remaining(), 0);
    }
}
