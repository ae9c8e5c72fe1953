//! The manifests at a revision of a Git repository (`omni-operator plan --git OLD..NEW`): the files under the
//! paths given, read from the revision's tree as [`super::manifests::load`] reads a directory (recursively, in
//! path order, YAML and JSON, dot files and kustomize's build file skipped). The work tree is never touched.

use std::path::{Path, PathBuf};

use anyhow::{Context as _, bail};

use super::manifests::{Manifest, is_manifest_file, parse};

/// Two revisions, as `--git OLD..NEW` names them.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Range {
    pub old: String,
    pub new: String,
}

impl std::str::FromStr for Range {
    type Err = String;

    fn from_str(s: &str) -> Result<Self, String> {
        match s.split_once("..") {
            Some((old, new)) if !old.is_empty() && !new.is_empty() && !new.starts_with('.') => {
                Ok(Range {
                    old: old.to_string(),
                    new: new.to_string(),
                })
            }
            _ => Err(format!(
                "{s:?}: expected two revisions as OLD..NEW (origin/main..HEAD)"
            )),
        }
    }
}

/// The manifests under `paths` (from the repository's root) at `revision` of the repository holding `repo`. A
/// path the revision does not have holds nothing at it (a directory added or removed between two revisions).
pub fn load(repo: &Path, revision: &str, paths: &[PathBuf]) -> anyhow::Result<Vec<Manifest>> {
    let repository = git2::Repository::discover(repo)
        .with_context(|| format!("--repo {}: not in a Git repository", repo.display()))?;
    let tree = repository
        .revparse_single(revision)
        .and_then(|o| o.peel_to_tree())
        .with_context(|| format!("--git: revision {revision:?} is not in the repository"))?;
    let mut out = Vec::new();
    for path in paths {
        let relative = path.strip_prefix("./").unwrap_or(path);
        if relative.as_os_str().is_empty() || relative == Path::new(".") {
            walk(&repository, &tree, revision, Path::new(""), &mut out)?;
            continue;
        }
        let entry = match tree.get_path(relative) {
            Ok(entry) => entry,
            Err(e) if e.code() == git2::ErrorCode::NotFound => continue,
            Err(e) => return Err(e).with_context(|| format!("{revision}:{}", relative.display())),
        };
        read_entry(&repository, &entry, revision, relative, &mut out)?;
    }
    Ok(out)
}

fn read_entry(
    repository: &git2::Repository,
    entry: &git2::TreeEntry<'_>,
    revision: &str,
    path: &Path,
    out: &mut Vec<Manifest>,
) -> anyhow::Result<()> {
    let at = || format!("{revision}:{}", path.display());
    let object = entry.to_object(repository).with_context(at)?;
    match entry.kind() {
        Some(git2::ObjectType::Tree) => {
            let tree = object.peel_to_tree().with_context(at)?;
            walk(repository, &tree, revision, path, out)
        }
        Some(git2::ObjectType::Blob) => {
            let blob = object.peel_to_blob().with_context(at)?;
            let Ok(text) = std::str::from_utf8(blob.content()) else {
                bail!("{}: not UTF-8 text", at());
            };
            out.extend(parse(text, &at())?);
            Ok(())
        }
        // A submodule's commit holds no files of this repository.
        _ => Ok(()),
    }
}

