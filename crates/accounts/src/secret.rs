//! Secrets (API keys, OpenApp private keys, access tokens): random, shown once, stored as
//! a SHA-256 digest and compared in constant time.

use crate::{Error, Result};
use ring::rand::SecureRandom;

/// A new 128-bit secret, as 32 upper-case hex digits (the shape of a Majestic key, so
/// clients that check a key's form accept ours).
pub(crate) fn generate() -> Result<String> {
    let bytes: [u8; 16] = random_bytes()?;
    Ok(bytes.iter().map(|b| format!("{b:02X}")).collect())
}

/// `N` bytes from the system's secure random source.
pub(crate) fn random_bytes<const N: usize>() -> Result<[u8; N]> {
    let mut bytes = [0u8; N];
    ring::rand::SystemRandom::new()
        .fill(&mut bytes)
        .map_err(|_| Error::Random)?;
    Ok(bytes)
}

/// What the store keeps of a secret.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub(crate) struct Digest(pub [u8; 32]);

impl Digest {
    pub(crate) fn of(secret: &str) -> Digest {
        let d = ring::digest::digest(&ring::digest::SHA256, secret.as_bytes());
        let mut out = [0u8; 32];
        out.copy_from_slice(d.as_ref());
        Digest(out)
    }

    /// The first 8 bytes: an index column to find the row by. The full digest is then
    /// compared in constant time, so lookup timing reveals nothing about the rest.
    pub(crate) fn selector(&self) -> i64 {
        i64::from_be_bytes(self.0[..8].try_into().expect("8 bytes"))
    }

    pub(crate) fn matches(&self, stored: &[u8]) -> bool {
        stored.len() == 32 && constant_time_eq(&self.0, stored)
    }
}

fn constant_time_eq(a: &[u8], b: &[u8]) -> bool {
    a.len() == b.len() && a.iter().zip(b).fold(0u8, |acc, (x, y)| acc | (x ^ y)) == 0
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn secrets_are_random_and_digests_match_only_their_secret() {
        let a = generate().unwrap();
        let b = generate().unwrap();
        assert_ne!(a, b);
        assert_eq!(a.len(), 32);
        assert!(a
            .chars()
            .all(|c| c.is_ascii_hexdigit() && !c.is_ascii_lowercase()));
        let d = Digest::of(&a);
        assert!(d.matches(&Digest::of(&a).0));
        assert!(!d.matches(&Digest::of(&b).0));
        assert!(!d.matches(&d.0[..31]));
        assert_eq!(
            // SHA-256("abc"), the FIPS 180-2 example.
            Digest::of("abc").0[..4],
            [0xba, 0x78, 0x16, 0xbf]
        );
    }
}
