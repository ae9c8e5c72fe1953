//! Fuzz target `fuzz_template_yaml`: the go-yaml-compatible emitter (`yaml::to_string`) given any JSON — keys and
//! strings that read as other types in YAML 1.1 or 1.2 (`yes`, `~`, `0x1F`, `1:20`, `<<`, `.inf`), indicators
//! (`- `, `: `, `#`, `&`, `*`, `!`, `|`, `>`, `%`, `@`, a backquote), leading and trailing spaces and tabs, every
//! kind of line break (`\r`, NEL, LS, PS), control characters, a BOM, long lines that fold, empty strings,
//! numbers at their edges, nesting in sequences and maps — at both indents the operator uses (2 for the template
//! whose hash is `status.templateHash`, 4 for patch and manifest content), and as go-yaml v2 (`to_string_v2`, the
//! kubeconfigs omni-sim writes as clientcmd does). What must hold: a YAML parser reads
//! back exactly the value that was emitted, so no config patch or manifest changes meaning on its way to Omni.
//! The reader (`yaml_serde`) resolves types as YAML 1.2 does, so `yes` or `1:20` written plain would still read
//! back as strings here: the quoting go-yaml gives YAML 1.1's words is pinned by the emitter's unit tests.
//!
//! Cases per run: proptest's 256 (what the README's test command runs), or `PROPTEST_CASES`; `tools/fuzz` runs it
//! longer, and keeps failures in `fuzz_yaml.proptest-regressions` beside this file.

use omni_template::yaml::{Node, to_string, to_string_v2};
use proptest::prelude::*;
use serde::Deserialize;
use serde_json::{Value, json};

/// Text built from the pieces YAML treats specially, and any Unicode.
fn text() -> BoxedStrategy<String> {
    let piece = prop_oneof![
        "[a-z]{1,6}",
        prop::sample::select(vec![
            "yes",
            "No",
            "on",
            "OFF",
            "y",
            "n",
            "true",
            "null",
            "Null",
            "~",
            "",
            "0x1F",
            "0o17",
            "017",
            "1_000",
            "1:20",
            "1:20:30.5",
            "<<",
            ".inf",
            "-.Inf",
            ".nan",
            "1e3",
            "1.5",
            "-0",
            "+1",
            "2001-12-14",
            "2001-12-14t21:59:43.10-05:00",
            "- ",
            "-",
            ": ",
            ":",
            "? ",
            "#",
            " #",
            "&a",
            "*a",
            "!tag",
            "|",
            ">",
            "%",
            "@",
            "`",
            "'",
            "\"",
            "{",
            "}",
            "[",
            "]",
            ",",
            "\\",
            " ",
            "  ",
            "\t",
            "\n",
            "\r",
            "\r\n",
            "\u{85}",
            "\u{2028}",
            "\u{2029}",
            "\u{feff}",
            "\u{0}",
            "\u{7}",
            "\u{1b}",
            "\u{7f}",
            "\u{a0}",
            "é",
            "😀",
            "\u{fffe}",
            "---",
            "...",
        ])
        .prop_map(String::from),
        any::<char>().prop_map(String::from),
        (60usize..130).prop_map(|n| "word ".repeat(n / 5)),
    ];
    prop_oneof![
        6 => prop::collection::vec(piece, 0..6).prop_map(|p| p.concat()),
        1 => any::<String>(),
    ]
    .boxed()
}

fn value() -> impl Strategy<Value = Value> {
    let leaf = prop_oneof![
        1 => Just(Value::Null),
        1 => any::<bool>().prop_map(Value::Bool),
        1 => any::<i64>().prop_map(|n| json!(n)),
        1 => any::<u64>().prop_map(|n| json!(n)),
        1 => any::<f64>().prop_filter("JSON has no NaN or infinity", |f| f.is_finite()).prop_map(|f| json!(f)),
        1 => prop::sample::select(vec![1e300, 1e-7, 0.1, 1e21, -0.0, 5e-324, f64::MAX]).prop_map(|f| json!(f)),
        4 => text().prop_map(Value::String),
    ];
    leaf.prop_recursive(4, 32, 5, |inner| {
        prop_oneof![
            prop::collection::vec(inner.clone(), 0..5).prop_map(Value::Array),
            prop::collection::vec((text(), inner), 0..5)
                .prop_map(|kv| Value::Object(kv.into_iter().collect())),
        ]
    })
}

/// Two JSON values are the same YAML data: numbers compare by value (the emitter writes `1.0e+300`, the parser
/// reads a float), everything else structurally.
fn same(a: &Value, b: &Value) -> bool {
    match (a, b) {
        (Value::Number(x), Value::Number(y)) => {
            match (x.as_i64(), y.as_i64(), x.as_u64(), y.as_u64()) {
                (Some(x), Some(y), _, _) => x == y,
                (_, _, Some(x), Some(y)) => x == y,
                _ => x.as_f64() == y.as_f64(),
            }
        }
        (Value::Array(x), Value::Array(y)) => {
            x.len() == y.len() && x.iter().zip(y).all(|(a, b)| same(a, b))
        }
        (Value::Object(x), Value::Object(y)) => {
            x.len() == y.len() && x.iter().all(|(k, v)| y.get(k).is_some_and(|w| same(v, w)))
        }
        _ => a == b,
    }
}

/// `Some(indent)`: go-yaml v3 at that indent; `None`: go-yaml v2.
fn emit(nodes: &[Node], indent: Option<usize>) -> String {
    match indent {
        Some(indent) => to_string(nodes, indent),
        None => to_string_v2(nodes),
    }
}

fn check(documents: &[Value], indent: Option<usize>) -> Result<(), TestCaseError> {
    let nodes: Vec<Node> = documents.iter().map(Node::from_json).collect();
    let yaml = emit(&nodes, indent);
    let read: Result<Vec<Value>, _> = yaml_serde::Deserializer::from_str(&yaml)
        .map(Value::deserialize)
        .collect();
    let read = match read {
        Ok(read) => read,
        Err(e) => {
            return Err(TestCaseError::fail(format!(
                "the emitted YAML does not parse: {e}\nemitted:\n{yaml}\nfrom: {documents:?}"
            )));
        }
    };
    prop_assert_eq!(
        read.len(),
        documents.len(),
        "documents read back from:\n{}",
        yaml
    );
    for (got, want) in read.iter().zip(documents) {
        prop_assert!(
            same(got, want),
            "read back {got:?}\nemitted:\n{yaml}\nfrom {want:?}"
        );
    }
    // The text is what the hash is taken over: the same value always gives the same bytes.
    prop_assert_eq!(emit(&nodes, indent), yaml);
    Ok(())
}

proptest! {
    #[test]
    fn fuzz_template_yaml(documents in prop::collection::vec(value(), 1..3), indent in prop::sample::select(vec![Some(2usize), Some(4), None])) {
        check(&documents, indent)?;
    }
}
