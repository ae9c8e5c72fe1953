//! Widget 3.0: a broken release that traps on half its objects.
const VERSION: &str = "v3";
const FLAKY: bool = true;
const SPINS: bool = false;
include!("../../widget/src/logic.rs");
