//! `files`: read-only access to files under a template root (`file:` patches and manifests of an OmniCluster,
//! spec/original-operator.md §2.2 step 8).
//!
//! The Go operator resolved such files against the process's working directory and switched it around (§10.3);
//! this host never touches its working directory. A plugin names the object's template root and a path; the
//! host serves the file only when the root is one the operator admin allowed (`--template-root DIR`, kept in
//! [`TemplateRoots`]) or lies inside one, and the path stays inside the root after `..` and symlinks are
//! resolved. With no allowed roots every read is denied.

use std::fmt::Write as _;
use std::fs::File;
use std::io::{self, Read as _};
use std::path::{Component, Path, PathBuf};
use std::sync::Arc;

use wasmtime::component::Resource;

use super::kube_read::io_budget;
use super::{CallContext, Capability, HostError};
use crate::runtime::HostState;
use crate::runtime::bindings::omni::operator::files as wit;
use crate::runtime::bindings::omni::operator::types::HostError as WitHostError;

/// The largest file a plugin may read: template patches and manifests are small, and the bytes are copied into
/// the plugin's (capped) memory.
pub const MAX_FILE_BYTES: u64 = 1 << 20;

/// The directories the operator admin allows as template roots. Cheap to clone: every call's services share
/// one list.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct TemplateRoots {
    roots: Arc<[PathBuf]>,
}

impl TemplateRoots {
    pub fn new<I, P>(roots: I) -> Self
    where
        I: IntoIterator<Item = P>,
        P: Into<PathBuf>,
    {
        TemplateRoots {
            roots: roots.into_iter().map(Into::into).collect(),
        }
    }

    pub fn is_empty(&self) -> bool {
        self.roots.is_empty()
    }

    pub fn iter(&self) -> impl Iterator<Item = &Path> {
        self.roots.iter().map(PathBuf::as_path)
    }

    /// The bytes of `path` under template root `root`: `path` relative to the root or absolute inside it. Blocks
    /// on the filesystem; the capability runs it on tokio's blocking pool.
    pub fn read(&self, root: &str, path: &str) -> Result<Vec<u8>, HostError> {
        if self.roots.is_empty() {
            return Err(HostError::Denied(format!(
                "this operator allows no template roots, so templateRoot {root:?} cannot be read: the operator \
                 admin must start it with --template-root DIR to let plugins read files under DIR"
            )));
        }
        let root_dir = self.allowed_root(root)?;
        let relative = relative_path(root, &root_dir, path)?;
        read_beneath(&root_dir, &relative, root, path)
    }

    /// The canonical directory of `root` once it is known to be (inside) an allowed root. The lexical check comes
    /// first, so a plugin cannot probe which paths exist elsewhere; the canonical check catches symlinks.
    fn allowed_root(&self, root: &str) -> Result<PathBuf, HostError> {
        if root.is_empty() {
            return Err(HostError::Invalid(
                "no templateRoot given: files can only be read under a template root".into(),
            ));
        }
        let requested = Path::new(root);
        if !requested.is_absolute() {
            return Err(HostError::Invalid(format!(
                "templateRoot {root:?} is relative: it must be an absolute directory, one of or inside {}",
                self.allowed_list()
            )));
        }
        let lexical = normalize_absolute(requested);
        let allowed: Vec<(PathBuf, Option<PathBuf>)> = self
            .iter()
            .map(|r| (normalize_absolute(r), std::fs::canonicalize(r).ok()))
            .collect();
        let inside = |dir: &Path| {
            allowed.iter().any(|(given, canonical)| {
                dir.starts_with(given) || canonical.as_deref().is_some_and(|c| dir.starts_with(c))
            })
        };
        if !inside(&lexical) {
            return Err(self.not_allowed(root));
        }
        let canonical = std::fs::canonicalize(&lexical).map_err(|e| match e.kind() {
            io::ErrorKind::NotFound => HostError::NotFound(format!(
                "open template root {root:?}: no such file or directory"
            )),
            _ => io_error(&format!("open template root {root:?}"), &e),
        })?;
        // A symlink in the root's own path may lead somewhere the admin never allowed.
        if !allowed
            .iter()
            .any(|(_, c)| c.as_deref().is_some_and(|c| canonical.starts_with(c)))
        {
            return Err(self.not_allowed(root));
        }
        if !canonical.is_dir() {
            return Err(HostError::Invalid(format!(
                "open template root {root:?}: not a directory"
            )));
        }
        Ok(canonical)
    }

