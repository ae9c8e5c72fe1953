//! Drift: objects of a release edited or deleted in the workload cluster behind Helm's back. Each object of the
//! release's manifest (as Helm stored it with the latest revision) is applied as a server-side dry run with Helm's
//! field manager and forced conflicts, as Flux does; where the result differs from the live object, Helm's
//! fields were changed. A missing object is drift too. Correction creates a missing object with that apply, and
//! puts back only the drifted fields of a modified one (a JSON patch of those fields, as Flux's correction
//! patches them): the fields the ignore rules leave to another owner (an autoscaler's `/spec/replicas`) are
//! never written, even when another field of the same object drifted.
//!
//! Only the fields Helm manages count: a label someone else added is theirs and stays (the dry run keeps it, so
//! the comparison does not see it). Status and server-set metadata are ignored, as are the JSON pointers of the
//! ignore rules that match an object, and objects that opt out with [`OPT_OUT`] set to `disabled` (Flux's label
//! and annotation).

use kube::api::{Patch, PatchParams};
use serde_json::{Value, json};

use super::manifest::{self, ManifestError, ManifestObject as Desired};
use super::selector;

/// The field manager Helm's server-side apply uses in the worker (it takes the program's name), and so the one
/// whose fields count.
pub const FIELD_MANAGER: &str = "omni-operator";
/// A label or annotation with value `disabled` keeps an object out of drift detection.
pub const OPT_OUT: &str = "helm.toolkit.fluxcd.io/driftDetection";
/// Differing fields reported per object, at most.
const MAX_FIELDS: usize = 20;

/// Which objects an ignore rule applies to; an empty field matches anything. `name` and `namespace` are regular
/// expressions matching the whole name, as in Flux's selector (`web-.*`); a plain name matches itself. The
/// selectors are label selectors over the labels and annotations the manifest gives the object.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Target {
    pub group: String,
    pub version: String,
    pub kind: String,
    pub name: String,
    pub namespace: String,
    pub label_selector: String,
    pub annotation_selector: String,
}

/// JSON pointers (RFC 6901) left out of the comparison, for the objects `target` selects (all when none).
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Ignore {
    pub paths: Vec<String>,
    pub target: Option<Target>,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Reason {
    Missing,
    Modified,
}

/// An object that drifted.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Drifted {
    pub api_version: String,
    pub kind: String,
    /// Empty for cluster-scoped objects.
    pub namespace: String,
    pub name: String,
    pub reason: Reason,
    /// JSON pointers of the fields that differ (at most [`MAX_FIELDS`]).
    pub fields: Vec<String>,
}

#[derive(Debug, thiserror::Error)]
pub enum DriftError {
    #[error(
        "driftDetection.ignore target {field} {pattern:?} is not a regular expression: {reason}"
    )]
    Pattern {
        field: &'static str,
        pattern: String,
        reason: String,
    },
    #[error("driftDetection.ignore target {field} {selector:?} is not a label selector: {reason}")]
    Selector {
        field: &'static str,
        selector: String,
        reason: String,
    },
    #[error("the release manifest: {0}")]
    Manifest(String),
    #[error(transparent)]
    Resolve(#[from] ManifestError),
    #[error("{object}: {source}")]
    Kube {
        object: String,
        #[source]
        source: kube::Error,
    },
}

/// Drift's view of a manifest object: what it reports and which ignore rules select it.
trait Compared {
    fn drifted(&self, reason: Reason, fields: Vec<String>) -> Drifted;
    fn selected_by(&self, t: &Target) -> Result<bool, DriftError>;
}

impl Compared for Desired {
    fn drifted(&self, reason: Reason, fields: Vec<String>) -> Drifted {
        Drifted {
            api_version: self.resource.api_version.clone(),
            kind: self.resource.kind.clone(),
            namespace: self.namespace.clone().unwrap_or_default(),
            name: self.name.clone(),
            reason,
            fields,
        }
    }

