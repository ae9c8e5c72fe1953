//! Charts from Git repositories, in the Helm worker (libgit2 stays out of the host process, as Helm does): a
//! reference resolved to its commit (`ls-remote`), and the chart directory of a commit written out for Helm to
//! load. Over HTTPS with basic-auth credentials and, when the object names one, a CA of its own (checked with
//! rustls against that CA instead of the system's roots).

use std::path::{Path, PathBuf};
use std::sync::Arc;

use git2::{CertificateCheckStatus, Cred, FetchOptions, RemoteCallbacks};

use super::protocol::{ChartAuth, GitRef};

#[derive(Debug, thiserror::Error)]
pub enum GitError {
    #[error("Git repository {url}: {message}")]
    Git { url: String, message: String },
    #[error("Git repository {url}: {what} not found")]
    NotFound { url: String, what: String },
    #[error("writing the chart from {url}: {source}")]
    Io {
        url: String,
        #[source]
        source: std::io::Error,
    },
}

fn git_error(url: &str) -> impl Fn(git2::Error) -> GitError + '_ {
    move |e| GitError::Git {
        url: url.to_string(),
        message: e.message().to_string(),
    }
}

/// Callbacks that present `auth`'s credentials once (a second ask means they were refused) and check the server's
/// certificate against `auth`'s CA when it has one.
fn callbacks(auth: Option<&ChartAuth>) -> RemoteCallbacks<'static> {
    let mut callbacks = RemoteCallbacks::new();
    let credentials = auth.and_then(|a| Some((a.username.clone()?, a.password.clone()?)));
    let mut asked = false;
    callbacks.credentials(move |_url, _user, _allowed| match &credentials {
        Some((user, password)) if !asked => {
            asked = true;
            Cred::userpass_plaintext(user, password)
        }
        _ => Err(git2::Error::from_str(
            "the repository asks for credentials (name a Secret with username and password in chart.secretRef)",
        )),
    });
    if let Some(verifier) = auth.and_then(|a| a.ca_pem.as_deref()).and_then(ca_verifier) {
        callbacks.certificate_check(move |cert, host| {
            let der = cert
                .as_x509()
                .map(|x| x.data().to_vec())
                .ok_or_else(|| git2::Error::from_str("the server's certificate is not X.509"))?;
            let name = rustls::pki_types::ServerName::try_from(host.to_string()).map_err(|_| {
                git2::Error::from_str("the server's name is not a valid DNS name or IP")
            })?;
            verifier
                .verify_server_cert(
                    &rustls::pki_types::CertificateDer::from(der),
                    &[],
                    &name,
                    &[],
                    rustls::pki_types::UnixTime::now(),
                )
                .map(|_| CertificateCheckStatus::CertificateOk)
                .map_err(|e| git2::Error::from_str(&format!("the server's certificate: {e}")))
        });
    }
    callbacks
}

/// A verifier trusting only the PEM CA `ca`; None when it holds no certificate.
fn ca_verifier(ca: &str) -> Option<Arc<dyn rustls::client::danger::ServerCertVerifier>> {
    use rustls::pki_types::pem::PemObject as _;
    let mut roots = rustls::RootCertStore::empty();
    for cert in rustls::pki_types::CertificateDer::pem_slice_iter(ca.as_bytes()).flatten() {
        let _ = roots.add(cert);
    }
    if roots.is_empty() {
        return None;
    }
    let provider = Arc::new(rustls::crypto::ring::default_provider());
    rustls::client::WebPkiServerVerifier::builder_with_provider(Arc::new(roots), provider)
        .build()
        .ok()
        .map(|v| v as Arc<dyn rustls::client::danger::ServerCertVerifier>)
}

