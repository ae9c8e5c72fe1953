//! Fuzz targets `fuzz_admission_reviews` and `fuzz_kubeconfigs`: what reaches the host from outside a plugin.
//!
//! * **Admission reviews**: AdmissionReview bodies — any bytes, and real reviews of the eight kinds with the
//!   review and its object mutated — POSTed to the webhooks (the real `Webhooks::answer`, the built-in plugins as
//!   WASM deciding). Every body gets an answer: an AdmissionReview for the request's uid (empty when it has
//!   none), `400` for a body that is not a review, otherwise `200` with a decision; a refusal is the Go
//!   operator's `Invalid` status with one cause per field error; every message is bounded.
//! * **Kubeconfigs** from Secrets: a working kubeconfig with a canary credential in every credential field,
//!   mutated as a document (fields replaced, removed, added) and as text (cut, a byte changed). Whatever comes
//!   of it, no error names the canary, and a kubeconfig that asks for a program or a file on the host is refused.
//!
//! Cases per run: proptest's 256, or `PROPTEST_CASES`; `tools/fuzz` runs it longer.

use std::sync::{Arc, OnceLock};
use std::time::Duration;

use omni_operator::admission::{FailurePolicy, Webhooks, validate_path};
use omni_operator::runtime::PluginRegistry;
use proptest::prelude::*;
use serde_json::{Value, json};

use super::fuzz_kinds::{KINDS, Mutation, loaded, mutation};
use super::fuzz_outputs::runs_shortened;

/// A message in an answer or an error: a sentence, with what it quotes cut to size.
const MAX_MESSAGE: usize = 4096;
/// The Go operator's `Invalid` message aggregates every field error: at most 100 causes of a 256-byte field and
/// a 1 KiB detail each, plus the summary cause.
const MAX_INVALID_MESSAGE: usize = 101 * (256 + 1024 + 64) + 1024;

fn webhooks() -> &'static Webhooks {
    static WEBHOOKS: OnceLock<Webhooks> = OnceLock::new();
    WEBHOOKS.get_or_init(|| {
        let registry = Arc::new(PluginRegistry::new());
        for plugin in &loaded().plugins {
            registry.install(plugin.clone());
        }
        Webhooks::new(registry, Duration::from_secs(10), FailurePolicy::Fail)
    })
}

/// The group and version of the kind's example.
fn group_version(kind: usize) -> (String, String) {
    let api_version = loaded().examples[kind]["apiVersion"]
        .as_str()
        .unwrap_or_default();
    let (group, version) = api_version.split_once('/').unwrap_or(("", api_version));
    (group.to_string(), version.to_string())
}

/// A review of the kind's example as the API server sends it on a create.
fn review_of(kind: usize) -> Value {
    let object = loaded().examples[kind].clone();
    let (group, version) = group_version(kind);
    json!({
        "apiVersion": "admission.k8s.io/v1", "kind": "AdmissionReview",
        "request": {
            "uid": "7c1e2b44-0f3e-4c8d-9a61-5b2f4f6e8a10",
            "kind": {"group": group, "version": version, "kind": KINDS[kind].0},
            "resource": {"group": group, "version": version, "resource": format!("{}s", KINDS[kind].0.to_lowercase())},
            "name": object["metadata"]["name"], "namespace": object["metadata"]["namespace"],
            "operation": "CREATE", "userInfo": {"username": "fuzz"},
            "object": object, "oldObject": null, "dryRun": false,
        }
    })
}

#[derive(Debug, Clone)]
enum Body {
    Bytes(Vec<u8>),
    Review {
        kind: usize,
        mutations: Vec<Mutation>,
        /// Mutations of the object inside the review, as fuzz_kinds makes them.
        object_mutations: Vec<Mutation>,
        /// The path posted to: the kind's own, or another kind's.
        path_of: usize,
    },
}

fn body() -> impl Strategy<Value = Body> {
    prop_oneof![
        1 => prop::collection::vec(any::<u8>(), 0..256).prop_map(Body::Bytes),
        6 => (
            0..KINDS.len(),
            prop::collection::vec(mutation(), 0..3),
            prop::collection::vec(mutation(), 0..4),
            prop_oneof![4 => Just(usize::MAX), 1 => 0..KINDS.len()],
        ).prop_map(|(kind, mutations, object_mutations, path_of)| Body::Review { kind, mutations, object_mutations, path_of }),
    ]
}