    fn selected_by(&self, t: &Target) -> Result<bool, DriftError> {
        let ok = |want: &str, have: &str| want.is_empty() || want == have;
        Ok(ok(&t.group, &self.resource.group)
            && ok(&t.version, &self.resource.version)
            && ok(&t.kind, &self.resource.kind)
            && whole_match("name", &t.name, &self.name)?
            && whole_match(
                "namespace",
                &t.namespace,
                self.namespace.as_deref().unwrap_or_default(),
            )?
            && selects(
                "labelSelector",
                &t.label_selector,
                &self.object["metadata"]["labels"],
            )?
            && selects(
                "annotationSelector",
                &t.annotation_selector,
                &self.object["metadata"]["annotations"],
            )?)
    }
}

/// The release's objects that drifted.
pub async fn detect(
    client: &kube::Client,
    release: &str,
    release_namespace: &str,
    manifest: &str,
    ignore: &[Ignore],
) -> Result<Vec<Drifted>, DriftError> {
    Ok(
        drifted(client, release, release_namespace, manifest, ignore)
            .await?
            .into_iter()
            .map(|(_, found)| found.drifted)
            .collect(),
    )
}

/// Puts the drifted objects back: creates the missing ones, and patches the drifted fields of the modified ones
/// (over the version that was compared, so a change in between is not overwritten); answers what it corrected.
pub async fn correct(
    client: &kube::Client,
    release: &str,
    release_namespace: &str,
    manifest: &str,
    ignore: &[Ignore],
) -> Result<Vec<Drifted>, DriftError> {
    let found = drifted(client, release, release_namespace, manifest, ignore).await?;
    for (d, found) in &found {
        let kube_err = |source| DriftError::Kube {
            object: d.describe(),
            source,
        };
        let api = d.api(client);
        match &found.fix {
            Fix::Create => {
                let params = PatchParams::apply(FIELD_MANAGER).force();
                api.patch(&d.name, &params, &Patch::Apply(&d.object))
                    .await
                    .map_err(kube_err)?;
            }
            Fix::Patch(ops) => {
                let patch: json_patch::Patch = serde_json::from_value(Value::Array(ops.clone()))
                    .map_err(|e| DriftError::Manifest(format!("{}: {e}", d.describe())))?;
                let params = PatchParams {
                    field_manager: Some(FIELD_MANAGER.into()),
                    ..Default::default()
                };
                api.patch(&d.name, &params, &Patch::Json::<()>(patch))
                    .await
                    .map_err(kube_err)?;
            }
        }
    }
    Ok(found.into_iter().map(|(_, f)| f.drifted).collect())
}

/// What puts one drifted object back.
#[derive(Debug, Clone, PartialEq)]
enum Fix {
    /// It is missing: created by the apply.
    Create,
    /// Its drifted fields, as JSON patch operations.
    Patch(Vec<Value>),
}

/// A drifted object: how it drifted, and what puts it back.
struct Found {
    drifted: Drifted,
    fix: Fix,
}

/// Each object of the manifest that drifted, with how.
async fn drifted(
    client: &kube::Client,
    release: &str,
    release_namespace: &str,
    manifest: &str,
    ignore: &[Ignore],
) -> Result<Vec<(Desired, Found)>, DriftError> {
    let mut out = Vec::new();
    for d in desired(client, release, release_namespace, manifest).await? {
        if let Some(found) = check(client, &d, ignore).await? {
            out.push((d, found));
        }
    }
    Ok(out)
}

/// What Helm stamps on every object it applies (its `setMetadataVisitor`) but does not keep in the stored
/// manifest; without them the comparison would see Helm's own ownership marks as drift, and a correction would
/// strip them.
fn stamp_helm_ownership(object: &mut Value, release: &str, release_namespace: &str) {
    let Some(metadata) = object.get_mut("metadata").and_then(Value::as_object_mut) else {
        return;
    };
    let labels = metadata
        .entry("labels")
        .or_insert_with(|| Value::Object(Default::default()));
    if let Some(l) = labels.as_object_mut() {
        l.insert("app.kubernetes.io/managed-by".into(), "Helm".into());
    }
    let annotations = metadata
        .entry("annotations")
        .or_insert_with(|| Value::Object(Default::default()));
    if let Some(a) = annotations.as_object_mut() {
        a.insert("meta.helm.sh/release-name".into(), release.into());
        a.insert(
            "meta.helm.sh/release-namespace".into(),
            release_namespace.into(),
        );
    }
}