/// The commit `reference` names in the repository at `url`, asked of the server (`git ls-remote`).
pub fn resolve(
    url: &str,
    reference: &GitRef,
    auth: Option<&ChartAuth>,
) -> Result<String, GitError> {
    let wanted = match reference {
        GitRef::Commit(sha) => {
            if sha.len() == 40 && sha.bytes().all(|b| b.is_ascii_hexdigit()) {
                return Ok(sha.to_ascii_lowercase());
            }
            return Err(GitError::NotFound {
                url: url.into(),
                what: format!("commit {sha:?} (a commit is named by its 40 hex digits)"),
            });
        }
        GitRef::Branch(b) => vec![format!("refs/heads/{b}")],
        // An annotated tag's peeled entry names the commit; a lightweight tag's own entry does.
        GitRef::Tag(t) => vec![format!("refs/tags/{t}^{{}}"), format!("refs/tags/{t}")],
    };
    let mut remote = git2::Remote::create_detached(url).map_err(git_error(url))?;
    let connection = remote
        .connect_auth(git2::Direction::Fetch, Some(callbacks(auth)), None)
        .map_err(git_error(url))?;
    let heads = connection.list().map_err(git_error(url))?;
    for name in &wanted {
        if let Some(head) = heads.iter().find(|h| h.name() == name) {
            return Ok(head.oid().to_string());
        }
    }
    Err(GitError::NotFound {
        url: url.into(),
        what: reference.to_string(),
    })
}

