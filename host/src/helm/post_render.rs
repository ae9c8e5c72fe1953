//! Flux's post-renderers, applied to the manifests Helm rendered before it applies them: each `kustomize`
//! renderer's `patches` (strategic-merge or JSON 6902, on the objects their `target` selects) and `images`
//! (new names, tags or digests for container images), in order, then `commonMetadata` (labels and annotations
//! on every object). Helm runs this as its post-renderer plugin (`omni-operator helm-post-render SPEC`), in the
//! worker, on the manifest it then applies and stores.
//!
//! Strategic merge follows Kubernetes' rules for the lists that carry a merge key in the built-in kinds
//! (containers, init and ephemeral containers, volumes, env, image pull secrets and host aliases by name or ip,
//! ports by containerPort, volume mounts by mountPath, volume devices by devicePath); other lists are replaced.
//! `$patch: delete` removes a map or a keyed list element, and `null` removes a field.

use std::collections::BTreeMap;

use serde::Deserialize as _;
use serde_json::{Map, Value};

use super::selector;

/// What is done to the manifests: Flux's fields, as the host hands them to the worker.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct PostRender {
    renderers: Vec<Kustomize>,
    labels: BTreeMap<String, String>,
    annotations: BTreeMap<String, String>,
}

#[derive(Debug, Clone, Default, PartialEq)]
struct Kustomize {
    patches: Vec<Patch>,
    images: Vec<Image>,
}

#[derive(Debug, Clone, PartialEq)]
struct Patch {
    kind: PatchKind,
    target: Option<Selector>,
}

#[derive(Debug, Clone, PartialEq)]
enum PatchKind {
    Strategic(Value),
    Json6902(Vec<Value>),
}

/// Which objects a patch applies to; an empty field matches anything, `name` and `namespace` as whole regular
/// expressions (kustomize's rule), the selectors as Kubernetes label selectors.
#[derive(Debug, Clone, Default, PartialEq)]
struct Selector {
    group: String,
    version: String,
    kind: String,
    name: String,
    namespace: String,
    label_selector: String,
    annotation_selector: String,
}

#[derive(Debug, Clone, Default, PartialEq)]
struct Image {
    name: String,
    new_name: String,
    new_tag: String,
    digest: String,
}

#[derive(Debug, thiserror::Error, PartialEq, Eq)]
pub enum PostRenderError {
    /// The spec is not as Flux writes it; names the field.
    #[error("{field}: {reason}")]
    Spec { field: String, reason: String },
    #[error("the rendered manifests: {0}")]
    Manifest(String),
    /// A JSON 6902 patch that does not apply to an object it targets.
    #[error("{patch} on {object}: {reason}")]
    Apply {
        patch: String,
        object: String,
        reason: String,
    },
}

fn spec_error(field: impl Into<String>, reason: impl Into<String>) -> PostRenderError {
    PostRenderError::Spec {
        field: field.into(),
        reason: reason.into(),
    }
}

impl PostRender {
    /// Reads `{"postRenderers": [...], "commonMetadata": {...}}` (Flux's field names), checking every patch
    /// parses and every selector compiles, so a bad spec is refused before Helm runs.
    pub fn from_spec(spec: &Value) -> Result<PostRender, PostRenderError> {
        let mut out = PostRender::default();
        for (i, r) in spec["postRenderers"]
            .as_array()
            .into_iter()
            .flatten()
            .enumerate()
        {
            let at = format!("postRenderers[{i}].kustomize");
            let k = &r["kustomize"];
            let mut kustomize = Kustomize::default();
            for (j, p) in k["patches"].as_array().into_iter().flatten().enumerate() {
                kustomize
                    .patches
                    .push(patch(&format!("{at}.patches[{j}]"), p)?);
            }
            for (j, image) in k["images"].as_array().into_iter().flatten().enumerate() {
                let field = |f: &str| image[f].as_str().unwrap_or_default().to_string();
                let image = Image {
                    name: field("name"),
                    new_name: field("newName"),
                    new_tag: field("newTag"),
                    digest: field("digest"),
                };
                if image.name.is_empty() {
                    return Err(spec_error(format!("{at}.images[{j}].name"), "is required"));
                }
                kustomize.images.push(image);
            }
            out.renderers.push(kustomize);
        }
        let strings = |field: &str| -> Result<BTreeMap<String, String>, PostRenderError> {
            let mut m = BTreeMap::new();
            for (k, v) in spec["commonMetadata"][field]
                .as_object()
                .into_iter()
                .flatten()
            {
                let v = v.as_str().ok_or_else(|| {
                    spec_error(format!("commonMetadata.{field}.{k}"), "must be a string")
                })?;
                m.insert(k.clone(), v.to_string());
            }
            Ok(m)
        };
        out.labels = strings("labels")?;
        out.annotations = strings("annotations")?;
        Ok(out)
    }