/// The manifest's objects, each with Helm's ownership marks.
async fn desired(
    client: &kube::Client,
    release: &str,
    release_namespace: &str,
    manifest: &str,
) -> Result<Vec<Desired>, DriftError> {
    let mut objects = manifest::resolve(client, release_namespace, manifest).await?;
    for o in &mut objects {
        stamp_helm_ownership(&mut o.object, release, release_namespace);
    }
    Ok(objects)
}

fn opted_out(live: &Value) -> bool {
    ["labels", "annotations"]
        .iter()
        .any(|m| live["metadata"][m][OPT_OUT].as_str() == Some("disabled"))
}

async fn check(
    client: &kube::Client,
    d: &Desired,
    ignore: &[Ignore],
) -> Result<Option<Found>, DriftError> {
    let api = d.api(client);
    let kube_err = |source| DriftError::Kube {
        object: d.describe(),
        source,
    };
    let Some(live) = api.get_opt(&d.name).await.map_err(kube_err)? else {
        return Ok(Some(Found {
            drifted: d.drifted(Reason::Missing, Vec::new()),
            fix: Fix::Create,
        }));
    };
    let mut live = serde_json::to_value(&live).map_err(|e| DriftError::Manifest(e.to_string()))?;
    if opted_out(&live) {
        return Ok(None);
    }
    let version = live["metadata"]["resourceVersion"]
        .as_str()
        .unwrap_or_default()
        .to_string();
    let params = PatchParams::apply(FIELD_MANAGER).force().dry_run();
    let applied = api
        .patch(&d.name, &params, &Patch::Apply(&d.object))
        .await
        .map_err(kube_err)?;
    let mut applied =
        serde_json::to_value(&applied).map_err(|e| DriftError::Manifest(e.to_string()))?;
    let mut rules = Vec::new();
    for rule in ignore {
        let selected = match &rule.target {
            Some(t) => d.selected_by(t)?,
            None => true,
        };
        if selected {
            rules.push(rule);
        }
    }
    for v in [&mut live, &mut applied] {
        normalise(v);
        for path in rules.iter().flat_map(|r| &r.paths) {
            remove_pointer(v, path);
        }
    }
    let mut fields = Vec::new();
    differences(&applied, &live, String::new(), usize::MAX, &mut fields);
    if fields.is_empty() {
        return Ok(None);
    }
    let fix = Fix::Patch(patch_of(&applied, &live, &fields, &version));
    fields.truncate(MAX_FIELDS);
    Ok(Some(Found {
        drifted: d.drifted(Reason::Modified, fields),
        fix,
    }))
}

/// The JSON patch that gives `live` the values `applied` has at `fields` (pointers where they differ), and only
/// those, after a test that the object is still at `version`.
fn patch_of(applied: &Value, live: &Value, fields: &[String], version: &str) -> Vec<Value> {
    let mut ops =
        vec![json!({"op": "test", "path": "/metadata/resourceVersion", "value": version})];
    for field in fields {
        let parent = field.rsplit_once('/').map_or("", |(p, _)| p);
        let in_list = live.pointer(parent).is_some_and(Value::is_array);
        match (applied.pointer(field), live.pointer(field)) {
            (Some(value), Some(_)) if in_list => {
                ops.push(json!({"op": "replace", "path": field, "value": value}))
            }
            (Some(value), _) => ops.push(json!({"op": "add", "path": field, "value": value})),
            (None, Some(_)) => ops.push(json!({"op": "remove", "path": field})),
            (None, None) => {}
        }
    }
    ops
}

/// Drops what the server sets and what is not Helm's to say: status and the server-maintained metadata.
fn normalise(v: &mut Value) {
    if let Some(o) = v.as_object_mut() {
        o.remove("status");
    }
    if let Some(m) = v.get_mut("metadata").and_then(Value::as_object_mut) {
        for key in [
            "managedFields",
            "resourceVersion",
            "generation",
            "creationTimestamp",
            "uid",
            "selfLink",
        ] {
            m.remove(key);
        }
    }
}

/// Whether `pattern` (a regular expression; empty: anything) matches all of `value`.
/// Whether label selector `text` selects `labels`; a selector that does not parse is the rule's error.
fn selects(field: &'static str, text: &str, labels: &Value) -> Result<bool, DriftError> {
    selector::parse(text).map_err(|reason| DriftError::Selector {
        field,
        selector: text.to_string(),
        reason,
    })?;
    Ok(selector::matches(text, labels))
}

