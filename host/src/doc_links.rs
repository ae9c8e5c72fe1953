//! The documentation's links, as a test: every link in the README, `docs/`, `host/README.md`, `wit/README.md` and
//! the READMEs under `plugins/`, `tests/sim/`, `examples/` and `charts/` must resolve inside the repository. Run it
//! with `cargo test -p omni-operator --lib doc_links`.
//!
//! A relative link must name a file or directory that exists (inside the repository), and an anchor into a
//! markdown file (`#section`, `file.md#section`) must name one of its headings, slugged as GitHub slugs them.
//! No link may leave the repository: `http:`, `https:`, `//…` and every other absolute URL fail, as do bare
//! `http(s)://` addresses in the text, which GitHub turns into links. Fenced code blocks and inline code are not
//! scanned. The parser is written here by hand (no dependencies) and covers what these documents use: inline
//! links and images with optional titles, angle-bracket destinations, reference definitions and autolinks.

use std::collections::BTreeSet;
use std::path::{Component, Path, PathBuf};

/// A link found in a document: where it is and what it points at.
#[derive(Debug, PartialEq, Eq)]
struct Link {
    line: usize,
    target: String,
}

/// The repository's root: the host crate's parent.
fn root() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .parent()
        .expect("the host crate has a parent")
        .to_path_buf()
}

/// The documents the test reads.
fn documents(root: &Path) -> Vec<PathBuf> {
    let mut files = vec![
        root.join("README.md"),
        root.join("host/README.md"),
        root.join("wit/README.md"),
    ];
    let markdown = |p: &Path| p.extension().is_some_and(|e| e == "md");
    walk(&root.join("docs"), &markdown, &mut files);
    let readme = |p: &Path| p.file_name().is_some_and(|n| n == "README.md");
    for dir in ["plugins", "tests/sim", "examples", "charts"] {
        walk(&root.join(dir), &readme, &mut files);
    }
    files.sort();
    files.dedup();
    files
}

/// Files under `dir` that `wanted` accepts, leaving out build output and hidden directories.
fn walk(dir: &Path, wanted: &dyn Fn(&Path) -> bool, found: &mut Vec<PathBuf>) {
    let Ok(entries) = std::fs::read_dir(dir) else {
        return;
    };
    for entry in entries {
        let path = entry.expect("a directory entry").path();
        let name = path
            .file_name()
            .and_then(|n| n.to_str())
            .unwrap_or_default();
        if path.is_dir() {
            if name != "target" && !name.starts_with('.') {
                walk(&path, wanted, found);
            }
        } else if wanted(&path) {
            found.push(path);
        }
    }
}

/// The text with every fenced code block's lines blanked (newlines kept, so offsets still give line numbers).
fn without_fences(text: &str) -> String {
    let mut out = String::with_capacity(text.len());
    // The fence that opened the current block: its character and length.
    let mut open: Option<(char, usize)> = None;
    for line in text.split_inclusive('\n') {
        let trimmed = line.trim_start();
        let fence = ['`', '~'].into_iter().find_map(|c| {
            let n = trimmed.chars().take_while(|&x| x == c).count();
            (n >= 3).then_some((c, n))
        });
        let blank = match (open, fence) {
            (None, Some(f)) => {
                open = Some(f);
                true
            }
            (Some((c, n)), Some((fc, fnum)))
                if c == fc && fnum >= n && trimmed.trim_start_matches(c).trim().is_empty() =>
            {
                open = None;
                true
            }
            (Some(_), _) => true,
            (None, None) => false,
        };
        if blank {
            out.extend(line.chars().map(|c| if c == '\n' { '\n' } else { ' ' }));
        } else {
            out.push_str(line);
        }
    }
    out
}

/// The text with inline code spans blanked as well: a run of N backticks up to the next run of exactly N, not
/// across a blank line. An unmatched run is literal text, as CommonMark has it.
fn without_code(text: &str) -> String {
    let text = without_fences(text);
    let chars: Vec<char> = text.chars().collect();
    let mut out = chars.clone();
    let mut i = 0;
    while i < chars.len() {
        if chars[i] != '`' {
            i += 1;
            continue;
        }
        let run = chars[i..].iter().take_while(|&&c| c == '`').count();
        let mut j = i + run;
        let mut close = None;
        while j < chars.len() {
            if chars[j] == '\n' && chars.get(j + 1) == Some(&'\n') {
                break;
            }
            if chars[j] == '`' {
                let n = chars[j..].iter().take_while(|&&c| c == '`').count();
                if n == run {
                    close = Some(j + n);
                    break;
                }
                j += n;
            } else {
                j += 1;
            }
        }
        match close {
            Some(end) => {
                for c in &mut out[i..end] {
                    if *c != '\n' {
                        *c = ' ';
                    }
                }
                i = end;
            }
            None => i += run,
        }
    }
    out.into_iter().collect()
}

