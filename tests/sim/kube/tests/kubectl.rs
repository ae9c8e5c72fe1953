//! The real kubectl binary against kube-sim: each test runs kubectl as a child process against its own server
//! and checks what a person would see (exit code, stdout, stderr) and what the server stored.
//!
//! The expected texts are kube-apiserver 1.32's and kubectl 1.32's, as found in their sources (quoted in the
//! comments). kubectl must be installed (`$KUBECTL` or `kubectl` on `PATH`); without it these tests fail.

mod common_kubectl;

use std::time::{Duration, Instant};

use common_kubectl::{Kubectl, Out};
use kube_sim::{Credential, KubeSim, User};
use serde_json::{Value, json};

const WIDGET_CRD: &str = r#"
apiVersion: apiextensions.k8s.io/v1
kind: CustomResourceDefinition
metadata:
  name: widgets.example.com
spec:
  group: example.com
  scope: Namespaced
  names:
    plural: widgets
    singular: widget
    kind: Widget
    listKind: WidgetList
    shortNames: [wd]
    categories: [gadgets]
  versions:
  - name: v1
    served: true
    storage: true
    subresources:
      status: {}
    additionalPrinterColumns:
    - name: Ready
      type: string
      jsonPath: .status.conditions[?(@.type=="Ready")].status
    - name: Size
      type: integer
      jsonPath: .spec.size
    - name: Color
      type: string
      priority: 1
      jsonPath: .spec.color
    - name: Age
      type: date
      jsonPath: .metadata.creationTimestamp
    schema:
      openAPIV3Schema:
        type: object
        description: A Widget is a test gadget.
        properties:
          spec:
            type: object
            description: WidgetSpec is the desired state of a Widget.
            required: [size]
            properties:
              size:
                type: integer
                minimum: 1
                description: Size is how many parts the widget has.
              color:
                type: string
                enum: [red, green, blue]
                description: Color of the widget.
              note:
                type: string
                description: A free-form note.
          status:
            type: object
            properties:
              conditions:
                type: array
                items:
                  type: object
                  required: [type, status]
                  properties:
                    type: {type: string}
                    status: {type: string}
                    reason: {type: string}
                    message: {type: string}
                    lastTransitionTime: {type: string, format: date-time}
"#;

const CM_READER_FOR_ALICE: &str = r#"
apiVersion: rbac.authorization.k8s.io/v1
kind: Role
metadata: {name: cm-reader, namespace: default}
rules:
- apiGroups: [""]
  resources: [configmaps]
  verbs: [get, list, watch]
---
apiVersion: rbac.authorization.k8s.io/v1
kind: RoleBinding
metadata: {name: alice-cm-reader, namespace: default}
subjects:
- {apiGroup: rbac.authorization.k8s.io, kind: User, name: alice}
roleRef: {apiGroup: rbac.authorization.k8s.io, kind: Role, name: cm-reader}
"#;

async fn start() -> (KubeSim, Kubectl) {
    let sim = KubeSim::start().await.expect("starting kube-sim");
    let k = Kubectl::admin(&sim);
    (sim, k)
}

/// A server with the Widget CRD already established (applied directly, not through kubectl).
async fn start_with_widgets() -> (KubeSim, Kubectl) {
    let (sim, k) = start().await;
    sim.apply_yaml(WIDGET_CRD)
        .await
        .expect("applying the Widget CRD");
    (sim, k)
}

fn widget(name: &str, spec: &str) -> String {
    format!("apiVersion: example.com/v1\nkind: Widget\nmetadata:\n  name: {name}\nspec: {spec}\n")
}

fn configmap(name: &str, data: &str) -> String {
    format!("apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: {name}\ndata: {data}\n")
}

/// kubectl's table output as cells: columns are separated by at least two spaces (empty cells vanish).
fn table_rows(out: &Out) -> Vec<Vec<String>> {
    out.stdout
        .lines()
        .map(|l| {
            l.split("  ")
                .map(str::trim)
                .filter(|c| !c.is_empty())
                .map(String::from)
                .collect()
        })
        .collect()
}

fn get(sim: &KubeSim, api_version: &str, kind: &str, ns: &str, name: &str) -> Value {
    sim.get(api_version, kind, ns, name)
        .unwrap_or_else(|| panic!("{kind} {ns}/{name} is not stored"))
}

fn rv(obj: &Value) -> String {
    obj["metadata"]["resourceVersion"]
        .as_str()
        .expect("resourceVersion")
        .to_string()
}

/// The `Content-Type` of kubectl's PATCH request, read from its `-v=8` request log: `] PATCH https://…` up to
/// kubectl 1.32, `"Request" verb="PATCH" url=…` (structured logging) from 1.33.
fn patch_content_type(out: &Out) -> String {
    let mut lines = out
        .stderr
        .lines()
        .skip_while(|l| !l.contains("] PATCH https://") && !l.contains("verb=\"PATCH\""));
    assert!(
        lines.next().is_some(),
        "kubectl sent no PATCH:\n{}",
        out.describe()
    );
    lines
        .take(8)
        .find_map(|l| {
            l.split_once("Content-Type: ")
                .map(|(_, ct)| ct.trim().to_string())
        })
        .unwrap_or_else(|| {
            panic!(
                "no Content-Type logged for kubectl's PATCH:\n{}",
                out.describe()
            )
        })
}

fn managers(obj: &Value) -> Vec<(String, String)> {
    obj["metadata"]["managedFields"]
        .as_array()
        .into_iter()
        .flatten()
        .map(|e| {
            (
                e["manager"].as_str().unwrap_or_default().to_string(),
                e["operation"].as_str().unwrap_or_default().to_string(),
            )
        })
        .collect()
}

// ---------------------------------------------------------------------------------------------------------
// kubectl apply (client-side)

/// `kubectl apply` creates the object with the last-applied annotation; applying the same file again prints
/// `unchanged` (kubectl computes an empty patch and sends nothing) and the resourceVersion stays.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn apply_creates_then_reports_unchanged_without_a_new_resource_version() {
    let (sim, k) = start().await;
    let file = k.file(
        "settings.yaml",
        &configmap("settings", "{mode: fast, level: \"3\"}"),
    );
    k.run(&["apply", "-f", &file])
        .await
        .ok()
        .stdout_has("configmap/settings created");
    let first = get(&sim, "v1", "ConfigMap", "default", "settings");
    assert_eq!(first["data"], json!({"mode": "fast", "level": "3"}));
    let last_applied =
        first["metadata"]["annotations"]["kubectl.kubernetes.io/last-applied-configuration"]
            .as_str()
            .expect("kubectl apply stores the last-applied-configuration annotation");
    assert!(last_applied.contains("\"mode\":\"fast\""), "{last_applied}");

    let again = k.run(&["apply", "-f", &file]).await;
    again.ok().stdout_has("configmap/settings unchanged");
    let second = get(&sim, "v1", "ConfigMap", "default", "settings");
    assert_eq!(
        rv(&second),
        rv(&first),
        "an unchanged apply must not write a new resourceVersion"
    );
}

/// A changed built-in kind is updated with a strategic merge patch (kubectl knows ConfigMap's Go type), sent
/// with `fieldValidation=Strict`; the three-way merge drops keys removed from the file but keeps keys that
/// another writer added.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn apply_changed_configmap_sends_a_strategic_merge_patch_and_merges_three_ways() {
    let (sim, k) = start().await;
    k.stdin(
        &["apply", "-f", "-"],
        &configmap("settings", "{a: \"1\", b: \"2\"}"),
    )
    .await
    .ok();
    k.run(&[
        "patch",
        "configmap",
        "settings",
        "--type=merge",
        "-p",
        r#"{"data":{"other":"kept"}}"#,
    ])
    .await
    .ok();

    let out = k
        .stdin(
            &["apply", "-f", "-", "-v=8"],
            &configmap("settings", "{a: \"1\", c: \"3\"}"),
        )
        .await;
    out.ok().stdout_has("configmap/settings configured");
    assert_eq!(
        patch_content_type(&out),
        "application/strategic-merge-patch+json",
        "{}",
        out.describe()
    );
    out.stderr_has("fieldManager=kubectl-client-side-apply")
        .stderr_has("fieldValidation=Strict");
    let cm = get(&sim, "v1", "ConfigMap", "default", "settings");
    assert_eq!(cm["data"], json!({"a": "1", "c": "3", "other": "kept"}));
}

/// A custom resource has no Go type in kubectl, so a change is sent as a JSON merge patch; a field removed
/// from the file is sent as `null` and removed, and the spec change bumps metadata.generation.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn apply_changed_custom_resource_sends_a_merge_patch() {
    let (sim, k) = start_with_widgets().await;
    k.stdin(
        &["apply", "-f", "-"],
        &widget("w1", "{size: 3, color: red}"),
    )
    .await
    .ok()
    .stdout_has("widget.example.com/w1 created");
    assert_eq!(
        get(&sim, "example.com/v1", "Widget", "default", "w1")["metadata"]["generation"],
        json!(1)
    );

    let out = k
        .stdin(&["apply", "-f", "-", "-v=8"], &widget("w1", "{size: 4}"))
        .await;
    out.ok().stdout_has("widget.example.com/w1 configured");
    assert_eq!(
        patch_content_type(&out),
        "application/merge-patch+json",
        "{}",
        out.describe()
    );
    let w = get(&sim, "example.com/v1", "Widget", "default", "w1");
    assert_eq!(
        w["spec"],
        json!({"size": 4}),
        "color was dropped from the file, so apply removes it"
    );
    assert_eq!(w["metadata"]["generation"], json!(2));
}

// ---------------------------------------------------------------------------------------------------------
// kubectl apply --server-side