fn check_admission(body: &Body) -> Result<(), TestCaseError> {
    let (bytes, path, uid) = match body {
        Body::Bytes(b) => (
            b.clone(),
            validate_path("omni.texashpc.com", "v1alpha1", "omnicluster"),
            None,
        ),
        Body::Review {
            kind,
            mutations,
            object_mutations,
            path_of,
        } => {
            let mut review = review_of(*kind);
            for m in object_mutations {
                m.apply(&mut review["request"]["object"]);
            }
            for m in mutations {
                m.apply_except(&mut review, &["/request/object"]);
            }
            let target = if *path_of == usize::MAX {
                *kind
            } else {
                *path_of
            };
            let (group, version) = group_version(target);
            let path = validate_path(&group, &version, KINDS[target].0);
            let uid = review["request"]["uid"]
                .as_str()
                .filter(|u| !u.is_empty())
                .map(str::to_string);
            (review.to_string().into_bytes(), path, uid)
        }
    };
    let (status, answer) = loaded().rt.block_on(webhooks().answer(&path, &bytes));
    prop_assert_eq!(&answer["apiVersion"], "admission.k8s.io/v1");
    prop_assert_eq!(&answer["kind"], "AdmissionReview");
    let response = &answer["response"];
    let allowed = response["allowed"].as_bool();
    prop_assert!(allowed.is_some(), "no decision in {}", answer);
    let message = response["status"]["message"].as_str().unwrap_or_default();
    match status.as_u16() {
        400 => {
            prop_assert_eq!(allowed, Some(false));
            prop_assert!(
                message.len() <= MAX_MESSAGE,
                "a 400 message of {} bytes: {}",
                message.len(),
                runs_shortened(message)
            );
        }
        200 => {
            // A body the host answered with a decision was a review with a uid, answered under that uid.
            prop_assert_eq!(
                response["uid"].as_str(),
                uid.as_deref(),
                "answer {}",
                answer
            );
            if allowed == Some(false) {
                let code = response["status"]["code"].as_u64();
                let causes = response["status"]["details"]["causes"]
                    .as_array()
                    .map_or(0, Vec::len);
                match code {
                    Some(422) => prop_assert!((1..=101).contains(&causes), "{} causes", causes),
                    // Undecided (the plugin failed): the failure policy refuses, with a message.
                    Some(500) | Some(503) | Some(429) => prop_assert!(
                        !message.is_empty() && message.len() <= MAX_MESSAGE,
                        "an undecided review's message of {} bytes: {}",
                        message.len(),
                        runs_shortened(message)
                    ),
                    other => {
                        return Err(TestCaseError::fail(format!(
                            "a refusal with code {other:?}: {answer}"
                        )));
                    }
                }
                prop_assert!(
                    message.len() <= MAX_INVALID_MESSAGE,
                    "a refusal of {} bytes",
                    message.len()
                );
            }
        }
        other => {
            return Err(TestCaseError::fail(format!(
                "HTTP {other} for {}",
                runs_shortened(&String::from_utf8_lossy(&bytes))
            )));
        }
    }
    Ok(())
}

/// The canary: a credential no error may quote, in every credential field.
const CANARY: &str = "Y2FuYXJ5LXNlY3JldC10b2tlbi0xYjJm";

fn kubeconfig() -> Value {
    json!({
        "apiVersion": "v1", "kind": "Config", "current-context": "edge",
        "clusters": [{"name": "edge", "cluster": {"server": "https://edge.example:6443",
            "certificate-authority-data": CANARY}}],
        "contexts": [{"name": "edge", "context": {"cluster": "edge", "user": "edge", "namespace": "apps"}}],
        "users": [{"name": "edge", "user": {"token": CANARY, "password": CANARY, "username": "admin",
            "client-certificate-data": CANARY, "client-key-data": CANARY}}],
    })
}

#[derive(Debug, Clone)]
enum TextMutation {
    Cut(usize),
    Set(usize, u8),
}

/// A field that makes the host run a program or read its own files, put where client-go reads it.
#[derive(Debug, Clone)]
enum HostReach {
    Exec,
    AuthProvider,
    TokenFile,
    ClientCertificate,
    ClientKey,
    CertificateAuthority,
}

impl HostReach {
    fn insert(&self, document: &mut Value) {
        let user = &mut document["users"][0]["user"];
        match self {
            HostReach::Exec => {
                user["exec"] =
                    json!({"apiVersion": "client.authentication.k8s.io/v1", "command": "/bin/sh"})
            }
            HostReach::AuthProvider => {
                user["auth-provider"] = json!({"name": "oidc", "config": {}})
            }
            HostReach::TokenFile => {
                user["tokenFile"] = json!("/var/run/secrets/kubernetes.io/serviceaccount/token")
            }
            HostReach::ClientCertificate => {
                user["client-certificate"] = json!("/etc/kubernetes/pki/admin.crt")
            }
            HostReach::ClientKey => user["client-key"] = json!("/etc/kubernetes/pki/admin.key"),
            HostReach::CertificateAuthority => {
                document["clusters"][0]["cluster"]["certificate-authority"] =
                    json!("/etc/kubernetes/pki/ca.crt")
            }
        }
    }
}

