//! Write omni-operator reconcile plugins.
//!
//! A plugin is a type implementing [`Plugin`] plus one line, `omni_plugin_sdk::export_plugin!(MyPlugin);`. Its
//! logic talks to the operator through [`Host`]: in the operator that is the real host behind the WIT contract;
//! in unit tests it is [`mock::MockHost`], so plugin logic is tested natively without WebAssembly.
//!
//! Plugin code takes the host as a generic `H: Host`, never `dyn Host`: then only the capabilities a plugin
//! calls are linked into its component, and its import list is exactly what it needs to be granted.
//!
//! ```
//! use omni_plugin_sdk::{Condition, ConditionStatus, Gvk, Host, Info, ObjectRef, Plugin, ReconcileError, Value, Verdict, json};
//! use omni_plugin_sdk::mock::MockHost;
//!
//! pub struct Mine;
//!
//! impl Plugin for Mine {
//!     fn describe() -> Info {
//!         Info {
//!             name: "mine".into(),
//!             version: "0.1.0".into(),
//!             kinds: vec![Gvk::new("omni.texashpc.com", "v1alpha1", "OmniMachine")],
//!             capabilities: vec!["kube-read".into()],
//!             ..Info::default()
//!         }
//!     }
//!
//!     fn reconcile<H: Host>(host: &H) -> Result<(), ReconcileError> {
//!         let obj = host.object();
//!         let cluster = obj["spec"]["clusterRef"]["name"].as_str().unwrap_or_default();
//!         let found = host.kube_get(&ObjectRef::local("omni.texashpc.com/v1alpha1", "OmniCluster", cluster))?;
//!         host.set_condition(Condition::new("Accepted", found.is_some(), "Checked", "looked for the cluster"));
//!         host.set_status(json!({"clusterRef": cluster}));
//!         Ok(())
//!     }
//!
//!     fn validate(object: &Value, _old: Option<&Value>) -> Verdict {
//!         let mut v = Verdict::default();
//!         if object["spec"]["clusterRef"]["name"].as_str().unwrap_or_default().is_empty() {
//!             v.required("spec.clusterRef.name", "clusterRef.name is required");
//!         }
//!         v
//!     }
//! }
//!
//! omni_plugin_sdk::export_plugin!(Mine);
//!
//! // Native unit test of the logic:
//! let host = MockHost::new(json!({"metadata": {"name": "m", "namespace": "t"}, "spec": {"clusterRef": {"name": "c"}}}));
//! Mine::reconcile(&host).unwrap();
//! assert_eq!(host.condition("Accepted").unwrap().status, ConditionStatus::False);
//! assert_eq!(Mine::validate(&json!({"spec": {}}), None).messages(), ["spec.clusterRef.name: Required value: clusterRef.name is required"]);
//! ```
#![cfg_attr(not(test), deny(clippy::unwrap_used, clippy::expect_used))]

/// Go-compatible text, shared with the host: the `omni-go` crate.
pub use omni_go as go;
pub mod helm;
mod helm_convert;
pub mod kube_write;
pub mod mock;
pub mod omni;
pub mod secrets;
pub mod time;
mod types;
#[doc(hidden)]
pub mod wasm;

pub use serde_json::{self, Value, json};
pub use types::*;

/// SHA-256 of `bytes` as lowercase hex, the form every digest in the contract takes.
pub fn sha256_hex(bytes: &[u8]) -> String {
    use sha2::Digest as _;
    sha2::Sha256::digest(bytes)
        .iter()
        .map(|b| format!("{b:02x}"))
        .collect()
}

/// Raw bindings of the WIT world; plugin authors use [`Plugin`], [`Host`] and [`export_plugin!`] instead.
#[doc(hidden)]
pub mod bindings {
    wit_bindgen::generate!({
        path: "wit",
        world: "reconcile-plugin",
        pub_export_macro: true,
        export_macro_name: "export",
        default_bindings_module: "omni_plugin_sdk::bindings",
        generate_all,
    });
}

/// What a plugin can ask of the operator during a call: one trait per WIT interface, so a plugin's needs read
/// as capabilities and a test double implements each one on its own. Outputs ([`Context::set_status`],
/// [`Context::set_condition`], [`Context::requeue_after`], [`Context::event`]) are buffered and take effect only
/// when the call returns `Ok`. Every call outside the plugin's grants answers [`HostError::Denied`].
pub trait Host:
    Context + Clock + KubeRead + KubeWrite + Files + Omni + Secrets + Workload + Helm
{
}

