//! The spec hash is byte-compatible with the Go operator's. Every vector here was also produced by
//! Go's own `encoding/json` and `time.Duration.String` (Go 1.19, marshalling the operator's struct shape).

use super::*;

const H: i64 = 3_600_000_000_000;
const MIN: i64 = 60_000_000_000;

fn groups(g: &[&str]) -> Vec<String> {
    g.iter().map(|s| s.to_string()).collect()
}

#[test]
fn the_plain_vector_matches() {
    let json = spec_json(
        "edge",
        "kubeconfig",
        None,
        "automation",
        &groups(&["ops"]),
        24 * H,
    );
    assert_eq!(
        json,
        r#"{"version":"v1","clusterName":"edge","targetSecretKey":"kubeconfig","serviceAccountUser":"automation","serviceAccountGroups":["ops"],"ttl":"24h0m0s"}"#
    );
    assert_eq!(
        spec_hash(
            "edge",
            "kubeconfig",
            None,
            "automation",
            &groups(&["ops"]),
            24 * H
        ),
        "6bdffbe16d6bf7f660201511009ebf99256d1f469af10ee18b73037d5c05a08a"
    );
}

#[test]
fn the_html_escaping_vector_matches() {
    let g = groups(&["system:masters", "ops"]);
    let json = spec_json("edge", "kubeconfig", Some("apps"), "a<b&c>", &g, 90 * MIN);
    assert_eq!(
        json,
        r#"{"version":"v1","clusterName":"edge","targetSecretKey":"kubeconfig","contextNamespace":"apps","serviceAccountUser":"a\u003cb\u0026c\u003e","serviceAccountGroups":["system:masters","ops"],"ttl":"1h30m0s"}"#
    );
    assert_eq!(
        spec_hash("edge", "kubeconfig", Some("apps"), "a<b&c>", &g, 90 * MIN),
        "49eb65995a299544f5b08b549a1019b4818ab4883fc8eaed0a79c1bf331b9f9b"
    );
}

#[test]
fn line_separators_raw_groups_and_sub_second_ttls_are_encoded_as_go_does() {
    let g = groups(&["a&b", " ops "]);
    let json = spec_json(
        "edge",
        "kubeconfig",
        None,
        "line\u{2028}sep",
        &g,
        1_500_000_000,
    );
    assert_eq!(
        json,
        r#"{"version":"v1","clusterName":"edge","targetSecretKey":"kubeconfig","serviceAccountUser":"line\u2028sep","serviceAccountGroups":["a\u0026b"," ops "],"ttl":"1.5s"}"#
    );
    assert_eq!(
        spec_hash(
            "edge",
            "kubeconfig",
            None,
            "line\u{2028}sep",
            &g,
            1_500_000_000
        ),
        "48bf5df42c14c8e7fb6c601adc24b1acb0330a77901e5a884ae41d92ac2e05ac"
    );
    assert_eq!(
        spec_hash(
            "edge",
            "config",
            Some("apps"),
            "automation",
            &groups(&["ops"]),
            H + 250_000_000
        ),
        "407287df681527f80d637fa26f33100b4991aa436cae5540bfb8cb0fc1c48cb6",
        "{}",
        spec_json(
            "edge",
            "config",
            Some("apps"),
            "automation",
            &groups(&["ops"]),
            H + 250_000_000
        )
    );
}

#[test]
fn an_empty_context_namespace_is_left_out() {
    let g = groups(&["ops"]);
    assert_eq!(
        spec_json("edge", "kubeconfig", Some(""), "automation", &g, 24 * H),
        spec_json("edge", "kubeconfig", None, "automation", &g, 24 * H)
    );
}

#[test]
fn every_hashed_input_changes_the_hash() {
    let g = groups(&["ops", "dev"]);
    let base = spec_hash("edge", "kubeconfig", None, "automation", &g, 24 * H);
    let variants = [
        spec_hash("edge2", "kubeconfig", None, "automation", &g, 24 * H),
        spec_hash("edge", "config", None, "automation", &g, 24 * H),
        spec_hash("edge", "kubeconfig", Some("apps"), "automation", &g, 24 * H),
        spec_hash("edge", "kubeconfig", None, "automation2", &g, 24 * H),
        spec_hash(
            "edge",
            "kubeconfig",
            None,
            "automation",
            &groups(&["dev", "ops"]),
            24 * H,
        ),
        spec_hash(
            "edge",
            "kubeconfig",
            None,
            "automation",
            &groups(&["ops ", "dev"]),
            24 * H,
        ),
        spec_hash("edge", "kubeconfig", None, "automation", &g, 12 * H),
    ];
    for (i, v) in variants.iter().enumerate() {
        assert_ne!(*v, base, "variant {i}");
    }
}
