//! Widget 2.0: a healthy version that answers differently from 1.0.
const VERSION: &str = "v2";
const FLAKY: bool = false;
const SPINS: bool = false;
include!("../../widget/src/logic.rs");