fn whole_match(field: &'static str, pattern: &str, value: &str) -> Result<bool, DriftError> {
    if pattern.is_empty() || pattern == value {
        return Ok(true);
    }
    let anchored =
        regex::Regex::new(&format!("^(?:{pattern})$")).map_err(|e| DriftError::Pattern {
            field,
            pattern: pattern.to_string(),
            reason: e.to_string(),
        })?;
    Ok(anchored.is_match(value))
}

/// RFC 6901's escaping of one reference token.
fn escape(token: &str) -> String {
    token.replace('~', "~0").replace('/', "~1")
}

fn unescape(token: &str) -> String {
    token.replace("~1", "/").replace("~0", "~")
}

/// Removes the value at a JSON pointer, if there is one.
fn remove_pointer(v: &mut Value, pointer: &str) {
    let Some(rest) = pointer.strip_prefix('/') else {
        return;
    };
    let tokens: Vec<String> = rest.split('/').map(unescape).collect();
    let Some((last, parents)) = tokens.split_last() else {
        return;
    };
    let mut cur = v;
    for t in parents {
        let next = match cur {
            Value::Object(m) => m.get_mut(t),
            Value::Array(a) => t.parse::<usize>().ok().and_then(|i| a.get_mut(i)),
            _ => None,
        };
        match next {
            Some(n) => cur = n,
            None => return,
        }
    }
    match cur {
        Value::Object(m) => {
            m.remove(last);
        }
        Value::Array(a) => {
            if let Ok(i) = last.parse::<usize>()
                && i < a.len()
            {
                a.remove(i);
            }
        }
        _ => {}
    }
}

