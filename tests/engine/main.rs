//! The engine without HTTP: offload, extraction, recipes, lifecycle, history
//! (see `tests/README.md`). One test binary for these files, so that the
//! dependencies are linked once for all of them.

#[path = "../common/mod.rs"]
mod common;
/// Results of every record kind (for `descriptor_fidelity` and
/// `recipe_parity`).
#[path = "../common/shapes.rs"]
mod shapes;

mod completeness;
mod descriptor_fidelity;
mod engine;
mod engine_props;
mod estimate_calibration;
mod extract;
mod fuzz_engine;
#[cfg(feature = "history")]
mod history;
mod hostile_shapes;
mod lifecycle;
mod recipe_parity;
mod result_fidelity;
mod spilled;
