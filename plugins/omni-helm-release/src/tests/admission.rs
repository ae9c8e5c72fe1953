//! OmniHelmRelease admission: every rule with its path, type, value and text, all errors in order, the
//! warning, and Helm's release-name rule (at most 53 characters, a DNS-1123 subdomain).

use super::*;

const WARNING: &str =
    "OmniHelmRelease uses a workload-cluster kubeconfig Secret and writes directly to that cluster";
const PATTERN: &str = "it must consist of lower case alphanumeric characters, '-' or '.', and must start and end with \
                       an alphanumeric character";

fn messages(object: &Value) -> Vec<String> {
    OmniHelmReleasePlugin::validate(object, None).messages()
}

#[test]
fn a_valid_release_is_allowed_with_the_workload_warning() {
    for object in [
        release(),
        minimal(),
        set(release(), "spec.deletionPolicy", json!("Orphan")),
        set(release(), "spec.deletionPolicy", json!("")),
        set(
            release(),
            "spec.chart.chart",
            json!("oci://ghcr.io/stefanprodan/charts/podinfo"),
        ),
        set(release(), "spec.chart.values", json!({})),
        set(release(), "spec.timeout", json!("1h30m")),
        set(release(), "spec.maxHistory", json!(0)),
        set(release(), "spec.releaseName", json!("a.b-c.1")),
    ] {
        let verdict = OmniHelmReleasePlugin::validate(&object, None);
        assert_eq!(verdict.messages(), Vec::<String>::new(), "{object}");
        assert_eq!(verdict.warnings, [WARNING]);
    }
}

#[test]
fn each_rule_has_its_path_type_value_and_text() {
    let long = "a".repeat(54);
    let cases: Vec<(&str, Value, String)> = vec![
        ("spec.clusterRef.name", json!(" "), "spec.clusterRef.name: Required value: clusterRef.name is required".into()),
        ("spec.clusterRef", Value::Null, "spec.clusterRef.name: Required value: clusterRef.name is required".into()),
        (
            "spec.kubeconfigSecretRef.name",
            json!(""),
            "spec.kubeconfigSecretRef.name: Required value: kubeconfig Secret name is required".into(),
        ),
        (
            "spec.kubeconfigSecretRef.key",
            json!("  "),
            "spec.kubeconfigSecretRef.key: Required value: kubeconfig Secret key must not be blank".into(),
        ),
        (
            "spec.releaseName",
            json!(" podinfo"),
            "spec.releaseName: Invalid value: \" podinfo\": releaseName must not include leading or trailing whitespace"
                .into(),
        ),
        (
            "spec.releaseName",
            json!("Podinfo"),
            format!("spec.releaseName: Invalid value: \"Podinfo\": not a valid Helm release name: {PATTERN}"),
        ),
        (
            "spec.releaseName",
            json!("pod_info"),
            format!("spec.releaseName: Invalid value: \"pod_info\": not a valid Helm release name: {PATTERN}"),
        ),
        (
            "spec.releaseName",
            json!(long),
            format!(
                "spec.releaseName: Invalid value: \"{long}\": not a valid Helm release name: it must be no more than 53 \
                 characters"
            ),
        ),
        (
            "spec.namespace",
            json!("apps "),
            "spec.namespace: Invalid value: \"apps \": namespace must not include leading or trailing whitespace".into(),
        ),
        ("spec.chart.repository", json!(" "), "spec.chart.repository: Required value: chart.repository is required".into()),
        (
            "spec.chart.repository",
            json!("charts.example.com"),
            "spec.chart.repository: Invalid value: \"charts.example.com\": chart.repository must be an absolute URL".into(),
        ),
        (
            "spec.chart.repository",
            json!("https://"),
            "spec.chart.repository: Invalid value: \"https://\": chart.repository must be an absolute URL".into(),
        ),
        ("spec.chart.chart", json!(""), "spec.chart.chart: Required value: chart.chart is required".into()),
        ("spec.chart.version", Value::Null, "spec.chart.version: Required value: chart.version is required".into()),
        ("spec.timeout", json!("0s"), "spec.timeout: Invalid value: \"0s\": timeout must be greater than zero".into()),
        ("spec.timeout", json!("0"), "spec.timeout: Invalid value: \"0s\": timeout must be greater than zero".into()),
        ("spec.timeout", json!("-5m"), "spec.timeout: Invalid value: \"-5m0s\": timeout must be greater than zero".into()),
        (
            "spec.timeout",
            json!("5 min"),
            "spec.timeout: Invalid value: \"5 min\": timeout is not a valid duration: time: unknown unit \" min\" in \
             duration \"5 min\""
                .into(),
        ),
        ("spec.maxHistory", json!(-2), "spec.maxHistory: Invalid value: -2: maxHistory must not be negative".into()),
        (
            "spec.serviceAccountName",
            json!("deploy:er"),
            format!(
                "spec.serviceAccountName: Invalid value: \"deploy:er\": serviceAccountName is not a valid \
                 ServiceAccount name: {PATTERN}"
            ),
        ),
        (
            "spec.deletionPolicy",
            json!("Retain"),
            "spec.deletionPolicy: Unsupported value: \"Retain\": supported values: \"Uninstall\", \"Orphan\"".into(),
        ),
        (
            "spec.deletionPolicy",
            json!("uninstall"),
            "spec.deletionPolicy: Unsupported value: \"uninstall\": supported values: \"Uninstall\", \"Orphan\"".into(),
        ),
        (
            "spec.chart.values",
            json!([1, 2]),
            "spec.chart.values: Invalid value: [1,2]: helm release values must be a JSON object".into(),
        ),
        (
            "spec.chart.values",
            json!("a: b"),
            "spec.chart.values: Invalid value: \"a: b\": helm release values must be a JSON object".into(),
        ),
    ];
    for (path, value, want) in cases {
        assert_eq!(
            messages(&set(release(), path, value.clone())),
            [want],
            "{path} = {value}"
        );
    }
}

