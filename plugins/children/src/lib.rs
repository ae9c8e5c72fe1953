//! The three kinds that attach to an OmniCluster — OmniControlPlane, OmniWorkers and OmniMachine — share their
//! reconcile (report whether the cluster exists) and most admission rules. Each plugin crate is one line:
//! `omni_children::child_plugin!(ControlPlane, Child::ControlPlane);`.
#![cfg_attr(not(test), deny(clippy::unwrap_used, clippy::expect_used))]

pub mod rules;

use omni_api::conditions::{reasons, types};
use omni_api::{
    OmniClusterSpec, OmniControlPlaneSpec, OmniControlPlaneStatus, OmniKind, OmniMachineSpec,
    OmniMachineStatus, OmniWorkersSpec, OmniWorkersStatus,
};
use omni_plugin_sdk::{
    Condition, Gvk, Host, Info, ObjectRef, ReconcileError, Related, RelatedMapping, Value, Verdict,
    json,
};

pub use omni_plugin_sdk;

/// The API's names, defined once in omni-api.
pub use omni_api::{API_VERSION, GROUP, VERSION};

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Child {
    ControlPlane,
    Workers,
    Machine,
}

impl Child {
    pub fn kind(self) -> &'static str {
        match self {
            Child::ControlPlane => OmniControlPlaneSpec::KIND,
            Child::Workers => OmniWorkersSpec::KIND,
            Child::Machine => OmniMachineSpec::KIND,
        }
    }

    fn plugin_name(self) -> &'static str {
        match self {
            Child::ControlPlane => "omni-controlplane",
            Child::Workers => "omni-workers",
            Child::Machine => "omni-machine",
        }
    }
}

pub fn describe(child: Child) -> Info {
    Info {
        name: child.plugin_name().into(),
        version: env!("CARGO_PKG_VERSION").into(),
        kinds: vec![Gvk::new(GROUP, VERSION, child.kind())],
        // A cluster appearing or changing re-evaluates every child that names it.
        related: vec![Related {
            kind: Gvk::new(GROUP, VERSION, OmniClusterSpec::KIND),
            mapping: RelatedMapping::NameField("spec.clusterRef.name".into()),
        }],
        // These kinds have no finalizer in the original operator: deleting one has no remote effect.
        finalizer: None,
        legacy_finalizers: Vec::new(),
        capabilities: vec!["kube-read".into()],
        secret_fields: Vec::new(),
    }
}

fn str_at<'a>(v: &'a Value, path: &[&str]) -> &'a str {
    let mut cur = v;
    for p in path {
        cur = &cur[*p];
    }
    cur.as_str().unwrap_or_default()
}

/// Go's `%q` for the names in condition messages (a JSON string is the same for Kubernetes names).
fn quoted(s: &str) -> String {
    Value::String(s.to_string()).to_string()
}

/// Attach to the cluster if it exists and report it in `Accepted`; status mirrors the effective identity.
pub fn reconcile<H: Host>(child: Child, host: &H) -> Result<(), ReconcileError> {
    let obj = host.object();
    let cluster = str_at(&obj, &["spec", "clusterRef", "name"]).to_string();
    let name = str_at(&obj, &["metadata", "name"]).to_string();
    let exists = host
        .kube_get(&ObjectRef::local(
            API_VERSION,
            OmniClusterSpec::KIND,
            &cluster,
        ))?
        .is_some();

    // The spec's name when set, else the object's: the identity the child has in Omni.
    let effective = |field: &str| {
        let set = str_at(&obj, &["spec", field]);
        Some(if set.is_empty() {
            name.clone()
        } else {
            set.to_string()
        })
    };
    let cluster_ref = Some(cluster.clone());
    match child {
        Child::ControlPlane => host.set_status_as(&OmniControlPlaneStatus {
            cluster_ref,
            ..Default::default()
        })?,
        Child::Workers => host.set_status_as(&OmniWorkersStatus {
            cluster_ref,
            worker_set_name: effective("workerSetName"),
            ..Default::default()
        })?,
        Child::Machine => host.set_status_as(&OmniMachineStatus {
            cluster_ref,
            machine_id: effective("machineID"),
            ..Default::default()
        })?,
    }
    host.set_condition(if exists {
        Condition::new(
            types::ACCEPTED,
            true,
            reasons::ACCEPTED,
            format!("attached to OmniCluster {}", quoted(&cluster)),
        )
    } else {
        Condition::new(
            types::ACCEPTED,
            false,
            reasons::MISSING_CLUSTER,
            format!("OmniCluster {} does not exist", quoted(&cluster)),
        )
    });
    Ok(())
}

/// The Go webhook's admission rules, in their order; every error is collected.
pub fn validate(child: Child, object: &Value) -> Verdict {
    let mut v = Verdict::default();
    let spec = &object["spec"];
    match child {
        Child::ControlPlane | Child::Workers => {
            rules::machine_class_size(spec, &mut v);
            rules::machines(spec, &mut v);
            rules::patches(spec, &mut v);
            rules::kernel_args(spec, &mut v);
            if child == Child::Workers && spec["workerSetName"].as_str() == Some("control-planes") {
                v.invalid(
                    "spec.workerSetName",
                    json!("control-planes"),
                    "workerSetName is reserved by Omni",
                );
            }
        }
        Child::Machine => {
            let id = match spec["machineID"].as_str() {
                Some(id) if !id.is_empty() => id,
                _ => object["metadata"]["name"].as_str().unwrap_or_default(),
            };
            if !rules::is_uuid(id) {
                v.invalid(
                    "spec.machineID",
                    json!(id),
                    "machineID must be a UUID; set spec.machineID when metadata.name is not the Omni machine ID",
                );
            }
            rules::patches(spec, &mut v);
        }
    }
    v
}

/// Defines a plugin type for one child kind and exports it.
#[macro_export]
macro_rules! child_plugin {
    ($name:ident, $child:expr) => {
        pub struct $name;

        impl $crate::omni_plugin_sdk::Plugin for $name {
            fn describe() -> $crate::omni_plugin_sdk::Info {
                $crate::describe($child)
            }

            fn reconcile<H: $crate::omni_plugin_sdk::Host>(
                host: &H,
            ) -> ::core::result::Result<(), $crate::omni_plugin_sdk::ReconcileError> {
                $crate::reconcile($child, host)
            }

            fn validate(
                object: &$crate::omni_plugin_sdk::Value,
                _old: ::core::option::Option<&$crate::omni_plugin_sdk::Value>,
            ) -> $crate::omni_plugin_sdk::Verdict {
                $crate::validate($child, object)
            }
        }

        $crate::omni_plugin_sdk::export_plugin!($name);
    };
}

#[cfg(test)]
mod tests;