    fn not_allowed(&self, root: &str) -> HostError {
        HostError::Denied(format!(
            "templateRoot {root:?} is not an allowed template root or inside one (allowed: {}); the operator \
             admin allows more with --template-root DIR",
            self.allowed_list()
        ))
    }

    fn allowed_list(&self) -> String {
        let mut list = String::new();
        for (i, root) in self.iter().enumerate() {
            let sep = if i == 0 { "" } else { ", " };
            let _ = write!(list, "{sep}{root:?}");
        }
        list
    }
}

/// `path` as a relative path inside the root, checked lexically: an absolute path must start with the root (as
/// the object spells it, or canonical), and `..` may not climb above the root.
fn relative_path(root: &str, canonical_root: &Path, path: &str) -> Result<PathBuf, HostError> {
    if path.is_empty() {
        return Err(HostError::Invalid(format!(
            "no file path given under templateRoot {root:?}"
        )));
    }
    let outside = || HostError::Denied(format!("{path} is outside templateRoot {root:?}"));
    let requested = Path::new(path);
    let relative = if requested.is_absolute() {
        let absolute = normalize_absolute(requested);
        let under = |base: &Path| absolute.strip_prefix(base).ok().map(Path::to_path_buf);
        under(&normalize_absolute(Path::new(root)))
            .or_else(|| under(canonical_root))
            .ok_or_else(outside)?
    } else {
        requested.to_path_buf()
    };
    let mut kept = PathBuf::new();
    for component in relative.components() {
        match component {
            Component::Normal(part) => kept.push(part),
            Component::CurDir => {}
            Component::ParentDir => {
                if !kept.pop() {
                    return Err(outside());
                }
            }
            Component::RootDir | Component::Prefix(_) => return Err(outside()),
        }
    }
    if kept.as_os_str().is_empty() {
        return Err(HostError::Invalid(format!(
            "read {path}: is a directory (the template root itself)"
        )));
    }
    Ok(kept)
}

/// Reads `relative` under `root` (canonical) without following anything out of it; errors show the root and
/// path as the plugin gave them.
///
/// cap-std's `Dir::open_ambient_dir(root)?.open(relative)` is the intended implementation (the kernel then
/// resolves beneath the root); until the host depends on cap-std this resolves the path, checks it is beneath
/// the root, opens it, and checks again where the opened file really is, so a symlink swapped in between the
/// check and the open cannot lead out either.
fn read_beneath(
    root: &Path,
    relative: &Path,
    shown_root: &str,
    shown: &str,
) -> Result<Vec<u8>, HostError> {
    let leads_out = || {
        HostError::Denied(format!(
            "{shown} leads outside templateRoot {shown_root:?} through a symlink"
        ))
    };
    let target = std::fs::canonicalize(root.join(relative))
        .map_err(|e| io_error(&format!("open {shown}"), &e))?;
    if !target.starts_with(root) {
        return Err(leads_out());
    }
    let file = File::open(&target).map_err(|e| io_error(&format!("open {shown}"), &e))?;
    if let Some(opened) = opened_path(&file)
        && !opened.starts_with(root)
    {
        return Err(leads_out());
    }
    let metadata = file
        .metadata()
        .map_err(|e| io_error(&format!("read {shown}"), &e))?;
    if metadata.is_dir() {
        return Err(HostError::Invalid(format!("read {shown}: is a directory")));
    }
    let too_large = |size: u64| {
        HostError::Invalid(format!(
            "{shown} is {size} bytes, over the {MAX_FILE_BYTES}-byte (1 MiB) limit for files read by plugins"
        ))
    };
    if metadata.len() > MAX_FILE_BYTES {
        return Err(too_large(metadata.len()));
    }
    // The file may grow after the size check: never read more than the limit allows.
    let mut bytes = Vec::with_capacity(usize::try_from(metadata.len()).unwrap_or(0));
    file.take(MAX_FILE_BYTES + 1)
        .read_to_end(&mut bytes)
        .map_err(|e| io_error(&format!("read {shown}"), &e))?;
    let read = u64::try_from(bytes.len()).unwrap_or(u64::MAX);
    if read > MAX_FILE_BYTES {
        return Err(too_large(read));
    }
    Ok(bytes)
}