    /// `manifests` (YAML documents) post-rendered, as YAML documents.
    pub fn apply(&self, manifests: &str) -> Result<String, PostRenderError> {
        let mut objects = Vec::new();
        for doc in yaml_serde::Deserializer::from_str(manifests) {
            let v =
                Value::deserialize(doc).map_err(|e| PostRenderError::Manifest(e.to_string()))?;
            if !v.is_null() {
                objects.push(v);
            }
        }
        for r in &self.renderers {
            for p in &r.patches {
                for o in objects.iter_mut() {
                    p.apply(o)?;
                }
            }
            for o in objects.iter_mut() {
                for image in &r.images {
                    image.apply(o);
                }
            }
        }
        for o in objects.iter_mut() {
            stamp(o, "labels", &self.labels);
            stamp(o, "annotations", &self.annotations);
        }
        let mut out = String::new();
        for o in &objects {
            out.push_str("---\n");
            let text =
                yaml_serde::to_string(o).map_err(|e| PostRenderError::Manifest(e.to_string()))?;
            out.push_str(&text);
            if !text.ends_with('\n') {
                out.push('\n');
            }
        }
        Ok(out)
    }
}

fn stamp(object: &mut Value, field: &str, entries: &BTreeMap<String, String>) {
    if entries.is_empty() {
        return;
    }
    let Some(metadata) = object.get_mut("metadata").and_then(Value::as_object_mut) else {
        return;
    };
    let map = metadata
        .entry(field)
        .or_insert_with(|| Value::Object(Map::new()));
    if !map.is_object() {
        *map = Value::Object(Map::new());
    }
    if let Some(m) = map.as_object_mut() {
        for (k, v) in entries {
            m.insert(k.clone(), Value::String(v.clone()));
        }
    }
}

/// One `patches[]` entry: `patch` is a JSON 6902 operation list (which needs a target) or a strategic-merge
/// patch (which, without a target, selects the object of its own kind and name, as kustomize does).
fn patch(at: &str, p: &Value) -> Result<Patch, PostRenderError> {
    let text = p["patch"]
        .as_str()
        .ok_or_else(|| spec_error(format!("{at}.patch"), "is required"))?;
    let parsed: Value = yaml_serde::from_str(text)
        .map_err(|e| spec_error(format!("{at}.patch"), format!("is not YAML or JSON: {e}")))?;
    let target = match p.get("target").filter(|t| !t.is_null()) {
        Some(t) => Some(selector(&format!("{at}.target"), t)?),
        None => None,
    };
    let kind = match parsed {
        Value::Array(ops) => {
            if target.is_none() {
                return Err(spec_error(
                    format!("{at}.target"),
                    "is required for a JSON 6902 patch",
                ));
            }
            let checked: Result<json_patch::Patch, _> =
                serde_json::from_value(Value::Array(ops.clone()));
            checked.map_err(|e| {
                spec_error(
                    format!("{at}.patch"),
                    format!("is not a JSON 6902 patch: {e}"),
                )
            })?;
            PatchKind::Json6902(ops)
        }
        Value::Object(_) => PatchKind::Strategic(parsed),
        _ => {
            return Err(spec_error(
                format!("{at}.patch"),
                "must be a strategic-merge patch (an object) or a JSON 6902 patch (a list)",
            ));
        }
    };
    let target = match (&kind, target) {
        (_, Some(t)) => Some(t),
        (PatchKind::Strategic(v), None) => {
            let s = |p: &str| v.pointer(p).and_then(Value::as_str).unwrap_or_default();
            if s("/kind").is_empty() || s("/metadata/name").is_empty() {
                return Err(spec_error(
                    format!("{at}.patch"),
                    "a strategic-merge patch without a target needs kind and metadata.name",
                ));
            }
            let (group, version) = split_api_version(s("/apiVersion"));
            Some(Selector {
                group: group.into(),
                version: version.into(),
                kind: s("/kind").into(),
                name: regex::escape(s("/metadata/name")),
                namespace: if s("/metadata/namespace").is_empty() {
                    String::new()
                } else {
                    regex::escape(s("/metadata/namespace"))
                },
                ..Selector::default()
            })
        }
        (PatchKind::Json6902(_), None) => None,
    };
    Ok(Patch { kind, target })
}