/// `apply --server-side` sends an apply patch as field manager `kubectl`; the object records that manager with
/// operation Apply, an update changes the value, and a field dropped from the configuration is removed because
/// no other manager owns it.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn server_side_apply_creates_and_updates_as_field_manager_kubectl() {
    let (sim, k) = start().await;
    k.stdin(
        &["apply", "--server-side", "-f", "-"],
        &configmap("ssa", "{a: \"1\", b: \"2\"}"),
    )
    .await
    .ok()
    .stdout_has("configmap/ssa serverside-applied");
    let created = get(&sim, "v1", "ConfigMap", "default", "ssa");
    assert_eq!(created["data"], json!({"a": "1", "b": "2"}));
    assert!(
        managers(&created).contains(&("kubectl".into(), "Apply".into())),
        "managedFields should name manager kubectl with operation Apply: {}",
        created["metadata"]
    );

    k.stdin(
        &["apply", "--server-side", "-f", "-"],
        &configmap("ssa", "{a: \"10\"}"),
    )
    .await
    .ok()
    .stdout_has("configmap/ssa serverside-applied");
    let updated = get(&sim, "v1", "ConfigMap", "default", "ssa");
    assert_eq!(
        updated["data"],
        json!({"a": "10"}),
        "b was only owned by kubectl and left the configuration"
    );
    assert_ne!(rv(&updated), rv(&created));
}

/// A field another manager applied cannot be taken over silently: kubectl prints the server's conflict and
/// its own advice and exits 1; `--force-conflicts` takes the field over.
/// Server text (structured-merge-diff conflicts.go): `Apply failed with 1 conflict: conflict with "other": .data.a`.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn server_side_apply_conflict_fails_without_force_conflicts_and_succeeds_with_it() {
    let (sim, k) = start().await;
    k.stdin(
        &["apply", "--server-side", "--field-manager=other", "-f", "-"],
        &configmap("shared", "{a: \"1\"}"),
    )
    .await
    .ok();

    let conflict = k
        .stdin(
            &["apply", "--server-side", "-f", "-"],
            &configmap("shared", "{a: \"2\"}"),
        )
        .await;
    conflict
        .code_is(1)
        .stderr_has(r#"Apply failed with 1 conflict: conflict with "other": .data.a"#)
        .stderr_has("--force-conflicts");
    assert_eq!(
        get(&sim, "v1", "ConfigMap", "default", "shared")["data"]["a"],
        "1"
    );

    k.stdin(
        &["apply", "--server-side", "--force-conflicts", "-f", "-"],
        &configmap("shared", "{a: \"2\"}"),
    )
    .await
    .ok()
    .stdout_has("configmap/shared serverside-applied");
    let cm = get(&sim, "v1", "ConfigMap", "default", "shared");
    assert_eq!(cm["data"]["a"], "2");
    let kubectl_entry = cm["metadata"]["managedFields"]
        .as_array()
        .into_iter()
        .flatten()
        .find(|e| e["manager"] == "kubectl")
        .unwrap_or_else(|| panic!("no managedFields entry for kubectl: {}", cm["metadata"]));
    assert!(
        kubectl_entry["fieldsV1"]["f:data"]["f:a"].is_object(),
        "kubectl now owns .data.a: {kubectl_entry}"
    );
}

// ---------------------------------------------------------------------------------------------------------
// CustomResourceDefinitions

/// A CRD applied with kubectl becomes Established (`kubectl wait` returns), its short name and category
/// resolve through discovery, and `kubectl get` prints the CRD's printer columns (priority 1 only with -o wide).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn crd_printer_columns_short_name_and_category_show_in_kubectl_get() {
    let (sim, k) = start().await;
    let crd = k.file("crd.yaml", WIDGET_CRD);
    k.run(&["apply", "-f", &crd])
        .await
        .ok()
        .stdout_has("customresourcedefinition.apiextensions.k8s.io/widgets.example.com created");
    k.run(&[
        "wait",
        "--for=condition=established",
        "crd/widgets.example.com",
        "--timeout=10s",
    ])
    .await
    .ok()
    .stdout_has("customresourcedefinition.apiextensions.k8s.io/widgets.example.com condition met");

    k.stdin(
        &["apply", "-f", "-"],
        &format!(
            "{}---\n{}",
            widget("w1", "{size: 3, color: red}"),
            widget("w2", "{size: 12}")
        ),
    )
    .await
    .ok();
    k.run(&[
        "patch",
        "widget",
        "w1",
        "--subresource=status",
        "--type=merge",
        "-p",
        r#"{"status":{"conditions":[{"type":"Ready","status":"True"}]}}"#,
    ])
    .await
    .ok();

    let table = k.run(&["get", "wd"]).await;
    table.ok();
    assert_eq!(
        table.header(),
        ["NAME", "READY", "SIZE", "AGE"],
        "{}",
        table.describe()
    );
    let rows = table.lines();
    assert_eq!(rows.len(), 3, "{}", table.describe());
    let w1: Vec<&str> = rows[1].split_whitespace().collect();
    assert_eq!(&w1[..3], ["w1", "True", "3"], "{}", table.describe());
    assert!(
        w1[3].ends_with('s'),
        "AGE is a HumanDuration like 2s: {}",
        table.describe()
    );
    let w2: Vec<&str> = rows[2].split_whitespace().collect();
    assert_eq!(
        &w2[..2],
        ["w2", "12"],
        "w2 has no Ready condition, so its READY cell is empty: {}",
        table.describe()
    );

    let wide = k.run(&["get", "widgets.example.com", "-o", "wide"]).await;
    assert_eq!(
        wide.ok().header(),
        ["NAME", "READY", "SIZE", "COLOR", "AGE"],
        "{}",
        wide.describe()
    );

    let category = k.run(&["get", "gadgets"]).await;
    assert_eq!(
        category.ok().header(),
        ["NAME", "READY", "SIZE", "AGE"],
        "{}",
        category.describe()
    );
    assert_eq!(category.lines().len(), 3, "{}", category.describe());

    let yaml = k.run(&["get", "widget", "w1", "-o", "yaml"]).await;
    let docs = kube_sim::yaml_documents(&yaml.ok().stdout).expect("kubectl -o yaml prints YAML");
    assert_eq!(docs.len(), 1, "{}", yaml.describe());
    let w = &docs[0];
    assert_eq!(w["apiVersion"], "example.com/v1");
    assert_eq!(w["kind"], "Widget");
    assert_eq!(w["spec"], json!({"size": 3, "color": "red"}));
    assert_eq!(w["status"]["conditions"][0]["status"], "True");
    assert_eq!(
        w["metadata"]["uid"],
        get(&sim, "example.com/v1", "Widget", "default", "w1")["metadata"]["uid"]
    );
    assert!(
        w["metadata"].get("managedFields").is_none(),
        "kubectl hides managedFields unless --show-managed-fields"
    );
}

/// `kubectl get --chunk-size=2` lists with limit=2 and follows the continue tokens until all 5 are printed.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn get_chunk_size_follows_continue_tokens_through_all_objects() {
    let (_sim, k) = start_with_widgets().await;
    let all: Vec<String> = (1..=5)
        .map(|i| widget(&format!("w{i}"), "{size: 1}"))
        .collect();
    k.stdin(&["apply", "-f", "-"], &all.join("---\n"))
        .await
        .ok();

    let out = k
        .run(&["get", "widgets", "--chunk-size=2", "-o", "name", "-v=6"])
        .await;
    out.ok();
    let names: Vec<String> = (1..=5)
        .map(|i| format!("widget.example.com/w{i}"))
        .collect();
    assert_eq!(out.lines(), names, "{}", out.describe());
    let pages = out
        .stderr
        .lines()
        .filter(|l| l.contains("/widgets?") && l.contains("limit=2"))
        .count();
    assert_eq!(
        pages,
        3,
        "5 objects in chunks of 2 take 3 requests:\n{}",
        out.describe()
    );
    assert_eq!(
        out.stderr.matches("continue=").count(),
        2,
        "{}",
        out.describe()
    );
}

/// `kubectl explain` reads the CRD's schema from /openapi/v3: the field types, `-required-`, enums and the
/// descriptions.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn explain_shows_the_crd_schema_fields_and_descriptions() {
    let (_sim, k) = start_with_widgets().await;
    let out = k.run(&["explain", "widget.spec"]).await;
    out.ok()
        .stdout_has("KIND:       Widget")
        .stdout_has("VERSION:    v1")
        .stdout_has("FIELD: spec <Object>")
        .stdout_has("WidgetSpec is the desired state of a Widget.")
        .stdout_has("Size is how many parts the widget has.")
        .stdout_has("Color of the widget.")
        .stdout_has("enum: red, green, blue");
    let size = out
        .lines()
        .into_iter()
        .find(|l| l.trim_start().starts_with("size"))
        .unwrap_or_default();
    assert!(size.contains("<integer> -required-"), "{}", out.describe());

    let top = k.run(&["explain", "widgets"]).await;
    top.ok()
        .stdout_has("A Widget is a test gadget.")
        .stdout_has("spec\t<Object>");
}

// ---------------------------------------------------------------------------------------------------------
// Validation as kubectl shows it

