//! `files`: read-only access to files under a template root (`file:` patches and manifests of an
//! OmniCluster).
//!
//! The Go operator resolved such files against the process's working directory and switched it around (a process-wide
//! chdir, racing other reconciles);
//! this host never touches its working directory. A plugin names the object's template root and a path; the
//! host serves the file only when the root is one the operator admin allowed (`--template-root DIR`, kept in
//! [`TemplateRoots`]) or lies inside one, and the path stays inside the root after `..` and symlinks are
//! resolved: it is opened through cap-std beneath the root's directory, so the kernel (or cap-std) does the
//! resolving and nothing here re-checks paths. Only regular files are served. With no allowed roots every read is
//! denied.

use std::fmt::Write as _;
use std::io::{self, Read as _};
use std::path::{Component, Path, PathBuf};
use std::sync::Arc;

use cap_std::ambient_authority;
use cap_std::fs::{Dir, File, FileTypeExt as _, Metadata, OpenOptions, OpenOptionsExt as _};
use wasmtime::component::Resource;

use super::call::budget::{self, within};
use super::{CallContext, Capability, HostError, HostFailure};
use crate::contract::bindings::omni::operator::files as wit;

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
        let root_dir = self.open_root(root)?;
        let relative = relative_path(root, path)?;
        read_beneath(&root_dir, &relative, root, path)
    }

    /// The directory `root` names, once it is known to be an allowed root or inside one. The lexical check comes
    /// first, so a plugin cannot probe which paths exist elsewhere. Then the allowed root is opened (the only
    /// use of ambient authority here: the admin named it) and the rest of `root` is opened beneath it by
    /// cap-std, so a symlink in the root's own path cannot lead anywhere the admin never allowed.
    fn open_root(&self, root: &str) -> Result<Dir, HostError> {
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
        let below = |base: &Path| lexical.strip_prefix(base).ok().map(Path::to_path_buf);
        // The request may spell an allowed root as the admin did or as it resolves; which spelling matched only
        // picks the allowed root to open, containment is cap-std's.
        let (allowed, rest) = self
            .iter()
            .find_map(|allowed| below(&normalize_absolute(allowed)).map(|rest| (allowed, rest)))
            .or_else(|| {
                self.iter().find_map(|allowed| {
                    let canonical = std::fs::canonicalize(allowed).ok()?;
                    below(&canonical).map(|rest| (allowed, rest))
                })
            })
            .ok_or_else(|| self.not_allowed(root))?;
        let failed = |e: io::Error| {
            if is_escape(&e) {
                self.not_allowed(root)
            } else if e.kind() == io::ErrorKind::NotADirectory {
                HostError::Invalid(format!("open template root {root:?}: not a directory"))
            } else {
                io_error(&format!("open template root {root:?}"), &e)
            }
        };
        let allowed_dir = Dir::open_ambient_dir(allowed, ambient_authority()).map_err(failed)?;
        if rest.as_os_str().is_empty() {
            return Ok(allowed_dir);
        }
        allowed_dir.open_dir(&rest).map_err(failed)
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
/// the object spells it, or canonical), and `..` may not climb above the root. `..` is resolved lexically, as Go's
/// `filepath.Join` did for the Go operator. This only gives a path written outside the root its own message:
/// containment is cap-std's, when the path is opened beneath the root.
fn relative_path(root: &str, path: &str) -> Result<PathBuf, HostError> {
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
        let lexical_root = normalize_absolute(Path::new(root));
        // The canonical spelling only translates the path into one relative to the root; what is opened is still
        // resolved beneath the root's directory.
        under(&lexical_root)
            .or_else(|| {
                std::fs::canonicalize(&lexical_root)
                    .ok()
                    .and_then(|c| under(&c))
            })
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

/// Reads the regular file `relative` beneath `root`; errors show the root and path as the plugin gave them.
///
/// cap-std resolves `relative` beneath `root` (on Linux ≥ 5.6 the kernel, with `openat2` and `RESOLVE_BENEATH`;
/// elsewhere cap-std's own walk, one component at a time): a symlink leading out of the root, or any absolute
/// symlink, fails instead of being followed, and no symlink swapped in meanwhile can change that.
fn read_beneath(
    root: &Dir,
    relative: &Path,
    shown_root: &str,
    shown: &str,
) -> Result<Vec<u8>, HostError> {
    // Checked before opening, since opening some devices has effects of its own; `open_file` checks again.
    let metadata = root
        .metadata(relative)
        .map_err(|e| beneath_error(&e, "open", shown, shown_root))?;
    regular_file(&metadata, shown)?;
    let file = open_file(root, relative, shown_root, shown)?;
    let metadata = file
        .metadata()
        .map_err(|e| beneath_error(&e, "read", shown, shown_root))?;
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
        .map_err(|e| beneath_error(&e, "read", shown, shown_root))?;
    let read = u64::try_from(bytes.len()).unwrap_or(u64::MAX);
    if read > MAX_FILE_BYTES {
        return Err(too_large(read));
    }
    Ok(bytes)
}

/// Opens `relative` beneath `root` for reading, refusing anything but a regular file. The open is non-blocking,
/// so a FIFO (or device) swapped in after `read_beneath`'s check cannot block the host's thread in `open`, and
/// `O_NOCTTY` keeps a terminal from becoming the operator's; what was opened is checked again on the descriptor.
fn open_file(
    root: &Dir,
    relative: &Path,
    shown_root: &str,
    shown: &str,
) -> Result<File, HostError> {
    let mut options = OpenOptions::new();
    options
        .read(true)
        .custom_flags(libc::O_NONBLOCK | libc::O_NOCTTY);
    let file = root
        .open_with(relative, &options)
        .map_err(|e| beneath_error(&e, "open", shown, shown_root))?;
    let metadata = file
        .metadata()
        .map_err(|e| beneath_error(&e, "read", shown, shown_root))?;
    regular_file(&metadata, shown)?;
    Ok(file)
}

/// Only regular files are read. Anything else is `Invalid`, like a directory: the path is inside the root (so not
/// `Denied`, which this module keeps for containment, permissions and grants), but it names nothing a plugin can
/// read as a file.
fn regular_file(metadata: &Metadata, shown: &str) -> Result<(), HostError> {
    let kind = metadata.file_type();
    if kind.is_file() {
        return Ok(());
    }
    if kind.is_dir() {
        return Err(HostError::Invalid(format!("read {shown}: is a directory")));
    }
    let what = if kind.is_fifo() {
        "a FIFO"
    } else if kind.is_socket() {
        "a socket"
    } else if kind.is_char_device() {
        "a character device"
    } else if kind.is_block_device() {
        "a block device"
    } else {
        "a special file"
    };
    Err(HostError::Invalid(format!(
        "read {shown}: not a regular file ({what}); plugins may read only regular files"
    )))
}

/// cap-std reports a path that would resolve outside its directory as `PermissionDenied` with no OS error code
/// (its own error; a `..` or symlink out, or `EXDEV` from `openat2`), where the kernel's `EACCES` carries
/// its errno.
fn is_escape(e: &io::Error) -> bool {
    e.kind() == io::ErrorKind::PermissionDenied && e.raw_os_error().is_none()
}

/// An error from a call beneath the root: an escape (the lexical check already refused `..` above the root, so
/// only a symlink can lead out) is `Denied`, anything else as `io_error` says.
fn beneath_error(e: &io::Error, what: &str, shown: &str, shown_root: &str) -> HostError {
    if is_escape(e) {
        HostError::Denied(format!(
            "{shown} leads outside templateRoot {shown_root:?} through a symlink"
        ))
    } else {
        io_error(&format!("{what} {shown}"), e)
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

/// What `files` serves with: the directories plugins may read under (the operator's `--template-root`). None:
/// every file read is denied.
#[derive(Debug, Clone, Default)]
pub struct Services {
    pub(crate) roots: TemplateRoots,
}

/// `files` keeps nothing per call.
pub(crate) type State = ();

super::capability_view!(
    /// The `files` capability's view of a call.
    FilesCap,
    wit,
    files
);

impl wit::Host for FilesCap<'_> {
    async fn read(
        &mut self,
        ctx: Resource<CallContext>,
        root: String,
        path: String,
    ) -> Result<Vec<u8>, HostFailure> {
        let what = format!("files.read {path:?} under {root:?}");
        if !self.core.grants.allows(Capability::Files) {
            let reason = "the plugin is not granted \"files\"";
            return Err(self.core.denied(Capability::Files, &what, reason).into());
        }
        let budget = self.core.budget(&ctx, budget::READ)?;
        let roots = self.services.roots.clone();
        // Filesystem calls block; on tokio's blocking pool a slow disk (or network mount) never stalls the
        // threads that run other plugins' calls.
        let reading = async move {
            tokio::task::spawn_blocking(move || roots.read(&root, &path))
                .await
                .map_err(|failed| HostError::Other(format!("the read failed: {failed}")))?
        };
        match within(&what, budget, reading).await {
            // A path outside the allowed roots is a refusal like any other: logged and reported on the object
            // too. The plugin's answer stays the path's own message, which names the allowed roots.
            Err(HostError::Denied(reason)) => {
                self.core.denied(Capability::Files, &what, &reason);
                Err(HostError::Denied(reason).into())
            }
            answer => Ok(answer?),
        }
    }
}

#[cfg(test)]
mod tests {
    use std::os::unix::ffi::OsStrExt as _;
    use std::os::unix::fs::symlink;
    use std::os::unix::net::UnixListener;
    use std::sync::mpsc;
    use std::time::Duration;

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

    /// A FIFO at `path`.
    fn mkfifo(path: &Path) {
        let c_path = std::ffi::CString::new(path.as_os_str().as_bytes()).unwrap();
        // SAFETY: `c_path` is a NUL-terminated string that outlives the call.
        let made = unsafe { libc::mkfifo(c_path.as_ptr(), 0o600) };
        assert_eq!(made, 0, "mkfifo {path:?}: {}", io::Error::last_os_error());
    }

    /// `f`'s result, or a failure if it takes over 10 s (a blocked `open` would otherwise hang the test run; the
    /// stuck thread is left behind).
    fn promptly<T: Send + 'static>(f: impl FnOnce() -> T + Send + 'static) -> T {
        let (done, result) = mpsc::channel();
        std::thread::spawn(move || {
            let _ = done.send(f());
        });
        result
            .recv_timeout(Duration::from_secs(10))
            .expect("the read must not block")
    }

    #[test]
    fn fifos_sockets_and_devices_are_refused_without_blocking() {
        let l = layout();
        let site = Path::new(&l.site);
        mkfifo(&site.join("pipe"));
        symlink("pipe", site.join("to-pipe")).unwrap();
        let _socket = UnixListener::bind(site.join("sock")).unwrap();
        let roots = TemplateRoots::new([&l.templates]);
        let root = l.site.clone();
        let results = promptly(move || ["pipe", "to-pipe", "sock"].map(|p| roots.read(&root, p)));
        assert_eq!(
            results,
            [
                Err(HostError::Invalid(
                    "read pipe: not a regular file (a FIFO); plugins may read only regular files".into()
                )),
                Err(HostError::Invalid(
                    "read to-pipe: not a regular file (a FIFO); plugins may read only regular files".into()
                )),
                Err(HostError::Invalid(
                    "read sock: not a regular file (a socket); plugins may read only regular files".into()
                )),
            ]
        );
        // A device inside an allowed root (the admin allowed `/dev`, say) is refused the same way.
        let devices = TemplateRoots::new(["/dev"]);
        assert_eq!(
            promptly(move || devices.read("/dev", "null")),
            Err(HostError::Invalid(
                "read null: not a regular file (a character device); plugins may read only regular files".into()
            ))
        );
    }

    /// The check before opening can be raced (a FIFO swapped in for a checked file): the open itself must not
    /// block either, and what was opened is refused.
    #[test]
    fn opening_a_fifo_never_blocks() {
        let l = layout();
        mkfifo(&Path::new(&l.site).join("pipe"));
        let site = l.site.clone();
        let opened = promptly(move || {
            let dir = Dir::open_ambient_dir(&site, ambient_authority()).unwrap();
            open_file(&dir, Path::new("pipe"), &site, "pipe").map(|_| ())
        });
        assert_eq!(
            opened,
            Err(HostError::Invalid(
                "read pipe: not a regular file (a FIFO); plugins may read only regular files"
                    .into()
            ))
        );
    }

    #[test]
    fn a_symlink_inside_the_root_is_followed() {
        let l = layout();
        let site = Path::new(&l.site);
        symlink("nested/m.yaml", site.join("alias")).unwrap();
        let roots = TemplateRoots::new([&l.templates]);
        assert_eq!(roots.read(&l.site, "alias").unwrap(), b"kind: ConfigMap\n");
        // A root reached through a symlink that stays inside the allowed directory.
        symlink("site", l.templates.join("current")).unwrap();
        let current = format!("{}/current", l.templates.display());
        assert_eq!(
            roots.read(&current, "patch.yaml").unwrap(),
            b"machine: {}\n"
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

#[cfg(test)]
mod grant_checks {
    use serde_json::json;
    use wit::Host as _;

    use super::*;
    use crate::capabilities::call::testing::TestCall;

    async fn read(
        grants: &[&str],
        roots: &[&Path],
        root: &Path,
        path: &str,
    ) -> (TestCall, Result<Vec<u8>, HostFailure>) {
        let mut call = TestCall::new(grants, json!({}), &[]);
        let services = Services {
            roots: TemplateRoots::new(roots.iter().map(|r| r.to_path_buf())),
        };
        let ctx = call.ctx();
        let answer = FilesCap::over(&mut call.core, &mut (), &services)
            .read(ctx, root.display().to_string(), path.into())
            .await;
        (call, answer)
    }

    #[tokio::test]
    async fn a_file_is_read_only_with_the_files_grant_and_only_under_an_allowed_root() {
        let allowed = tempfile::tempdir().expect("a directory");
        std::fs::write(allowed.path().join("a.yaml"), "a: 1").expect("a file");
        let elsewhere = tempfile::tempdir().expect("a directory");
        std::fs::write(elsewhere.path().join("key"), "secret").expect("a file");

        let (call, answer) = read(&[], &[allowed.path()], allowed.path(), "a.yaml").await;
        call.assert_denied(answer, "files", "a.yaml", "not granted \"files\"");
        // Refusals of a root or path answer the path's own message, and are recorded as every refusal is.
        let refused = |call: &TestCall, answer: Result<Vec<u8>, HostFailure>, why: &str| {
            let Err(HostFailure::Host(HostError::Denied(message))) = answer else {
                panic!("expected a denial ({why}), got {answer:?}")
            };
            assert!(message.contains(why), "{message}");
            let denial = call.core.denials.last().expect("the refusal is recorded");
            assert_eq!(denial.capability, "files");
            assert!(denial.reason.contains(why), "{denial:?}");
        };
        let (call, answer) = read(&["files"], &[], allowed.path(), "a.yaml").await;
        refused(&call, answer, "allows no template roots");
        let (call, answer) = read(&["files"], &[allowed.path()], elsewhere.path(), "key").await;
        refused(&call, answer, "is not an allowed template root");
        let (call, answer) = read(&["files"], &[allowed.path()], allowed.path(), "../key").await;
        assert!(!format!("{answer:?}").contains("secret"), "{answer:?}");
        refused(&call, answer, "outside templateRoot");
        let (call, answer) = read(&["files"], &[allowed.path()], allowed.path(), "a.yaml").await;
        call.assert_allowed(&answer);
        assert_eq!(answer.ok(), Some(b"a: 1".to_vec()));
    }
}