fn host_reach() -> impl Strategy<Value = Option<HostReach>> {
    prop::option::of(prop::sample::select(vec![
        HostReach::Exec,
        HostReach::AuthProvider,
        HostReach::TokenFile,
        HostReach::ClientCertificate,
        HostReach::ClientKey,
        HostReach::CertificateAuthority,
    ]))
}

/// Whether `text` quotes the canary, or any 12 bytes of it (a credential with one byte changed is still one).
fn quotes_canary(text: &str) -> bool {
    CANARY
        .as_bytes()
        .windows(12)
        .any(|w| text.as_bytes().windows(12).any(|t| t == w))
}

fn check_kubeconfig(
    reach: &Option<HostReach>,
    mutations: &[Mutation],
    text_mutations: &[TextMutation],
) -> Result<(), TestCaseError> {
    let mut document = kubeconfig();
    if let Some(r) = reach {
        r.insert(&mut document);
    }
    for m in mutations {
        m.apply_except(&mut document, &[]);
    }
    // YAML reads JSON; a kubeconfig Secret holds either.
    let mut bytes = document.to_string().into_bytes();
    for m in text_mutations {
        match *m {
            TextMutation::Cut(at) => bytes.truncate(at % (bytes.len() + 1)),
            TextMutation::Set(at, b) if !bytes.is_empty() => {
                let i = at % bytes.len();
                bytes[i] = b;
            }
            TextMutation::Set(..) => {}
        }
    }
    let what = "kubeconfig Secret \"apps/edge\" key \"kubeconfig\"";
    let config = loaded()
        .rt
        .block_on(omni_operator::secrets::client_config(&bytes, what));
    if let Err(e) = &config {
        let text = e.to_string();
        prop_assert!(
            !quotes_canary(&text),
            "the error quotes the credential: {}",
            text
        );
        prop_assert!(
            text.contains(what),
            "the error does not say which kubeconfig: {}",
            text
        );
        prop_assert!(
            text.len() <= MAX_MESSAGE,
            "an error of {} bytes",
            text.len()
        );
    }
    if let Ok(config) = &config {
        // What the host would run or read on a tenant's behalf never gets this far: read the bytes as the host
        // did (YAML), and look where client-go would look.
        let parsed: Value = yaml_serde::from_slice(&bytes).unwrap_or_default();
        let reaches =
            |o: &Value, keys: &[&str]| keys.iter().any(|k| o.get(*k).is_some_and(|v| !v.is_null()));
        for user in parsed["users"].as_array().into_iter().flatten() {
            prop_assert!(
                !reaches(
                    &user["user"],
                    &[
                        "exec",
                        "auth-provider",
                        "tokenFile",
                        "client-certificate",
                        "client-key"
                    ]
                ),
                "a user that reaches into the host was accepted ({:?}): {}",
                config.cluster_url,
                String::from_utf8_lossy(&bytes)
            );
        }
        for cluster in parsed["clusters"].as_array().into_iter().flatten() {
            prop_assert!(
                !reaches(&cluster["cluster"], &["certificate-authority"]),
                "a cluster naming a CA file was accepted: {}",
                String::from_utf8_lossy(&bytes)
            );
        }
    }
    for result in [
        omni_operator::secrets::check_generated(&bytes),
        omni_operator::secrets::set_context_namespace(&bytes, "apps").map(|_| ()),
    ] {
        if let Err(text) = result {
            prop_assert!(
                !quotes_canary(&text),
                "the error quotes the credential: {}",
                text
            );
        }
    }
    Ok(())
}

proptest! {
    #[test]
    fn fuzz_admission_reviews(body in body()) {
        check_admission(&body)?;
    }

    #[test]
    fn fuzz_kubeconfigs(
        reach in host_reach(),
        mutations in prop::collection::vec(mutation(), 0..4),
        text_mutations in prop::collection::vec(prop_oneof![
            any::<usize>().prop_map(TextMutation::Cut),
            (any::<usize>(), any::<u8>()).prop_map(|(at, b)| TextMutation::Set(at, b)),
        ], 0..2),
    ) {
        check_kubeconfig(&reach, &mutations, &text_mutations)?;
    }
}