fn selector(at: &str, t: &Value) -> Result<Selector, PostRenderError> {
    let field = |f: &str| t[f].as_str().unwrap_or_default().to_string();
    let s = Selector {
        group: field("group"),
        version: field("version"),
        kind: field("kind"),
        name: field("name"),
        namespace: field("namespace"),
        label_selector: field("labelSelector"),
        annotation_selector: field("annotationSelector"),
    };
    for (f, pattern) in [("name", &s.name), ("namespace", &s.namespace)] {
        if !pattern.is_empty() {
            whole(pattern).map_err(|e| {
                spec_error(
                    format!("{at}.{f}"),
                    format!("is not a regular expression: {e}"),
                )
            })?;
        }
    }
    for (f, text) in [
        ("labelSelector", &s.label_selector),
        ("annotationSelector", &s.annotation_selector),
    ] {
        selector::parse(text).map_err(|e| spec_error(format!("{at}.{f}"), e))?;
    }
    Ok(s)
}

fn whole(pattern: &str) -> Result<regex::Regex, regex::Error> {
    regex::Regex::new(&format!("^(?:{pattern})$"))
}

fn split_api_version(api_version: &str) -> (&str, &str) {
    api_version.rsplit_once('/').unwrap_or(("", api_version))
}

impl Selector {
    fn selects(&self, o: &Value) -> bool {
        let s = |p: &str| o.pointer(p).and_then(Value::as_str).unwrap_or_default();
        let (group, version) = split_api_version(s("/apiVersion"));
        let exact = |want: &str, have: &str| want.is_empty() || want == have;
        let pattern =
            |want: &str, have: &str| want.is_empty() || whole(want).is_ok_and(|r| r.is_match(have));
        exact(&self.group, group)
            && exact(&self.version, version)
            && exact(&self.kind, s("/kind"))
            && pattern(&self.name, s("/metadata/name"))
            && pattern(&self.namespace, s("/metadata/namespace"))
            && selector::matches(&self.label_selector, &o["metadata"]["labels"])
            && selector::matches(&self.annotation_selector, &o["metadata"]["annotations"])
    }
}

impl Patch {
    fn apply(&self, object: &mut Value) -> Result<(), PostRenderError> {
        if !self.target.as_ref().is_some_and(|t| t.selects(object)) {
            return Ok(());
        }
        match &self.kind {
            PatchKind::Strategic(patch) => {
                strategic_merge(object, patch, "");
                Ok(())
            }
            PatchKind::Json6902(ops) => {
                let describe = |o: &Value| {
                    let s = |p: &str| o.pointer(p).and_then(Value::as_str).unwrap_or_default();
                    format!("{} {}", s("/kind"), s("/metadata/name"))
                };
                let parsed: json_patch::Patch = serde_json::from_value(Value::Array(ops.clone()))
                    .map_err(|e| PostRenderError::Apply {
                    patch: "a JSON 6902 patch".into(),
                    object: describe(object),
                    reason: e.to_string(),
                })?;
                let mut patched = object.clone();
                json_patch::patch(&mut patched, &parsed).map_err(|e| PostRenderError::Apply {
                    patch: "a JSON 6902 patch".into(),
                    object: describe(object),
                    reason: e.to_string(),
                })?;
                *object = patched;
                Ok(())
            }
        }
    }
}

