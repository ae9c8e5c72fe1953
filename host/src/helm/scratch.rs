//! The Helm worker's private scratch directory.
//!
//! Helm writes a workload cluster's kubeconfig, downloaded charts and a chart source's TLS keys into its temporary
//! directory, and removes them when an action ends. A worker that dies mid-action (its memory limit, a Go fatal
//! error, a cancel past its grace, the host's own death) leaves them behind, and in the chart's deployment the
//! temporary directory is an `emptyDir` that outlives container restarts. So each worker gets a directory of its own
//! (mode 0700) as `TMPDIR`, removed once the worker has exited; and a host starting a worker first removes the
//! directories whose host is gone.
//!
//! Whether a directory's host is alive is told by an advisory lock (`flock`) on a file inside it, held by the
//! host for the directory's life: the kernel releases it when the host exits, however it exits, and process IDs
//! (always 1 in a container) play no part. The lock file is opened close-on-exec, so the worker does not hold it.

use std::fs::{DirBuilder, File};
use std::io;
use std::os::unix::fs::{DirBuilderExt as _, OpenOptionsExt as _};
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::{Duration, SystemTime};

/// The start of every scratch directory's name.
const PREFIX: &str = "omni-operator-helm-scratch-";
/// The file inside a scratch directory whose lock says its host is alive.
const OWNER: &str = ".owner";
/// A directory without its lock file is one a host is creating right now, unless it is older than this.
const UNLOCKED_GRACE: Duration = Duration::from_secs(60);

/// One worker's scratch directory; removed (with everything the worker left in it) when dropped.
#[derive(Debug)]
pub struct Scratch {
    path: PathBuf,
    /// Held for the directory's life: a lock a sweep cannot take.
    _owner: File,
}

impl Scratch {
    /// Removes the abandoned scratch directories under `base`, then makes a new one there.
    pub fn create(base: &Path) -> io::Result<Scratch> {
        sweep(base);
        static NEXT: AtomicU64 = AtomicU64::new(0);
        let nanos = SystemTime::now()
            .duration_since(SystemTime::UNIX_EPOCH)
            .map(|d| d.subsec_nanos())
            .unwrap_or_default();
        let path = base.join(format!(
            "{PREFIX}{}-{}-{nanos:09}",
            std::process::id(),
            NEXT.fetch_add(1, Ordering::Relaxed)
        ));
        // `create` fails on an existing path: the directory is ours, never one planted under our name.
        DirBuilder::new().mode(0o700).create(&path)?;
        let owner = File::options()
            .write(true)
            .create_new(true)
            .mode(0o600)
            .open(path.join(OWNER))
            .and_then(|f| {
                f.try_lock().map_err(io::Error::from)?;
                Ok(f)
            });
        match owner {
            Ok(owner) => Ok(Scratch {
                path,
                _owner: owner,
            }),
            Err(e) => {
                let _ = std::fs::remove_dir_all(&path);
                Err(e)
            }
        }
    }

    pub fn path(&self) -> &Path {
        &self.path
    }
}

impl Drop for Scratch {
    fn drop(&mut self) {
        if let Err(e) = std::fs::remove_dir_all(&self.path)
            && e.kind() != io::ErrorKind::NotFound
        {
            tracing::warn!(path = %self.path.display(), "removing the Helm worker's scratch directory: {e}");
        }
    }
}

/// Removes every scratch directory under `base` whose host is gone: its lock file can be locked, or it has none
/// and is older than [`UNLOCKED_GRACE`]. Anything that is not a directory of ours (a symlink, another user's
/// directory) is left alone; failures are logged, never fatal (a new worker does not depend on them).
fn sweep(base: &Path) {
    let Ok(entries) = std::fs::read_dir(base) else {
        return;
    };
    for entry in entries.flatten() {
        if !entry.file_name().to_string_lossy().starts_with(PREFIX) {
            continue;
        }
        let path = entry.path();
        // `symlink_metadata`: a symlink named like ours is not followed.
        let Ok(meta) = std::fs::symlink_metadata(&path) else {
            continue;
        };
        if !meta.is_dir() || !abandoned(&path, &meta) {
            continue;
        }
        match std::fs::remove_dir_all(&path) {
            Ok(()) => {
                tracing::info!(path = %path.display(), "removed a Helm worker's scratch directory its host left behind")
            }
            Err(e) if e.kind() == io::ErrorKind::NotFound => {}
            Err(e) => {
                tracing::warn!(path = %path.display(), "removing an abandoned Helm scratch directory: {e}")
            }
        }
    }
}

