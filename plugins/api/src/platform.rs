//! The `plugins.omni.texashpc.com/v1alpha1` API: which plugin reconciles which kind where, managed with kubectl
//! and GitOps like everything else (the split of Kubewarden's PolicyServer and policies and of
//! Gateway API's classes and routes):
//!
//! * [`PluginSpec`] (cluster-scoped, owned by the cluster administrator): an artifact, the keys it must be signed
//!   with, and the **grant ceiling** approved for it;
//! * [`PluginBindingSpec`] (namespaced): this namespace's kinds are reconciled by that Plugin, with these grants;
//! * [`ClusterPluginBindingSpec`]: the same for every namespace that has no PluginBinding for the kind.
//!
//! A binding's effective grants are what the component requests ∩ the Plugin's ceiling ∩ the binding's grants.

use serde::{Deserialize, Serialize};

use crate::conditions::Condition;
use crate::meta::{Object, OmniKind};
#[cfg(feature = "schema")]
use crate::patterns;

/// The API group of the plugin platform's kinds.
pub const PLATFORM_GROUP: &str = "plugins.omni.texashpc.com";
/// `apiVersion` of the plugin platform's kinds.
pub const PLATFORM_API_VERSION: &str = "plugins.omni.texashpc.com/v1alpha1";

/// A plugin artifact an administrator approved: where its component comes from, who must have signed it, and
/// the most it may ever be granted. Cluster-scoped; bindings put it to work.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
#[serde(rename_all = "camelCase")]
pub struct PluginSpec {
    /// artifact is the component: oci://REGISTRY/REPOSITORY@sha256:DIGEST (a tag is resolved once and the
    /// digest kept in status), file:///PATH.wasm for air-gapped clusters, or builtin:NAME for a plugin
    /// compiled into the operator.
    #[cfg_attr(feature = "schema", schemars(length(min = 1, max = 1024)))]
    pub artifact: String,
    /// credentialsSecretRef names a Secret with the registry's credentials: type
    /// kubernetes.io/dockerconfigjson, or keys username and password.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub credentials_secret_ref: Option<NamespacedName>,
    /// plainHTTP reaches the registry over HTTP instead of HTTPS: for a registry on a trusted network only.
    #[serde(default, skip_serializing_if = "Option::is_none", rename = "plainHTTP")]
    pub plain_http: Option<bool>,
    /// verification says whose signature the artifact must carry. Required: name keys, or disable it
    /// explicitly.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub verification: Option<Verification>,
    /// grants is the ceiling: the most any binding of this Plugin gets (the operator's --grant grammar:
    /// kube-read, kube-read:GROUP/KIND, namespace:NS, helm, …). Empty grants nothing.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    #[cfg_attr(feature = "schema", schemars(extend("x-kubernetes-list-type" = "set")))]
    pub grants: Vec<String>,
    /// namespaces whose PluginBindings may use this Plugin; every namespace when empty. ClusterPluginBindings
    /// may use it only when it is empty.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    #[cfg_attr(feature = "schema", schemars(extend("x-kubernetes-list-type" = "set")))]
    pub namespaces: Vec<String>,
    /// quota is the most any binding's calls may take; a binding's own quota may only lower it.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub quota: Option<Quota>,
    /// rollout says how a new digest takes over from the one serving.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub rollout: Option<Rollout>,
}

/// A Secret (or other object) by name and namespace.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
pub struct NamespacedName {
    #[cfg_attr(feature = "schema", schemars(length(min = 1, max = 253)))]
    pub name: String,
    #[cfg_attr(
        feature = "schema",
        schemars(length(min = 1, max = 63), pattern(patterns::DNS_LABEL))
    )]
    pub namespace: String,
}

/// Signature verification of a Plugin's artifact.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
#[serde(rename_all = "camelCase")]
pub struct Verification {
    /// publicKeys are the cosign public keys (PEM) one of which must have signed the artifact.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub public_keys: Vec<PublicKeySource>,
    /// disabled runs the artifact unsigned. The Plugin's status says so.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub disabled: Option<bool>,
}

/// One trusted public key, inline or from a Secret.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
#[serde(rename_all = "camelCase")]
pub struct PublicKeySource {
    /// name identifies the key in status and messages.
    #[cfg_attr(feature = "schema", schemars(length(min = 1, max = 63)))]
    pub name: String,
    /// pem is the public key itself (cosign.pub).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub pem: Option<String>,
    /// secretKeyRef takes the key from a Secret's data key instead.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub secret_key_ref: Option<SecretKeyRef>,
}