/// The merge key of the list at field `key` (under `parent`), as the built-in kinds declare them.
fn merge_key(key: &str) -> Option<&'static str> {
    Some(match key {
        "containers"
        | "initContainers"
        | "ephemeralContainers"
        | "volumes"
        | "env"
        | "imagePullSecrets" => "name",
        "hostAliases" => "ip",
        "ports" => "containerPort",
        "volumeMounts" => "mountPath",
        "volumeDevices" => "devicePath",
        _ => return None,
    })
}

fn strategic_merge(target: &mut Value, patch: &Value, key: &str) {
    match (target, patch) {
        (Value::Object(t), Value::Object(p)) => {
            for (k, pv) in p {
                if k == "$patch" {
                    continue;
                }
                if pv.is_null() || pv.get("$patch").and_then(Value::as_str) == Some("delete") {
                    t.remove(k);
                    continue;
                }
                match t.get_mut(k) {
                    Some(tv) => strategic_merge(tv, pv, k),
                    None => {
                        let mut fresh = pv.clone();
                        strip_directives(&mut fresh);
                        t.insert(k.clone(), fresh);
                    }
                }
            }
        }
        (Value::Array(t), Value::Array(p)) => match merge_key(key) {
            Some(mk) if p.iter().all(|e| e.get(mk).is_some()) => {
                for pe in p {
                    let id = &pe[mk];
                    let delete = pe.get("$patch").and_then(Value::as_str) == Some("delete");
                    let at = t.iter().position(|te| te.get(mk) == Some(id));
                    match (at, delete) {
                        (Some(i), true) => {
                            t.remove(i);
                        }
                        (Some(i), false) => strategic_merge(&mut t[i], pe, ""),
                        (None, true) => {}
                        (None, false) => {
                            let mut fresh = pe.clone();
                            strip_directives(&mut fresh);
                            t.push(fresh);
                        }
                    }
                }
            }
            _ => {
                let mut fresh = Value::Array(p.clone());
                strip_directives(&mut fresh);
                *t = match fresh {
                    Value::Array(a) => a,
                    _ => Vec::new(),
                };
            }
        },
        (t, p) => {
            let mut fresh = p.clone();
            strip_directives(&mut fresh);
            *t = fresh;
        }
    }
}

/// Removes `$patch` directives from a value placed whole.
fn strip_directives(v: &mut Value) {
    match v {
        Value::Object(m) => {
            m.remove("$patch");
            m.values_mut().for_each(strip_directives);
        }
        Value::Array(a) => a.iter_mut().for_each(strip_directives),
        _ => {}
    }
}

impl Image {
    /// Sets this image's new name, tag or digest on every container (and init or ephemeral container) whose
    /// image is this one, whatever its tag.
    fn apply(&self, object: &mut Value) {
        visit_containers(object, &mut |c| {
            let Some(image) = c.get("image").and_then(Value::as_str) else {
                return;
            };
            let (name, tag, digest) = split_image(image);
            if name != self.name {
                return;
            }
            let name = if self.new_name.is_empty() {
                name
            } else {
                &self.new_name
            };
            let reference = if !self.digest.is_empty() {
                format!("{name}@{}", self.digest)
            } else if !self.new_tag.is_empty() {
                format!("{name}:{}", self.new_tag)
            } else if let Some(d) = digest {
                format!("{name}@{d}")
            } else if let Some(t) = tag {
                format!("{name}:{t}")
            } else {
                name.to_string()
            };
            c.insert("image".into(), Value::String(reference));
        });
    }
}