/// Every manifest file in `tree` (at `path`), depth first in name order.
fn walk(
    repository: &git2::Repository,
    tree: &git2::Tree<'_>,
    revision: &str,
    path: &Path,
    out: &mut Vec<Manifest>,
) -> anyhow::Result<()> {
    let mut entries: Vec<git2::TreeEntry<'_>> = tree.iter().collect();
    entries.sort_by(|a, b| a.name_bytes().cmp(b.name_bytes()));
    for entry in entries {
        let Some(name) = entry.name().map(str::to_string) else {
            continue;
        };
        if name.starts_with('.') {
            continue;
        }
        let child = path.join(&name);
        match entry.kind() {
            Some(git2::ObjectType::Tree) => read_entry(repository, &entry, revision, &child, out)?,
            Some(git2::ObjectType::Blob) if is_manifest_file(&name) => {
                read_entry(repository, &entry, revision, &child, out)?
            }
            _ => {}
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn commit(repo: &git2::Repository, files: &[(&str, &str)], message: &str) -> String {
        let workdir = repo.workdir().expect("a work tree");
        let mut index = repo.index().expect("index");
        index.clear().expect("cleared");
        for (path, text) in files {
            let full = workdir.join(path);
            std::fs::create_dir_all(full.parent().expect("a parent")).expect("dirs");
            std::fs::write(&full, text).expect("written");
            index.add_path(Path::new(path)).expect("added");
        }
        let tree = repo
            .find_tree(index.write_tree().expect("tree"))
            .expect("tree");
        let signature = git2::Signature::now("t", "t@example.com").expect("signature");
        let parent = repo.head().ok().and_then(|h| h.peel_to_commit().ok());
        let parents: Vec<&git2::Commit<'_>> = parent.iter().collect();
        repo.commit(
            Some("HEAD"),
            &signature,
            &signature,
            message,
            &tree,
            &parents,
        )
        .expect("committed")
        .to_string()
    }

    const CM: &str = "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: ";

    #[test]
    fn each_revision_is_read_from_its_own_tree() {
        let dir = tempfile::tempdir().expect("tempdir");
        let repo = git2::Repository::init(dir.path()).expect("init");
        let first = commit(
            &repo,
            &[
                ("clusters/a.yaml", &format!("{CM}a\n")),
                ("clusters/sub/b.yml", &format!("{CM}b\n---\n{CM}c\n")),
                ("clusters/kustomization.yaml", "resources: [a.yaml]\n"),
                ("clusters/README.md", "not a manifest"),
                ("other/x.yaml", &format!("{CM}x\n")),
            ],
            "first",
        );
        commit(
            &repo,
            &[("clusters/a.yaml", &format!("{CM}a2\n"))],
            "second",
        );
        let names = |rev: &str, paths: &[&str]| -> Vec<String> {
            let paths: Vec<PathBuf> = paths.iter().map(PathBuf::from).collect();
            load(dir.path(), rev, &paths)
                .expect("loaded")
                .into_iter()
                .map(|m| {
                    format!(
                        "{} {}",
                        m.source,
                        m.object["metadata"]["name"].as_str().unwrap_or("?")
                    )
                })
                .collect()
        };
        assert_eq!(
            names(&first, &["clusters"]),
            [
                format!("{first}:clusters/a.yaml#1 a"),
                format!("{first}:clusters/sub/b.yml#1 b"),
                format!("{first}:clusters/sub/b.yml#2 c"),
            ]
        );
        assert_eq!(names("HEAD", &["clusters"]), ["HEAD:clusters/a.yaml#1 a2"]);
        assert_eq!(
            names("HEAD~1", &["./other/x.yaml"]),
            ["HEAD~1:other/x.yaml#1 x"]
        );
        assert!(
            names("HEAD", &["gone"]).is_empty(),
            "a path a revision lacks holds nothing"
        );
        let err = load(dir.path(), "nope", &[PathBuf::from(".")]).expect_err("no such revision");
        assert_eq!(
            err.to_string(),
            "--git: revision \"nope\" is not in the repository"
        );
    }

    #[test]
    fn a_range_is_two_revisions() {
        assert_eq!(
            "origin/main..HEAD".parse::<Range>(),
            Ok(Range {
                old: "origin/main".into(),
                new: "HEAD".into()
            })
        );
        for bad in ["HEAD", "..HEAD", "main..", "a...b"] {
            assert!(bad.parse::<Range>().is_err(), "{bad}");
        }
    }
}