/// Every link of a markdown document: inline links and images, reference definitions, autolinks, and bare
/// `http(s)://` addresses, outside code.
fn links(text: &str) -> Vec<Link> {
    let text = without_code(text);
    let chars: Vec<char> = text.chars().collect();
    let line_of = |at: usize| chars[..at].iter().filter(|&&c| c == '\n').count() + 1;
    let mut found = Vec::new();

    // Reference definitions: `[label]: target` at the start of a line (up to three spaces in).
    let mut start = 0;
    for line in text.split_inclusive('\n') {
        let indent = line.len() - line.trim_start_matches(' ').len();
        let rest = line.trim_start_matches(' ');
        if indent <= 3
            && rest.starts_with('[')
            && let Some(close) = rest.find("]:")
            && !rest[1..close].contains(']')
        {
            let target = rest[close + 2..]
                .split_whitespace()
                .next()
                .unwrap_or_default();
            let target = target.trim_start_matches('<').trim_end_matches('>');
            found.push(Link {
                line: text[..start].matches('\n').count() + 1,
                target: target.to_string(),
            });
        }
        start += line.len();
    }

    let mut i = 0;
    while i < chars.len() {
        match chars[i] {
            '\\' => i += 2,
            '[' => {
                let Some(close) = closing_bracket(&chars, i) else {
                    i += 1;
                    continue;
                };
                if chars.get(close + 1) == Some(&'(')
                    && let Some((target, _)) = destination(&chars, close + 2)
                {
                    found.push(Link {
                        line: line_of(i),
                        target,
                    });
                }
                // On with the link's text, which may hold an image.
                i += 1;
            }
            '<' => {
                let end = chars[i + 1..]
                    .iter()
                    .position(|&c| c == '>' || c == '<' || c.is_whitespace())
                    .map(|p| i + 1 + p);
                if let Some(end) = end.filter(|&e| chars[e] == '>') {
                    let inner: String = chars[i + 1..end].iter().collect();
                    if scheme(&inner).is_some() {
                        found.push(Link {
                            line: line_of(i),
                            target: inner,
                        });
                        i = end + 1;
                        continue;
                    }
                }
                i += 1;
            }
            'h' if starts_with(&chars, i, "http://") || starts_with(&chars, i, "https://") => {
                // A bare address, which GitHub links; part of a word (`xhttp://`) or a link's destination
                // (`](http…`, found above) is not bare. Trailing punctuation is not part of it.
                let in_word = i > 0 && chars[i - 1].is_alphanumeric();
                let destination = i > 1 && chars[i - 2] == ']' && chars[i - 1] == '(';
                let end = chars[i..]
                    .iter()
                    .position(|c| c.is_whitespace() || matches!(c, ')' | '>' | '<'))
                    .map_or(chars.len(), |p| i + p);
                if !in_word && !destination {
                    let address: String = chars[i..end].iter().collect();
                    found.push(Link {
                        line: line_of(i),
                        target: address
                            .trim_end_matches(['.', ',', ';', ':', '!', '?'])
                            .to_string(),
                    });
                }
                i = end;
            }
            _ => i += 1,
        }
    }
    found.sort_by(|a, b| (a.line, &a.target).cmp(&(b.line, &b.target)));
    found.dedup();
    found
}

fn starts_with(chars: &[char], at: usize, prefix: &str) -> bool {
    prefix
        .chars()
        .enumerate()
        .all(|(k, p)| chars.get(at + k) == Some(&p))
}

/// The `]` closing the `[` at `open`, with nesting and escapes, within one paragraph.
fn closing_bracket(chars: &[char], open: usize) -> Option<usize> {
    let mut depth = 0usize;
    let mut i = open;
    while i < chars.len() {
        match chars[i] {
            '\\' => i += 1,
            '[' => depth += 1,
            ']' => {
                depth -= 1;
                if depth == 0 {
                    return Some(i);
                }
            }
            '\n' if chars.get(i + 1) == Some(&'\n') => return None,
            _ => {}
        }
        i += 1;
    }
    None
}