/// A `readyExpr` that is no CEL expression is refused, naming the entry, in the webhook and in the controller.
#[test]
fn a_ready_expr_must_be_cel() {
    let bad = set(
        release(),
        "spec.dependsOn",
        json!([{"name": "db"}, {"name": "cache", "readyExpr": "dep.status =="}]),
    );
    let m = messages(&bad);
    assert_eq!(m.len(), 1, "{m:?}");
    assert!(
        m[0].starts_with("spec.dependsOn[1].readyExpr: Invalid value: \"dep.status ==\": readyExpr is not a CEL expression"),
        "{m:?}"
    );
    assert!(
        crate::validation::first_failure(&bad)
            .is_some_and(|f| f.starts_with("dependsOn[1].readyExpr is not a CEL expression")),
    );
    let good = set(
        release(),
        "spec.dependsOn",
        json!([{"name": "db", "readyExpr": "dep.status.releaseStatus == 'deployed'"}]),
    );
    assert_eq!(messages(&good), Vec::<String>::new());
}

/// `healthCheckExprs` whose expressions are no CEL health expressions (or use what the interpreter is not trusted
/// with) are refused, each naming its field, in the webhook and in the controller; an empty optional one is not
/// given.
#[test]
fn health_check_expressions_must_be_cel() {
    let bad = set(
        release(),
        "spec.healthCheckExprs",
        json!([{"apiVersion": "example.com/v1", "kind": "Widget", "current": "status.ready", "failed": ""},
            {"apiVersion": "example.com/v1", "kind": "Gadget", "current": "status ==",
                "inProgress": "status.n % 0 == 1"}]),
    );
    let m = messages(&bad);
    assert_eq!(m.len(), 2, "{m:?}");
    assert!(
        m[0].starts_with("spec.healthCheckExprs[1].current: Invalid value: \"status ==\": healthCheckExprs[1].current is not a CEL expression"),
        "{m:?}"
    );
    assert!(
        m[1].starts_with("spec.healthCheckExprs[1].inProgress: Invalid value: \"status.n % 0 == 1\": healthCheckExprs[1].inProgress may not use '%'"),
        "{m:?}"
    );
    assert!(
        crate::validation::first_failure(&bad)
            .is_some_and(|f| f.starts_with("healthCheckExprs[1].current is not a CEL expression")),
    );
    let good = set(
        release(),
        "spec.healthCheckExprs",
        json!([{"apiVersion": "example.com/v1", "kind": "Widget", "current": "status.phase == 'Ready'"}]),
    );
    assert_eq!(messages(&good), Vec::<String>::new());
}

