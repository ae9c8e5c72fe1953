//! A [`Host`](crate::Host) for native unit tests of plugin logic: objects to read are seeded, outputs are
//! recorded for assertions.

use std::cell::RefCell;
use std::collections::BTreeMap;

use serde_json::{Map, Value};

use crate::{Condition, EventType, HostError, ListQuery, LogLevel, ObjectRef};

/// Records every output a plugin produced in one call.
#[derive(Debug, Default, Clone, PartialEq)]
pub struct Outputs {
    pub status: Map<String, Value>,
    pub conditions: Vec<Condition>,
    pub requeue_after: Option<u64>,
    pub events: Vec<(EventType, String, String)>,
    pub logs: Vec<(LogLevel, String)>,
}

pub struct MockHost {
    object: Value,
    /// (apiVersion, kind, namespace, name) → object.
    objects: BTreeMap<(String, String, String, String), Value>,
    /// Capabilities that answer `Denied`.
    denied: Vec<&'static str>,
    now: String,
    outputs: RefCell<Outputs>,
}

impl MockHost {
    /// A host reconciling `object`.
    pub fn new(object: Value) -> Self {
        MockHost {
            object,
            objects: BTreeMap::new(),
            denied: Vec::new(),
            now: "2026-01-01T00:00:00Z".into(),
            outputs: RefCell::new(Outputs::default()),
        }
    }

    /// Makes `obj` readable through `kube_get`/`kube_list` (namespace defaults to the reconciled object's).
    pub fn with_object(mut self, obj: Value) -> Self {
        let ns = obj["metadata"]["namespace"].as_str().or_else(|| self.namespace()).unwrap_or_default().to_string();
        let key = (
            obj["apiVersion"].as_str().unwrap_or_default().to_string(),
            obj["kind"].as_str().unwrap_or_default().to_string(),
            ns,
            obj["metadata"]["name"].as_str().unwrap_or_default().to_string(),
        );
        self.objects.insert(key, obj);
        self
    }

    /// Makes every call of a capability (`"kube-read"`) answer `Denied`, as an ungranted one would.
    pub fn deny(mut self, capability: &'static str) -> Self {
        self.denied.push(capability);
        self
    }

    pub fn at(mut self, now: &str) -> Self {
        self.now = now.into();
        self
    }

    pub fn outputs(&self) -> Outputs {
        self.outputs.borrow().clone()
    }

    /// The last condition of a type that the plugin set.
    pub fn condition(&self, type_: &str) -> Option<Condition> {
        self.outputs.borrow().conditions.iter().rev().find(|c| c.type_ == type_).cloned()
    }

    fn namespace(&self) -> Option<&str> {
        self.object["metadata"]["namespace"].as_str()
    }

    fn check(&self, capability: &str) -> Result<(), HostError> {
        if self.denied.contains(&capability) {
            return Err(HostError::Denied(format!("capability {capability:?} is not granted")));
        }
        Ok(())
    }
}

impl crate::Host for MockHost {
    fn object(&self) -> Value {
        self.object.clone()
    }

    fn remaining_ms(&self) -> u64 {
        5_000
    }

    fn set_status(&self, fields: Value) {
        if let Value::Object(m) = fields {
            self.outputs.borrow_mut().status.extend(m);
        }
    }

    fn set_condition(&self, condition: Condition) {
        let mut out = self.outputs.borrow_mut();
        out.conditions.retain(|c| c.type_ != condition.type_);
        out.conditions.push(condition);
    }

    fn requeue_after(&self, ms: u64) {
        self.outputs.borrow_mut().requeue_after = Some(ms);
    }

    fn event(&self, kind: EventType, reason: &str, message: &str) {
        self.outputs.borrow_mut().events.push((kind, reason.into(), message.into()));
    }

    fn log(&self, level: LogLevel, message: &str, _fields: &[(&str, &str)]) {
        self.outputs.borrow_mut().logs.push((level, message.into()));
    }

    fn now(&self) -> String {
        self.now.clone()
    }

    fn kube_get(&self, target: &ObjectRef) -> Result<Option<Value>, HostError> {
        self.check("kube-read")?;
        let ns = target.namespace.as_deref().or_else(|| self.namespace()).unwrap_or_default();
        let key = (target.api_version.clone(), target.kind.clone(), ns.to_string(), target.name.clone());
        Ok(self.objects.get(&key).cloned())
    }

    fn kube_list(&self, query: &ListQuery) -> Result<Vec<Value>, HostError> {
        self.check("kube-read")?;
        let ns = query.namespace.as_deref().or_else(|| self.namespace()).unwrap_or_default();
        Ok(self
            .objects
            .iter()
            .filter(|((av, k, n, _), _)| *av == query.api_version && *k == query.kind && n == ns)
            .map(|(_, v)| v.clone())
            .collect())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::{Host, ReconcileError};

    #[derive(serde::Deserialize, Debug, PartialEq)]
    struct Thing {
        spec: ThingSpec,
    }

    #[derive(serde::Deserialize, Debug, PartialEq)]
    struct ThingSpec {
        size: u32,
    }

    #[test]
    fn typed_access_reads_the_object_or_says_why_not() {
        let host = MockHost::new(serde_json::json!({"spec": {"size": 3}}));
        assert_eq!(host.object_as::<Thing>().expect("fits"), Thing { spec: ThingSpec { size: 3 } });
        let host = MockHost::new(serde_json::json!({"spec": {"size": "big"}}));
        assert!(matches!(host.object_as::<Thing>(), Err(ReconcileError::Permanent(m)) if m.contains("invalid type")));
    }

    #[test]
    fn outputs_are_recorded_and_conditions_upserted_by_type() {
        let host = MockHost::new(serde_json::json!({"metadata": {"namespace": "t"}}));
        host.set_condition(Condition::new("Ready", false, "Wait", "m1"));
        host.set_condition(Condition::new("Ready", true, "Done", "m2"));
        host.set_status(serde_json::json!({"a": 1}));
        host.requeue_after(5);
        let out = host.outputs();
        assert_eq!(out.conditions.len(), 1);
        assert_eq!(out.conditions[0].reason, "Done");
        assert_eq!(out.status["a"], 1);
        assert_eq!(out.requeue_after, Some(5));
    }
}
