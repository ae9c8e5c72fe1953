//! The `files` capability through the real contract: the `read-probe` test plugin reads template files in the
//! real runtime, under the template roots the operator admin allows and nowhere else.

use std::os::unix::fs::symlink;
use std::path::{Path, PathBuf};

use omni_operator::capabilities::{Grants, HostServices};
use omni_operator::runtime::ErrorKind;
use serde_json::{Value, json};

use super::support::{self, object};

const PATCH: &str = "machine:\n  network: {}\n";

/// `<tmp>/templates/site/{patch.yaml, nested/manifest.yaml, big.bin, escape -> <tmp>/outside/secret.yaml}` and
/// `<tmp>/outside/secret.yaml`; the operator allows `<tmp>/templates`.
struct Templates {
    _tmp: tempfile::TempDir,
    allowed: PathBuf,
    site: String,
    outside: PathBuf,
}

fn templates() -> Templates {
    let tmp = tempfile::tempdir().expect("tempdir");
    let allowed = tmp.path().join("templates");
    let site = allowed.join("site");
    std::fs::create_dir_all(site.join("nested")).expect("mkdir");
    std::fs::write(site.join("patch.yaml"), PATCH).expect("write");
    std::fs::write(site.join("nested/manifest.yaml"), "kind: ConfigMap\n").expect("write");
    std::fs::write(site.join("big.bin"), vec![b'x'; (1 << 20) + 1]).expect("write");
    let outside = tmp.path().join("outside");
    std::fs::create_dir_all(&outside).expect("mkdir");
    std::fs::write(outside.join("secret.yaml"), "token: hunter2\n").expect("write");
    symlink(outside.join("secret.yaml"), site.join("escape")).expect("symlink");
    Templates {
        site: site.to_str().expect("utf-8 path").to_owned(),
        allowed,
        outside,
        _tmp: tmp,
    }
}

fn grants() -> Grants {
    Grants::parse(["files", "kube-read:*"]).expect("grants")
}

/// What the probe got for one read of `path` under `root`.
async fn read(services: &HostServices, root: &str, path: &str) -> Value {
    let probe = support::load("read_probe", grants()).await;
    let spec = json!({"files": [{"root": root, "path": path}]});
    let done = probe
        .reconcile(&object("p", "team", spec), services)
        .await
        .expect("the probe runs");
    done.outputs.status["files"][0].clone()
}

fn allowing(root: &Path) -> HostServices {
    HostServices::default().with_template_roots([root])
}

fn denied(result: &Value) -> &str {
    assert_eq!(result["error"], "denied", "{result}");
    result["message"].as_str().expect("message")
}

#[tokio::test]
async fn a_relative_path_is_read_under_the_objects_template_root() {
    let t = templates();
    let services = allowing(&t.allowed);
    assert_eq!(
        read(&services, &t.site, "patch.yaml").await,
        json!({"bytes": PATCH.len(), "text": PATCH})
    );
    assert_eq!(
        read(&services, &t.site, "nested/manifest.yaml").await["text"],
        "kind: ConfigMap\n"
    );
}

/// Absolute paths inside the root are how Omni's template loader passes `file:` references.
#[tokio::test]
async fn an_absolute_path_inside_the_root_is_read() {
    let t = templates();
    let services = allowing(&t.allowed);
    let absolute = format!("{}/nested/manifest.yaml", t.site);
    assert_eq!(
        read(&services, &t.site, &absolute).await["text"],
        "kind: ConfigMap\n"
    );
}

#[tokio::test]
async fn no_path_leads_out_of_the_root() {
    let t = templates();
    let services = allowing(&t.allowed);
    let secret = t.outside.join("secret.yaml");
    let secret = secret.to_str().expect("utf-8");
    assert_eq!(
        denied(&read(&services, &t.site, "../../outside/secret.yaml").await),
        format!(
            "denied: ../../outside/secret.yaml is outside templateRoot {:?}",
            t.site
        )
    );
    assert_eq!(
        denied(&read(&services, &t.site, secret).await),
        format!("denied: {secret} is outside templateRoot {:?}", t.site)
    );
    assert_eq!(
        denied(&read(&services, &t.site, "escape").await),
        format!(
            "denied: escape leads outside templateRoot {:?} through a symlink",
            t.site
        )
    );
}

#[tokio::test]
async fn a_missing_file_is_not_found_and_an_oversized_one_invalid() {
    let t = templates();
    let services = allowing(&t.allowed);
    assert_eq!(
        read(&services, &t.site, "patches/missing.yaml").await,
        json!({"error": "not-found", "message": "not found: open patches/missing.yaml: no such file or directory"})
    );
    assert_eq!(
        read(&services, &t.site, "big.bin").await,
        json!({"error": "invalid", "message":
            "invalid: big.bin is 1048577 bytes, over the 1048576-byte (1 MiB) limit for files read by plugins"})
    );
}

/// A FIFO under the root is refused, not opened for a read that could wait for a writer forever.
#[tokio::test]
async fn a_fifo_or_socket_under_the_root_is_invalid() {
    use std::os::unix::ffi::OsStrExt as _;

    let t = templates();
    let site = Path::new(&t.site);
    let fifo = std::ffi::CString::new(site.join("pipe").as_os_str().as_bytes()).expect("path");
    // SAFETY: `fifo` is a NUL-terminated string that outlives the call.
    assert_eq!(unsafe { libc::mkfifo(fifo.as_ptr(), 0o600) }, 0, "mkfifo");
    let _socket = std::os::unix::net::UnixListener::bind(site.join("sock")).expect("bind");
    let services = allowing(&t.allowed);
    assert_eq!(
        read(&services, &t.site, "pipe").await,
        json!({"error": "invalid", "message":
            "invalid: read pipe: not a regular file (a FIFO); plugins may read only regular files"})
    );
    assert_eq!(
        read(&services, &t.site, "sock").await,
        json!({"error": "invalid", "message":
            "invalid: read sock: not a regular file (a socket); plugins may read only regular files"})
    );
}

#[tokio::test]
async fn a_root_the_operator_does_not_allow_is_denied_naming_the_allowed_ones() {
    let t = templates();
    let services = allowing(&t.allowed);
    let other = t.outside.to_str().expect("utf-8");
    assert_eq!(
        denied(&read(&services, other, "secret.yaml").await),
        format!(
            "denied: templateRoot {other:?} is not an allowed template root or inside one (allowed: {:?}); the \
             operator admin allows more with --template-root DIR",
            t.allowed
        )
    );
}

/// The default: an operator started without `--template-root` serves no files at all.
#[tokio::test]
async fn without_template_roots_every_read_is_denied_with_the_fix() {
    let t = templates();
    assert_eq!(
        denied(&read(&HostServices::default(), &t.site, "patch.yaml").await),
        format!(
            "denied: this operator allows no template roots, so templateRoot {:?} cannot be read: the operator admin \
             must start it with --template-root DIR to let plugins read files under DIR",
            t.site
        )
    );
}

/// Grants are checked before a plugin ever runs: importing `files` without the grant refuses the plugin.
#[tokio::test]
async fn a_plugin_without_the_files_grant_is_refused_at_load() {
    let e = support::try_load(
        "read_probe",
        Grants::parse(["kube-read"]).expect("grants"),
        None,
    )
    .await
    .expect_err("read-probe imports files");
    assert_eq!(e.kind(), ErrorKind::DeniedCapability);
    assert!(
        e.message()
            .contains("omni:operator/files@0.1.0 (capability \"files\")"),
        "{e}"
    );
}
