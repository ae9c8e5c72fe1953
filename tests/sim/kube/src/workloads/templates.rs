//! Pods from workload templates, the revision hashes the controllers name things with, and the simulated
//! behaviour a Pod asks for.

use serde_json::{Value, json};

use super::objects::{controller_ref, namespace, selector_matches};
use super::{BEHAVIOR_ANNOTATION, FAIL_IMAGE, NEVER_READY_IMAGE};

/// A Pod built from a workload's template, controlled by `owner`.
pub(super) fn pod_from_template(
    owner: &Value,
    template: &Value,
    extra_labels: &[(&str, String)],
) -> Value {
    let mut labels = template["metadata"]["labels"]
        .as_object()
        .cloned()
        .unwrap_or_default();
    for (k, v) in extra_labels {
        labels.insert((*k).into(), Value::String(v.clone()));
    }
    let mut meta = json!({
        "namespace": namespace(owner),
        "labels": labels,
        "ownerReferences": [controller_ref(owner)],
    });
    if let Some(a) = template["metadata"]["annotations"].as_object() {
        meta["annotations"] = Value::Object(a.clone());
    }
    // A template whose spec is not an object gets an empty one: the create is then refused by validation
    // rather than the controller tripping over it.
    let spec = match &template["spec"] {
        Value::Object(m) => Value::Object(m.clone()),
        _ => json!({}),
    };
    json!({"apiVersion": "v1", "kind": "Pod", "metadata": meta, "spec": spec})
}

/// Whether Pods from the owner's template would be selected by its selector. The API refuses workloads where they
/// would not; a controller that met one anyway would create Pods it never counts, without end, so it creates none.
pub(super) fn template_selected(owner: &Value) -> bool {
    let selector = &owner["spec"]["selector"];
    let labels = owner["spec"]["template"]["metadata"]["labels"]
        .as_object()
        .cloned()
        .unwrap_or_default();
    selector.is_null() || selector_matches(selector, &labels)
}

/// FNV-1a (32 bit), the hash the controllers name revisions with.
pub(super) fn fnv32a(bytes: &[u8]) -> u32 {
    let mut h: u32 = 0x811c_9dc5;
    for b in bytes {
        h ^= u32::from(*b);
        h = h.wrapping_mul(0x0100_0193);
    }
    h
}

/// A template's hash as the controllers print it: FNV-1a of the template (its object keys sorted, so the same
/// template hashes alike however a client ordered it) and the collision count (4 bytes, little-endian), its
/// decimal digits mapped onto the alphabet without vowels (`rand.SafeEncodeString`), e.g. `5d9f8c7b6d`.
pub(super) fn template_hash(template: &Value, collision_count: i64) -> String {
    const ALPHABET: &[u8] = b"bcdfghjklmnpqrstvwxz2456789";
    let mut bytes = Vec::new();
    canonical(template, &mut bytes);
    if collision_count > 0 {
        bytes.extend_from_slice(&(collision_count as u32).to_le_bytes());
    }
    fnv32a(&bytes)
        .to_string()
        .bytes()
        .map(|d| ALPHABET[usize::from(d) % ALPHABET.len()] as char)
        .collect()
}

/// JSON with object keys in sorted order.
fn canonical(v: &Value, out: &mut Vec<u8>) {
    match v {
        Value::Object(m) => {
            let mut keys: Vec<&String> = m.keys().collect();
            keys.sort();
            out.push(b'{');
            for (i, k) in keys.into_iter().enumerate() {
                if i > 0 {
                    out.push(b',');
                }
                out.extend_from_slice(Value::String(k.clone()).to_string().as_bytes());
                out.push(b':');
                canonical(&m[k], out);
            }
            out.push(b'}');
        }
        Value::Array(a) => {
            out.push(b'[');
            for (i, x) in a.iter().enumerate() {
                if i > 0 {
                    out.push(b',');
                }
                canonical(x, out);
            }
            out.push(b']');
        }
        other => out.extend_from_slice(other.to_string().as_bytes()),
    }
}

/// The simulated behaviour a Pod asked for (see the module docs).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum Behavior {
    Normal,
    NeverReady,
    Fail,
}

pub(super) fn behavior(pod: &Value) -> Behavior {
    match pod["metadata"]["annotations"][BEHAVIOR_ANNOTATION].as_str() {
        Some("never-ready") => return Behavior::NeverReady,
        Some("fail") => return Behavior::Fail,
        Some("ready") => return Behavior::Normal,
        _ => {}
    }
    let images = pod["spec"]["containers"]
        .as_array()
        .into_iter()
        .flatten()
        .chain(
            pod["spec"]["initContainers"]
                .as_array()
                .into_iter()
                .flatten(),
        )
        .filter_map(|c| c["image"].as_str());
    let mut out = Behavior::Normal;
    for image in images {
        let repo = crate::defaults::image_repository(image);
        if repo == FAIL_IMAGE {
            return Behavior::Fail;
        }
        if repo == NEVER_READY_IMAGE {
            out = Behavior::NeverReady;
        }
    }
    out
}