/// A key of a Secret in a namespace.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
pub struct SecretKeyRef {
    #[cfg_attr(feature = "schema", schemars(length(min = 1, max = 253)))]
    pub name: String,
    #[cfg_attr(
        feature = "schema",
        schemars(length(min = 1, max = 63), pattern(patterns::DNS_LABEL))
    )]
    pub namespace: String,
    #[cfg_attr(feature = "schema", schemars(length(min = 1)))]
    pub key: String,
}

/// How a new version takes over.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
#[serde(rename_all = "camelCase")]
pub struct Rollout {
    /// canary serves a new digest to part of the objects first; the rest keep the previous digest until the
    /// canary has run for its duration without crossing the failure threshold.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub canary: Option<Canary>,
    /// rollback returns to the previous digest when the new one fails too often.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub rollback: Option<RollbackPolicy>,
}

/// Which objects a new digest serves first.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
#[serde(rename_all = "camelCase")]
pub struct Canary {
    /// namespaces served by the new digest first.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub namespaces: Vec<String>,
    /// percent of the other objects (chosen by a stable hash of their UID) served by the new digest first.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[cfg_attr(feature = "schema", schemars(range(min = 0, max = 100)))]
    pub percent: Option<u8>,
    /// duration the canary runs before the new digest serves everything (a Go duration; default 1m).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub duration: Option<String>,
}

/// When a new digest is rolled back.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
#[serde(rename_all = "camelCase")]
pub struct RollbackPolicy {
    /// disabled keeps a failing new digest serving.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub disabled: Option<bool>,
    /// failurePercent of the new digest's calls (traps, timeouts and errors) that rolls it back (default 20).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[cfg_attr(feature = "schema", schemars(range(min = 1, max = 100)))]
    pub failure_percent: Option<u8>,
    /// minCalls before the failure rate counts (default 10).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[cfg_attr(feature = "schema", schemars(range(min = 1)))]
    pub min_calls: Option<u32>,
    /// window the new digest is watched for after it starts serving (a Go duration; default 5m).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub window: Option<String>,
}

/// What the operator observed of a Plugin.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
#[serde(rename_all = "camelCase")]
pub struct PluginStatus {
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub observed_generation: Option<i64>,
    /// conditions: Ready (the artifact is fetched, verified, compiled and probed), Verified, Degraded (a new
    /// digest was refused or rolled back).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub conditions: Vec<Condition>,
    /// artifact is the spec.artifact the serving digest was fetched for.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub artifact: Option<String>,
    /// resolvedArtifact is spec.artifact pinned to the digest it resolved to.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub resolved_artifact: Option<String>,
    /// digest serving now.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub digest: Option<String>,
    /// previousDigest is the digest a rollback returns to.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub previous_digest: Option<String>,
    /// canaryDigest is a new digest serving part of the objects.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub canary_digest: Option<String>,
    /// signedBy names the key that verified the serving digest.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub signed_by: Option<String>,
    /// component is what the artifact's metadata says about itself.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub component: Option<ComponentInfo>,
    /// failures are the latest refusals and rollbacks, newest first (at most 10).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub failures: Vec<FailureRecord>,
}

/// A component's own account of itself, from its metadata section and `describe`.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
#[serde(rename_all = "camelCase")]
pub struct ComponentInfo {
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub name: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub version: Option<String>,
    /// wit is the contract version it was built against.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub wit: Option<String>,
    /// requestedGrants are the grants it asks for.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub requested_grants: Vec<String>,
    /// kinds it reconciles (GROUP/KIND).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub kinds: Vec<String>,
}

/// One refusal or rollback.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
#[serde(rename_all = "camelCase")]
pub struct FailureRecord {
    pub time: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub digest: Option<String>,
    pub reason: String,
    pub message: String,
}

/// Which Plugin reconciles kinds in this namespace, with which grants.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
#[serde(rename_all = "camelCase")]
pub struct PluginBindingSpec {
    /// plugin names the Plugin.
    #[cfg_attr(feature = "schema", schemars(length(min = 1, max = 253)))]
    pub plugin: String,
    /// kinds limits the binding to some of the kinds the plugin reconciles; all of them when empty.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub kinds: Vec<KindRef>,
    /// grants for this binding, within the Plugin's ceiling.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    #[cfg_attr(feature = "schema", schemars(extend("x-kubernetes-list-type" = "set")))]
    pub grants: Vec<String>,
    /// quota bounds what this binding's calls may take from the operator.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub quota: Option<Quota>,
}

