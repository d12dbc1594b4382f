//! The 0..=100 scale shared by Citation Flow, Trust Flow and Topical Trust Flow.
//!
//! Both metrics read one quantity, the **received citation** `r` of an item: what its
//! inbound links bring it in the leaky Citation Flow iteration (its score minus its own
//! `1 - d` unit), summed over the item's URLs. Trust is the part `t <= r` of that citation
//! that passed through a seed on its way in ([`crate::rank::through_pinned`]).
//!
//! - **Citation Flow** = `round(STEP * log10(r / FLOOR))`, clamped to 0..=100: 0 below
//!   `FLOOR` (and for an item no one links to), `STEP` points per tenfold citation, 100 at
//!   `FLOOR * 10^(100 / STEP)`.
//! - **Trust Flow** = Citation Flow scaled by how much of the citation is trusted:
//!   `round(cf * (1 - log10(r / t) / SPAN))`, where `cf` is Citation Flow before rounding.
//!   All citation trusted (a seed, `t = r`): Trust Flow equals Citation Flow. Each tenfold
//!   shortfall of trust takes `1 / SPAN` of it away; `SPAN` tenfolds or more, or no trust
//!   at all, leave 0. So Trust Flow never exceeds Citation Flow.
//! - **Topical Trust Flow** for a topic is the same formula with the trust that passed
//!   through that topic's seeds, which is part of `t`: never above Trust Flow.
//!
//! Every constant is fixed, never taken from the index's size or maximum, and `r` and `t`
//! depend only on the part of the graph that reaches an item, so adding an unrelated site
//! changes nobody's values.

/// Received citation below which Citation Flow is 0: about one link from a page with
/// 13,000 out-links.
const FLOOR: f64 = 1e-5;
/// Points per tenfold citation: 100 is reached twelve tenfolds above `FLOOR` (`1e7`).
const STEP: f64 = 100.0 / 12.0;
/// Tenfolds of trust shortfall that take Trust Flow from Citation Flow down to 0.
const SPAN: f64 = 12.0;

/// Citation Flow before rounding.
fn citation_level(received: f64) -> f64 {
    if received.is_nan() || received <= FLOOR {
        return 0.0;
    }
    (STEP * (received / FLOOR).log10()).min(100.0)
}

fn round(level: f64) -> u8 {
    level.round().clamp(0.0, 100.0) as u8
}

/// Citation Flow of an item whose links bring it `received` citation.
pub fn citation_flow(received: f64) -> u8 {
    round(citation_level(received))
}

/// Trust Flow (or, with the trust of one topic, that topic's value) of an item whose
/// links bring it `received` citation, `trusted` of which passed through seeds.
pub fn trust_flow(received: f64, trusted: f64) -> u8 {
    if trusted.is_nan() || trusted <= 0.0 {
        return 0;
    }
    let shortfall = (received / trusted).log10().max(0.0);
    round(citation_level(received) * (1.0 - shortfall / SPAN).max(0.0))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn citation_flow_is_logarithmic_bounded_and_fixed() {
        assert_eq!(citation_flow(0.0), 0);
        assert_eq!(citation_flow(FLOOR), 0);
        assert_eq!(citation_flow(FLOOR * 10.0), 8);
        assert_eq!(citation_flow(FLOOR * 1e6), 50);
        assert_eq!(citation_flow(1e7), 100);
        assert_eq!(citation_flow(1e30), 100);
        assert_eq!(citation_flow(f64::NAN), 0);
    }

    #[test]
    fn trust_flow_is_citation_flow_scaled_by_the_trusted_share() {
        let r = 1.0;
        assert_eq!(trust_flow(r, r), citation_flow(r), "all trusted");
        assert_eq!(trust_flow(r, 0.0), 0, "none trusted");
        assert_eq!(trust_flow(r, f64::NAN), 0);
        assert_eq!(trust_flow(r, r * 1e-12), 0, "SPAN tenfolds short");
        // Half the span short: half the Citation Flow (42 of 83, before rounding 41.7).
        assert_eq!(citation_flow(r), 42);
        assert_eq!(trust_flow(r, r * 1e-6), 21);
        let mut last = 0;
        for e in (0..=12).rev() {
            let tf = trust_flow(r, r * 10f64.powi(-e));
            assert!(tf >= last && tf <= citation_flow(r), "{e}: {tf}");
            last = tf;
        }
    }
}
