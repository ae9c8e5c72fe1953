//! Widget 1.0: a healthy version.
const VERSION: &str = "v1";
const FLAKY: bool = false;
const SPINS: bool = false;
include!("logic.rs");