impl<T: Context + Clock + KubeRead + KubeWrite + Files + Omni + Secrets + Workload + Helm> Host
    for T
{
}

/// `context`: the call's object and outputs. Every plugin has it.
pub trait Context {
    /// The object being reconciled, as the operator last observed it.
    fn object(&self) -> Value;

    /// The object as a typed value, such as `omni_api::OmniMachine` (with `omni-api` as a dependency,
    /// `default-features = false`). An object that does not fit the type is a permanent error: the API server
    /// validated it against its schema, so only a plugin built for another schema gets here.
    fn object_as<T: serde::de::DeserializeOwned>(&self) -> Result<T, ReconcileError>
    where
        Self: Sized,
    {
        serde_json::from_value(self.object()).map_err(|e| {
            ReconcileError::Permanent(format!(
                "the object does not have the shape this plugin expects: {e}"
            ))
        })
    }
    /// Milliseconds left before the operator abandons this call.
    fn remaining_ms(&self) -> u64;
    /// Merge these top-level fields into `.status` (the operator owns `conditions` and `observedGeneration`).
    fn set_status(&self, fields: Value);
    /// [`Context::set_status`] from a typed status (such as `omni_api::OmniMachineStatus`): exactly the fields
    /// it serializes. A status that does not encode as a JSON object is a permanent error, reported rather than
    /// committing a status without its fields.
    fn set_status_as<T: serde::Serialize>(&self, status: &T) -> Result<(), ReconcileError>
    where
        Self: Sized,
    {
        match serde_json::to_value(status) {
            Ok(fields @ Value::Object(_)) => {
                self.set_status(fields);
                Ok(())
            }
            Ok(other) => Err(ReconcileError::Permanent(format!(
                "a status must encode as a JSON object, not {other}"
            ))),
            Err(e) => Err(ReconcileError::Permanent(format!(
                "cannot encode the status: {e}"
            ))),
        }
    }
    /// Upsert a condition; the operator keeps `lastTransitionTime` unless the status changes.
    fn set_condition(&self, condition: Condition);
    fn requeue_after(&self, ms: u64);
    fn event(&self, kind: EventType, reason: &str, message: &str);
    fn log(&self, level: LogLevel, message: &str, fields: &[(&str, &str)]);
}

/// `clock`: the operator's clock. Capability `clock`.
pub trait Clock {
    /// RFC 3339, seconds precision, UTC.
    fn now(&self) -> String;
}

/// `kube-read`: cached reads of the management cluster.
pub trait KubeRead {
    /// A cached read of one object; `Ok(None)` when it does not exist. Capability `kube-read`.
    fn kube_get(&self, target: &ObjectRef) -> Result<Option<Value>, HostError>;
    /// A cached list, filtered by the query's label and field selectors. Capability `kube-read`.
    fn kube_list(&self, query: &ListQuery) -> Result<Vec<Value>, HostError>;
}

/// `kube-write`: writes to the management cluster under a field manager that names the plugin. Capability
/// `kube-write` and a grant per kind (`kube-write:GROUP/VERSION/KIND`); see the plugin author's guide for the
/// namespaces, the kinds no grant reaches and the budgets. Answers are the object as stored (a Secret's without
/// its values unless the plugin may read them). Failures: `Denied` (outside the grants or budgets), `Conflict`
/// (a field another manager owns, a stale precondition, an existing object on create), `Rejected` (the API
/// server's validation, with the fields it names: [`Rejection::causes`]), `Invalid` (a request the operator does
/// not send: not JSON, no name), `NotFound`, `Unavailable` (also: writing faster than the binding's rate; retry
/// later).
pub trait KubeWrite {
    /// Server-side apply: sets exactly the fields of `object` (which names `apiVersion`, `kind` and
    /// `metadata.name`; `metadata.namespace` defaults to the reconciled object's).
    fn kube_apply(
        &self,
        object: &Value,
        options: kube_write::WriteOptions,
    ) -> Result<Value, HostError>;
    /// Creates the object; `Conflict` when it exists.
    fn kube_create(
        &self,
        object: &Value,
        options: kube_write::WriteOptions,
    ) -> Result<Value, HostError>;
    /// Patches an existing object (never its owner references).
    fn kube_patch(
        &self,
        target: &ObjectRef,
        patch: &kube_write::Patch,
        options: kube_write::WriteOptions,
    ) -> Result<Value, HostError>;
    /// Deletes the object: `true` when a deletion was made or started, `false` when there was nothing to delete.
    fn kube_delete(
        &self,
        target: &ObjectRef,
        options: &kube_write::DeleteOptions,
    ) -> Result<bool, HostError>;

