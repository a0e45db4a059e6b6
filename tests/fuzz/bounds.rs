//! The bounds of the fuzz properties: cases per target (`LRO_FUZZ_CASES`)
//! and the time a case may take (`LRO_FUZZ_SLOW_MS`); see `mod.rs`.

use std::time::{Duration, Instant};

use proptest::prelude::*;
use proptest::test_runner::TestCaseError;

/// Cases per cheap target when `LRO_FUZZ_CASES` is not set.
pub(super) const DEFAULT_CASES: u32 = 256;

/// `LRO_FUZZ_CASES`, divided by `cost` (at least one case).
pub(super) fn cases(cost: u32) -> u32 {
    let base = std::env::var("LRO_FUZZ_CASES")
        .ok()
        .and_then(|v| v.parse::<u32>().ok())
        .unwrap_or(DEFAULT_CASES);
    (base / cost).max(1)
}

/// The configuration of a target costing `cost` cheap cases per case. No
/// failure file is written: what is found becomes a named test below.
pub(super) fn config(cost: u32) -> ProptestConfig {
    ProptestConfig {
        cases: cases(cost),
        failure_persistence: None,
        max_shrink_iters: 2048,
        ..ProptestConfig::default()
    }
}

/// A case slower than this fails.
pub(super) fn slow_limit() -> Duration {
    let ms = std::env::var("LRO_FUZZ_SLOW_MS")
        .ok()
        .and_then(|v| v.parse::<u64>().ok())
        .unwrap_or(10_000);
    Duration::from_millis(ms)
}

/// Runs one case's check, failing it when it is slow.
pub(super) fn timed(
    check: impl FnOnce() -> Result<(), TestCaseError>,
) -> Result<(), TestCaseError> {
    let start = Instant::now();
    check()?;
    let took = start.elapsed();
    prop_assert!(took < slow_limit(), "slow input: {took:?}");
    Ok(())
}