/// Where an open file really is, from the kernel (Linux); `None` where that cannot be asked.
fn opened_path(file: &File) -> Option<PathBuf> {
    #[cfg(target_os = "linux")]
    {
        use std::os::fd::AsRawFd;
        std::fs::read_link(format!("/proc/self/fd/{}", file.as_raw_fd())).ok()
    }
    #[cfg(not(target_os = "linux"))]
    {
        let _ = file;
        None
    }
}

/// Go's wording (`open <path>: no such file or directory`), which template authors know from the Go operator.
fn io_error(what: &str, e: &io::Error) -> HostError {
    match e.kind() {
        io::ErrorKind::NotFound => {
            HostError::NotFound(format!("{what}: no such file or directory"))
        }
        io::ErrorKind::PermissionDenied => HostError::Denied(format!(
            "{what}: permission denied (the operator's user may not read it)"
        )),
        io::ErrorKind::NotADirectory => HostError::NotFound(format!("{what}: not a directory")),
        _ => HostError::Other(format!("{what}: {e}")),
    }
}

/// `..` and `.` resolved without touching the filesystem; `..` never climbs above `/`.
fn normalize_absolute(path: &Path) -> PathBuf {
    let mut out = PathBuf::new();
    for component in path.components() {
        match component {
            Component::ParentDir => {
                if out.parent().is_some() {
                    out.pop();
                }
            }
            Component::CurDir => {}
            other => out.push(other),
        }
    }
    out
}

impl wit::Host for HostState {
    async fn read(
        &mut self,
        ctx: Resource<CallContext>,
        root: String,
        path: String,
    ) -> wasmtime::Result<Result<Vec<u8>, WitHostError>> {
        let call = self.table.get(&ctx)?;
        if !self.grants.allows(Capability::Files) {
            return Ok(Err(HostError::Denied(format!(
                "plugin {:?} is not granted \"files\"",
                self.plugin
            ))
            .into()));
        }
        let budget = io_budget(call);
        let what = format!("files.read {path:?} under {root:?}");
        let roots = self.services.template_roots.clone();
        // Filesystem calls block; on tokio's blocking pool a slow disk (or network mount) never stalls the
        // threads that run other plugins' calls.
        let reading = tokio::task::spawn_blocking(move || roots.read(&root, &path));
        Ok(match tokio::time::timeout(budget, reading).await {
            Err(_) => Err(HostError::Timeout(format!(
                "{what} did not answer within {} ms",
                budget.as_millis()
            ))
            .into()),
            Ok(Err(failed)) => Err(HostError::Other(format!("{what} failed: {failed}")).into()),
            Ok(Ok(read)) => read.map_err(Into::into),
        })
    }
}

#[cfg(test)]
mod tests {
    use std::os::unix::fs::symlink;

    use super::*;

    /// `<tmp>/templates/site/{patch.yaml, nested/m.yaml, big.bin, out -> ../../secret}`, `<tmp>/secret`.
    struct Layout {
        _tmp: tempfile::TempDir,
        templates: PathBuf,
        site: String,
        outside: PathBuf,
    }

    fn layout() -> Layout {
        let tmp = tempfile::tempdir().unwrap();
        let templates = tmp.path().join("templates");
        let site = templates.join("site");
        std::fs::create_dir_all(site.join("nested")).unwrap();
        std::fs::write(site.join("patch.yaml"), "machine: {}\n").unwrap();
        std::fs::write(site.join("nested/m.yaml"), "kind: ConfigMap\n").unwrap();
        std::fs::write(
            site.join("big.bin"),
            vec![0u8; (MAX_FILE_BYTES + 1) as usize],
        )
        .unwrap();
        let outside = tmp.path().join("secret");
        std::fs::write(&outside, "token").unwrap();
        symlink(&outside, site.join("out")).unwrap();
        Layout {
            site: site.to_str().unwrap().to_owned(),
            templates,
            outside,
            _tmp: tmp,
        }
    }