    /// Applies a typed object (a `k8s_openapi` Deployment, ConfigMap, … or any type that serializes with its
    /// `apiVersion` and `kind`) as a child the reconciled object owns.
    fn apply_owned<T: serde::Serialize>(&self, object: &T) -> Result<Value, HostError>
    where
        Self: Sized,
    {
        let object = serde_json::to_value(object)
            .map_err(|e| HostError::Invalid(format!("the object does not encode as JSON: {e}")))?;
        self.kube_apply(&object, kube_write::WriteOptions::owned())
    }

    /// What [`KubeWrite::apply_owned`] would store, without storing it (a server-side dry run).
    fn preview_owned<T: serde::Serialize>(&self, object: &T) -> Result<Value, HostError>
    where
        Self: Sized,
    {
        let object = serde_json::to_value(object)
            .map_err(|e| HostError::Invalid(format!("the object does not encode as JSON: {e}")))?;
        self.kube_apply(&object, kube_write::WriteOptions::owned().dry_run())
    }

    /// Deletes an object in the background (dependents are collected afterwards); `false` when it was absent.
    fn delete(&self, target: &ObjectRef) -> Result<bool, HostError>
    where
        Self: Sized,
    {
        self.kube_delete(target, &kube_write::DeleteOptions::default())
    }
}

/// `files`: files under the template roots the operator allows.
pub trait Files {
    /// The bytes of a file under a template root (`file:` patches and manifests). `root` is the object's
    /// absolute template root; `path` is relative to it or absolute inside it. Capability `files`; the operator
    /// admin decides which roots are allowed (`Denied` otherwise), a missing file is `NotFound`, a path leading
    /// out of the root `Denied`, an oversized file `Invalid`.
    fn read_file(&self, root: &str, path: &str) -> Result<Vec<u8>, HostError>;
}

/// `omni`: Omni resources through an OmniConnection.
pub trait Omni {
    /// Authenticates against the Omni endpoint an OmniConnection (in the object's namespace) names; returns the
    /// normalised endpoint. Capability `omni`, as are the other `omni_*` calls.
    fn omni_ping(&self, connection: &str) -> Result<String, HostError>;
    fn omni_get(
        &self,
        connection: &str,
        key: &omni::ResourceKey,
    ) -> Result<Option<omni::OmniResource>, HostError>;
    /// Sorted by ID; every term must hold.
    fn omni_list(
        &self,
        connection: &str,
        namespace: &str,
        type_: &str,
        labels: &[omni::LabelTerm],
    ) -> Result<Vec<omni::OmniResource>, HostError>;
    fn omni_create(
        &self,
        connection: &str,
        resource: &omni::OmniResource,
    ) -> Result<omni::OmniResource, HostError>;
    /// Fails with `Conflict` when `resource.version` is no longer the stored one.
    fn omni_update(
        &self,
        connection: &str,
        resource: &omni::OmniResource,
    ) -> Result<omni::OmniResource, HostError>;
    /// `Ok(true)` when no finalizers remain.
    fn omni_teardown(&self, connection: &str, key: &omni::ResourceKey) -> Result<bool, HostError>;
    fn omni_destroy(&self, connection: &str, key: &omni::ResourceKey) -> Result<(), HostError>;
    fn omni_cluster_status(
        &self,
        connection: &str,
        cluster: &str,
    ) -> Result<Option<omni::ClusterHealth>, HostError>;

    /// Requests a service-account kubeconfig from Omni and writes it into a Secret host to host; returns the
    /// SHA-256 of the bytes written. `Conflict` when the target exists without the owner label (left alone).
    /// Capabilities `omni`, `secrets`, `secrets-write`.
    fn omni_export_kubeconfig(
        &self,
        connection: &str,
        request: &secrets::KubeconfigExport,
    ) -> Result<String, HostError>;
}

/// `secrets`: management-cluster Secrets the reconciled object names.
pub trait Secrets {
    /// A management-cluster Secret's metadata and keys, never its values; `Ok(None)` when it does not exist.
    /// `namespace: None` is the object's own. Capability `secrets`.
    fn secret_info(
        &self,
        namespace: Option<&str>,
        name: &str,
    ) -> Result<Option<secrets::SecretInfo>, HostError>;

