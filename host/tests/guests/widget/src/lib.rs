//! Widget 1.0: a healthy version.
const VERSION: &str = "v1";
const FLAKY: bool = false;
include!("logic.rs");
