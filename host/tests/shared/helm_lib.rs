//! libhelm_c for the host's tests: `HELM_C_LIB`, or fetched by the project's own set-up (`tools/fetch-helm-c`:
//! pip, pinned version, sha256). Never skipped: without it a test fails and says how to get it.

use std::path::PathBuf;
use std::sync::OnceLock;

pub fn helm_c_lib() -> PathBuf {
    static LIB: OnceLock<PathBuf> = OnceLock::new();
    LIB.get_or_init(|| {
        if let Some(p) = std::env::var_os("HELM_C_LIB").filter(|p| !p.is_empty()) {
            return PathBuf::from(p);
        }
        let script = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../tools/fetch-helm-c");
        let out = std::process::Command::new(&script)
            .output()
            .expect("running tools/fetch-helm-c");
        assert!(
            out.status.success(),
            "tools/fetch-helm-c failed; set HELM_C_LIB:\n{}",
            String::from_utf8_lossy(&out.stderr)
        );
        PathBuf::from(String::from_utf8(out.stdout).expect("a path").trim())
    })
    .clone()
}
