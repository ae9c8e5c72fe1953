//! The host's layering, as a test: which top-level modules may use which. The graph must stay acyclic, and a
//! new edge has to be added here on purpose. Run it with `cargo test -p omni-operator --lib layering`.
//!
//! ```text
//! contract, helm ◄── omni, secrets ◄── capabilities ◄── runtime ◄── controllers, defaults ◄── operator, stack ◄── dev
//! ```

use std::collections::{BTreeMap, BTreeSet};
use std::path::Path;

/// Each module and the modules it may use.
const ALLOWED: &[(&str, &[&str])] = &[
    ("contract", &[]),
    ("leader", &[]),
    ("shutdown", &[]),
    ("admission", &["runtime"]),
    ("endpoints", &["admission", "controllers", "runtime"]),
    ("helm", &[]),
    ("distribution", &["runtime"]),
    ("omni", &["contract"]),
    ("secrets", &["contract"]),
    ("capabilities", &["contract", "helm", "omni", "secrets"]),
    ("runtime", &["contract", "capabilities"]),
    (
        "controllers",
        &[
            "contract",
            "capabilities",
            "helm",
            "runtime",
            "omni",
            "secrets",
        ],
    ),
    ("defaults", &["capabilities", "runtime"]),
    (
        "platform",
        &[
            "capabilities",
            "contract",
            "controllers",
            "defaults",
            "distribution",
            "runtime",
        ],
    ),
    (
        "operator",
        &[
            "capabilities",
            "controllers",
            "defaults",
            "distribution",
            "platform",
            "runtime",
            "admission",
        ],
    ),
    (
        "stack",
        &["controllers", "defaults", "omni", "platform", "runtime"],
    ),
    ("testkit", &["capabilities", "contract", "runtime"]),
    (
        "dev",
        &[
            "capabilities",
            "controllers",
            "defaults",
            "helm",
            "omni",
            "operator",
            "runtime",
            "secrets",
            "stack",
            "admission",
            "endpoints",
            "shutdown",
        ],
    ),
];

/// Every `crate::<module>` a file or directory of `src/` mentions.
fn uses(path: &Path, found: &mut BTreeSet<String>) {
    if path.is_dir() {
        for entry in std::fs::read_dir(path).unwrap() {
            uses(&entry.unwrap().path(), found);
        }
        return;
    }
    let text = std::fs::read_to_string(path).unwrap();
    for (i, _) in text.match_indices("crate::") {
        let rest = &text[i + "crate::".len()..];
        let name: String = rest
            .chars()
            .take_while(|c| c.is_ascii_lowercase() || *c == '_')
            .collect();
        // `$crate::` in macros and `omni_operator::` paths are not this crate's modules.
        if !name.is_empty() && !text[..i].ends_with('$') {
            found.insert(name);
        }
    }
}

#[test]
fn modules_use_only_the_layers_below_them() {
    let src = Path::new(env!("CARGO_MANIFEST_DIR")).join("src");
    let allowed: BTreeMap<&str, &[&str]> = ALLOWED.iter().copied().collect();
    let mut problems = Vec::new();
    for (module, may) in &allowed {
        let mut found = BTreeSet::new();
        let dir = src.join(module);
        if dir.is_dir() {
            uses(&dir, &mut found);
        }
        let file = src.join(format!("{module}.rs"));
        if file.is_file() {
            uses(&file, &mut found);
        }
        assert!(
            !found.is_empty() || *module == "contract" || dir.is_dir() || file.is_file(),
            "no source for {module}"
        );
        for used in found {
            if used != *module
                && allowed.contains_key(used.as_str())
                && !may.contains(&used.as_str())
            {
                problems.push(format!("{module} uses {used}"));
            }
        }
    }
    assert!(problems.is_empty(), "layering broken: {problems:?}");
}

#[test]
fn the_allowed_graph_is_acyclic() {
    let allowed: BTreeMap<&str, &[&str]> = ALLOWED.iter().copied().collect();
    fn visit<'a>(
        m: &'a str,
        allowed: &BTreeMap<&'a str, &'a [&'a str]>,
        path: &mut Vec<&'a str>,
        done: &mut BTreeSet<&'a str>,
    ) {
        assert!(!path.contains(&m), "cycle: {path:?} -> {m}");
        if done.contains(m) {
            return;
        }
        path.push(m);
        for next in allowed.get(m).copied().unwrap_or_default() {
            visit(next, allowed, path, done);
        }
        path.pop();
        done.insert(m);
    }
    let mut done = BTreeSet::new();
    for m in allowed.keys() {
        visit(m, &allowed, &mut Vec::new(), &mut done);
    }
    // Every top-level module of the crate is in the table.
    let src = Path::new(env!("CARGO_MANIFEST_DIR")).join("src");
    let lib = std::fs::read_to_string(src.join("lib.rs")).unwrap();
    for line in lib.lines().filter_map(|l| l.strip_prefix("pub mod ")) {
        let name = line.trim_end_matches(';');
        assert!(
            allowed.contains_key(name),
            "module {name} is missing from ALLOWED"
        );
    }
}