    #[test]
    fn a_relative_path_is_read_under_the_root() {
        let l = layout();
        let roots = TemplateRoots::new([&l.templates]);
        assert_eq!(roots.read(&l.site, "patch.yaml").unwrap(), b"machine: {}\n");
        assert_eq!(
            roots.read(&l.site, "./nested/../nested/m.yaml").unwrap(),
            b"kind: ConfigMap\n"
        );
    }

    #[test]
    fn an_absolute_path_is_read_only_inside_the_root() {
        let l = layout();
        let roots = TemplateRoots::new([&l.templates]);
        let inside = format!("{}/nested/m.yaml", l.site);
        assert_eq!(roots.read(&l.site, &inside).unwrap(), b"kind: ConfigMap\n");
        let outside = l.outside.to_str().unwrap();
        assert_eq!(
            roots.read(&l.site, outside),
            Err(HostError::Denied(format!(
                "{outside} is outside templateRoot {:?}",
                l.site
            )))
        );
    }

    #[test]
    fn dot_dot_and_symlinks_cannot_leave_the_root() {
        let l = layout();
        let roots = TemplateRoots::new([&l.templates]);
        assert_eq!(
            roots.read(&l.site, "../../secret"),
            Err(HostError::Denied(format!(
                "../../secret is outside templateRoot {:?}",
                l.site
            )))
        );
        assert!(
            matches!(roots.read(&l.site, "out"), Err(HostError::Denied(m)) if m.starts_with("out leads outside templateRoot")),
        );
    }

    #[test]
    fn missing_oversized_and_directory_reads_say_which() {
        let l = layout();
        let roots = TemplateRoots::new([&l.templates]);
        assert_eq!(
            roots.read(&l.site, "nope.yaml"),
            Err(HostError::NotFound(
                "open nope.yaml: no such file or directory".into()
            ))
        );
        assert_eq!(
            roots.read(&l.site, "big.bin"),
            Err(HostError::Invalid(
                "big.bin is 1048577 bytes, over the 1048576-byte (1 MiB) limit for files read by plugins".into()
            ))
        );
        assert_eq!(
            roots.read(&l.site, "nested"),
            Err(HostError::Invalid("read nested: is a directory".into()))
        );
    }

    #[test]
    fn roots_must_be_allowed_absolute_and_present() {
        let l = layout();
        let roots = TemplateRoots::new([&l.templates]);
        let other = l.outside.parent().unwrap().to_str().unwrap().to_owned();
        assert_eq!(
            roots.read(&other, "secret"),
            Err(HostError::Denied(format!(
                "templateRoot {other:?} is not an allowed template root or inside one (allowed: {:?}); the operator \
                 admin allows more with --template-root DIR",
                l.templates
            )))
        );
        let climbing = format!("{}/..", l.templates.display());
        assert!(
            matches!(roots.read(&climbing, "secret"), Err(HostError::Denied(_))),
            "`..` in the root is resolved first"
        );
        assert!(
            matches!(roots.read("templates/site", "patch.yaml"), Err(HostError::Invalid(m)) if m.contains("is relative"))
        );
        let gone = format!("{}/gone", l.templates.display());
        assert_eq!(
            roots.read(&gone, "a.yaml"),
            Err(HostError::NotFound(format!(
                "open template root {gone:?}: no such file or directory"
            )))
        );
    }

    #[test]
    fn a_root_symlinked_out_of_the_allowed_directory_is_denied() {
        let l = layout();
        symlink(l.outside.parent().unwrap(), l.templates.join("escape")).unwrap();
        let roots = TemplateRoots::new([&l.templates]);
        let root = format!("{}/escape", l.templates.display());
        assert!(
            matches!(roots.read(&root, "secret"), Err(HostError::Denied(m)) if m.contains("is not an allowed template root"))
        );
    }

    #[test]
    fn without_allowed_roots_every_read_is_denied_with_the_fix() {
        let l = layout();
        let err = TemplateRoots::default()
            .read(&l.site, "patch.yaml")
            .unwrap_err();
        assert!(
            matches!(&err, HostError::Denied(m) if m.contains("--template-root DIR")),
            "{err}"
        );
    }
}
