//! The 0..=100 scale of Citation Flow and Trust Flow.
//!
//! Scores come from leaky iterations in which every node (Citation Flow) or every seed
//! node (Trust Flow) starts with `1 - d = 0.15` units and dangling mass is dropped, so a
//! node's raw score depends only on the part of the graph that reaches it. The mapping to
//! integers uses fixed constants, never the index's size or maximum, so adding an
//! unrelated site changes nobody's value:
//!
//! - Citation Flow: `round(12.5 * log10(raw / 0.15))`, clamped to 0..=100. A page no one
//!   links to is 0; each tenfold gain in raw score adds 12.5; 100 is `1.5e7` units.
//! - Trust Flow: `round(12.5 * log10(raw / 1.5e-5))`, clamped; exactly 0 when no trust
//!   reaches the node (no path from a seed). A lone seed page is 50.
//!
//! Subdomains and root domains use the sum of their URLs' raw scores.

const CF_FLOOR: f64 = 0.15;
const TF_FLOOR: f64 = 1.5e-5;
const STEP: f64 = 12.5;

fn map(raw: f64, floor: f64) -> u8 {
    if raw.is_nan() || raw <= 0.0 {
        return 0;
    }
    (STEP * (raw / floor).log10()).round().clamp(0.0, 100.0) as u8
}

pub fn citation_flow(raw: f64) -> u8 {
    map(raw, CF_FLOOR)
}

pub fn trust_flow(raw: f64) -> u8 {
    map(raw, TF_FLOOR)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_scale_is_logarithmic_bounded_and_fixed() {
        assert_eq!(citation_flow(0.15), 0);
        assert_eq!(citation_flow(1.5), 13);
        assert_eq!(citation_flow(1e30), 100);
        assert_eq!(trust_flow(0.0), 0);
        assert_eq!(trust_flow(0.15), 50);
        assert!(trust_flow(1.0) > trust_flow(0.5));
        assert_eq!(trust_flow(f64::NAN), 0);
    }
}