/// kubectl prints a 422 as `The <Kind> "<name>" is invalid: <field>: <cause>` from the Status details
/// (cmdutil.checkErr joins each cause as `Field: Message`, and the server's cause message is the error body
/// without the field), and nothing is stored.
async fn assert_schema_rejects(spec: &str, name: &str, expected: &str) {
    let (sim, k) = start_with_widgets().await;
    let out = k.stdin(&["apply", "-f", "-"], &widget(name, spec)).await;
    out.code_is(1);
    let first = out.stderr.lines().next().unwrap_or_default().trim_end();
    assert_eq!(first, expected, "{}", out.describe());
    assert!(
        sim.get("example.com/v1", "Widget", "default", name)
            .is_none(),
        "an invalid Widget must not be stored"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn schema_rejects_a_wrong_type_with_the_real_invalid_message() {
    assert_schema_rejects(
        "{size: big}",
        "wrong-type",
        r#"The Widget "wrong-type" is invalid: spec.size: Invalid value: "string": spec.size in body must be of type integer: "string""#,
    )
    .await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn schema_rejects_a_value_outside_the_enum_with_the_real_unsupported_value_message() {
    assert_schema_rejects(
        "{size: 2, color: purple}",
        "bad-enum",
        r#"The Widget "bad-enum" is invalid: spec.color: Unsupported value: "purple": supported values: "red", "green", "blue""#,
    )
    .await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn schema_rejects_a_value_below_the_minimum_with_the_real_invalid_message() {
    assert_schema_rejects(
        "{size: 0}",
        "too-small",
        r#"The Widget "too-small" is invalid: spec.size: Invalid value: 0: spec.size in body should be greater than or equal to 1"#,
    )
    .await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn schema_rejects_a_missing_required_field_with_the_real_required_message() {
    assert_schema_rejects(
        "{color: red}",
        "no-size",
        r#"The Widget "no-size" is invalid: spec.size: Required value"#,
    )
    .await;
}

/// kubectl apply sends `fieldValidation=Strict`, so an unknown field is a 400 whose message kubectl prefixes
/// with the file it came from: `Error from server (BadRequest): error when creating "<file>": Widget in
/// version "v1" cannot be handled as a Widget: strict decoding error: unknown field "spec.bogus"`.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn apply_rejects_an_unknown_field_because_kubectl_asks_for_strict_validation() {
    let (sim, k) = start_with_widgets().await;
    let file = k.file("bogus.yaml", &widget("bogus", "{size: 2, bogus: 1}"));
    let out = k.run(&["apply", "-f", &file]).await;
    out.code_is(1).stderr_has(&format!(
        r#"Error from server (BadRequest): error when creating "{file}": Widget in version "v1" cannot be handled as a Widget: strict decoding error: unknown field "spec.bogus""#
    ));
    assert!(
        sim.get("example.com/v1", "Widget", "default", "bogus")
            .is_none()
    );
}

/// A built-in validation error (a ConfigMap key with a space) prints each cause once:
/// `The ConfigMap "badkey" is invalid: data[bad key]: Invalid value: "bad key": a valid config key must ...`.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn invalid_configmap_key_is_reported_once_per_cause() {
    let (sim, k) = start().await;
    let out = k
        .stdin(
            &["apply", "-f", "-"],
            &configmap("badkey", "{\"bad key\": v}"),
        )
        .await;
    out.code_is(1).stderr_has(
        r#"The ConfigMap "badkey" is invalid: data[bad key]: Invalid value: "bad key": a valid config key must consist of alphanumeric characters, '-', '_' or '.'"#,
    );
    out.stderr_lacks("data[bad key]: data[bad key]");
    assert!(sim.get("v1", "ConfigMap", "default", "badkey").is_none());
}

// ---------------------------------------------------------------------------------------------------------
// kubectl patch

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn patch_merge_and_json_patch_update_a_custom_resource() {
    let (sim, k) = start_with_widgets().await;
    k.stdin(
        &["apply", "-f", "-"],
        &widget("w1", "{size: 3, color: red, note: hi}"),
    )
    .await
    .ok();

    k.run(&[
        "patch",
        "widget",
        "w1",
        "--type=merge",
        "-p",
        r#"{"spec":{"size":5,"note":null}}"#,
    ])
    .await
    .ok()
    .stdout_has("widget.example.com/w1 patched");
    assert_eq!(
        get(&sim, "example.com/v1", "Widget", "default", "w1")["spec"],
        json!({"size": 5, "color": "red"})
    );

    k.run(&["patch", "widget", "w1", "--type=json", "-p", r#"[{"op":"replace","path":"/spec/color","value":"blue"},{"op":"add","path":"/spec/note","value":"json"}]"#])
        .await
        .ok()
        .stdout_has("widget.example.com/w1 patched");
    let w = get(&sim, "example.com/v1", "Widget", "default", "w1");
    assert_eq!(
        w["spec"],
        json!({"size": 5, "color": "blue", "note": "json"})
    );
    assert_eq!(w["metadata"]["generation"], json!(3));

    // A patch that changes nothing: the server returns the object as it was and kubectl says so.
    k.run(&[
        "patch",
        "widget",
        "w1",
        "--type=merge",
        "-p",
        r#"{"spec":{"size":5}}"#,
    ])
    .await
    .ok()
    .stdout_has("widget.example.com/w1 patched (no change)");
    assert_eq!(
        rv(&get(&sim, "example.com/v1", "Widget", "default", "w1")),
        rv(&w)
    );
}

/// A strategic merge patch on a Deployment merges `containers` by their `name` patch key: the patched
/// container changes, the other stays (a merge patch would have replaced the whole list).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn patch_strategic_merges_deployment_containers_by_name() {
    let (sim, k) = start().await;
    let deploy = r#"
apiVersion: apps/v1
kind: Deployment
metadata: {name: web}
spec:
  replicas: 1
  selector: {matchLabels: {app: web}}
  template:
    metadata: {labels: {app: web}}
    spec:
      containers:
      - {name: app, image: "nginx:1.25"}
      - {name: sidecar, image: "busybox:1.36"}
"#;
    k.stdin(&["apply", "-f", "-"], deploy)
        .await
        .ok()
        .stdout_has("deployment.apps/web created");
    k.run(&[
        "patch", "deployment", "web", "--type=strategic", "-p",
        r#"{"spec":{"template":{"spec":{"containers":[{"name":"sidecar","image":"busybox:1.37"}]}}}}"#,
    ])
    .await
    .ok()
    .stdout_has("deployment.apps/web patched");
    let d = get(&sim, "apps/v1", "Deployment", "default", "web");
    let containers: Vec<(&str, &str)> = d["spec"]["template"]["spec"]["containers"]
        .as_array()
        .unwrap()
        .iter()
        .map(|c| (c["name"].as_str().unwrap(), c["image"].as_str().unwrap()))
        .collect();
    assert_eq!(
        containers,
        [("app", "nginx:1.25"), ("sidecar", "busybox:1.37")]
    );
    assert_eq!(d["metadata"]["generation"], json!(2));
}

/// kubectl wraps the server's 415 for a strategic patch on a custom resource:
/// `error: application/strategic-merge-patch+json is not supported by example.com/v1, Kind=Widget: the body of
/// the request was in an unknown format - accepted media types include: ...` (no SMP in the list).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn patch_strategic_on_a_custom_resource_fails_with_unsupported_media_type() {
    let (sim, k) = start_with_widgets().await;
    k.stdin(&["apply", "-f", "-"], &widget("w1", "{size: 3}"))
        .await
        .ok();
    let out = k
        .run(&[
            "patch",
            "widget",
            "w1",
            "--type=strategic",
            "-p",
            r#"{"spec":{"size":4}}"#,
        ])
        .await;
    out.code_is(1).stderr_has(
        "error: application/strategic-merge-patch+json is not supported by example.com/v1, Kind=Widget: \
         the body of the request was in an unknown format - accepted media types include: \
         application/json-patch+json, application/merge-patch+json, application/apply-patch+yaml",
    );
    assert_eq!(
        get(&sim, "example.com/v1", "Widget", "default", "w1")["spec"]["size"],
        json!(3)
    );
}

// ---------------------------------------------------------------------------------------------------------
// Labels, annotations and selectors

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn label_annotate_and_overwrite_behave_like_kubectl_against_a_real_server() {
    let (sim, k) = start().await;
    k.stdin(&["apply", "-f", "-"], &configmap("c1", "{k: v}"))
        .await
        .ok();

    k.run(&["label", "configmap", "c1", "env=prod", "tier=web"])
        .await
        .ok()
        .stdout_has("configmap/c1 labeled");
    k.run(&["label", "configmap", "c1", "env=qa"])
        .await
        .code_is(1)
        .stderr_has("error: 'env' already has a value (prod), and --overwrite is false");
    assert_eq!(
        get(&sim, "v1", "ConfigMap", "default", "c1")["metadata"]["labels"]["env"],
        "prod"
    );
    k.run(&["label", "configmap", "c1", "env=qa", "--overwrite"])
        .await
        .ok()
        .stdout_has("configmap/c1 labeled");
    k.run(&["annotate", "configmap", "c1", "owner=team-a"])
        .await
        .ok()
        .stdout_has("configmap/c1 annotated");
    k.run(&["label", "configmap", "c1", "tier-"])
        .await
        .ok()
        .stdout_has("configmap/c1 unlabeled");

    let cm = get(&sim, "v1", "ConfigMap", "default", "c1");
    assert_eq!(cm["metadata"]["labels"], json!({"env": "qa"}));
    assert_eq!(cm["metadata"]["annotations"]["owner"], "team-a");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn get_label_selectors_equality_set_and_existence_operators() {
    let (_sim, k) = start().await;
    let objs = [
        ("prod-web", "{env: prod, tier: web}"),
        ("dev", "{env: dev}"),
        ("test-db", "{env: test, tier: db}"),
        ("plain", "{}"),
    ];
    let yaml: Vec<String> = objs
        .iter()
        .map(|(n, labels)| {
            format!("apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: {n}\n  labels: {labels}\n")
        })
        .collect();
    k.stdin(&["apply", "-f", "-"], &yaml.join("---\n"))
        .await
        .ok();

    // The namespace's kube-root-ca.crt has no labels: it matches every "not"/"does not exist" selector.
    let cases: &[(&str, &[&str])] = &[
        ("env=prod", &["prod-web"]),
        (
            "env!=prod",
            &["dev", "kube-root-ca.crt", "plain", "test-db"],
        ),
        ("env in (dev,test)", &["dev", "test-db"]),
        (
            "env notin (dev,test)",
            &["kube-root-ca.crt", "plain", "prod-web"],
        ),
        ("tier", &["prod-web", "test-db"]),
        ("!tier", &["dev", "kube-root-ca.crt", "plain"]),
        ("env,tier notin (db)", &["dev", "prod-web"]),
    ];
    for (selector, want) in cases {
        let out = k
            .run(&["get", "configmaps", "-l", selector, "-o", "name"])
            .await;
        out.ok();
        let want: Vec<String> = want.iter().map(|n| format!("configmap/{n}")).collect();
        assert_eq!(
            out.sorted_lines(),
            want,
            "selector {selector:?}:\n{}",
            out.describe()
        );
    }
    let none = k.run(&["get", "configmaps", "-l", "env=staging"]).await;
    none.ok()
        .stderr_has("No resources found in default namespace.");
}

/// `kubectl get --field-selector` on a custom resource: the CRD's `selectableFields` select (Kubernetes 1.31+),
/// any other field is the server's 400, which kubectl wraps in cli-runtime's "Unable to find" message.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn get_field_selectors_on_a_crds_selectable_fields() {
    let (sim, k) = start().await;
    sim.apply_yaml(
        r#"
apiVersion: apiextensions.k8s.io/v1
kind: CustomResourceDefinition
metadata: {name: gadgets.example.com}
spec:
  group: example.com
  scope: Namespaced
  names: {plural: gadgets, singular: gadget, kind: Gadget}
  versions:
  - name: v1
    served: true
    storage: true
    selectableFields: [{jsonPath: .spec.clusterRef.name}]
    schema:
      openAPIV3Schema:
        type: object
        properties:
          spec:
            type: object
            properties:
              clusterRef: {type: object, properties: {name: {type: string}}}
              size: {type: integer}
"#,
    )
    .await
    .expect("applying the Gadget CRD");
    let gadgets: Vec<String> = [("a", "edge"), ("b", "core"), ("c", "edge")]
        .iter()
        .map(|(n, cluster)| format!("apiVersion: example.com/v1\nkind: Gadget\nmetadata:\n  name: {n}\nspec: {{clusterRef: {{name: {cluster}}}, size: 1}}\n"))
        .collect();
    k.stdin(&["apply", "-f", "-"], &gadgets.join("---\n"))
        .await
        .ok();

    let out = k
        .run(&[
            "get",
            "gadgets",
            "--field-selector",
            "spec.clusterRef.name=edge",
            "-o",
            "name",
        ])
        .await;
    out.ok();
    assert_eq!(
        out.sorted_lines(),
        ["gadget.example.com/a", "gadget.example.com/c"],
        "{}",
        out.describe()
    );
    let out = k
        .run(&[
            "get",
            "gadgets",
            "--field-selector",
            "spec.clusterRef.name!=edge,metadata.name!=x",
            "-o",
            "name",
        ])
        .await;
    assert_eq!(
        out.sorted_lines(),
        ["gadget.example.com/b"],
        "{}",
        out.describe()
    );

    let refused = k
        .run(&["get", "gadgets", "--field-selector", "spec.size=1"])
        .await;
    refused.code_is(1).stderr_has(
        r#"Error from server (BadRequest): Unable to find "example.com/v1, Resource=gadgets" that match label selector "", field selector "spec.size=1": field label not supported: spec.size"#,
    );
}

// ---------------------------------------------------------------------------------------------------------
// kubectl wait and deletion

/// `kubectl wait --for=condition=Ready` watches the object and returns once the status subresource gets the
/// condition; a write to the main resource cannot set status (it is ignored, kubectl says `(no change)`).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn wait_for_condition_returns_when_the_status_subresource_sets_it() {
    let (sim, k) = start_with_widgets().await;
    k.stdin(&["apply", "-f", "-"], &widget("w1", "{size: 1}"))
        .await
        .ok();
    let ready = r#"{"status":{"conditions":[{"type":"Ready","status":"True","reason":"Done"}]}}"#;
    k.run(&["patch", "widget", "w1", "--type=merge", "-p", ready])
        .await
        .ok()
        .stdout_has("widget.example.com/w1 patched (no change)");
    assert!(
        get(&sim, "example.com/v1", "Widget", "default", "w1")
            .get("status")
            .is_none()
    );

    let started = Instant::now();
    let waiter = k.run(&[
        "wait",
        "--for=condition=Ready",
        "widget/w1",
        "--timeout=10s",
    ]);
    let setter = async {
        tokio::time::sleep(Duration::from_millis(500)).await;
        k.run(&[
            "patch",
            "widget",
            "w1",
            "--subresource=status",
            "--type=merge",
            "-p",
            ready,
        ])
        .await
    };
    let (waited, set) = tokio::join!(waiter, setter);
    set.ok().stdout_has("widget.example.com/w1 patched");
    waited
        .ok()
        .stdout_has("widget.example.com/w1 condition met");
    let elapsed = started.elapsed();
    assert!(
        elapsed >= Duration::from_millis(500),
        "wait returned before the condition was set ({elapsed:?})"
    );
    assert!(
        elapsed < Duration::from_secs(8),
        "wait should return soon after the condition is set ({elapsed:?})"
    );
    assert_eq!(
        get(&sim, "example.com/v1", "Widget", "default", "w1")["status"]["conditions"][0]["reason"],
        "Done"
    );
}

/// `kubectl delete --wait=false` on an object with a finalizer returns at once; the object stays with a
/// deletionTimestamp until a patch removes the finalizer.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn delete_with_a_finalizer_leaves_the_object_terminating_until_the_finalizer_is_removed() {
    let (sim, k) = start_with_widgets().await;
    let fin = "apiVersion: example.com/v1\nkind: Widget\nmetadata:\n  name: fin\n  finalizers: [example.com/hold]\nspec: {size: 1}\n";
    k.stdin(&["apply", "-f", "-"], fin).await.ok();

    k.run(&["delete", "widget", "fin", "--wait=false"])
        .await
        .ok()
        .stdout_has(r#"widget.example.com "fin" deleted"#);
    let terminating = get(&sim, "example.com/v1", "Widget", "default", "fin");
    assert!(
        terminating["metadata"]["deletionTimestamp"].is_string(),
        "{}",
        terminating["metadata"]
    );
    assert_eq!(
        terminating["metadata"]["finalizers"],
        json!(["example.com/hold"])
    );
    let shown = k
        .run(&[
            "get",
            "widget",
            "fin",
            "-o",
            "jsonpath={.metadata.deletionTimestamp}",
        ])
        .await;
    assert_eq!(
        shown.ok().stdout,
        terminating["metadata"]["deletionTimestamp"]
            .as_str()
            .unwrap_or_default()
    );

    k.run(&[
        "patch",
        "widget",
        "fin",
        "--type=json",
        "-p",
        r#"[{"op":"remove","path":"/metadata/finalizers"}]"#,
    ])
    .await
    .ok()
    .stdout_has("widget.example.com/fin patched");
    assert!(
        sim.get("example.com/v1", "Widget", "default", "fin")
            .is_none(),
        "removing the last finalizer deletes it"
    );
    k.run(&["get", "widget", "fin"])
        .await
        .code_is(1)
        .stderr_has(r#"Error from server (NotFound): widgets.example.com "fin" not found"#);
}

/// `kubectl wait --for=delete` on a terminating object returns when its finalizer is removed.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn wait_for_delete_returns_when_the_finalizer_is_removed() {
    let (sim, k) = start_with_widgets().await;
    let fin = "apiVersion: example.com/v1\nkind: Widget\nmetadata:\n  name: fin\n  finalizers: [example.com/hold]\nspec: {size: 1}\n";
    k.stdin(&["apply", "-f", "-"], fin).await.ok();
    k.run(&["delete", "widget", "fin", "--wait=false"])
        .await
        .ok();

    let started = Instant::now();
    let waiter = k.run(&["wait", "--for=delete", "widget/fin", "--timeout=10s"]);
    let release = async {
        tokio::time::sleep(Duration::from_millis(500)).await;
        k.run(&[
            "patch",
            "widget",
            "fin",
            "--type=merge",
            "-p",
            r#"{"metadata":{"finalizers":null}}"#,
        ])
        .await
    };
    let (waited, released) = tokio::join!(waiter, release);
    released.ok();
    waited
        .ok()
        .stdout_has("widget.example.com/fin condition met");
    assert!(
        started.elapsed() >= Duration::from_millis(500),
        "wait returned while the finalizer was still there"
    );
    assert!(
        sim.get("example.com/v1", "Widget", "default", "fin")
            .is_none()
    );
}

/// `kubectl delete namespace` waits until the namespace is gone, and its content goes with it.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn deleting_a_namespace_removes_its_content() {
    let (sim, k) = start_with_widgets().await;
    let yaml = format!(
        "apiVersion: v1\nkind: Namespace\nmetadata: {{name: team}}\n---\n{}---\n{}",
        configmap("cfg", "{k: v}").replace("  name: cfg\n", "  name: cfg\n  namespace: team\n"),
        widget("w1", "{size: 1}").replace("  name: w1\n", "  name: w1\n  namespace: team\n"),
    );
    k.stdin(&["apply", "-f", "-"], &yaml)
        .await
        .ok()
        .stdout_has("namespace/team created")
        .stdout_has("configmap/cfg created");
    assert!(sim.get("example.com/v1", "Widget", "team", "w1").is_some());

    k.run(&["delete", "namespace", "team", "--timeout=20s"])
        .await
        .ok()
        .stdout_has(r#"namespace "team" deleted"#);
    assert!(
        sim.get("v1", "Namespace", "", "team").is_none(),
        "kubectl delete waits until the namespace is gone"
    );
    assert!(sim.get("v1", "ConfigMap", "team", "cfg").is_none());
    assert!(sim.get("example.com/v1", "Widget", "team", "w1").is_none());
    k.run(&["get", "configmaps", "-n", "team"])
        .await
        .ok()
        .stderr_has("No resources found in team namespace.");
}

// ---------------------------------------------------------------------------------------------------------
// Authentication and authorization

/// `kubectl auth can-i` prints yes/no and exits 0/1 (cmd/auth/cani.go: `if !allowed { return exit 1 }`).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn auth_can_i_answers_from_role_bindings_with_real_exit_codes() {
    let (sim, admin) = start().await;
    admin
        .stdin(&["apply", "-f", "-"], CM_READER_FOR_ALICE)
        .await
        .ok();
    let alice = sim.add_token_user("alice", &["dev"]);
    let k = Kubectl::new(&sim, &alice);

    for verb in ["get", "list", "watch"] {
        let out = k.run(&["auth", "can-i", verb, "configmaps"]).await;
        assert_eq!(out.code_is(0).stdout.trim(), "yes", "{}", out.describe());
    }
    for args in [
        &["auth", "can-i", "delete", "configmaps"][..],
        &["auth", "can-i", "list", "secrets"],
        &["auth", "can-i", "list", "configmaps", "-n", "kube-system"],
        &["auth", "can-i", "list", "configmaps", "--all-namespaces"],
    ] {
        let out = k.run(args).await;
        assert_eq!(out.code_is(1).stdout.trim(), "no", "{}", out.describe());
    }
    // The admin (system:masters) may do anything.
    let out = admin
        .run(&["auth", "can-i", "delete", "secrets", "-n", "kube-system"])
        .await;
    assert_eq!(out.code_is(0).stdout.trim(), "yes", "{}", out.describe());
}

/// `kubectl auth can-i --list` prints the SelfSubjectRulesReview as a table: the Role's rules in the namespace,
/// plus what the bootstrap bindings give every authenticated user.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn auth_can_i_list_shows_the_rules_of_the_namespace() {
    let (sim, admin) = start().await;
    admin
        .stdin(&["apply", "-f", "-"], CM_READER_FOR_ALICE)
        .await
        .ok();
    let k = Kubectl::new(&sim, &sim.add_token_user("alice", &["dev"]));

    let out = k.run(&["auth", "can-i", "--list"]).await;
    out.ok();
    assert_eq!(
        out.header(),
        [
            "Resources",
            "Non-Resource",
            "URLs",
            "Resource",
            "Names",
            "Verbs"
        ],
        "{}",
        out.describe()
    );
    let row = |resource: &str| -> Vec<String> {
        out.lines()
            .iter()
            .find(|l| l.split_whitespace().next() == Some(resource))
            .map(|l| l.split_whitespace().map(String::from).collect())
            .unwrap_or_else(|| panic!("no row for {resource}:\n{}", out.describe()))
    };
    assert_eq!(
        row("configmaps"),
        ["configmaps", "[]", "[]", "[get", "list", "watch]"]
    );
    assert_eq!(
        row("selfsubjectaccessreviews.authorization.k8s.io"),
        [
            "selfsubjectaccessreviews.authorization.k8s.io",
            "[]",
            "[]",
            "[create]"
        ]
    );
    out.stdout_lacks("secrets");
    // system:discovery and system:public-info-viewer (bound to system:authenticated) add the non-resource URLs.
    let non_resource: Vec<String> = out
        .lines()
        .into_iter()
        .filter(|l| l.trim_start().starts_with("[/"))
        .collect();
    for url in [
        "[/api/*]",
        "[/apis]",
        "[/healthz]",
        "[/openapi/*]",
        "[/version]",
    ] {
        assert!(
            non_resource
                .iter()
                .any(|l| l.split_whitespace().collect::<Vec<_>>() == [url, "[]", "[get]"]),
            "no {url} row:\n{}",
            out.describe()
        );
    }

    let other = k
        .run(&["auth", "can-i", "--list", "-n", "kube-system"])
        .await;
    other.ok().stdout_lacks("configmaps");
}