/// `chart.verify` needs a Secret of public keys and an OCI chart, in the webhook and in the controller.
#[test]
fn chart_verification_needs_keys_and_an_oci_chart() {
    let keyless = set(
        release(),
        "spec.chart.verify",
        json!({"provider": "cosign"}),
    );
    assert_eq!(
        messages(&keyless),
        [
            "spec.chart.verify.secretRef: Required value: chart.verify.secretRef is required: keyless verification \
          is not supported"
        ]
    );
    let http = set(
        release(),
        "spec.chart.verify",
        json!({"provider": "cosign", "secretRef": {"name": "keys"}}),
    );
    let m = messages(&http);
    assert_eq!(m.len(), 1, "{m:?}");
    assert!(
        m[0].starts_with("spec.chart.verify: Invalid value: ")
            && m[0].ends_with(
                "chart.verify needs an oci:// chart: only OCI charts carry cosign signatures"
            ),
        "{m:?}"
    );
    assert!(crate::validation::first_failure(&http).is_some_and(|f| f.contains("oci://")));
    let oci = set(
        http,
        "spec.chart.chart",
        json!("oci://registry.example/charts/web"),
    );
    assert_eq!(messages(&oci), Vec::<String>::new());
    assert_eq!(crate::validation::first_failure(&oci), None);
}

/// Helm replaces objects only client-side: `force` with `serverSideApply: enabled` is refused in the webhook and in
/// the controller, for upgrades and rollbacks; `auto` and `disabled` go with force, and `enabled` without it.
#[test]
fn force_and_server_side_apply_enabled_are_refused_together() {
    for block in ["upgrade", "rollback"] {
        let object = set(
            release(),
            &format!("spec.{block}"),
            json!({"force": true, "serverSideApply": "enabled"}),
        );
        let want = format!(
            "spec.{block}.serverSideApply: Invalid value: \"enabled\": {block}.serverSideApply must not be \
             enabled together with {block}.force: Helm replaces objects only with client-side apply (set \
             serverSideApply to disabled or auto, or drop force)"
        );
        assert_eq!(messages(&object), [want]);
        let failure =
            crate::validation::first_failure(&object).expect("the controller refuses it too");
        assert!(
            failure.starts_with(&format!("{block}.serverSideApply must not be enabled")),
            "{failure}"
        );
        for fine in [
            json!({"force": true, "serverSideApply": "auto"}),
            json!({"force": true, "serverSideApply": "disabled"}),
            json!({"force": false, "serverSideApply": "enabled"}),
        ] {
            let object = set(release(), &format!("spec.{block}"), fine.clone());
            assert_eq!(messages(&object), Vec::<String>::new(), "{fine}");
            assert_eq!(crate::validation::first_failure(&object), None, "{fine}");
        }
    }
}

#[test]
fn all_errors_are_collected_in_the_webhooks_order() {
    let object = json!({
        "metadata": {"name": "Web", "namespace": NS},
        "spec": {
            "kubeconfigSecretRef": {"key": " "},
            "namespace": " apps",
            "chart": {"repository": "/charts", "values": 3},
            "timeout": "-1s",
            "maxHistory": -1,
            "deletionPolicy": "Keep"
        }
    });
    let verdict = OmniHelmReleasePlugin::validate(&object, None);
    assert_eq!(
        verdict.messages(),
        [
            "spec.clusterRef.name: Required value: clusterRef.name is required".to_string(),
            "spec.kubeconfigSecretRef.name: Required value: kubeconfig Secret name is required".into(),
            "spec.kubeconfigSecretRef.key: Required value: kubeconfig Secret key must not be blank".into(),
            format!(
                "metadata.name: Invalid value: \"Web\": not a valid Helm release name (spec.releaseName is unset, so \
                 metadata.name is the release name): {PATTERN}"
            ),
            "spec.namespace: Invalid value: \" apps\": namespace must not include leading or trailing whitespace".into(),
            "spec.chart.repository: Invalid value: \"/charts\": chart.repository must be an absolute URL".into(),
            "spec.chart.chart: Required value: chart.chart is required".into(),
            "spec.chart.version: Required value: chart.version is required".into(),
            "spec.timeout: Invalid value: \"-1s\": timeout must be greater than zero".into(),
            "spec.maxHistory: Invalid value: -1: maxHistory must not be negative".into(),
            "spec.deletionPolicy: Unsupported value: \"Keep\": supported values: \"Uninstall\", \"Orphan\"".into(),
            "spec.chart.values: Invalid value: 3: helm release values must be a JSON object".into(),
        ]
    );
    assert!(
        verdict.warnings.is_empty(),
        "no kubeconfig name, no warning"
    );
}