/// The directory `path` of `commit`, written out under `cache` (kept: a commit never changes, so the next action
/// on it reads the files already there). Fetches what the cache's clone of the repository lacks. The cache is
/// kept apart per repository and credentials, so a commit fetched with one object's credentials is never handed to
/// a request without them.
pub fn checkout(
    url: &str,
    commit: &str,
    path: &str,
    cache: &Path,
    auth: Option<&ChartAuth>,
) -> Result<PathBuf, GitError> {
    let io = |source| GitError::Io {
        url: url.into(),
        source,
    };
    let path = path.trim_matches('/');
    // Keyed by the credentials too: what one object's credentials fetched never serves another's request.
    let key = hex(&format!("{url}\0{}", ChartAuth::fingerprint(auth)));
    let out = cache.join(&key).join(format!("{commit}-{}", hex(path)));
    let chart = out.join("chart");
    if chart.is_dir() {
        return Ok(chart);
    }
    let bare = cache.join(&key).join("repository.git");
    let repo = match git2::Repository::open_bare(&bare) {
        Ok(r) => r,
        Err(_) => git2::Repository::init_bare(&bare).map_err(git_error(url))?,
    };
    let oid = git2::Oid::from_str(commit).map_err(git_error(url))?;
    if repo.find_commit(oid).is_err() {
        let mut remote = repo.remote_anonymous(url).map_err(git_error(url))?;
        let mut options = FetchOptions::new();
        options.remote_callbacks(callbacks(auth));
        remote
            .fetch(
                &[
                    "+refs/heads/*:refs/remotes/origin/*",
                    "+refs/tags/*:refs/tags/*",
                ],
                Some(&mut options),
                None,
            )
            .map_err(git_error(url))?;
    }
    let found = repo.find_commit(oid).map_err(|_| GitError::NotFound {
        url: url.into(),
        what: format!("commit {commit}"),
    })?;
    let tree = found.tree().map_err(git_error(url))?;
    let dir = match path {
        "" | "." => tree,
        p => {
            let entry = tree
                .get_path(Path::new(p))
                .map_err(|_| GitError::NotFound {
                    url: url.into(),
                    what: format!("path {p:?} at commit {commit}"),
                })?;
            repo.find_tree(entry.id()).map_err(|_| GitError::NotFound {
                url: url.into(),
                what: format!("directory {p:?} at commit {commit}"),
            })?
        }
    };
    // Written beside, then renamed into place: a reader never sees half a chart.
    let partial = out.join(format!("partial-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&partial);
    write_tree(&repo, &dir, &partial, url)?;
    std::fs::rename(&partial, &chart).map_err(io)?;
    Ok(chart)
}

fn write_tree(
    repo: &git2::Repository,
    tree: &git2::Tree<'_>,
    to: &Path,
    url: &str,
) -> Result<(), GitError> {
    let io = |source| GitError::Io {
        url: url.into(),
        source,
    };
    std::fs::create_dir_all(to).map_err(io)?;
    for entry in tree.iter() {
        let Some(name) = entry.name() else { continue };
        // Names Git allows but a file system must not see.
        if name.is_empty() || name == "." || name == ".." || name.contains('/') {
            continue;
        }
        match entry.kind() {
            Some(git2::ObjectType::Tree) => {
                let sub = repo.find_tree(entry.id()).map_err(git_error(url))?;
                write_tree(repo, &sub, &to.join(name), url)?;
            }
            Some(git2::ObjectType::Blob) if entry.filemode() != 0o120000 => {
                let blob = repo.find_blob(entry.id()).map_err(git_error(url))?;
                std::fs::write(to.join(name), blob.content()).map_err(io)?;
            }
            // Symbolic links (they could point out of the chart) and submodules are left out.
            _ => {}
        }
    }
    Ok(())
}

/// A short, file-name-safe digest of `text`.
fn hex(text: &str) -> String {
    super::sha256_prefix(text.as_bytes(), 24)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn commit_in(dir: &Path) -> (String, String) {
        let repo = git2::Repository::init(dir).unwrap();
        std::fs::create_dir_all(dir.join("charts/demo/templates")).unwrap();
        std::fs::write(
            dir.join("charts/demo/Chart.yaml"),
            "apiVersion: v2\nname: demo\nversion: 1.0.0\n",
        )
        .unwrap();
        std::fs::write(
            dir.join("charts/demo/templates/cm.yaml"),
            "kind: ConfigMap\n",
        )
        .unwrap();
        let mut index = repo.index().unwrap();
        index
            .add_all(["*"].iter(), git2::IndexAddOption::DEFAULT, None)
            .unwrap();
        index.write().unwrap();
        let tree = repo.find_tree(index.write_tree().unwrap()).unwrap();
        let sig = git2::Signature::now("t", "t@example.com").unwrap();
        let oid = repo
            .commit(Some("HEAD"), &sig, &sig, "chart", &tree, &[])
            .unwrap();
        let branch = repo.head().unwrap().shorthand().unwrap().to_string();
        (oid.to_string(), branch)
    }

    #[test]
    fn a_branch_resolves_to_its_commit_and_the_charts_directory_is_written_out() {
        let src = tempfile::tempdir().unwrap();
        let (commit, branch) = commit_in(src.path());
        let url = format!("file://{}", src.path().display());
        assert_eq!(
            resolve(&url, &GitRef::Branch(branch), None).unwrap(),
            commit
        );
        assert!(matches!(
            resolve(&url, &GitRef::Branch("nope".into()), None),
            Err(GitError::NotFound { .. })
        ));
        let cache = tempfile::tempdir().unwrap();
        let chart = checkout(&url, &commit, "charts/demo", cache.path(), None).unwrap();
        assert!(
            std::fs::read_to_string(chart.join("Chart.yaml"))
                .unwrap()
                .contains("name: demo")
        );
        assert!(chart.join("templates/cm.yaml").is_file());
        // Cached: the same commit and path come back without a fetch.
        assert_eq!(
            checkout(&url, &commit, "charts/demo/", cache.path(), None).unwrap(),
            chart
        );
        assert!(matches!(
            checkout(&url, &commit, "charts/other", cache.path(), None),
            Err(GitError::NotFound { .. })
        ));
        // Other credentials never reach the anonymous checkout: they get a cache of their own.
        let auth = ChartAuth {
            username: Some("u".into()),
            password: Some("p".into()),
            ..Default::default()
        };
        let theirs = checkout(&url, &commit, "charts/demo", cache.path(), Some(&auth)).unwrap();
        assert_ne!(theirs, chart);
    }
}
