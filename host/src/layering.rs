//! The host's layering, as a test: which top-level modules may use which. The graph must stay acyclic, and a
//! new edge has to be added here on purpose. Run it with `cargo test -p omni-operator --lib layering`.
//!
//! ```text
//! registry ◄── contract, helm ◄── omni, secrets ◄── capabilities ◄── runtime ◄── controllers, defaults ◄── operator ◄── stack ◄── dev
//! ```
//!
//! Inside `capabilities`, each capability module (one per WIT interface) is a factor of its own: it may use the
//! call core (`capabilities/call`) and the items `capabilities` re-exports from the contract, never another
//! capability module; the call core uses no capability module.

use std::collections::{BTreeMap, BTreeSet};
use std::path::Path;

/// Each module and the modules it may use.
const ALLOWED: &[(&str, &[&str])] = &[
    ("contract", &[]),
    ("leader", &["contract"]),
    ("shutdown", &[]),
    ("admission", &["runtime"]),
    ("endpoints", &["admission", "controllers", "runtime"]),
    ("registry", &[]),
    ("helm", &["registry"]),
    ("distribution", &["registry", "runtime"]),
    ("omni", &["contract"]),
    ("dry_run", &[]),
    ("secrets", &["contract", "dry_run"]),
    (
        "capabilities",
        &["contract", "helm", "omni", "registry", "secrets"],
    ),
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
            "helm",
            "omni",
            "platform",
            "runtime",
            "admission",
        ],
    ),
    (
        "plan",
        &[
            "admission",
            "capabilities",
            "controllers",
            "dry_run",
            "helm",
            "omni",
            "runtime",
            "secrets",
        ],
    ),
    (
        "stack",
        &[
            "controllers",
            "defaults",
            "omni",
            "operator",
            "platform",
            "runtime",
        ],
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
            "plan",
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

/// The module paths a capability file names: every `super::…`, `super::super::…` and `crate::capabilities::…` it
/// mentions, resolved to the name of the `capabilities` child it reaches (`secrets`, `call`, …). `depth` is how
/// far below `capabilities` the file's module is (1 for `secrets.rs` or `helm/mod.rs`, 2 for `helm/values.rs`).
fn capability_children_named(text: &str, depth: usize) -> BTreeSet<String> {
    children_named(text, depth, "crate::capabilities::")
}

/// The children of module `parent` (spelled `crate::…::` in `crate_path`) that a file `depth` levels below it names.
fn children_named(text: &str, depth: usize, crate_path: &str) -> BTreeSet<String> {
    let mut found = BTreeSet::new();
    let ident = |rest: &str| -> Vec<String> {
        let first = |s: &str| -> String {
            s.trim_start()
                .chars()
                .take_while(|c| c.is_ascii_alphanumeric() || *c == '_')
                .collect()
        };
        match rest.strip_prefix('{') {
            // A grouped import: the first segment of every path in it.
            Some(group) => top_level_items(group).into_iter().map(first).collect(),
            None => vec![first(rest)],
        }
    };
    let prefixes = [crate_path.to_string(), "super::".repeat(depth)];
    for prefix in &prefixes {
        for (i, _) in text.match_indices(prefix.as_str()) {
            let before = &text[..i];
            // `super::super::x` seen from a shallower prefix, or `$crate::`, is not this prefix's match.
            if before.ends_with("super::") || before.ends_with('$') {
                continue;
            }
            let rest = &text[i + prefix.len()..];
            if rest.starts_with("super::") {
                continue;
            }
            for name in ident(rest) {
                if !name.is_empty() {
                    found.insert(name);
                }
            }
        }
    }
    found
}

#[test]
fn a_capability_uses_the_call_core_and_no_other_capability() {
    let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("src/capabilities");
    let mut capabilities = BTreeSet::new();
    for entry in std::fs::read_dir(&dir).unwrap() {
        let path = entry.unwrap().path();
        let name = path.file_stem().unwrap().to_string_lossy().into_owned();
        if name != "mod" {
            capabilities.insert(name);
        }
    }
    assert!(
        capabilities.contains("call") && capabilities.contains("helm") && capabilities.len() > 8
    );
    let reexported = reexports(
        &std::fs::read_to_string(dir.join("mod.rs")).unwrap(),
        &capabilities,
    );
    assert!(
        reexported
            .iter()
            .any(|(item, owner)| item == "TemplateRoots" && owner == "files"),
        "{reexported:?}"
    );
    let mut problems = Vec::new();
    for module in &capabilities {
        let mut files = Vec::new();
        let single = dir.join(format!("{module}.rs"));
        if single.is_file() {
            files.push((single, 1));
        }
        let nested = dir.join(module);
        if nested.is_dir() {
            for entry in std::fs::read_dir(&nested).unwrap() {
                let path = entry.unwrap().path();
                let depth = if path.file_name().unwrap() == "mod.rs" {
                    1
                } else {
                    2
                };
                files.push((path, depth));
            }
        }
        for (file, depth) in files {
            let text = std::fs::read_to_string(&file).unwrap();
            let mut named = capability_children_named(&text, depth);
            // An item `capabilities` re-exports from a capability module names that module too.
            for (item, owner) in &reexported {
                if named.contains(item) {
                    named.insert(owner.clone());
                }
            }
            for named in named {
                let allowed = named == *module || (named == "call" && module != "call");
                if capabilities.contains(&named) && !allowed {
                    problems.push(format!("{} uses capabilities::{named}", file.display()));
                }
            }
        }
    }
    assert!(
        problems.is_empty(),
        "capabilities are not factors: {problems:?}"
    );
}

#[test]
fn the_capability_check_sees_every_spelling_of_a_path() {
    let text = "use super::secrets::string_map;\nuse super::{call::{budget, reach}, workload};\nuse crate::capabilities::omni::X;\nsuper::super::files::read();";
    let named = capability_children_named(text, 1);
    for name in ["secrets", "call", "workload", "omni"] {
        assert!(named.contains(name), "{name}: {named:?}");
    }
    assert!(
        !named.contains("files"),
        "super::super:: is not a child at depth 1: {named:?}"
    );
    assert!(capability_children_named(text, 2).contains("files"));
}

/// The `.rs` files of module `child` of the directory `dir`, each with how far below `dir`'s module it is.
fn module_files(dir: &Path, child: &str) -> Vec<(std::path::PathBuf, usize)> {
    fn walk(path: &Path, depth: usize, out: &mut Vec<(std::path::PathBuf, usize)>) {
        for entry in std::fs::read_dir(path).unwrap() {
            let path = entry.unwrap().path();
            if path.is_dir() {
                walk(&path, depth + 1, out);
            } else if path.extension().is_some_and(|e| e == "rs") {
                let depth = if path.file_name().unwrap() == "mod.rs" {
                    depth
                } else {
                    depth + 1
                };
                out.push((path, depth));
            }
        }
    }
    let mut files = Vec::new();
    let single = dir.join(format!("{child}.rs"));
    if single.is_file() {
        files.push((single, 1));
    }
    let nested = dir.join(child);
    if nested.is_dir() {
        walk(&nested, 1, &mut files);
    }
    files
}

/// Import circles between the children of one module anywhere in `src/`: `a` uses `b` and `b` uses `a`, directly
/// or through others (a parent using its children, as every `mod.rs` does, is not a circle).
fn sibling_circles(src: &Path) -> Vec<String> {
    fn dirs(path: &Path, out: &mut Vec<std::path::PathBuf>) {
        for entry in std::fs::read_dir(path).unwrap() {
            let path = entry.unwrap().path();
            if path.is_dir() {
                out.push(path.clone());
                dirs(&path, out);
            }
        }
    }
    let mut all = Vec::new();
    dirs(src, &mut all);
    let mut circles = Vec::new();
    for dir in all {
        let module = dir
            .strip_prefix(src)
            .unwrap()
            .to_string_lossy()
            .replace('/', "::");
        let crate_path = format!("crate::{module}::");
        let children: BTreeSet<String> = std::fs::read_dir(&dir)
            .unwrap()
            .map(|e| e.unwrap().path())
            .filter(|p| p.is_dir() || p.extension().is_some_and(|e| e == "rs"))
            .map(|p| p.file_stem().unwrap().to_string_lossy().into_owned())
            .filter(|name| name != "mod")
            .collect();
        let mut uses: BTreeMap<String, BTreeSet<String>> = BTreeMap::new();
        for child in &children {
            let used = uses.entry(child.clone()).or_default();
            for (file, depth) in module_files(&dir, child) {
                let text = std::fs::read_to_string(&file).unwrap();
                used.extend(
                    children_named(&text, depth, &crate_path)
                        .into_iter()
                        .filter(|n| n != child && children.contains(n)),
                );
            }
        }
        // A circle is a child that reaches itself.
        for start in &children {
            let mut seen = BTreeSet::new();
            let mut next: Vec<&String> = uses[start].iter().collect();
            while let Some(n) = next.pop() {
                if n == start {
                    circles.push(format!(
                        "{module}: {start} reaches itself through {:?}",
                        uses[start]
                    ));
                    break;
                }
                if seen.insert(n.clone()) {
                    next.extend(uses[n].iter());
                }
            }
        }
    }
    circles
}

#[test]
fn no_import_circle_between_the_children_of_any_module() {
    let src = Path::new(env!("CARGO_MANIFEST_DIR")).join("src");
    let circles = sibling_circles(&src);
    assert!(circles.is_empty(), "import circles: {circles:#?}");
}

#[test]
fn the_circle_check_finds_a_circle() {
    let dir = tempfile::tempdir().unwrap();
    let module = dir.path().join("m");
    std::fs::create_dir_all(module.join("b")).unwrap();
    std::fs::write(module.join("mod.rs"), "mod a;\nmod b;\n").unwrap();
    std::fs::write(module.join("a.rs"), "use super::b::Thing;\n").unwrap();
    std::fs::write(module.join("b/mod.rs"), "mod inner;\n").unwrap();
    std::fs::write(module.join("b/inner.rs"), "use super::super::a::Other;\n").unwrap();
    let circles = sibling_circles(dir.path());
    assert_eq!(circles.len(), 2, "{circles:?}");
    std::fs::write(module.join("b/inner.rs"), "use super::Other;\n").unwrap();
    assert!(sibling_circles(dir.path()).is_empty());
}

/// The items `capabilities/mod.rs` re-exports from one of `modules`: (item, module). Reads `pub use m::{A, B};`,
/// `pub use m::A;` and `pub(crate) use { m::A, n::B };`.
fn reexports(text: &str, modules: &BTreeSet<String>) -> Vec<(String, String)> {
    let mut found = Vec::new();
    let mut rest = text;
    while let Some(i) = rest.find("use ") {
        let statement = &rest[i + 4..];
        let end = statement.find(';').unwrap_or(statement.len());
        let body = statement[..end].trim();
        let body = body
            .strip_prefix('{')
            .and_then(|b| b.strip_suffix('}'))
            .unwrap_or(body);
        // Each `module::item` or `module::{items}` of the statement.
        for path in top_level_items(body) {
            let Some((module, items)) = path.trim().split_once("::") else {
                continue;
            };
            if !modules.contains(module.trim()) {
                continue;
            }
            let items = items.trim().trim_start_matches('{').trim_end_matches('}');
            for item in items.split(',').map(str::trim).filter(|i| !i.is_empty()) {
                found.push((item.to_string(), module.trim().to_string()));
            }
        }
        rest = &statement[end..];
    }
    found
}

/// The items of a group of paths (the text after its `{`), each as written, up to the group's `}`: nested groups
/// (`call::{a, b}`) stay inside the item they belong to.
fn top_level_items(group: &str) -> Vec<&str> {
    let (mut items, mut depth, mut start) = (Vec::new(), 0usize, 0usize);
    for (i, c) in group.char_indices() {
        match c {
            '{' => depth += 1,
            '}' if depth == 0 => {
                items.push(&group[start..i]);
                return items;
            }
            '}' => depth -= 1,
            ',' if depth == 0 => {
                items.push(&group[start..i]);
                start = i + 1;
            }
            _ => {}
        }
    }
    items.push(&group[start..]);
    items
}