/// `registry:5000/team/app:1.2@sha256:…` as (`registry:5000/team/app`, tag, digest).
fn split_image(image: &str) -> (&str, Option<&str>, Option<&str>) {
    let (rest, digest) = match image.split_once('@') {
        Some((r, d)) => (r, Some(d)),
        None => (image, None),
    };
    // A colon after the last slash is a tag; before it, a registry's port.
    let last_slash = rest.rfind('/').map_or(0, |i| i + 1);
    match rest[last_slash..].rfind(':') {
        Some(i) => (
            &rest[..last_slash + i],
            Some(&rest[last_slash + i + 1..]),
            digest,
        ),
        None => (rest, None, digest),
    }
}

fn visit_containers(v: &mut Value, f: &mut dyn FnMut(&mut Map<String, Value>)) {
    match v {
        Value::Object(m) => {
            for (k, child) in m.iter_mut() {
                if matches!(
                    k.as_str(),
                    "containers" | "initContainers" | "ephemeralContainers"
                ) && let Value::Array(list) = child
                {
                    for c in list.iter_mut() {
                        if let Value::Object(c) = c {
                            f(c);
                        }
                    }
                } else {
                    visit_containers(child, f);
                }
            }
        }
        Value::Array(a) => a.iter_mut().for_each(|c| visit_containers(c, f)),
        _ => {}
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    const MANIFESTS: &str = "---
# Source: demo/templates/serviceaccount.yaml
apiVersion: v1
kind: ServiceAccount
metadata:
  name: web
---
apiVersion: apps/v1
kind: Deployment
metadata:
  name: web
  labels:
    app: web
spec:
  replicas: 1
  template:
    spec:
      containers:
      - name: app
        image: registry.example:5000/team/app:1.0
        env:
        - name: A
          value: a
        - name: B
          value: b
      - name: sidecar
        image: busybox
";

    fn objects(text: &str) -> Vec<Value> {
        yaml_serde::Deserializer::from_str(text)
            .map(|d| Value::deserialize(d).unwrap())
            .filter(|v| !v.is_null())
            .collect()
    }

    fn render(spec: Value) -> Vec<Value> {
        let out = PostRender::from_spec(&spec)
            .unwrap()
            .apply(MANIFESTS)
            .unwrap();
        objects(&out)
    }

    /// A strategic-merge patch without a target finds its object by kind and name, merges containers and env by
    /// name (a field set, an element added, one deleted), and touches nothing else.
    #[test]
    fn a_strategic_merge_patch_merges_keyed_lists_by_their_keys() {
        let patch = "apiVersion: apps/v1\nkind: Deployment\nmetadata:\n  name: web\nspec:\n  replicas: 3\n  \
                     template:\n    spec:\n      containers:\n      - name: app\n        env:\n        - name: B\n          \
                     value: patched\n        - name: A\n          $patch: delete\n        - name: C\n          value: c\n";
        let out =
            render(json!({"postRenderers": [{"kustomize": {"patches": [{"patch": patch}]}}]}));
        let d = &out[1];
        assert_eq!(d["spec"]["replicas"], 3);
        let containers = d["spec"]["template"]["spec"]["containers"]
            .as_array()
            .unwrap();
        assert_eq!(containers.len(), 2, "the sidecar stays");
        assert_eq!(containers[0]["image"], "registry.example:5000/team/app:1.0");
        assert_eq!(
            containers[0]["env"],
            json!([{"name": "B", "value": "patched"}, {"name": "C", "value": "c"}])
        );
        assert_eq!(
            out[0],
            objects(MANIFESTS)[0],
            "the ServiceAccount is not its target"
        );
    }

    /// A JSON 6902 patch applies to the objects its target selects (by kind, a name pattern, a label selector).
    #[test]
    fn a_json_6902_patch_applies_where_its_target_selects() {
        let ops =
            r#"[{"op": "add", "path": "/metadata/annotations", "value": {"patched": "yes"}}]"#;
        for (target, deployment, account) in [
            (json!({"kind": "Deployment"}), true, false),
            (json!({"name": "w.*"}), true, true),
            (json!({"name": "w"}), false, false),
            (json!({"labelSelector": "app=web"}), true, false),
            (json!({"labelSelector": "app in (api, web)"}), true, false),
            (json!({"labelSelector": "!app"}), false, true),
            (json!({"group": "apps", "version": "v1"}), true, false),
        ] {
            let out = render(json!({"postRenderers": [{"kustomize": {"patches": [
                {"patch": ops, "target": target}]}}]}));
            let patched = |o: &Value| o["metadata"]["annotations"]["patched"] == "yes";
            assert_eq!(patched(&out[1]), deployment, "{target}");
            assert_eq!(patched(&out[0]), account, "{target}");
        }
    }

    /// Images get a new name, tag or digest wherever a container runs them (a registry port is not a tag);
    /// commonMetadata stamps every object, over what the chart set.
    #[test]
    fn images_and_common_metadata() {
        let out = render(json!({
            "postRenderers": [{"kustomize": {"images": [
                {"name": "registry.example:5000/team/app", "newName": "mirror.example/app", "newTag": "2.0"},
                {"name": "busybox", "digest": "sha256:abc"}]}}],
            "commonMetadata": {"labels": {"team": "blue", "app": "common"}, "annotations": {"owner": "ops"}}}));
        let containers = &out[1]["spec"]["template"]["spec"]["containers"];
        assert_eq!(containers[0]["image"], "mirror.example/app:2.0");
        assert_eq!(containers[1]["image"], "busybox@sha256:abc");
        for o in &out {
            assert_eq!(o["metadata"]["labels"]["team"], "blue");
            assert_eq!(o["metadata"]["annotations"]["owner"], "ops");
        }
        assert_eq!(out[1]["metadata"]["labels"]["app"], "common");
    }

    /// Bad specs are refused before Helm runs, naming the field.
    #[test]
    fn a_bad_spec_names_the_field() {
        for (spec, field) in [
            (
                json!({"postRenderers": [{"kustomize": {"patches": [{"patch": "[{\"op\": \"add\"}]"}]}}]}),
                "postRenderers[0].kustomize.patches[0].target",
            ),
            (
                json!({"postRenderers": [{"kustomize": {"patches": [{"patch": "[{\"op\": \"nope\", \"path\": \"/a\"}]",
                    "target": {"kind": "Deployment"}}]}}]}),
                "postRenderers[0].kustomize.patches[0].patch",
            ),
            (
                json!({"postRenderers": [{"kustomize": {"patches": [{"patch": "spec: {}"}]}}]}),
                "postRenderers[0].kustomize.patches[0].patch",
            ),
            (
                json!({"postRenderers": [{"kustomize": {"patches": [{"patch": "kind: A\nmetadata: {name: a}",
                    "target": {"name": "(unclosed"}}]}}]}),
                "postRenderers[0].kustomize.patches[0].target.name",
            ),
            (
                json!({"postRenderers": [{"kustomize": {"images": [{"newTag": "1"}]}}]}),
                "postRenderers[0].kustomize.images[0].name",
            ),
            (
                json!({"commonMetadata": {"labels": {"a": 1}}}),
                "commonMetadata.labels.a",
            ),
        ] {
            match PostRender::from_spec(&spec) {
                Err(PostRenderError::Spec { field: f, .. }) => assert_eq!(f, field, "{spec}"),
                other => panic!("{spec}: {other:?}"),
            }
        }
    }

    #[test]
    fn image_references_split_at_the_tag_not_the_port() {
        assert_eq!(
            split_image("registry:5000/team/app:1.2@sha256:x"),
            ("registry:5000/team/app", Some("1.2"), Some("sha256:x"))
        );
        assert_eq!(
            split_image("registry:5000/app"),
            ("registry:5000/app", None, None)
        );
        assert_eq!(split_image("busybox"), ("busybox", None, None));
    }
}
