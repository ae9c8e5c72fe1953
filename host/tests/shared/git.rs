//! `git` for the tests' set-up (repositories to serve, revisions to plan): the command-line tool, as a person or
//! a CI job runs it, with an identity to commit under.

use std::path::Path;

/// Runs `git` with `args` in `dir`, for set-up; panics with its output when it fails.
pub fn git(dir: &Path, args: &[&str]) -> String {
    let out = std::process::Command::new("git")
        .args([
            "-c",
            "user.name=test",
            "-c",
            "user.email=test@example.com",
            "-c",
            "init.defaultBranch=main",
        ])
        .args(args)
        .current_dir(dir)
        .output()
        .expect("git runs");
    assert!(
        out.status.success(),
        "git {args:?}: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    String::from_utf8_lossy(&out.stdout).trim().to_string()
}