/// `kubectl auth whoami` (SelfSubjectReview) shows a client certificate's CN as the user and its O as a
/// group, plus system:authenticated. (`add_cert_user` issues at most one O; the server reads any number.)
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn auth_whoami_shows_a_client_certificate_users_groups() {
    let (sim, _admin) = start().await;
    let bob = sim
        .add_cert_user("bob", &["ops"])
        .expect("issuing bob's certificate");
    assert!(matches!(
        bob.credential,
        Credential::ClientCertificate { .. }
    ));
    let k = Kubectl::new(&sim, &bob);

    let out = k.run(&["auth", "whoami"]).await;
    out.ok();
    assert_eq!(
        out.lines(),
        [
            "ATTRIBUTE   VALUE",
            "Username    bob",
            "Groups      [ops system:authenticated]"
        ],
        "{}",
        out.describe()
    );
    let json = k.run(&["auth", "whoami", "-o", "json"]).await.ok().json();
    assert_eq!(json["kind"], "SelfSubjectReview");
    assert_eq!(json["status"]["userInfo"]["username"], "bob");
}

/// Every authenticated user may run `auth can-i` and `auth whoami` on a fresh real cluster: the
/// system:basic-user ClusterRole/ClusterRoleBinding (bound to system:authenticated) come from kube-apiserver's
/// RBAC bootstrap, as do cluster-admin, admin, edit and view.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn auth_can_i_and_whoami_work_without_any_binding_thanks_to_bootstrap_rbac() {
    let (sim, admin) = start().await;
    let k = Kubectl::new(&sim, &sim.add_token_user("carol", &[]));
    let out = k.run(&["auth", "can-i", "list", "pods"]).await;
    assert_eq!(out.code_is(1).stdout.trim(), "no", "{}", out.describe());
    k.run(&["auth", "whoami"]).await.ok().stdout_has("carol");
    admin
        .run(&[
            "get",
            "clusterrole",
            "view",
            "edit",
            "admin",
            "cluster-admin",
            "system:basic-user",
        ])
        .await
        .ok();
}