/// Whether the scratch directory at `path` has no live host.
fn abandoned(path: &Path, meta: &std::fs::Metadata) -> bool {
    match File::open(path.join(OWNER)) {
        // Free: its host is gone. Two hosts sweeping at once may both remove it; the second finds it gone.
        Ok(owner) => owner.try_lock().is_ok(),
        Err(e) if e.kind() == io::ErrorKind::NotFound => meta
            .modified()
            .ok()
            .and_then(|m| m.elapsed().ok())
            .is_some_and(|age| age > UNLOCKED_GRACE),
        Err(_) => false,
    }
}

#[cfg(test)]
mod tests {
    use std::os::unix::fs::PermissionsExt as _;

    use super::*;

    fn scratch_dirs(base: &Path) -> Vec<PathBuf> {
        let mut dirs: Vec<PathBuf> = std::fs::read_dir(base)
            .unwrap()
            .map(|e| e.unwrap().path())
            .filter(|p| p.file_name().unwrap().to_string_lossy().starts_with(PREFIX))
            .collect();
        dirs.sort();
        dirs
    }

    #[test]
    fn a_scratch_directory_is_private_and_gone_with_what_it_held_when_dropped() {
        let base = tempfile::tempdir().unwrap();
        let scratch = Scratch::create(base.path()).unwrap();
        let mode = std::fs::metadata(scratch.path())
            .unwrap()
            .permissions()
            .mode();
        assert_eq!(mode & 0o777, 0o700);
        std::fs::write(scratch.path().join("helm-c-kubeconfig-1"), "token: x").unwrap();
        std::fs::create_dir(scratch.path().join("helm-c-chart-1")).unwrap();
        let path = scratch.path().to_path_buf();
        drop(scratch);
        assert!(!path.exists());
        assert_eq!(scratch_dirs(base.path()), Vec::<PathBuf>::new());
    }

    /// Another host's directory is kept while its lock is held (even from this process: the lock is per open
    /// file, not per process) and removed once it is free, as after that host died; one without a lock file is kept
    /// while it is young (its host is making it); nothing not ours is touched.
    #[test]
    fn a_new_scratch_removes_abandoned_directories_and_keeps_live_ones() {
        let base = tempfile::tempdir().unwrap();
        let mine = Scratch::create(base.path()).unwrap();
        std::fs::write(mine.path().join("helm-c-kubeconfig-1"), "token: x").unwrap();

        // Another host's, alive: its lock held.
        let alive = base.path().join(format!("{PREFIX}1-0-000000000"));
        std::fs::create_dir(&alive).unwrap();
        let held = File::create(alive.join(OWNER)).unwrap();
        held.lock().unwrap();
        std::fs::write(alive.join("helm-c-kubeconfig-2"), "token: y").unwrap();
        // A dead host's: its lock file there, nobody holding it.
        let dead = base.path().join(format!("{PREFIX}2-0-000000000"));
        std::fs::create_dir(&dead).unwrap();
        std::fs::write(dead.join(OWNER), "").unwrap();
        std::fs::write(dead.join("helm-c-kubeconfig-3"), "token: z").unwrap();
        // One a host is making right now: no lock file yet, just created.
        let young = base.path().join(format!("{PREFIX}3-0-000000000"));
        std::fs::create_dir(&young).unwrap();
        // Not ours: another name, and a symlink with our name pointing elsewhere.
        let other = base.path().join("something-else");
        std::fs::create_dir(&other).unwrap();
        std::fs::write(other.join(OWNER), "").unwrap();
        let target = tempfile::tempdir().unwrap();
        std::fs::write(target.path().join(OWNER), "").unwrap();
        std::fs::write(target.path().join("precious"), "keep").unwrap();
        let link = base.path().join(format!("{PREFIX}4-0-000000000"));
        std::os::unix::fs::symlink(target.path(), &link).unwrap();

        let second = Scratch::create(base.path()).unwrap();
        assert!(!dead.exists(), "the dead host's directory is removed");
        assert!(
            alive.join("helm-c-kubeconfig-2").exists(),
            "the live host's is kept"
        );
        assert!(
            mine.path().join("helm-c-kubeconfig-1").exists(),
            "and so is this host's"
        );
        assert!(young.exists());
        assert!(other.exists());
        assert!(
            target.path().join("precious").exists(),
            "a symlink is not followed"
        );
        assert!(link.symlink_metadata().is_ok(), "nor removed");
        assert_ne!(second.path(), mine.path());

        // The other host dies: its lock is released, and the next scratch removes its directory.
        drop(held);
        let _third = Scratch::create(base.path()).unwrap();
        assert!(!alive.exists());
        assert!(mine.path().exists() && second.path().exists());
    }
}