/// A link's destination, starting just after its `(`: `<…>` or a run without spaces (parentheses balanced),
/// then an optional title (`"…"`, `'…'` or `(…)`), then `)`. Returns the destination and the index past `)`.
fn destination(chars: &[char], from: usize) -> Option<(String, usize)> {
    let mut i = from;
    while chars.get(i).is_some_and(|c| *c == ' ' || *c == '\n') {
        i += 1;
    }
    let mut target = String::new();
    if chars.get(i) == Some(&'<') {
        i += 1;
        while let Some(&c) = chars.get(i) {
            i += 1;
            match c {
                '>' => break,
                '\n' => return None,
                c => target.push(c),
            }
        }
    } else {
        let mut depth = 0usize;
        while let Some(&c) = chars.get(i) {
            match c {
                '\\' => {
                    target.extend(chars.get(i + 1));
                    i += 2;
                    continue;
                }
                '(' => depth += 1,
                ')' if depth == 0 => break,
                ')' => depth -= 1,
                c if c.is_whitespace() => break,
                _ => {}
            }
            target.push(c);
            i += 1;
        }
    }
    while chars.get(i).is_some_and(|c| c.is_whitespace()) {
        i += 1;
    }
    if let Some(&quote) = chars.get(i).filter(|c| matches!(c, '"' | '\'' | '(')) {
        let close = if quote == '(' { ')' } else { quote };
        i += 1;
        while chars.get(i).is_some_and(|&c| c != close) {
            i += 1;
        }
        i += 1;
        while chars.get(i).is_some_and(|c| c.is_whitespace()) {
            i += 1;
        }
    }
    (chars.get(i) == Some(&')')).then_some((target, i + 1))
}

/// The URI scheme a target starts with (`https` in `https://…`), if any.
fn scheme(target: &str) -> Option<&str> {
    let (scheme, _) = target.split_once(':')?;
    let mut chars = scheme.chars();
    (chars.next().is_some_and(|c| c.is_ascii_alphabetic())
        && chars.all(|c| c.is_ascii_alphanumeric() || matches!(c, '+' | '-' | '.')))
    .then_some(scheme)
}

/// GitHub's anchor for a heading's text: lower case; inline markup's characters and all punctuation except `-`
/// and `_` dropped; spaces become `-`.
fn slug(heading: &str) -> String {
    let mut text = String::new();
    // Link syntax keeps only its text: `[text](target)` → `text`.
    let chars: Vec<char> = heading.chars().collect();
    let mut i = 0;
    while i < chars.len() {
        if chars[i] == '['
            && let Some(close) = closing_bracket(&chars, i)
            && chars.get(close + 1) == Some(&'(')
            && let Some((_, end)) = destination(&chars, close + 2)
        {
            text.extend(&chars[i + 1..close]);
            i = end;
            continue;
        }
        text.push(chars[i]);
        i += 1;
    }
    text.trim()
        .to_lowercase()
        .chars()
        .filter_map(|c| match c {
            ' ' => Some('-'),
            c if c.is_alphanumeric() || c == '-' || c == '_' => Some(c),
            _ => None,
        })
        .collect()
}

/// The anchors of a markdown document's headings (ATX `#` headings and setext underlines), outside fences, with
/// GitHub's `-1`, `-2`, … for repeats.
fn anchors(text: &str) -> BTreeSet<String> {
    let text = without_fences(text);
    let mut anchors = BTreeSet::new();
    let mut add = |heading: &str| {
        let base = slug(heading);
        let mut anchor = base.clone();
        let mut n = 0;
        while anchors.contains(&anchor) {
            n += 1;
            anchor = format!("{base}-{n}");
        }
        anchors.insert(anchor);
    };
    let mut previous = "";
    for line in text.lines() {
        let trimmed = line.trim_start();
        let hashes = trimmed.chars().take_while(|&c| c == '#').count();
        let indent = line.len() - trimmed.len();
        if indent <= 3
            && (1..=6).contains(&hashes)
            && (trimmed.len() == hashes || trimmed[hashes..].starts_with(' '))
        {
            let heading = trimmed[hashes..].trim();
            // An optional closing sequence of `#`s, after a space (`C#` keeps its `#`).
            let closed = heading.trim_end_matches('#');
            add(if closed.is_empty() || closed.ends_with(' ') {
                closed.trim_end()
            } else {
                heading
            });
        } else if !previous.trim().is_empty()
            && !line.trim().is_empty()
            && (line.trim().chars().all(|c| c == '=') || line.trim().chars().all(|c| c == '-'))
        {
            add(previous.trim());
        }
        previous = line;
    }
    anchors
}

