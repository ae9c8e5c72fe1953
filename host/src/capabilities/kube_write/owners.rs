//! Owner references on written objects: the one owner a call may name is the object it reconciles. An owner
//! reference decides what the garbage collector deletes and whose plugin a change wakes, so a plugin naming any
//! other owner could have another tenant's object collect its children, or its writes wake another controller.

use serde_json::{Value, json};

/// The reconciled object as an owner: what a controller owner reference to it says.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(super) struct Owner {
    pub api_version: String,
    pub kind: String,
    pub name: String,
    pub uid: String,
    /// `None`: cluster-scoped.
    pub namespace: Option<String>,
}

impl Owner {
    /// The owner the reconciled `object` makes, or `None` when it lacks a UID (an object never stored).
    pub fn of(object: &Value) -> Option<Owner> {
        let text = |pointer: &str| object.pointer(pointer).and_then(Value::as_str);
        let uid = text("/metadata/uid").filter(|u| !u.is_empty())?;
        Some(Owner {
            api_version: text("/apiVersion")?.to_owned(),
            kind: text("/kind")?.to_owned(),
            name: text("/metadata/name")?.to_owned(),
            uid: uid.to_owned(),
            namespace: text("/metadata/namespace")
                .filter(|ns| !ns.is_empty())
                .map(str::to_owned),
        })
    }

    /// The controller owner reference to this object, with `blockOwnerDeletion` so a foreground deletion of the
    /// owner waits for the child.
    fn reference(&self) -> Value {
        json!({
            "apiVersion": self.api_version,
            "kind": self.kind,
            "name": self.name,
            "uid": self.uid,
            "controller": true,
            "blockOwnerDeletion": true,
        })
    }
}

/// Why the owner references of `object` may not be written, if they may not: each must name `owner` by UID.
pub(super) fn foreign_reference(object: &Value, owner: Option<&Owner>) -> Option<String> {
    let references = object.pointer("/metadata/ownerReferences")?;
    let Some(references) = references.as_array() else {
        return (!references.is_null())
            .then(|| "metadata.ownerReferences is not a list".to_owned());
    };
    references.iter().enumerate().find_map(|(i, r)| {
        let uid = r.get("uid").and_then(Value::as_str).unwrap_or_default();
        let ours = owner.is_some_and(|o| o.uid == uid);
        (!ours).then(|| {
            format!(
                "metadata.ownerReferences[{i}] names {} {:?} (uid {uid:?}), not the object this call reconciles; a \
                 plugin may name only that object as an owner",
                r.get("kind").and_then(Value::as_str).unwrap_or("an object"),
                r.get("name").and_then(Value::as_str).unwrap_or_default(),
            )
        })
    })
}

/// Makes `owner` the controller of `object`: its reference replaces any the plugin gave for the same object, and
/// no other reference claims to be the controller.
pub(super) fn set_controller(object: &mut Value, owner: &Owner) {
    let mut references: Vec<Value> = object
        .pointer("/metadata/ownerReferences")
        .and_then(Value::as_array)
        .cloned()
        .unwrap_or_default();
    references.retain(|r| r.get("uid").and_then(Value::as_str) != Some(owner.uid.as_str()));
    for r in &mut references {
        if let Some(r) = r.as_object_mut() {
            r.remove("controller");
        }
    }
    references.push(owner.reference());
    object["metadata"]["ownerReferences"] = Value::Array(references);
}

/// Whether a patch would touch owner references (a merge patch naming them, a JSON patch with an operation on
/// them): patches never change owners, so a plugin cannot move an object under another owner.
pub(super) fn patch_touches_owners(patch: &Value, json_patch: bool) -> bool {
    if !json_patch {
        return patch.pointer("/metadata/ownerReferences").is_some()
            || patch.get("metadata").is_some_and(Value::is_null);
    }
    patch.as_array().is_some_and(|ops| {
        ops.iter().any(|op| {
            ["path", "from"].iter().any(|field| {
                op.get(field).and_then(Value::as_str).is_some_and(|p| {
                    p == "/metadata" || p.is_empty() || p.starts_with("/metadata/ownerReferences")
                })
            })
        })
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn owner() -> Owner {
        Owner::of(&json!({"apiVersion": "example.com/v1", "kind": "Widget",
            "metadata": {"name": "w", "namespace": "team", "uid": "uid-1"}}))
        .expect("an owner")
    }

    #[test]
    fn only_the_reconciled_object_may_be_named_as_owner() {
        let own = owner();
        let mut child = json!({"metadata": {"name": "c"}});
        assert_eq!(foreign_reference(&child, Some(&own)), None);
        set_controller(&mut child, &own);
        assert_eq!(foreign_reference(&child, Some(&own)), None);
        let refs = child["metadata"]["ownerReferences"]
            .as_array()
            .expect("a list");
        assert_eq!(refs.len(), 1);
        assert_eq!(refs[0]["controller"], true);
        assert_eq!(refs[0]["uid"], "uid-1");
        let stolen = json!({"metadata": {"ownerReferences": [
            {"apiVersion": "v1", "kind": "Namespace", "name": "kube-system", "uid": "other"}]}});
        let why = foreign_reference(&stolen, Some(&own)).expect("refused");
        assert!(
            why.contains("ownerReferences[0]") && why.contains("kube-system"),
            "{why}"
        );
        assert!(
            foreign_reference(&child, None).is_some(),
            "no owner, no reference"
        );
    }

    #[test]
    fn the_host_reference_is_the_only_controller() {
        let own = owner();
        let mut child = json!({"metadata": {"ownerReferences": [
            {"apiVersion": "example.com/v1", "kind": "Widget", "name": "w", "uid": "uid-1", "controller": false}]}});
        set_controller(&mut child, &own);
        let refs = child["metadata"]["ownerReferences"]
            .as_array()
            .expect("a list");
        assert_eq!(refs.len(), 1, "{refs:?}");
        assert_eq!(refs[0]["controller"], true);
    }

    #[test]
    fn patches_never_touch_owners() {
        assert!(patch_touches_owners(
            &json!({"metadata": {"ownerReferences": []}}),
            false
        ));
        assert!(!patch_touches_owners(
            &json!({"metadata": {"labels": {"a": "b"}}}),
            false
        ));
        assert!(patch_touches_owners(&json!({"metadata": null}), false));
        assert!(patch_touches_owners(
            &json!([{"op": "add", "path": "/metadata/ownerReferences/-", "value": {}}]),
            true
        ));
        assert!(patch_touches_owners(
            &json!([{"op": "replace", "path": "/metadata", "value": {}}]),
            true
        ));
        assert!(patch_touches_owners(
            &json!([{"op": "move", "from": "/metadata/ownerReferences", "path": "/x"}]),
            true
        ));
        assert!(!patch_touches_owners(
            &json!([{"op": "replace", "path": "/spec/replicas", "value": 2}]),
            true
        ));
    }
}