/// `kubectl --as` sends Impersonate-User; a system:masters user may impersonate, and the request is then
/// authorized as the impersonated user.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn impersonation_with_as_is_honoured() {
    let (_sim, admin) = start().await;
    admin
        .stdin(&["apply", "-f", "-"], CM_READER_FOR_ALICE)
        .await
        .ok();
    let who = admin
        .run(&["auth", "whoami", "--as=alice", "--as-group=dev"])
        .await;
    who.ok()
        .stdout_has("Username    alice")
        .stdout_lacks("kube-sim-admin");
    let yes = admin
        .run(&["auth", "can-i", "list", "configmaps", "--as=alice"])
        .await;
    assert_eq!(yes.code_is(0).stdout.trim(), "yes", "{}", yes.describe());
    let no = admin
        .run(&["auth", "can-i", "delete", "configmaps", "--as=alice"])
        .await;
    assert_eq!(no.code_is(1).stdout.trim(), "no", "{}", no.describe());
}

/// A user without rights sees the RBAC authorizer's 403 as kubectl prints it.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn forbidden_list_prints_the_real_rbac_message() {
    let (sim, admin) = start().await;
    admin
        .stdin(&["apply", "-f", "-"], &configmap("secret-plans", "{k: v}"))
        .await
        .ok();
    let k = Kubectl::new(&sim, &sim.add_token_user("alice", &["dev"]));
    let out = k.run(&["get", "configmaps"]).await;
    out.code_is(1).stderr_has(
        r#"Error from server (Forbidden): configmaps is forbidden: User "alice" cannot list resource "configmaps" in API group "" in the namespace "default""#,
    );
    let one = k
        .run(&["get", "configmap", "secret-plans", "-n", "default"])
        .await;
    one.code_is(1).stderr_has(
        r#"Error from server (Forbidden): configmaps "secret-plans" is forbidden: User "alice" cannot get resource "configmaps" in API group "" in the namespace "default""#,
    );
    let crds = k.run(&["get", "crds"]).await;
    crds.code_is(1).stderr_has(
        r#"Error from server (Forbidden): customresourcedefinitions.apiextensions.k8s.io is forbidden: User "alice" cannot list resource "customresourcedefinitions" in API group "apiextensions.k8s.io" at the cluster scope"#,
    );
}

// ---------------------------------------------------------------------------------------------------------
// Plain HTTP and raw endpoints

/// In plain-HTTP mode kubectl needs no credentials: requests are anonymous and act as the administrator.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn plain_http_mode_serves_kubectl_without_credentials() {
    let sim = KubeSim::builder()
        .insecure_http(true)
        .start()
        .await
        .expect("starting kube-sim over http");
    assert!(sim.url().starts_with("http://"), "{}", sim.url());
    let nobody = User {
        name: "nobody".into(),
        groups: Vec::new(),
        credential: Credential::None,
    };
    let k = Kubectl::new(&sim, &nobody);
    let kubeconfig = std::fs::read_to_string(k.kubeconfig()).expect("kubeconfig");
    assert!(
        !kubeconfig.contains("token") && !kubeconfig.contains("client-certificate"),
        "{kubeconfig}"
    );

    let ns = k.run(&["get", "namespaces", "-o", "name"]).await;
    assert_eq!(
        ns.ok().sorted_lines(),
        [
            "namespace/default",
            "namespace/kube-node-lease",
            "namespace/kube-public",
            "namespace/kube-system"
        ],
        "{}",
        ns.describe()
    );
    k.stdin(&["apply", "-f", "-"], &configmap("open", "{k: v}"))
        .await
        .ok()
        .stdout_has("configmap/open created");
    assert_eq!(
        get(&sim, "v1", "ConfigMap", "default", "open")["data"]["k"],
        "v"
    );
    k.run(&["delete", "configmap", "open"])
        .await
        .ok()
        .stdout_has(r#"configmap "open" deleted"#);
    assert!(sim.get("v1", "ConfigMap", "default", "open").is_none());
    k.run(&["auth", "whoami"])
        .await
        .ok()
        .stdout_has("kube-sim-admin");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn get_raw_serves_version_healthz_and_openapi_v3() {
    let (_sim, k) = start_with_widgets().await;
    let version = k.run(&["get", "--raw", "/version"]).await.ok().json();
    assert_eq!(version["major"], "1");
    assert_eq!(version["minor"], "32");
    assert!(
        version["gitVersion"]
            .as_str()
            .unwrap_or_default()
            .starts_with("v1.32."),
        "{version}"
    );
    let v = k.run(&["version", "-o", "json"]).await.ok().json();
    assert_eq!(v["serverVersion"]["gitVersion"], version["gitVersion"]);

    let health = k.run(&["get", "--raw", "/healthz"]).await;
    assert_eq!(health.ok().stdout, "ok");
    let ready = k.run(&["get", "--raw", "/readyz"]).await;
    assert_eq!(ready.ok().stdout, "ok");

    let index = k.run(&["get", "--raw", "/openapi/v3"]).await.ok().json();
    for gv in ["api/v1", "apis/apps/v1", "apis/example.com/v1"] {
        let url = index["paths"][gv]["serverRelativeURL"]
            .as_str()
            .unwrap_or_else(|| panic!("no {gv} in {index}"));
        assert!(url.starts_with(&format!("/openapi/v3/{gv}?hash=")), "{url}");
    }
    let widgets_url = index["paths"]["apis/example.com/v1"]["serverRelativeURL"]
        .as_str()
        .unwrap_or_default()
        .to_string();
    let doc = k.run(&["get", "--raw", &widgets_url]).await.ok().json();
    let schema = &doc["components"]["schemas"]["com.example.v1.Widget"];
    assert_eq!(
        schema["x-kubernetes-group-version-kind"],
        json!([{"group": "example.com", "version": "v1", "kind": "Widget"}])
    );
    assert_eq!(
        schema["properties"]["spec"]["properties"]["size"]["type"],
        "integer"
    );

    let missing = k.run(&["get", "--raw", "/no/such/path"]).await;
    missing.code_is(1).stderr_has(
        "Error from server (NotFound): the server could not find the requested resource",
    );
}

/// kube-apiserver writes /version with `responsewriters.WriteRawJSON`, i.e. `json.MarshalIndent(v, "", "  ")`,
/// so `kubectl get --raw /version` prints indented JSON.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn get_raw_version_is_indented_like_kube_apiserver() {
    let (_sim, k) = start().await;
    let out = k.run(&["get", "--raw", "/version"]).await;
    assert!(
        out.ok().stdout.starts_with("{\n  \"major\": \"1\",\n"),
        "{}",
        out.describe()
    );
}