    /// SHA-256 (hex) of one key's value; `Ok(None)` when the Secret or key does not exist. Capability `secrets`.
    fn secret_digest(&self, key: &secrets::SecretKeyRef) -> Result<Option<String>, HostError>;

    /// One key's value; `Ok(None)` when the Secret or key does not exist. Capability `secrets-read-values`, and
    /// only for a Secret the object names at a field the plugin declares (`Info::secret_fields`).
    fn secret_read(&self, key: &secrets::SecretKeyRef) -> Result<Option<Vec<u8>>, HostError>;

    /// Deletes a management-cluster Secret only if it carries `owner`. Capability `secrets-write`.
    fn secret_delete_owned(
        &self,
        namespace: Option<&str>,
        name: &str,
        owner: &secrets::OwnerLabel,
    ) -> Result<secrets::Removal, HostError>;
}

/// `workload`: the workload cluster, through a kubeconfig Secret the reconciled object names.
pub trait Workload {
    /// `GET /version` on the workload cluster with the kubeconfig in `kubeconfig`: the server's version, or
    /// `Unauthenticated` (401) / `Forbidden` (403) when the credentials are no longer usable. Capability
    /// `workload`, as are the other `workload_*` calls.
    fn workload_probe(&self, kubeconfig: &secrets::SecretKeyRef) -> Result<String, HostError>;

    /// Mirrors a Secret into the workload cluster host to host.
    fn workload_copy_secret(
        &self,
        kubeconfig: &secrets::SecretKeyRef,
        request: &secrets::SecretCopy,
    ) -> Result<secrets::Copied, HostError>;

    /// Deletes a workload-cluster Secret only if it carries `owner`.
    fn workload_delete_secret(
        &self,
        kubeconfig: &secrets::SecretKeyRef,
        namespace: &str,
        name: &str,
        owner: &secrets::OwnerLabel,
    ) -> Result<secrets::Removal, HostError>;
}

/// `helm`: releases in a workload cluster, read by the plugin and acted on in steps the operator runs in the
/// background. Capability `helm`.
pub trait Helm {
    /// Reads the release and what the operator runs or ran for it; with `source`, also the digest a revision
    /// made from it would carry. Starts nothing.
    fn helm_observe(
        &self,
        release: &helm::ReleaseRef,
        source: Option<&helm::ReleaseSource>,
    ) -> Result<helm::Observation, HostError>;

    /// The objects of the deployed revision that drifted in the workload cluster (nothing while an action runs).
    fn helm_detect_drift(
        &self,
        release: &helm::ReleaseRef,
        ignore: &[helm::DriftIgnore],
    ) -> Result<Vec<helm::Drifted>, HostError>;

    /// Starts one action in the background; `Conflict` while another runs for the release.
    fn helm_start(
        &self,
        release: &helm::ReleaseRef,
        step: &helm::Step,
    ) -> Result<helm::StepRecord, HostError>;

    /// Cancels install or upgrade `id` while it runs (Helm records the revision failed; the action ends with
    /// `cancelled` set). False when `id` is not the install or upgrade running.
    fn helm_cancel(&self, release: &helm::ReleaseRef, id: &str) -> Result<bool, HostError>;
}

/// The capability traits, imported anonymously: `use omni_plugin_sdk::prelude::*;` makes every host call
/// available on a concrete host (a `MockHost` in tests) without the trait names clashing with the plugin's own.
pub mod prelude {
    pub use crate::{
        Clock as _, Context as _, Files as _, Helm as _, Host, KubeRead as _, KubeWrite as _,
        Omni as _, Plugin, Secrets as _, Workload as _,
    };
}

/// A kind's reconcile logic.
pub trait Plugin {
    /// What the plugin reconciles and needs; asked once when the operator loads it.
    fn describe() -> Info;

    /// Level-triggered and idempotent: look at the object and what it refers to, then report status.
    fn reconcile<H: Host>(host: &H) -> Result<(), ReconcileError>;

    /// Cleanup before deletion, for plugins that declare a finalizer. `Ok(true)`: done, the finalizer may go.
    fn finalize<H: Host>(host: &H) -> Result<bool, ReconcileError> {
        let _ = host;
        Ok(true)
    }

    /// Admission: field errors refuse the object; warnings are shown to the user either way.
    fn validate(object: &Value, old_object: Option<&Value>) -> Verdict {
        let _ = (object, old_object);
        Verdict::default()
    }
}