/// `path` with `.` and `..` resolved lexically; `None` when it climbs above the start.
fn normalize(path: &Path) -> Option<PathBuf> {
    let mut out = PathBuf::new();
    for part in path.components() {
        match part {
            Component::CurDir => {}
            Component::ParentDir => {
                if !out.pop() {
                    return None;
                }
            }
            other => out.push(other),
        }
    }
    Some(out)
}

/// What is wrong with `target`, linked from `file` (whose text is `own`), if anything.
fn check(root: &Path, file: &Path, own: &str, target: &str) -> Option<String> {
    if target.is_empty() {
        return Some("empty link".into());
    }
    if target.starts_with("//") || scheme(target).is_some() {
        return Some("links outside the repository (absolute URL)".into());
    }
    let (path, anchor) = match target.split_once('#') {
        Some((path, anchor)) => (path, Some(anchor)),
        None => (target, None),
    };
    let path = path
        .split('?')
        .next()
        .unwrap_or_default()
        .replace("%20", " ");
    if path.is_empty() {
        // `#anchor`: a heading of this file.
        return anchor
            .filter(|a| !anchors(own).contains(*a))
            .map(|a| format!("no heading #{a} in this file"));
    }
    let joined = match path.strip_prefix('/') {
        Some(from_root) => root.join(from_root),
        None => file.parent().unwrap_or(root).join(&path),
    };
    let linked = match normalize(&joined) {
        Some(p) if p.starts_with(root) => p,
        _ => return Some("leaves the repository".into()),
    };
    if !linked.exists() {
        return Some(format!(
            "{} does not exist",
            linked.strip_prefix(root).unwrap_or(&linked).display()
        ));
    }
    if let Some(anchor) = anchor
        && linked.extension().is_some_and(|e| e == "md")
    {
        let text = std::fs::read_to_string(&linked).expect("a readable markdown file");
        if !anchors(&text).contains(anchor) {
            return Some(format!(
                "no heading #{anchor} in {}",
                linked.strip_prefix(root).unwrap_or(&linked).display()
            ));
        }
    }
    None
}

/// Every problem with the links of `file`, whose text is `text`, as `file:line: (target) what is wrong`.
fn problems(root: &Path, file: &Path, text: &str) -> Vec<String> {
    let name = file
        .strip_prefix(root)
        .unwrap_or(file)
        .display()
        .to_string();
    links(text)
        .into_iter()
        .filter_map(|link| {
            check(root, file, text, &link.target)
                .map(|why| format!("{name}:{}: ({}) {why}", link.line, link.target))
        })
        .collect()
}

#[test]
fn every_link_in_the_documentation_resolves_inside_the_repository() {
    let root = root();
    let files = documents(&root);
    for expected in [
        "README.md",
        "docs/plugins.md",
        "host/README.md",
        "tests/sim/kube/README.md",
    ] {
        assert!(
            files.contains(&root.join(expected)),
            "{expected} is not checked: {files:?}"
        );
    }
    let problems: Vec<String> = files
        .iter()
        .flat_map(|f| {
            problems(
                &root,
                f,
                &std::fs::read_to_string(f).expect("a readable document"),
            )
        })
        .collect();
    assert!(
        problems.is_empty(),
        "broken or outside links:\n{}",
        problems.join("\n")
    );
}

#[test]
fn fenced_blocks_and_inline_code_are_not_scanned() {
    let text = "before [a](a.md)\n\n```sh\n[b](b.md) https://example.com\n```\n\n  ~~~~\n[c](c.md)\n  ~~~~\n\
                `[d](d.md)` and ``x ` [e](e.md) ``\n[f](f.md)\n";
    let found: Vec<String> = links(text).into_iter().map(|l| l.target).collect();
    assert_eq!(found, ["a.md", "f.md"]);
    assert_eq!(links(text)[1].line, 11);
    // A fence of backticks is not closed by tildes, nor by a shorter fence.
    let text = "````\n```\n~~~\n[x](x.md)\n````\n[y](y.md)\n";
    let found: Vec<String> = links(text).into_iter().map(|l| l.target).collect();
    assert_eq!(found, ["y.md"]);
}