/// A kind by group and name.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
pub struct KindRef {
    /// group of the kind (omni.texashpc.com for the operator's own kinds).
    pub group: String,
    #[cfg_attr(feature = "schema", schemars(length(min = 1, max = 63)))]
    pub kind: String,
}

/// Per-binding (per-tenant) bounds.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
#[serde(rename_all = "camelCase")]
pub struct Quota {
    /// concurrency is the most calls running at once.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[cfg_attr(feature = "schema", schemars(range(min = 1, max = 1024)))]
    pub concurrency: Option<u32>,
    /// callsPerSecond is the sustained call rate (bursts up to twice it).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[cfg_attr(feature = "schema", schemars(range(min = 1, max = 100000)))]
    pub calls_per_second: Option<u32>,
    /// memory caps one call's memory (a Kubernetes quantity, e.g. 64Mi), below the operator's ceiling.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub memory: Option<String>,
}

/// What the operator observed of a binding.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
#[serde(rename_all = "camelCase")]
pub struct PluginBindingStatus {
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub observed_generation: Option<i64>,
    /// conditions: Ready (serving), Conflict (another binding claims one of the kinds here).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub conditions: Vec<Condition>,
    /// digest serving this binding's objects.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub digest: Option<String>,
    /// effectiveGrants: requested ∩ the Plugin's ceiling ∩ this binding's grants.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub effective_grants: Vec<String>,
    /// kinds this binding serves (GROUP/KIND).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub kinds: Vec<String>,
    /// usage is what this binding's calls did since its versions were loaded (refreshed every 10 s at most).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub usage: Option<BindingUsage>,
}

/// A binding's call figures.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
#[serde(rename_all = "camelCase")]
pub struct BindingUsage {
    pub calls: u64,
    /// failures: calls that returned an error or were stopped.
    pub failures: u64,
    /// traps by class (PluginTimeout, PluginPanic, PluginOutOfMemory, …).
    #[serde(default, skip_serializing_if = "std::collections::BTreeMap::is_empty")]
    pub traps: std::collections::BTreeMap<String, u64>,
    /// denials: capability calls refused for lack of a grant.
    pub denials: u64,
    /// quotaHits: calls turned away because the quota was used up.
    pub quota_hits: u64,
    /// meanCallMicros: the mean duration of a call.
    pub mean_call_micros: u64,
}

/// Which Plugin reconciles kinds in every namespace that has no PluginBinding for them, with which grants.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
#[serde(transparent)]
// A type of its own (a PluginBinding's spec inside) so that it names its own kind.
pub struct ClusterBinding(pub PluginBindingSpec);

impl OmniKind for PluginSpec {
    const KIND: &'static str = "Plugin";
    const PLURAL: &'static str = "plugins";
    const SINGULAR: &'static str = "plugin";
    const LIST_KIND: &'static str = "PluginList";
    const GROUP: &'static str = PLATFORM_GROUP;
    const CLUSTER_SCOPED: bool = true;
    type Status = PluginStatus;
}

impl OmniKind for PluginBindingSpec {
    const KIND: &'static str = "PluginBinding";
    const PLURAL: &'static str = "pluginbindings";
    const SINGULAR: &'static str = "pluginbinding";
    const LIST_KIND: &'static str = "PluginBindingList";
    const GROUP: &'static str = PLATFORM_GROUP;
    type Status = PluginBindingStatus;
}

impl OmniKind for ClusterBinding {
    const KIND: &'static str = "ClusterPluginBinding";
    const PLURAL: &'static str = "clusterpluginbindings";
    const SINGULAR: &'static str = "clusterpluginbinding";
    const LIST_KIND: &'static str = "ClusterPluginBindingList";
    const GROUP: &'static str = PLATFORM_GROUP;
    const CLUSTER_SCOPED: bool = true;
    type Status = PluginBindingStatus;
}

/// A typed Plugin object.
pub type Plugin = Object<PluginSpec>;
/// A typed PluginBinding object.
pub type PluginBinding = Object<PluginBindingSpec>;
/// A typed ClusterPluginBinding object.
pub type ClusterPluginBinding = Object<ClusterBinding>;
