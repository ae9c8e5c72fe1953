//! Widget, a release that spins on every object until the host's deadline stops it: a tenant's runaway plugin.
const VERSION: &str = "loop";
const FLAKY: bool = false;
const SPINS: bool = true;
include!("../../widget/src/logic.rs");