#[test]
fn link_forms_are_parsed() {
    let text = "[a](b \"t\") [c](<d e.md> 'u') [f [g]](h(i).md) ![img](j.png)\n\
                [k](l.md#anchor (title))\n\
                [ref]: docs/m.md \"title\"\n\
                <https://example.com/x> and https://example.org/y. \\[n](o.md)\n";
    let found: Vec<(usize, String)> = links(text)
        .into_iter()
        .map(|l| (l.line, l.target))
        .collect();
    assert_eq!(
        found,
        [
            (1, "b".to_string()),
            (1, "d e.md".to_string()),
            (1, "h(i).md".to_string()),
            (1, "j.png".to_string()),
            (2, "l.md#anchor".to_string()),
            (3, "docs/m.md".to_string()),
            (4, "https://example.com/x".to_string()),
            (4, "https://example.org/y".to_string()),
        ]
    );
    // Square brackets that are not a link ([x] alone, `[a]` in code) yield nothing.
    assert!(links("an array [1, 2] and `[a](b)`\n").is_empty());
}

#[test]
fn anchors_are_slugged_as_github_does() {
    assert_eq!(
        slug("Plugins as a platform: Plugin and PluginBinding"),
        "plugins-as-a-platform-plugin-and-pluginbinding"
    );
    assert_eq!(slug("Metrics, probes and logs"), "metrics-probes-and-logs");
    assert_eq!(
        slug("The plugin contract (`omni:operator`)"),
        "the-plugin-contract-omnioperator"
    );
    assert_eq!(slug("In `dev`"), "in-dev");
    assert_eq!(
        slug("Helm: v4 & Flux-grade [releases](x.md)"),
        "helm-v4--flux-grade-releases"
    );
    assert_eq!(slug("snake_case stays"), "snake_case-stays");
    let text = "# Title\n\n## Tests\n\n```\n# not a heading\n```\n\n## Tests\n\nSetext\n------\n### Closed ###\n";
    let found = anchors(text);
    let expected: BTreeSet<String> = ["title", "tests", "tests-1", "setext", "closed"]
        .into_iter()
        .map(String::from)
        .collect();
    assert_eq!(found, expected);
}

#[test]
fn targets_are_checked() {
    let root = root();
    let readme = root.join("README.md");
    let own = "# Title\n\n## Run it\n";
    let verdict = |target: &str| check(&root, &readme, own, target);
    assert_eq!(verdict("docs/plugins.md"), None);
    assert_eq!(verdict("docs/plugins.md#grants"), None);
    assert_eq!(verdict("tests/sim/kube"), None);
    assert_eq!(verdict("/docs/plugins.md"), None);
    assert_eq!(verdict("#run-it"), None);
    assert!(verdict("#no-such-heading").is_some_and(|w| w.contains("no heading")));
    assert!(
        verdict("#Run-It").is_some(),
        "anchors are compared as GitHub writes them"
    );
    assert!(verdict("docs/missing.md").is_some_and(|w| w.contains("does not exist")));
    assert!(verdict("docs/plugins.md#no-such-heading").is_some_and(|w| w.contains("no heading")));
    assert!(verdict("../outside.md").is_some_and(|w| w.contains("leaves")));
    assert!(verdict("").is_some());
    for outside in [
        "https://example.com",
        "http://example.com",
        "//example.com/x",
        "mailto:a@b",
    ] {
        assert!(
            verdict(outside).is_some_and(|w| w.contains("outside")),
            "{outside}"
        );
    }
    assert_eq!(
        check(&root, &root.join("docs/plugins.md"), "", "../wit/README.md"),
        None,
        "relative to the linking file"
    );
    // A document's problems, each with its file and line.
    let doc = root.join("docs/broken.md");
    let text = "# Doc\n\nfine: [self](#doc), [up](../README.md)\n\nbroken: [gone](gone.md)\n\nsee https://example.com.\n";
    assert_eq!(
        problems(&root, &doc, text),
        [
            "docs/broken.md:5: (gone.md) docs/gone.md does not exist",
            "docs/broken.md:7: (https://example.com) links outside the repository (absolute URL)",
        ]
    );
}
