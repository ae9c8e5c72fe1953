//! `kube-write` in the mock: writes land in the mock's objects (so the plugin's next read sees them; an apply keeps
//! the stored fields it does not name, as server-side apply keeps other managers' fields), every
//! write is recorded, owned writes get the controller owner reference the operator sets, and a test can make the
//! next writes fail (a conflict, an invalid object) to exercise the plugin's handling.

use serde_json::{Value, json};

use super::MockHost;
use crate::kube_write::{DeleteOptions, Patch, WriteOptions};
use crate::{HostError, ObjectRef};

/// One `kube-write` call the plugin made, whatever its answer.
#[derive(Debug, Clone, PartialEq)]
pub enum Write {
    Apply {
        object: Value,
        options: WriteOptions,
    },
    Create {
        object: Value,
        options: WriteOptions,
    },
    Patch {
        target: ObjectRef,
        patch: Patch,
        options: WriteOptions,
    },
    Delete {
        target: ObjectRef,
        options: DeleteOptions,
    },
}

/// RFC 7386: `patch` merged into `target`.
fn merge(target: &mut Value, patch: &Value) {
    match (target, patch) {
        (Value::Object(t), Value::Object(p)) => {
            for (k, v) in p {
                if v.is_null() {
                    t.remove(k);
                } else {
                    merge(t.entry(k.clone()).or_insert(Value::Null), v);
                }
            }
        }
        (t, p) => *t = p.clone(),
    }
}

impl MockHost {
    /// The next write answers `error` instead of writing (queued: each call to this fails one more write).
    pub fn with_write_failure(self, error: HostError) -> Self {
        self.write_failures.borrow_mut().push_back(error);
        self
    }

    /// Every `kube-write` call so far, in order.
    pub fn writes(&self) -> Vec<Write> {
        self.writes.borrow().clone()
    }

    /// An object as the mock holds it now (seeded or written); `namespace: None` is the reconciled object's.
    pub fn stored(
        &self,
        api_version: &str,
        kind: &str,
        namespace: Option<&str>,
        name: &str,
    ) -> Option<Value> {
        let key = (
            api_version.to_string(),
            kind.to_string(),
            self.resolve_ns(namespace),
            name.to_string(),
        );
        self.objects.borrow().get(&key).cloned()
    }

    /// Records `write`, then answers the first queued failure, the capability's denial, or `Ok`.
    fn begin_write(&self, write: Write) -> Result<(), HostError> {
        self.writes.borrow_mut().push(write);
        self.check("kube-write")?;
        match self.write_failures.borrow_mut().pop_front() {
            Some(error) => Err(error),
            None => Ok(()),
        }
    }

    /// The object as written: in the reconciled object's namespace unless it names one, with the controller
    /// owner reference when `owned`, and a UID and resourceVersion as a server would give.
    fn as_stored(&self, object: &Value, owned: bool, previous: Option<&Value>) -> Value {
        let mut object = object.clone();
        if object["metadata"]["namespace"].as_str().is_none()
            && let Some(ns) = self.namespace()
        {
            object["metadata"]["namespace"] = json!(ns);
        }
        if owned {
            let me = &self.object;
            object["metadata"]["ownerReferences"] = json!([{
                "apiVersion": me["apiVersion"], "kind": me["kind"], "name": me["metadata"]["name"],
                "uid": me["metadata"]["uid"], "controller": true, "blockOwnerDeletion": true,
            }]);
        }
        let version = previous
            .and_then(|p| p["metadata"]["resourceVersion"].as_str())
            .and_then(|v| v.parse::<u64>().ok())
            .unwrap_or(0)
            + 1;
        object["metadata"]["resourceVersion"] = json!(version.to_string());
        let uid = previous
            .and_then(|p| p["metadata"]["uid"].as_str())
            .map(str::to_string)
            .unwrap_or_else(|| format!("mock-uid-{}", self.writes.borrow().len()));
        object["metadata"]["uid"] = json!(uid);
        object
    }

    fn target_key(&self, target: &ObjectRef) -> (String, String, String, String) {
        (
            target.api_version.clone(),
            target.kind.clone(),
            self.resolve_ns(target.namespace.as_deref()),
            target.name.clone(),
        )
    }
}

impl crate::KubeWrite for MockHost {
    fn kube_apply(&self, object: &Value, options: WriteOptions) -> Result<Value, HostError> {
        self.begin_write(Write::Apply {
            object: object.clone(),
            options,
        })?;
        let key = self.object_key(object);
        let previous = self.objects.borrow().get(&key).cloned();
        // As server-side apply keeps the fields other managers set (a Deployment's status), the mock keeps every
        // stored field the applied object does not name; it does not track managers, so a field this plugin
        // set before and now omits stays too.
        let mut merged = previous.clone().unwrap_or(Value::Null);
        merge(&mut merged, object);
        let stored = self.as_stored(&merged, options.owned, previous.as_ref());
        if !options.dry_run {
            self.objects.borrow_mut().insert(key, stored.clone());
        }
        Ok(stored)
    }