/// The JSON pointers where `want` and `have` differ (objects key by key, lists of equal length item by item), at
/// most `limit` of them.
fn differences(want: &Value, have: &Value, at: String, limit: usize, out: &mut Vec<String>) {
    if want == have || out.len() >= limit {
        return;
    }
    match (want, have) {
        (Value::Object(w), Value::Object(h)) => {
            let mut keys: Vec<&String> = w.keys().chain(h.keys()).collect();
            keys.sort();
            keys.dedup();
            for k in keys {
                let (a, b) = (
                    w.get(k).unwrap_or(&Value::Null),
                    h.get(k).unwrap_or(&Value::Null),
                );
                differences(a, b, format!("{at}/{}", escape(k)), limit, out);
            }
        }
        (Value::Array(w), Value::Array(h)) if w.len() == h.len() => {
            for (i, (a, b)) in w.iter().zip(h).enumerate() {
                differences(a, b, format!("{at}/{i}"), limit, out);
            }
        }
        _ => out.push(if at.is_empty() { "/".into() } else { at }),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn a_correction_patches_only_the_drifted_fields_over_the_compared_version() {
        // `applied` and `live` as `check` compares them: normalised, the ignored /spec/replicas taken out of both
        // (so it is not in the patch, whatever its live value).
        let applied = json!({"metadata": {"labels": {"a": "1"}}, "spec": {"template": {"spec": {
            "containers": [{"name": "demo", "image": "nginx:1", "args": ["-v", "2"]}]}}, "paused": false}});
        let live = json!({"metadata": {"labels": {"a": "2"}}, "spec": {"template": {"spec": {
            "containers": [{"name": "demo", "image": "busybox", "args": ["-v", "9"]}]}}, "minReadySeconds": 9}});
        let mut fields = Vec::new();
        differences(&applied, &live, String::new(), usize::MAX, &mut fields);
        assert_eq!(
            patch_of(&applied, &live, &fields, "7"),
            [
                json!({"op": "test", "path": "/metadata/resourceVersion", "value": "7"}),
                json!({"op": "add", "path": "/metadata/labels/a", "value": "1"}),
                json!({"op": "remove", "path": "/spec/minReadySeconds"}),
                json!({"op": "add", "path": "/spec/paused", "value": false}),
                // An item of a list is replaced (`add` would insert one); an object's member is added over.
                json!({"op": "replace", "path": "/spec/template/spec/containers/0/args/1", "value": "2"}),
                json!({"op": "add", "path": "/spec/template/spec/containers/0/image", "value": "nginx:1"}),
            ]
        );
    }

    #[test]
    fn ignore_targets_name_objects_by_whole_regular_expressions() {
        assert!(whole_match("name", "", "web-1").unwrap());
        assert!(whole_match("name", "web-1", "web-1").unwrap());
        assert!(whole_match("name", "web-.*", "web-1").unwrap());
        assert!(
            !whole_match("name", "web", "web-1").unwrap(),
            "anchored at both ends"
        );
        assert!(!whole_match("namespace", "apps|web", "apps-2").unwrap());
        let err = whole_match("name", "web-(", "web-1").unwrap_err();
        assert!(
            err.to_string().starts_with(
                "driftDetection.ignore target name \"web-(\" is not a regular expression: "
            ),
            "{err}"
        );
    }

    /// Ignore targets select by the labels and annotations the manifest gives an object, as label selectors; a
    /// selector that does not parse is the rule's error, naming the field.
    #[test]
    fn ignore_targets_select_by_label_and_annotation_selectors() {
        let labels = json!({"app": "web", "tier": "front"});
        assert!(selects("labelSelector", "", &labels).unwrap());
        assert!(selects("labelSelector", "app=web,tier in (front)", &labels).unwrap());
        assert!(!selects("labelSelector", "app!=web", &labels).unwrap());
        assert!(selects("annotationSelector", "!autoscaled", &Value::Null).unwrap());
        let err = selects("labelSelector", "tier in front", &labels).unwrap_err();
        assert!(
            err.to_string()
                .starts_with("driftDetection.ignore target labelSelector \"tier in front\" is not a label selector"),
            "{err}"
        );
    }

    #[test]
    fn differences_are_json_pointers_to_the_changed_leaves() {
        let want = json!({"spec": {"replicas": 2, "template": {"metadata": {"labels": {"a/b": "x"}}},
            "ports": [{"port": 80}, {"port": 443}]}});
        let have = json!({"spec": {"replicas": 5, "template": {"metadata": {"labels": {"a/b": "y"}}},
            "ports": [{"port": 80}, {"port": 8443}]}});
        let mut out = Vec::new();
        differences(&want, &have, String::new(), MAX_FIELDS, &mut out);
        assert_eq!(
            out,
            [
                "/spec/ports/1/port",
                "/spec/replicas",
                "/spec/template/metadata/labels/a~1b"
            ]
        );
        let mut same = Vec::new();
        differences(&want, &want, String::new(), MAX_FIELDS, &mut same);
        assert!(same.is_empty());
    }

    #[test]
    fn ignored_pointers_and_server_fields_are_left_out() {
        let mut v = json!({"metadata": {"name": "x", "resourceVersion": "7", "managedFields": [],
            "annotations": {"example.com/x": "1"}}, "spec": {"replicas": 3, "list": [1, 2, 3]}, "status": {"a": 1}});
        normalise(&mut v);
        remove_pointer(&mut v, "/spec/replicas");
        remove_pointer(&mut v, "/metadata/annotations/example.com~1x");
        remove_pointer(&mut v, "/spec/list/1");
        remove_pointer(&mut v, "/no/such/path");
        remove_pointer(&mut v, "not a pointer");
        assert_eq!(
            v,
            json!({"metadata": {"name": "x", "annotations": {}}, "spec": {"list": [1, 3]}})
        );
    }

    #[test]
    fn helms_ownership_marks_are_added_as_helm_adds_them_when_it_applies() {
        let mut o = json!({"metadata": {"name": "x", "labels": {"app": "x"}}});
        stamp_helm_ownership(&mut o, "web", "apps");
        assert_eq!(
            o["metadata"],
            json!({"name": "x", "labels": {"app": "x", "app.kubernetes.io/managed-by": "Helm"},
                "annotations": {"meta.helm.sh/release-name": "web", "meta.helm.sh/release-namespace": "apps"}})
        );
    }

    #[test]
    fn an_object_opts_out_with_flux_label_or_annotation() {
        assert!(opted_out(
            &json!({"metadata": {"labels": {OPT_OUT: "disabled"}}})
        ));
        assert!(opted_out(
            &json!({"metadata": {"annotations": {OPT_OUT: "disabled"}}})
        ));
        assert!(!opted_out(
            &json!({"metadata": {"annotations": {OPT_OUT: "enabled"}}})
        ));
    }
}