// ---------------------------------------------------------------------------------------------------------
// Imperative commands that send protobuf

/// `kubectl create configmap|secret|namespace|serviceaccount` use client-go's typed clients, which send
/// `application/vnd.kubernetes.protobuf` bodies; kube-apiserver decodes them. kube-sim decodes protobuf for the
/// kinds typed clients write in this project's scope (see its README); PodSpec kinds are not among them.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn kubectl_create_sends_protobuf_and_the_object_is_created() {
    let (sim, k) = start().await;
    k.run(&["create", "configmap", "made", "--from-literal=k=v"])
        .await
        .ok()
        .stdout_has("configmap/made created");
    assert_eq!(
        get(&sim, "v1", "ConfigMap", "default", "made")["data"],
        json!({"k": "v"})
    );
    k.run(&["create", "secret", "generic", "s", "--from-literal=a=b"])
        .await
        .ok()
        .stdout_has("secret/s created");
    assert_eq!(
        get(&sim, "v1", "Secret", "default", "s")["data"],
        json!({"a": "Yg=="})
    );
    k.run(&["create", "namespace", "team"])
        .await
        .ok()
        .stdout_has("namespace/team created");
    k.run(&["create", "serviceaccount", "robot", "-n", "team"])
        .await
        .ok()
        .stdout_has("serviceaccount/robot created");
    assert!(sim.get("v1", "ServiceAccount", "team", "robot").is_some());
}

/// Events written through events.k8s.io/v1 (as kube-rs's recorder writes them) show in `kubectl get events`,
/// `kubectl events` and `kubectl describe`, which read core/v1; the columns are the server printer's
/// (pkg/printers/internalversion: LAST SEEN, TYPE, REASON, OBJECT, MESSAGE; the rest at priority 1).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn events_written_through_events_k8s_io_show_in_get_events_and_describe() {
    let (sim, k) = start().await;
    k.stdin(&["apply", "-f", "-"], &configmap("settings", "{a: b}"))
        .await
        .ok();
    let uid = get(&sim, "v1", "ConfigMap", "default", "settings")["metadata"]["uid"]
        .as_str()
        .expect("uid")
        .to_string();
    let now = jiff::Timestamp::now()
        .strftime("%Y-%m-%dT%H:%M:%S.000000Z")
        .to_string();
    sim.apply(&json!({"apiVersion": "events.k8s.io/v1", "kind": "Event",
        "metadata": {"name": "settings.1", "namespace": "default"},
        "eventTime": now, "reportingController": "omni-operator", "reportingInstance": "omni-operator-0",
        "action": "Reconcile", "reason": "Checked", "type": "Warning", "note": "the settings were checked",
        "regarding": {"apiVersion": "v1", "kind": "ConfigMap", "namespace": "default", "name": "settings", "uid": uid}}))
        .await
        .expect("the Event is stored");

    let out = k.run(&["get", "events"]).await;
    out.ok();
    assert_eq!(
        table_rows(&out)[0],
        ["LAST SEEN", "TYPE", "REASON", "OBJECT", "MESSAGE"],
        "{}",
        out.stdout
    );
    out.stdout_has("Warning")
        .stdout_has("Checked")
        .stdout_has("configmap/settings")
        .stdout_has("the settings were checked");
    k.run(&["get", "events", "-o", "wide"])
        .await
        .ok()
        .stdout_has("SOURCE")
        .stdout_has("omni-operator, omni-operator-0");
    k.run(&["events"])
        .await
        .ok()
        .stdout_has("the settings were checked");
    k.run(&["describe", "configmap", "settings"])
        .await
        .ok()
        .stdout_has("Events:")
        .stdout_has("the settings were checked");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn get_deployments_prints_the_servers_columns() {
    let (_sim, k) = start().await;
    k.stdin(
        &["apply", "-f", "-"],
        "apiVersion: apps/v1\nkind: Deployment\nmetadata:\n  name: web\nspec:\n  replicas: 3\n  selector:\n    matchLabels: {app: web}\n  template:\n    metadata:\n      labels: {app: web}\n    spec:\n      containers:\n      - {name: nginx, image: nginx:1.27}\n",
    )
    .await
    .ok();
    let out = k.run(&["get", "deployments", "-o", "wide"]).await;
    out.ok();
    let rows = table_rows(&out);
    assert_eq!(
        rows[0],
        [
            "NAME",
            "READY",
            "UP-TO-DATE",
            "AVAILABLE",
            "AGE",
            "CONTAINERS",
            "IMAGES",
            "SELECTOR"
        ],
        "{}",
        out.stdout
    );
    assert_eq!(rows[1][..4], ["web", "0/3", "0", "0"], "{}", out.stdout);
    assert_eq!(
        rows[1][5..],
        ["nginx", "nginx:1.27", "app=web"],
        "{}",
        out.stdout
    );
}

/// `kubectl scale` finds the scale subresource through discovery (group autoscaling, kind Scale) and patches it.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn scale_changes_a_deployments_replicas_through_the_scale_subresource() {
    let (sim, k) = start().await;
    k.stdin(
        &["apply", "-f", "-"],
        "apiVersion: apps/v1\nkind: Deployment\nmetadata:\n  name: web\nspec:\n  replicas: 1\n  selector:\n    matchLabels: {app: web}\n  template:\n    metadata:\n      labels: {app: web}\n    spec:\n      containers:\n      - {name: nginx, image: nginx:1.27}\n",
    )
    .await
    .ok();
    k.run(&["scale", "deployment", "web", "--replicas=4"])
        .await
        .ok()
        .stdout_has("deployment.apps/web scaled");
    assert_eq!(
        get(&sim, "apps/v1", "Deployment", "default", "web")["spec"]["replicas"],
        4
    );
    // The precondition is checked against the Scale the server reports.
    k.run(&[
        "scale",
        "deployment",
        "web",
        "--current-replicas=2",
        "--replicas=3",
    ])
    .await
    .failed()
    .stderr_has("Expected replicas to be 2, was 4");
    assert_eq!(
        get(&sim, "apps/v1", "Deployment", "default", "web")["spec"]["replicas"],
        4
    );
}

/// `kubectl create token` posts a TokenRequest (protobuf, from kubectl 1.32's typed client) to
/// `serviceaccounts/{name}/token`; the token it prints authenticates as the service account.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn create_token_issues_a_token_that_authenticates_as_the_service_account() {
    let (_sim, k) = start().await;
    k.run(&["create", "serviceaccount", "bot"])
        .await
        .ok()
        .stdout_has("serviceaccount/bot created");
    let out = k.run(&["create", "token", "bot", "--duration=20m"]).await;
    out.ok();
    let token = out.stdout.trim().to_string();
    assert_eq!(token.split('.').count(), 3, "a JWT-shaped token: {token}");
    k.run(&["auth", "whoami", "--token", &token])
        .await
        .ok()
        .stdout_has("system:serviceaccount:default:bot")
        .stdout_has("system:serviceaccounts:default");
    k.run(&["create", "token", "nobody"])
        .await
        .failed()
        .stderr_has("serviceaccounts \"nobody\" not found");
    k.run(&["create", "token", "bot", "--duration=1m"])
        .await
        .failed()
        .stderr_has("may not specify a duration less than 10 minutes");
}

/// The server printers' columns for Services, Jobs, Pods and StatefulSets, as kubectl shows them.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn get_services_jobs_and_statefulsets_print_the_servers_columns() {
    let (_sim, k) = start().await;
    k.stdin(
        &["apply", "-f", "-"],
        "apiVersion: v1\nkind: Service\nmetadata:\n  name: web\nspec:\n  type: NodePort\n  selector: {app: web}\n  ports:\n  - {port: 80, nodePort: 30080}\n---\napiVersion: batch/v1\nkind: Job\nmetadata:\n  name: once\nspec:\n  completions: 2\n  template:\n    spec:\n      restartPolicy: Never\n      containers:\n      - {name: run, image: busybox:1.36}\n---\napiVersion: apps/v1\nkind: StatefulSet\nmetadata:\n  name: db\nspec:\n  replicas: 2\n  serviceName: db\n  selector:\n    matchLabels: {app: db}\n  template:\n    metadata:\n      labels: {app: db}\n    spec:\n      containers:\n      - {name: pg, image: postgres:17}\n---\napiVersion: v1\nkind: Pod\nmetadata:\n  name: solo\nspec:\n  containers:\n  - {name: app, image: nginx:1.27}\n",
    )
    .await
    .ok();
    let out = k.run(&["get", "services", "web", "-o", "wide"]).await;
    out.ok();
    let rows = table_rows(&out);
    assert_eq!(
        rows[0],
        [
            "NAME",
            "TYPE",
            "CLUSTER-IP",
            "EXTERNAL-IP",
            "PORT(S)",
            "AGE",
            "SELECTOR"
        ],
        "{}",
        out.stdout
    );
    // The service registry allocated a cluster IP from 10.96.0.0/12.
    assert!(rows[1][2].starts_with("10."), "{}", out.stdout);
    assert_eq!(
        [&rows[1][..2], &rows[1][3..5]].concat(),
        ["web", "NodePort", "<none>", "80:30080/TCP"],
        "{}",
        out.stdout
    );
    assert_eq!(rows[1][6], "app=web");
    let out = k.run(&["get", "jobs"]).await;
    out.ok();
    let rows = table_rows(&out);
    assert_eq!(
        rows[0],
        ["NAME", "STATUS", "COMPLETIONS", "DURATION", "AGE"],
        "{}",
        out.stdout
    );
    assert_eq!(rows[1][..3], ["once", "Running", "0/2"], "{}", out.stdout);
    let out = k.run(&["get", "pods", "-o", "wide"]).await;
    out.ok();
    let rows = table_rows(&out);
    assert_eq!(
        rows[0],
        [
            "NAME",
            "READY",
            "STATUS",
            "RESTARTS",
            "AGE",
            "IP",
            "NODE",
            "NOMINATED NODE",
            "READINESS GATES"
        ],
        "{}",
        out.stdout
    );
    // New pods are Pending (the pod strategy's PrepareForCreate); no kubelet runs them.
    assert_eq!(
        rows[1][..4],
        ["solo", "0/1", "Pending", "0"],
        "{}",
        out.stdout
    );
    let out = k.run(&["get", "statefulsets"]).await;
    out.ok();
    let rows = table_rows(&out);
    assert_eq!(rows[0], ["NAME", "READY", "AGE"], "{}", out.stdout);
    assert_eq!(rows[1][..2], ["db", "0/2"], "{}", out.stdout);
}