    fn kube_create(&self, object: &Value, options: WriteOptions) -> Result<Value, HostError> {
        self.begin_write(Write::Create {
            object: object.clone(),
            options,
        })?;
        let key = self.object_key(object);
        if self.objects.borrow().contains_key(&key) {
            return Err(HostError::Conflict(format!(
                "{} {:?} already exists",
                key.1, key.3
            )));
        }
        let stored = self.as_stored(object, options.owned, None);
        if !options.dry_run {
            self.objects.borrow_mut().insert(key, stored.clone());
        }
        Ok(stored)
    }

    fn kube_patch(
        &self,
        target: &ObjectRef,
        patch: &Patch,
        options: WriteOptions,
    ) -> Result<Value, HostError> {
        self.begin_write(Write::Patch {
            target: target.clone(),
            patch: patch.clone(),
            options,
        })?;
        let key = self.target_key(target);
        let Some(previous) = self.objects.borrow().get(&key).cloned() else {
            return Err(HostError::NotFound(format!(
                "{} {:?} not found",
                target.kind, target.name
            )));
        };
        let Patch::Merge(body) = patch else {
            return Err(HostError::Unavailable(
                "the mock host applies merge patches only; test JSON patches against the operator"
                    .into(),
            ));
        };
        let mut patched = previous.clone();
        merge(&mut patched, body);
        let stored = self.as_stored(&patched, false, Some(&previous));
        if !options.dry_run {
            self.objects.borrow_mut().insert(key, stored.clone());
        }
        Ok(stored)
    }

    fn kube_delete(&self, target: &ObjectRef, options: &DeleteOptions) -> Result<bool, HostError> {
        self.begin_write(Write::Delete {
            target: target.clone(),
            options: options.clone(),
        })?;
        let key = self.target_key(target);
        let objects = self.objects.borrow();
        let Some(stored) = objects.get(&key) else {
            return Ok(false);
        };
        let text = |p: &str| stored.pointer(p).and_then(Value::as_str);
        if options
            .uid
            .as_deref()
            .is_some_and(|u| Some(u) != text("/metadata/uid"))
            || options
                .resource_version
                .as_deref()
                .is_some_and(|v| Some(v) != text("/metadata/resourceVersion"))
        {
            return Err(HostError::Conflict(format!(
                "{} {:?}: the precondition does not hold",
                target.kind, target.name
            )));
        }
        drop(objects);
        if !options.dry_run {
            self.objects.borrow_mut().remove(&key);
        }
        Ok(true)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::KubeRead as _;
    use crate::KubeWrite as _;

    fn host() -> MockHost {
        MockHost::new(json!({"apiVersion": "example.com/v1", "kind": "Site",
            "metadata": {"name": "s", "namespace": "team", "uid": "u-1"}}))
    }

    fn config_map() -> Value {
        json!({"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "c"}, "data": {"a": "1"}})
    }

    #[test]
    fn an_owned_apply_is_stored_owned_and_readable() {
        let host = host();
        let stored = host.apply_owned(&config_map()).expect("applied");
        assert_eq!(stored["metadata"]["namespace"], "team");
        assert_eq!(stored["metadata"]["ownerReferences"][0]["uid"], "u-1");
        assert_eq!(stored["metadata"]["ownerReferences"][0]["controller"], true);
        let read = host
            .kube_get(&ObjectRef::local("v1", "ConfigMap", "c"))
            .expect("read");
        assert_eq!(read, Some(stored));
        assert!(matches!(&host.writes()[0], Write::Apply { options, .. } if options.owned));
    }

    #[test]
    fn a_dry_run_stores_nothing_and_failures_are_injected_in_order() {
        let host = host().with_write_failure(HostError::Conflict("field manager conflict".into()));
        assert_eq!(
            host.apply_owned(&config_map()),
            Err(HostError::Conflict("field manager conflict".into()))
        );
        host.preview_owned(&config_map()).expect("previewed");
        assert_eq!(host.stored("v1", "ConfigMap", None, "c"), None);
        host.apply_owned(&config_map()).expect("applied");
        assert!(host.stored("v1", "ConfigMap", None, "c").is_some());
        assert_eq!(host.writes().len(), 3, "every call is recorded");
    }

    #[test]
    fn patches_and_deletes_follow_the_stored_object() {
        let host = host();
        let target = ObjectRef::local("v1", "ConfigMap", "c");
        let patch = Patch::Merge(json!({"data": {"b": "2"}}));
        assert!(matches!(
            host.kube_patch(&target, &patch, WriteOptions::default()),
            Err(HostError::NotFound(_))
        ));
        let created = host
            .kube_create(&config_map(), WriteOptions::default())
            .expect("created");
        assert!(matches!(
            host.kube_create(&config_map(), WriteOptions::default()),
            Err(HostError::Conflict(_))
        ));
        let patched = host
            .kube_patch(&target, &patch, WriteOptions::default())
            .expect("patched");
        assert_eq!(patched["data"], json!({"a": "1", "b": "2"}));
        let stale = DeleteOptions {
            resource_version: created["metadata"]["resourceVersion"]
                .as_str()
                .map(str::to_string),
            ..DeleteOptions::default()
        };
        assert!(matches!(
            host.kube_delete(&target, &stale),
            Err(HostError::Conflict(_))
        ));
        assert_eq!(host.delete(&target), Ok(true));
        assert_eq!(host.delete(&target), Ok(false));
    }
}