/// The contract package this SDK is built against, as the metadata section and `omni-operator plugin inspect`
/// name it.
pub const WIT_PACKAGE: &str = "omni:operator@0.1.0";
/// This SDK's version, recorded in every plugin built with it.
pub const SDK_VERSION: &str = env!("CARGO_PKG_VERSION");

/// Builds the metadata custom section at compile time (`export_plugin!` uses it; not for plugins to call).
#[doc(hidden)]
pub mod metadata {
    /// The section's name; the host reads exactly this one.
    pub const SECTION: &str = "omni-operator:metadata";

    pub const fn len(parts: &[&str]) -> usize {
        let mut total = 0;
        let mut i = 0;
        while i < parts.len() {
            total += parts[i].len();
            i += 1;
        }
        total
    }

    pub const fn join<const N: usize>(parts: &[&str]) -> [u8; N] {
        let mut out = [0u8; N];
        let (mut at, mut i) = (0, 0);
        while i < parts.len() {
            let bytes = parts[i].as_bytes();
            let mut j = 0;
            while j < bytes.len() {
                out[at] = bytes[j];
                at += 1;
                j += 1;
            }
            i += 1;
        }
        out
    }
}

/// Writes the plugin's metadata (its crate's name and version, the contract and SDK versions, and the grants it
/// requests) into the custom section `omni-operator:metadata` of the component, where it travels with the bytes.
#[doc(hidden)]
#[macro_export]
macro_rules! __plugin_metadata {
    ($($capabilities:literal)?) => {
        #[cfg(target_arch = "wasm32")]
        const _: () = {
            const PARTS: &[&str] = &[
                "{\"name\":\"",
                ::core::env!("CARGO_PKG_NAME"),
                "\",\"version\":\"",
                ::core::env!("CARGO_PKG_VERSION"),
                "\",\"wit\":\"",
                $crate::WIT_PACKAGE,
                "\",\"sdk\":\"",
                $crate::SDK_VERSION,
                "\""
                $(, ",\"capabilities\":\"", $capabilities, "\"")?,
                "}",
            ];
            const LEN: usize = $crate::metadata::len(PARTS);
            #[unsafe(link_section = "omni-operator:metadata")]
            #[used]
            static METADATA: [u8; LEN] = $crate::metadata::join::<LEN>(PARTS);
        };
    };
}

/// Exports a [`Plugin`] as the component's `plugin`, `reconciler` and `validator` interfaces, and writes its
/// metadata section. `capabilities = "kube-read,helm"` names the grants the plugin requests (the `--grant`
/// grammar); an operator never grants it more. Without it, the plugin requests what its imports need.
#[macro_export]
macro_rules! export_plugin {
    (@export $plugin:ty) => {
        const _: () = {
            struct __OmniPluginExport;

            impl $crate::bindings::exports::omni::operator::plugin::Guest for __OmniPluginExport {
                fn describe() -> $crate::bindings::exports::omni::operator::plugin::Info {
                    $crate::wasm::describe::<$plugin>()
                }
            }

            impl $crate::bindings::exports::omni::operator::reconciler::Guest for __OmniPluginExport {
                fn reconcile(
                    ctx: &$crate::bindings::omni::operator::context::CallContext,
                ) -> ::core::result::Result<(), $crate::bindings::omni::operator::types::ReconcileError> {
                    $crate::wasm::reconcile::<$plugin>(ctx)
                }

                fn finalize(
                    ctx: &$crate::bindings::omni::operator::context::CallContext,
                ) -> ::core::result::Result<bool, $crate::bindings::omni::operator::types::ReconcileError> {
                    $crate::wasm::finalize::<$plugin>(ctx)
                }
            }

            impl $crate::bindings::exports::omni::operator::validator::Guest for __OmniPluginExport {
                fn validate(
                    object: ::std::string::String,
                    old_object: ::core::option::Option<::std::string::String>,
                ) -> $crate::bindings::exports::omni::operator::validator::Verdict {
                    $crate::wasm::validate::<$plugin>(object, old_object)
                }
            }

            // Component exports exist only in WebAssembly; native builds (unit tests, `cargo test --workspace`)
            // keep the plugin as an ordinary library.
            #[cfg(target_arch = "wasm32")]
            $crate::bindings::export!(__OmniPluginExport with_types_in $crate::bindings);
        };
    };
    ($plugin:ty) => {
        $crate::export_plugin!(@export $plugin);
        $crate::__plugin_metadata!();
    };
    ($plugin:ty, capabilities = $capabilities:literal) => {
        $crate::export_plugin!(@export $plugin);
        $crate::__plugin_metadata!($capabilities);
    };
}