/// `kubectl create role|rolebinding|clusterrole|clusterrolebinding` (kubectl 1.32+ sends these as protobuf from
/// its typed client) store what a JSON client would have sent, and the RBAC they grant takes effect.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn create_rbac_objects_through_kubectls_typed_client() {
    let (sim, k) = start().await;
    k.run(&[
        "create",
        "role",
        "pod-reader",
        "--verb=get,list",
        "--resource=pods",
    ])
    .await
    .ok()
    .stdout_has("role.rbac.authorization.k8s.io/pod-reader created");
    k.run(&[
        "create",
        "rolebinding",
        "read-pods",
        "--role=pod-reader",
        "--user=alice",
    ])
    .await
    .ok()
    .stdout_has("rolebinding.rbac.authorization.k8s.io/read-pods created");
    k.run(&[
        "create",
        "clusterrole",
        "node-reader",
        "--verb=get",
        "--resource=nodes",
    ])
    .await
    .ok()
    .stdout_has("clusterrole.rbac.authorization.k8s.io/node-reader created");
    k.run(&[
        "create",
        "clusterrolebinding",
        "read-nodes",
        "--clusterrole=node-reader",
        "--group=ops",
    ])
    .await
    .ok()
    .stdout_has("clusterrolebinding.rbac.authorization.k8s.io/read-nodes created");

    let role = get(
        &sim,
        "rbac.authorization.k8s.io/v1",
        "Role",
        "default",
        "pod-reader",
    );
    assert_eq!(
        role["rules"],
        json!([{"verbs": ["get", "list"], "apiGroups": [""], "resources": ["pods"]}])
    );
    let binding = get(
        &sim,
        "rbac.authorization.k8s.io/v1",
        "RoleBinding",
        "default",
        "read-pods",
    );
    assert_eq!(
        binding["roleRef"],
        json!({"apiGroup": "rbac.authorization.k8s.io", "kind": "Role", "name": "pod-reader"})
    );
    assert_eq!(
        binding["subjects"],
        json!([{"kind": "User", "apiGroup": "rbac.authorization.k8s.io", "name": "alice"}])
    );
    k.run(&["auth", "can-i", "list", "pods", "--as=alice"])
        .await
        .ok()
        .stdout_has("yes");
    k.run(&[
        "auth",
        "can-i",
        "get",
        "nodes",
        "--as=bob",
        "--as-group=ops",
    ])
    .await
    .ok()
    .stdout_has("yes");
}

/// `kubectl create service` (protobuf from kubectl 1.32+'s typed client) stores the spec a JSON client sends.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn create_service_through_kubectls_typed_client() {
    let (sim, k) = start().await;
    k.run(&["create", "service", "clusterip", "web", "--tcp=80:8080"])
        .await
        .ok()
        .stdout_has("service/web created");
    k.run(&[
        "create",
        "service",
        "nodeport",
        "edge",
        "--tcp=443:https",
        "--node-port=30443",
    ])
    .await
    .ok()
    .stdout_has("service/edge created");
    let web = get(&sim, "v1", "Service", "default", "web");
    assert_eq!(web["spec"]["type"], "ClusterIP");
    assert_eq!(
        web["spec"]["ports"],
        json!([{"name": "80-8080", "protocol": "TCP", "port": 80, "targetPort": 8080}])
    );
    assert_eq!(web["spec"]["selector"], json!({"app": "web"}));
    let edge = get(&sim, "v1", "Service", "default", "edge");
    assert_eq!(edge["spec"]["type"], "NodePort");
    assert_eq!(
        edge["spec"]["ports"][0]["targetPort"], "https",
        "a named target port stays a string"
    );
    assert_eq!(edge["spec"]["ports"][0]["nodePort"], 30443);
}

/// `kubectl create ingress` and `kubectl create poddisruptionbudget` (protobuf from kubectl 1.32+).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn create_ingress_and_pdb_through_kubectls_typed_client() {
    let (sim, k) = start().await;
    k.run(&[
        "create",
        "ingress",
        "web",
        "--class=nginx",
        "--rule=example.com/api*=api:8080,tls=example-tls",
    ])
    .await
    .ok()
    .stdout_has("ingress.networking.k8s.io/web created");
    let ingress = get(&sim, "networking.k8s.io/v1", "Ingress", "default", "web");
    assert_eq!(ingress["spec"]["ingressClassName"], "nginx");
    assert_eq!(
        ingress["spec"]["rules"],
        json!([{"host": "example.com", "http": {"paths": [{"path": "/api", "pathType": "Prefix",
            "backend": {"service": {"name": "api", "port": {"number": 8080}}}}]}}])
    );
    assert_eq!(
        ingress["spec"]["tls"],
        json!([{"hosts": ["example.com"], "secretName": "example-tls"}])
    );
    k.run(&[
        "create",
        "poddisruptionbudget",
        "web",
        "--selector=app=web",
        "--min-available=50%",
    ])
    .await
    .ok()
    .stdout_has("poddisruptionbudget.policy/web created");
    let pdb = get(&sim, "policy/v1", "PodDisruptionBudget", "default", "web");
    assert_eq!(pdb["spec"]["minAvailable"], "50%");
    assert_eq!(
        pdb["spec"]["selector"],
        json!({"matchLabels": {"app": "web"}})
    );
}

/// Client-side apply of built-ins and of a `kind: List`, with every kubectl on the image (1.27 and 1.28 fetch
/// `/openapi/v2` first and fail every apply without it). A version missing from the image fails the test.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn apply_of_lists_and_built_ins_works_with_every_kubectl_on_the_image() {
    for minor in 27..=33 {
        let bin = common_kubectl::kubectl_version(minor);
        let sim = KubeSim::start().await.expect("starting kube-sim");
        let k = common_kubectl::Kubectl::with_binary(&sim, &sim.admin(), bin);
        let list = "apiVersion: v1\nkind: List\nitems:\n- apiVersion: v1\n  kind: ConfigMap\n  metadata: {name: listed-a}\n  data: {v: '1'}\n- apiVersion: v1\n  kind: ConfigMap\n  metadata: {name: listed-b}\n";
        let out = k.stdin(&["apply", "-f", "-"], list).await;
        assert!(out.success(), "kubectl 1.{minor}:\n{}", out.describe());
        out.stdout_has("configmap/listed-a created")
            .stdout_has("configmap/listed-b created");
        k.stdin(&["apply", "-f", "-"], list)
            .await
            .ok()
            .stdout_has("configmap/listed-a unchanged");
        let changed = list.replace("v: '1'", "v: '2'");
        k.stdin(&["apply", "-f", "-"], &changed)
            .await
            .ok()
            .stdout_has("configmap/listed-a configured");
        assert_eq!(
            get(&sim, "v1", "ConfigMap", "default", "listed-a")["data"]["v"],
            "2",
            "kubectl 1.{minor}"
        );
        sim.stop().await;
    }
}

/// kubectl 1.32 and later create built-ins with protobuf bodies (client-go's typed clients); 1.31 sends JSON. The
/// same `kubectl create` from both stores the same object: the protobuf decoder prints what Go's JSON encoder
/// prints for the same struct.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn create_stores_the_same_object_from_a_protobuf_client_and_a_json_client() {
    let sim = KubeSim::start().await.expect("starting kube-sim");
    let proto = common_kubectl::Kubectl::with_binary(
        &sim,
        &sim.admin(),
        common_kubectl::kubectl_version(33),
    );
    let json_client = common_kubectl::Kubectl::with_binary(
        &sim,
        &sim.admin(),
        common_kubectl::kubectl_version(31),
    );
    // (resource as `kubectl get` names it, create arguments after the name)
    let cases: &[(&str, &[&str])] = &[
        (
            "deployment",
            &[
                "deployment",
                "--image=nginx:1.27",
                "--replicas=2",
                "--port=80",
            ],
        ),
        ("job", &["job", "--image=busybox:1.37", "--", "echo", "hi"]),
        (
            "cronjob",
            &[
                "cronjob",
                "--image=busybox:1.37",
                "--schedule=*/5 * * * *",
                "--",
                "date",
            ],
        ),
        ("service", &["service", "nodeport", "--tcp=80:8080"]),
        (
            "ingress",
            &[
                "ingress",
                "--class=nginx",
                "--rule=a.example.com/*=web:80,tls=cert",
            ],
        ),
        (
            "poddisruptionbudget",
            &[
                "poddisruptionbudget",
                "--selector=app=web",
                "--min-available=50%",
            ],
        ),
        (
            "role",
            &[
                "role",
                "--verb=get,list",
                "--resource=pods,deployments.apps",
            ],
        ),
        (
            "clusterrole",
            &["clusterrole", "--verb=get", "--resource=nodes"],
        ),
        (
            "rolebinding",
            &["rolebinding", "--clusterrole=view", "--user=alice"],
        ),
        (
            "clusterrolebinding",
            &["clusterrolebinding", "--clusterrole=view", "--group=devs"],
        ),
    ];
    // What legitimately differs between two creations: identity, times, field managers, status, and values the
    // server generates (a Job's uid-based selector and labels, a Service's addresses and node ports).
    let strip = |mut v: Value| {
        let meta = v["metadata"].as_object_mut().unwrap();
        for k in [
            "uid",
            "resourceVersion",
            "creationTimestamp",
            "managedFields",
            "generation",
        ] {
            meta.remove(k);
        }
        if let Some(labels) = meta.get_mut("labels").and_then(Value::as_object_mut) {
            labels.retain(|k, _| !k.contains("controller-uid"));
        }
        v.as_object_mut().unwrap().remove("status");
        if let Some(spec) = v["spec"].as_object_mut() {
            spec.remove("clusterIP");
            spec.remove("clusterIPs");
            if spec
                .get("selector")
                .is_some_and(|s| s.to_string().contains("controller-uid"))
            {
                spec.remove("selector");
            }
            for port in spec
                .get_mut("ports")
                .and_then(Value::as_array_mut)
                .into_iter()
                .flatten()
            {
                port.as_object_mut().unwrap().remove("nodePort");
            }
            if let Some(labels) = spec
                .get_mut("template")
                .and_then(|t| t["metadata"]["labels"].as_object_mut())
            {
                labels.retain(|k, _| !k.contains("controller-uid"));
            }
        }
        v
    };
    for (kind, args) in cases {
        // `create service nodeport NAME`: the service type comes before the name.
        let before = if *kind == "service" { 2 } else { 1 };
        let create = |name: &'static str| {
            let mut full = vec!["create"];
            full.extend_from_slice(&args[..before]);
            full.push(name);
            full.extend_from_slice(&args[before..]);
            full
        };
        // `-v=8` goes first: whatever follows `--` is the Job's command.
        let out = proto
            .run(&[&["-v=8"][..], &create("from-proto")].concat())
            .await;
        assert!(
            out.success(),
            "kubectl 1.33 create {kind}:\n{}",
            out.describe()
        );
        assert!(
            out.stderr.contains("application/vnd.kubernetes.protobuf"),
            "kubectl 1.33 is expected to send protobuf for {kind}:\n{}",
            out.stderr
                .lines()
                .filter(|l| l.contains("Content-Type"))
                .collect::<Vec<_>>()
                .join("\n")
        );
        json_client.run(&create("from-json")).await.ok();
        let get = |name: &str| {
            let out = std::process::Command::new(common_kubectl::kubectl_version(33))
                .args([
                    "--kubeconfig",
                    &proto.kubeconfig().to_string_lossy(),
                    "get",
                    kind,
                    name,
                    "-o",
                    "json",
                ])
                .output()
                .expect("kubectl get");
            serde_json::from_slice::<Value>(&out.stdout).expect("JSON")
        };
        // Object names also appear in generated labels and selectors; compare with them made equal.
        let neutral = |v: Value| -> Value {
            serde_json::from_str(
                &v.to_string()
                    .replace("from-proto", "NAME")
                    .replace("from-json", "NAME"),
            )
            .unwrap()
        };
        let (a, b) = (
            strip(neutral(get("from-proto"))),
            strip(neutral(get("from-json"))),
        );
        assert_eq!(
            a, b,
            "{kind}: the protobuf-created object differs from the JSON-created one"
        );
    }
}