#[test]
fn the_release_name_rule_judges_the_name_the_release_will_have() {
    // metadata.name is the release name only while spec.releaseName is unset (or empty, as Go normalises it).
    let bad_object_name = set(release(), "metadata.name", json!("Web_App"));
    assert!(
        OmniHelmReleasePlugin::validate(&bad_object_name, None).allowed(),
        "releaseName is set"
    );
    for object in [
        set(bad_object_name.clone(), "spec.releaseName", Value::Null),
        set(bad_object_name, "spec.releaseName", json!("")),
    ] {
        assert_eq!(
            messages(&object),
            [format!(
                "metadata.name: Invalid value: \"Web_App\": not a valid Helm release name (spec.releaseName is unset, \
                 so metadata.name is the release name): {PATTERN}"
            )]
        );
    }
    // Exactly 53 characters is fine.
    assert!(
        OmniHelmReleasePlugin::validate(
            &set(release(), "spec.releaseName", json!("a".repeat(53))),
            None
        )
        .allowed()
    );
    // A name refused for whitespace is not refused twice.
    assert_eq!(
        messages(&set(release(), "spec.releaseName", json!("Bad "))).len(),
        1
    );
    // No name at all is the API server's business.
    assert!(
        OmniHelmReleasePlugin::validate(&set(minimal(), "metadata.name", Value::Null), None)
            .allowed()
    );
}

#[test]
fn update_is_judged_like_create() {
    let old = release();
    let renamed = set(release(), "spec.kubeconfigSecretRef.name", json!("other"));
    assert!(OmniHelmReleasePlugin::validate(&renamed, Some(&old)).allowed());
    let bad = set(release(), "spec.maxHistory", json!(-1));
    assert_eq!(
        OmniHelmReleasePlugin::validate(&bad, Some(&old)).messages(),
        ["spec.maxHistory: Invalid value: -1: maxHistory must not be negative"]
    );
}

#[test]
fn the_warning_follows_a_non_empty_kubeconfig_name_even_when_blank() {
    let blank = OmniHelmReleasePlugin::validate(
        &set(release(), "spec.kubeconfigSecretRef.name", json!(" ")),
        None,
    );
    assert!(!blank.allowed());
    assert_eq!(
        blank.warnings,
        [WARNING],
        "Go warns whenever the name is non-empty"
    );
    let empty = OmniHelmReleasePlugin::validate(
        &set(release(), "spec.kubeconfigSecretRef.name", json!("")),
        None,
    );
    assert!(empty.warnings.is_empty());
}

/// A Git chart replaces the repository's three fields; its own rules are checked field by field.
#[test]
fn a_git_chart_needs_no_repository_fields_and_its_own_are_checked() {
    let git = |git: Value| {
        let mut object = release();
        object["spec"]["chart"] = json!({"git": git});
        object
    };
    assert_eq!(
        messages(&git(
            json!({"url": "https://git.example.com/charts.git", "path": "charts/web"})
        )),
        Vec::<String>::new()
    );
    assert_eq!(
        messages(&git(
            json!({"url": "git@example.com:charts.git", "branch": "main", "tag": "v1",
            "commit": "abc", "path": "../outside"})
        )),
        [
            "spec.chart.git.url: Invalid value: \"git@example.com:charts.git\": chart.git.url must be an https:// \
             (or http://) URL",
            "spec.chart.git: Invalid value: null: chart.git: set only one of branch, tag and commit",
            "spec.chart.git.commit: Invalid value: \"abc\": chart.git.commit must be a full commit id of 40 \
             hexadecimal digits",
            "spec.chart.git.path: Invalid value: \"../outside\": chart.git.path must be a relative path inside \
             the repository",
        ]
    );
    // The controller reports the first problem, as for every other rule.
    let h = reconciled(host(git(json!({"branch": "main"})), deployed(1, None)));
    assert_eq!(
        cond(&h, "Ready"),
        expect(F, "ValidationFailed", "chart.git.url is required")
    );
}

/// A Git chart is asked of the host as a Git location: branch `main` when the spec names no reference.
#[test]
fn a_git_chart_is_sent_as_a_git_location_following_main_by_default() {
    use omni_plugin_sdk::helm::{ChartLocation, GitChart, GitReference};
    let mut object = release();
    object["spec"]["chart"] =
        json!({"git": {"url": "https://git.example.com/charts.git", "path": "web"}});
    let h = reconciled(host(object, deployed(1, None)));
    let (_, source) = h.requests().helm_observes.remove(0);
    assert_eq!(
        source.expect("a source").chart.location,
        ChartLocation::Git(GitChart {
            url: "https://git.example.com/charts.git".into(),
            reference: GitReference::Branch("main".into()),
            path: "web".into(),
        })
    );
}