/// The workload scenario with every kubectl on the image, against a kube-sim with its workload controllers: apply
/// of a `kind: List`, wait and rollout status on a Deployment made available by the controllers, scale, a
/// non-interactive edit, diff, create token, a Job waited to completion, describe and get with the server's
/// columns, explain from both OpenAPI documents, and an operator's Event in describe and `kubectl events`. A
/// version missing from the image fails the test.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_workload_scenario_works_with_every_kubectl_on_the_image() {
    let list = r#"apiVersion: v1
kind: List
items:
- apiVersion: apps/v1
  kind: Deployment
  metadata: {name: web, namespace: default}
  spec:
    replicas: 2
    selector: {matchLabels: {app: web}}
    template:
      metadata: {labels: {app: web}}
      spec: {containers: [{name: web, image: "nginx:1.27", ports: [{containerPort: 80}]}]}
- apiVersion: v1
  kind: Service
  metadata: {name: web, namespace: default}
  spec: {selector: {app: web}, ports: [{port: 80}]}
"#;
    for minor in 27..=33 {
        let bin = common_kubectl::kubectl_version(minor);
        let sim = KubeSim::builder()
            .workloads(kube_sim::workloads::WorkloadOptions::default())
            .start()
            .await
            .expect("starting kube-sim");
        let k = common_kubectl::Kubectl::with_binary(&sim, &sim.admin(), bin);
        let v = format!("kubectl 1.{minor}");
        let out = k.stdin(&["apply", "-f", "-"], list).await;
        assert!(out.success(), "{v}:\n{}", out.describe());
        out.stdout_has("deployment.apps/web created")
            .stdout_has("service/web created");
        let out = k
            .run(&[
                "wait",
                "--for=condition=Available",
                "deployment/web",
                "--timeout=60s",
            ])
            .await;
        assert!(out.success(), "{v}:\n{}", out.describe());
        out.stdout_has("deployment.apps/web condition met");
        k.run(&["rollout", "status", "deployment/web", "--timeout=60s"])
            .await
            .ok()
            .stdout_has("successfully rolled out");
        k.run(&["scale", "deployment/web", "--replicas=3"])
            .await
            .ok()
            .stdout_has("deployment.apps/web scaled");
        let out = k
            .run(&[
                "wait",
                "--for=jsonpath={.status.readyReplicas}=3",
                "deployment/web",
                "--timeout=60s",
            ])
            .await;
        assert!(out.success(), "{v}:\n{}", out.describe());
        // A non-interactive edit: the editor is a command that rewrites the file kubectl hands it.
        let out = k
            .run_env(
                &["edit", "deployment/web"],
                &[("KUBE_EDITOR", "sed -i s/nginx:1.27/nginx:1.28/")],
            )
            .await;
        assert!(out.success(), "{v}:\n{}", out.describe());
        out.stdout_has("deployment.apps/web edited");
        let out = k
            .run(&["rollout", "status", "deployment/web", "--timeout=60s"])
            .await;
        assert!(out.success(), "{v}:\n{}", out.describe());
        // diff exits 1 when the live object differs from the file (server-side dry run), 0 when not.
        let changed = list.replace("replicas: 2", "replicas: 5");
        let file = k.file("changed.yaml", &changed);
        let out = k.run(&["diff", "-f", &file]).await;
        assert_eq!(out.code, 1, "{v}:\n{}", out.describe());
        assert!(
            out.stdout.contains("+  replicas: 5"),
            "{v}:\n{}",
            out.stdout
        );
        let out = k
            .run(&["create", "token", "default", "--duration=10m"])
            .await;
        assert!(out.success(), "{v}:\n{}", out.describe());
        assert_eq!(
            out.stdout.trim().split('.').count(),
            3,
            "{v}: a JWT:\n{}",
            out.stdout
        );
        k.run(&[
            "create",
            "job",
            "once",
            "--image=busybox:1.37",
            "--",
            "true",
        ])
        .await
        .ok();
        let out = k
            .run(&[
                "wait",
                "--for=condition=Complete",
                "job/once",
                "--timeout=60s",
            ])
            .await;
        assert!(out.success(), "{v}:\n{}", out.describe());
        let out = k.run(&["get", "deployments"]).await;
        out.ok();
        let rows = table_rows(&out);
        assert_eq!(
            rows[0],
            ["NAME", "READY", "UP-TO-DATE", "AVAILABLE", "AGE"],
            "{v}"
        );
        assert_eq!(rows[1][..4], ["web", "3/3", "3", "3"], "{v}");
        let out = k.run(&["describe", "deployment", "web"]).await;
        out.ok()
            .stdout_has("nginx:1.28")
            .stdout_has("3 desired | 3 updated | 3 total | 3 available | 0 unavailable")
            .stdout_has("NewReplicaSetAvailable");
        let out = k.run(&["get", "endpoints", "web"]).await;
        out.ok();
        assert_eq!(table_rows(&out)[0], ["NAME", "ENDPOINTS", "AGE"], "{v}");
        assert!(
            table_rows(&out)[1][1].contains(":80"),
            "{v}:\n{}",
            out.stdout
        );
        // `create` of a built-in kind (protobuf from 1.32 on) and `create -f` of a List.
        k.run(&[
            "create",
            "deployment",
            "extra",
            "--image=nginx:1.27",
            "--replicas=2",
        ])
        .await
        .ok()
        .stdout_has("deployment.apps/extra created");
        let out = k
            .run(&[
                "wait",
                "--for=condition=Available",
                "deployment/extra",
                "--timeout=60s",
            ])
            .await;
        assert!(out.success(), "{v}:\n{}", out.describe());
        let listed = "apiVersion: v1\nkind: List\nitems:\n- {apiVersion: v1, kind: ConfigMap, metadata: {name: made-a}}\n- {apiVersion: v1, kind: ConfigMap, metadata: {name: made-b}}\n";
        let file = k.file("list.yaml", listed);
        k.run(&["create", "-f", &file])
            .await
            .ok()
            .stdout_has("configmap/made-a created")
            .stdout_has("configmap/made-b created");
        // explain from /openapi/v3 (the default from 1.27 on) and from /openapi/v2.
        for output in ["--output=plaintext", "--output=plaintext-openapiv2"] {
            let out = k
                .run(&[
                    "explain",
                    "deployment.spec.template.spec.containers",
                    output,
                ])
                .await;
            assert!(out.success(), "{v} {output}:\n{}", out.describe());
            out.stdout_has("image")
                .stdout_has("imagePullPolicy")
                .stdout_has("Deployment");
        }
        // An operator's Event (events.k8s.io/v1, as kube-rs writes it) shows in describe and `kubectl events`.
        let uid = get(&sim, "apps/v1", "Deployment", "default", "web")["metadata"]["uid"].clone();
        let now = jiff::Timestamp::now()
            .strftime("%Y-%m-%dT%H:%M:%S.000000Z")
            .to_string();
        sim.apply_yaml(&format!(
            "apiVersion: events.k8s.io/v1\nkind: Event\nmetadata: {{name: web.op1, namespace: default}}\neventTime: \"{now}\"\nreportingController: example.com/operator\nreportingInstance: operator-0\naction: Reconcile\nreason: Synced\ntype: Normal\nnote: the operator synced web\nregarding: {{apiVersion: apps/v1, kind: Deployment, name: web, namespace: default, uid: {uid}}}\n"
        ))
        .await
        .expect("event");
        k.run(&["describe", "deployment", "web"])
            .await
            .ok()
            .stdout_has("Synced")
            .stdout_has("the operator synced web");
        k.run(&["events", "--for", "deployment/web"])
            .await
            .ok()
            .stdout_has("the operator synced web");
        sim.stop().await;
    }
}
