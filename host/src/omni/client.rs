//! One Omni endpoint and service-account key: signed calls (sent uncompressed; gzip answers accepted) with a
//! deadline each, over one long-lived channel (the Go operator dialled and signed anew for every operation).
//! Replies are mapped onto the contract's typed errors with Go's `rpc error: code = … desc = …` text, so
//! messages read as they did.

use std::time::{Duration, UNIX_EPOCH};

use omni_wire::compression::Dictionary;
use omni_wire::cosi::{self, state_client::StateClient};
use omni_wire::management::{self, management_service_client::ManagementServiceClient};
use omni_wire::signature::{Metadata, Signer};
use omni_wire::{ServiceAccountKey, specs};
use tonic::codec::CompressionEncoding;
use tonic::metadata::{MetadataKey, MetadataValue};
use tonic::transport::Channel;
use tonic::{Code, Request, Status};

use super::endpoint::Endpoint;
use super::overlay::{OmniOverlay, key_of};
use super::transport::{self, MAX_MESSAGE_BYTES};
use crate::contract::HostError;

pub use super::address::{CLUSTERS, CONFIG_PATCHES, Key, MANIFEST_GROUPS};
const CLUSTER_STATUSES: &str = "ClusterStatuses.omni.sidero.dev";
const MACHINE_SET_STATUSES: &str = "MachineSetStatuses.omni.sidero.dev";
const KUBERNETES_UPGRADE_STATUSES: &str = "KubernetesUpgradeStatuses.omni.sidero.dev";
const TALOS_UPGRADE_STATUSES: &str = "TalosUpgradeStatuses.omni.sidero.dev";
const CLUSTER_LABEL: &str = "omni.sidero.dev/cluster";

/// A resource as read, with its spec decompressed where Omni stored it compressed.
#[derive(Debug, Clone, PartialEq)]
pub struct ReadResource {
    pub resource: cosi::Resource,
    /// Why the spec's content could not be decompressed.
    pub unreadable: Option<String>,
}

/// Health as `omnictl cluster status` judges it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ClusterHealth {
    pub phase: String,
    pub ready: bool,
    pub healthy: bool,
    pub findings: Vec<String>,
}

pub struct OmniClient {
    endpoint: Endpoint,
    /// Signs each call; one signature serves every call of a method with the same headers within a second.
    signer: Signer,
    state: StateClient<Channel>,
    management: ManagementServiceClient<Channel>,
    dictionary: Option<Dictionary>,
    /// A plan's overlay: writes are recorded there instead of sent, and reads see them.
    plan: Option<std::sync::Arc<OmniOverlay>>,
}

impl std::fmt::Debug for OmniClient {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("OmniClient")
            .field("endpoint", &self.endpoint.normalized)
            .field("key", self.signer.key())
            .finish_non_exhaustive()
    }
}

impl OmniClient {
    /// A client whose channel connects on first use.
    pub fn new(
        endpoint: Endpoint,
        insecure_skip_verify: bool,
        key: ServiceAccountKey,
        dictionary: Option<Dictionary>,
    ) -> Result<Self, String> {
        let channel = transport::channel(&endpoint, insecure_skip_verify)?;
        // Requests go uncompressed: the bulky payloads (patches, manifests) are zstd-compressed already, and
        // gzip on every small message costs both ends CPU for nothing. Omni answers in the request's encoding
        // (grpc-go), so answers come back uncompressed too; gzip answers are still accepted.
        let management = ManagementServiceClient::new(channel.clone())
            .accept_compressed(CompressionEncoding::Gzip)
            .max_decoding_message_size(MAX_MESSAGE_BYTES)
            .max_encoding_message_size(MAX_MESSAGE_BYTES);
        let state = StateClient::new(channel)
            .accept_compressed(CompressionEncoding::Gzip)
            .max_decoding_message_size(MAX_MESSAGE_BYTES)
            .max_encoding_message_size(MAX_MESSAGE_BYTES);
        Ok(OmniClient {
            endpoint,
            signer: Signer::new(key),
            state,
            management,
            dictionary,
            plan: None,
        })
    }

    /// This client for a plan: its writes go to `overlay` instead of Omni, and its reads see them.
    pub fn planning(mut self, overlay: std::sync::Arc<OmniOverlay>) -> Self {
        self.plan = Some(overlay);
        self
    }

    pub fn endpoint(&self) -> &Endpoint {
        &self.endpoint
    }

    /// A request for `method` carrying `extra` metadata, signed (after all other metadata is set: the signed
    /// payload covers it) with `budget` as its gRPC deadline. Signed at the real time, never an injected clock:
    /// Omni refuses timestamps more than 5 minutes from its own.
    fn request<T>(
        &self,
        method: &str,
        message: T,
        extra: Metadata,
        budget: Duration,
    ) -> Result<Request<T>, HostError> {
        let now = std::time::SystemTime::now()
            .duration_since(UNIX_EPOCH)
            .map(|d| d.as_secs() as i64)
            .unwrap_or(0);
        let mut md = extra;
        self.signer
            .sign(method, &mut md, now)
            .map_err(|e| HostError::Other(e.to_string()))?;
        let mut request = Request::new(message);
        request.set_timeout(budget);
        for (name, value) in md {
            let name = MetadataKey::from_bytes(name.as_bytes()).map_err(|_| {
                HostError::Invalid(format!("metadata key {name:?} is not valid in gRPC"))
            })?;
            let value = MetadataValue::try_from(value.as_str()).map_err(|_| {
                HostError::Invalid(format!(
                    "metadata {name} holds characters gRPC cannot carry"
                ))
            })?;
            request.metadata_mut().append(name, value);
        }
        Ok(request)
    }

    /// Runs one call within `budget`, even when the server ignores `grpc-timeout`.
    async fn within<T>(
        what: &str,
        budget: Duration,
        call: impl Future<Output = Result<T, Status>>,
    ) -> Result<T, HostError> {
        match tokio::time::timeout(budget, call).await {
            Err(_) => Err(HostError::Timeout(format!(
                "{what}: Omni did not answer within {} ms",
                budget.as_millis()
            ))),
            Ok(result) => result.map_err(|status| rpc_error(what, &status)),
        }
    }

    /// A service-account kubeconfig for `cluster`: the cluster travels in the signed
    /// `context` header, the token lives `ttl`. The bytes are credentials: callers must not log, echo or keep them
    /// longer than it takes to store them. Errors read `get kubeconfig for Omni cluster "<name>": …`, as the Go
    /// operator's did; an empty answer is an error, not an empty kubeconfig.
    pub async fn kubeconfig(
        &self,
        cluster: &str,
        user: &str,
        groups: &[String],
        ttl: Duration,
        budget: Duration,
    ) -> Result<Vec<u8>, HostError> {
        // `{:?}` prints Omni cluster names (`[A-Za-z0-9_-]+`) exactly as Go's `%q` does.
        let what = format!("get kubeconfig for Omni cluster {cluster:?}");
        if let Some(plan) = &self.plan {
            return Ok(plan.kubeconfig(&self.endpoint.normalized, cluster));
        }
        let ttl = prost_types::Duration::try_from(ttl)
            .map_err(|_| HostError::Invalid(format!("{what}: the ttl {ttl:?} is out of range")))?;
        let message = management::KubeconfigRequest {
            service_account: true,
            service_account_ttl: Some(ttl),
            service_account_user: user.to_string(),
            service_account_groups: groups.to_vec(),
            ..Default::default()
        };
        let request = self.request(
            "/management.ManagementService/Kubeconfig",
            message,
            vec![("context".into(), cluster.to_string())],
            budget,
        )?;
        let mut management = self.management.clone();
        let answer = Self::within(&what, budget, management.kubeconfig(request))
            .await?
            .into_inner();
        if answer.kubeconfig.is_empty() {
            return Err(HostError::Other(format!("{what}: response was empty")));
        }
        Ok(answer.kubeconfig)
    }

    /// Ping: the list of clusters the Go operator uses (Reader role on all clusters). Errors read
    /// `list Omni clusters: rpc error: …`, as the operator reported them.
    pub async fn ping(&self, budget: Duration) -> Result<(), HostError> {
        self.list_raw(
            "list Omni clusters",
            omni_wire::DEFAULT_NAMESPACE,
            CLUSTERS,
            Vec::new(),
            budget,
        )
        .await
        .map(|_| ())
    }

    pub async fn get(
        &self,
        key: &Key,
        budget: Duration,
    ) -> Result<Option<ReadResource>, HostError> {
        if let Some(plan) = &self.plan
            && let Some(staged) = plan.staged(&self.endpoint.normalized, key)
        {
            return Ok(staged.map(|r| self.readable(r)));
        }
        self.get_live(key, budget).await
    }

    /// `get` from Omni itself, past a plan's overlay.
    async fn get_live(
        &self,
        key: &Key,
        budget: Duration,
    ) -> Result<Option<ReadResource>, HostError> {
        let what = format!("get {key}");
        let message = cosi::GetRequest {
            namespace: key.namespace.clone(),
            r#type: key.type_.clone(),
            id: key.id.clone(),
            options: Some(cosi::GetOptions {}),
        };
        let request = self.request("/cosi.resource.State/Get", message, Vec::new(), budget)?;
        let mut state = self.state.clone();
        match Self::within(&what, budget, state.get(request)).await {
            Err(HostError::NotFound(_)) => Ok(None),
            Err(e) => Err(e),
            Ok(reply) => match reply.into_inner().resource {
                Some(resource) => Ok(Some(self.readable(resource))),
                None => Err(HostError::Other(format!(
                    "{what}: Omni answered without a resource"
                ))),
            },
        }
    }

    pub async fn list(
        &self,
        namespace: &str,
        type_: &str,
        terms: Vec<cosi::LabelTerm>,
        budget: Duration,
    ) -> Result<Vec<ReadResource>, HostError> {
        let what = format!("list {type_}");
        let mut items = self
            .list_raw(&what, namespace, type_, terms.clone(), budget)
            .await?;
        if let Some(plan) = &self.plan {
            items = plan.over_list(&self.endpoint.normalized, namespace, type_, &terms, items);
        }
        Ok(items.into_iter().map(|r| self.readable(r)).collect())
    }

    async fn list_raw(
        &self,
        what: &str,
        namespace: &str,
        type_: &str,
        terms: Vec<cosi::LabelTerm>,
        budget: Duration,
    ) -> Result<Vec<cosi::Resource>, HostError> {
        // One LabelQuery per call with all terms, as `WithLabelQuery(resource.LabelEqual(…), …)` sends.
        let label_query = if terms.is_empty() {
            Vec::new()
        } else {
            vec![cosi::LabelQuery { terms }]
        };
        let message = cosi::ListRequest {
            namespace: namespace.into(),
            r#type: type_.into(),
            options: Some(cosi::ListOptions {
                label_query,
                id_query: None,
            }),
        };
        let request = self.request("/cosi.resource.State/List", message, Vec::new(), budget)?;
        let mut state = self.state.clone();
        let collect = async move {
            let mut stream = state.list(request).await?.into_inner();
            let mut items = Vec::new();
            while let Some(reply) = stream.message().await? {
                if let Some(resource) = reply.resource {
                    items.push(resource);
                }
            }
            Ok(items)
        };
        Self::within(what, budget, collect).await
    }

    pub async fn create(
        &self,
        resource: cosi::Resource,
        budget: Duration,
    ) -> Result<ReadResource, HostError> {
        let what = format!("create {}", describe(&resource));
        if let Some(plan) = &self.plan {
            let current = self.current(&key_of(&resource), budget).await?;
            // Recorded with its content readable, so the plan's diff shows the text.
            let resource = self.readable(resource).resource;
            let created = plan.create(&self.endpoint.normalized, resource, current)?;
            return Ok(self.readable(created));
        }
        let message = cosi::CreateRequest {
            resource: Some(resource),
            options: Some(cosi::CreateOptions {
                owner: String::new(),
            }),
        };
        let request = self.request("/cosi.resource.State/Create", message, Vec::new(), budget)?;
        let mut state = self.state.clone();
        let reply = Self::within(&what, budget, state.create(request)).await?;
        self.stored(&what, reply.into_inner().resource)
    }

    /// Update with `expected_phase = running`, as the Go client sends by default.
    pub async fn update(
        &self,
        resource: cosi::Resource,
        budget: Duration,
    ) -> Result<ReadResource, HostError> {
        if let Some(plan) = &self.plan {
            let current = self.current(&key_of(&resource), budget).await?;
            let resource = self.readable(resource).resource;
            let updated = plan.update(&self.endpoint.normalized, resource, current)?;
            return Ok(self.readable(updated));
        }
        self.update_in_phase(resource, Some(omni_wire::phase::RUNNING.into()), budget)
            .await
    }

    async fn update_in_phase(
        &self,
        resource: cosi::Resource,
        expected_phase: Option<String>,
        budget: Duration,
    ) -> Result<ReadResource, HostError> {
        let what = format!("update {}", describe(&resource));
        let message = cosi::UpdateRequest {
            new_resource: Some(resource),
            options: Some(cosi::UpdateOptions {
                owner: String::new(),
                expected_phase,
            }),
        };
        let request = self.request("/cosi.resource.State/Update", message, Vec::new(), budget)?;
        let mut state = self.state.clone();
        let reply = Self::within(&what, budget, state.update(request)).await?;
        self.stored(&what, reply.into_inner().resource)
    }

    /// Starts the teardown; `true` when no finalizers remain. An Omni without the Teardown RPC gets the Go
    /// client's fallback: set the phase to `tearingDown` with an update.
    pub async fn teardown(&self, key: &Key, budget: Duration) -> Result<bool, HostError> {
        if let Some(plan) = &self.plan {
            let current = self.current(key, budget).await?;
            return plan.teardown(&self.endpoint.normalized, key, current);
        }
        let what = format!("tear down {key}");
        let message = cosi::TeardownRequest {
            namespace: key.namespace.clone(),
            r#type: key.type_.clone(),
            id: key.id.clone(),
            options: Some(cosi::TeardownOptions {
                owner: String::new(),
            }),
        };
        let request = self.request("/cosi.resource.State/Teardown", message, Vec::new(), budget)?;
        let mut state = self.state.clone();
        // `None`: this Omni predates the RPC.
        let call = async move {
            match state.teardown(request).await {
                Ok(reply) => Ok(Some(reply.into_inner().destroy_ready)),
                Err(status) if status.code() == Code::Unimplemented => Ok(None),
                Err(status) => Err(status),
            }
        };
        match Self::within(&what, budget, call).await? {
            Some(destroy_ready) => Ok(destroy_ready),
            None => self.teardown_by_update(key, budget).await,
        }
    }

    async fn teardown_by_update(&self, key: &Key, budget: Duration) -> Result<bool, HostError> {
        // A version conflict means someone else wrote in between: read again, a few times.
        for _ in 0..5 {
            let Some(current) = self.get(key, budget).await? else {
                return Err(HostError::NotFound(format!(
                    "tear down {key}: resource doesn't exist"
                )));
            };
            let mut resource = current.resource;
            let metadata = resource.metadata.get_or_insert_with(Default::default);
            if metadata.phase == omni_wire::phase::TEARING_DOWN {
                return Ok(metadata.finalizers.is_empty());
            }
            metadata.phase = omni_wire::phase::TEARING_DOWN.into();
            match self.update_in_phase(resource, None, budget).await {
                Ok(stored) => {
                    return Ok(stored
                        .resource
                        .metadata
                        .is_none_or(|m| m.finalizers.is_empty()));
                }
                Err(HostError::Conflict(_)) => continue,
                Err(e) => return Err(e),
            }
        }
        Err(HostError::Conflict(format!(
            "tear down {key}: the resource kept changing"
        )))
    }

    pub async fn destroy(&self, key: &Key, budget: Duration) -> Result<(), HostError> {
        if let Some(plan) = &self.plan {
            let current = self.current(key, budget).await?;
            return plan.destroy(&self.endpoint.normalized, key, current);
        }
        let what = format!("destroy {key}");
        let message = cosi::DestroyRequest {
            namespace: key.namespace.clone(),
            r#type: key.type_.clone(),
            id: key.id.clone(),
            options: Some(cosi::DestroyOptions {
                owner: String::new(),
            }),
        };
        let request = self.request("/cosi.resource.State/Destroy", message, Vec::new(), budget)?;
        let mut state = self.state.clone();
        Self::within(&what, budget, state.destroy(request))
            .await
            .map(|_| ())
    }

    /// `None` when Omni has no ClusterStatus for the cluster. Reads the status resources the Go client
    /// watches with get and list, so an absent status is an answer rather than a call that never ends (the Go
    /// operator's status call waited for a ClusterStatus with no deadline).
    pub async fn cluster_status(
        &self,
        cluster: &str,
        budget: Duration,
    ) -> Result<Option<ClusterHealth>, HostError> {
        let key = Key {
            namespace: omni_wire::DEFAULT_NAMESPACE.into(),
            type_: CLUSTER_STATUSES.into(),
            id: cluster.into(),
        };
        let Some(status) = self.get(&key, budget).await? else {
            return Ok(None);
        };
        let spec: specs::ClusterStatusSpec = decode_spec(&status.resource)?;
        let phase = specs::cluster_status_spec::Phase::try_from(spec.phase)
            .map(|p| p.as_str_name().to_string())
            .unwrap_or_else(|_| format!("phase {}", spec.phase));
        let mut findings = Vec::new();
        if phase != "RUNNING" {
            findings.push(format!("cluster phase is {phase}"));
        }
        if !spec.ready {
            findings.push("cluster is not ready".to_string());
        }
        let of_cluster = || {
            vec![cosi::LabelTerm {
                key: CLUSTER_LABEL.into(),
                op: cosi::label_term::Operation::Equal as i32,
                value: vec![cluster.into()],
                invert: false,
            }]
        };
        for set in self
            .list(
                omni_wire::DEFAULT_NAMESPACE,
                MACHINE_SET_STATUSES,
                of_cluster(),
                budget,
            )
            .await?
        {
            let spec: specs::MachineSetStatusSpec = decode_spec(&set.resource)?;
            let set_phase =
                specs::MachineSetPhase::try_from(spec.phase).map_or("Unknown", |p| p.as_str_name());
            if set_phase != "Running" || !spec.ready {
                findings.push(format!(
                    "machine set {} is {set_phase}{}",
                    id_of(&set.resource),
                    if spec.ready { "" } else { ", not ready" }
                ));
            }
        }
        for upgrade in self
            .list(
                omni_wire::DEFAULT_NAMESPACE,
                KUBERNETES_UPGRADE_STATUSES,
                of_cluster(),
                budget,
            )
            .await?
        {
            let spec: specs::KubernetesUpgradeStatusSpec = decode_spec(&upgrade.resource)?;
            if spec.phase != specs::kubernetes_upgrade_status_spec::Phase::Done as i32 {
                let name = specs::kubernetes_upgrade_status_spec::Phase::try_from(spec.phase)
                    .map_or("Unknown", |p| p.as_str_name());
                findings.push(format!("Kubernetes upgrade is {name}"));
            }
        }
        for upgrade in self
            .list(
                omni_wire::DEFAULT_NAMESPACE,
                TALOS_UPGRADE_STATUSES,
                of_cluster(),
                budget,
            )
            .await?
        {
            let spec: specs::TalosUpgradeStatusSpec = decode_spec(&upgrade.resource)?;
            if spec.phase != specs::talos_upgrade_status_spec::Phase::Done as i32 {
                let name = specs::talos_upgrade_status_spec::Phase::try_from(spec.phase)
                    .map_or("Unknown", |p| p.as_str_name());
                findings.push(format!("Talos upgrade is {name}"));
            }
        }
        Ok(Some(ClusterHealth {
            phase,
            ready: spec.ready,
            healthy: findings.is_empty(),
            findings,
        }))
    }

    fn stored(
        &self,
        what: &str,
        resource: Option<cosi::Resource>,
    ) -> Result<ReadResource, HostError> {
        resource.map(|r| self.readable(r)).ok_or_else(|| {
            HostError::Other(format!("{what}: Omni answered without the stored resource"))
        })
    }

    /// For a plan's writes: the resource as the plan sees it now, its content readable.
    async fn current(
        &self,
        key: &Key,
        budget: Duration,
    ) -> Result<Option<cosi::Resource>, HostError> {
        if let Some(plan) = &self.plan
            && let Some(staged) = plan.staged(&self.endpoint.normalized, key)
        {
            return Ok(staged);
        }
        Ok(self.get_live(key, budget).await?.map(|r| r.resource))
    }

    /// Decompresses ConfigPatch and KubernetesManifestGroup content, or says why it cannot.
    fn readable(&self, mut resource: cosi::Resource) -> ReadResource {
        let type_ = resource
            .metadata
            .as_ref()
            .map(|m| m.r#type.as_str())
            .unwrap_or_default()
            .to_string();
        let Some(spec) = resource.spec.as_mut() else {
            return ReadResource {
                resource,
                unreadable: None,
            };
        };
        let unreadable = match type_.as_str() {
            CONFIG_PATCHES => {
                inflate::<specs::ConfigPatchSpec>(&mut spec.proto_spec, self.dictionary.as_ref())
            }
            MANIFEST_GROUPS => inflate::<specs::KubernetesManifestGroupSpec>(
                &mut spec.proto_spec,
                self.dictionary.as_ref(),
            ),
            _ => None,
        };
        ReadResource {
            resource,
            unreadable,
        }
    }
}

/// Spec messages whose content Omni may store compressed.
trait CompressedContent: prost::Message + Default {
    fn content(&mut self) -> (&mut Vec<u8>, &mut String);
}

impl CompressedContent for specs::ConfigPatchSpec {
    fn content(&mut self) -> (&mut Vec<u8>, &mut String) {
        (&mut self.compressed_data, &mut self.data)
    }
}

impl CompressedContent for specs::KubernetesManifestGroupSpec {
    fn content(&mut self) -> (&mut Vec<u8>, &mut String) {
        (&mut self.compressed_data, &mut self.data)
    }
}

/// Replaces compressed content by the plain `data` it encodes; returns why it could not.
fn inflate<S: CompressedContent>(
    proto_spec: &mut Vec<u8>,
    dictionary: Option<&Dictionary>,
) -> Option<String> {
    let mut spec = match S::decode(proto_spec.as_slice()) {
        Ok(spec) => spec,
        Err(e) => return Some(format!("the spec does not decode: {e}")),
    };
    let (compressed, data) = spec.content();
    if compressed.is_empty() {
        return None;
    }
    let Some(dictionary) = dictionary else {
        return Some(
            "the content is zstd-compressed and no Omni dictionary is configured (--omni-zstd-dictionary)".into(),
        );
    };
    let plain = match dictionary.decompress(compressed) {
        Ok(plain) => plain,
        Err(e) => return Some(e.to_string()),
    };
    match String::from_utf8(plain) {
        Ok(text) => {
            *data = text;
            compressed.clear();
            *proto_spec = spec.encode_to_vec();
            None
        }
        Err(_) => Some("the decompressed content is not UTF-8".into()),
    }
}

fn decode_spec<S: prost::Message + Default>(resource: &cosi::Resource) -> Result<S, HostError> {
    let bytes = resource
        .spec
        .as_ref()
        .map(|s| s.proto_spec.as_slice())
        .unwrap_or_default();
    S::decode(bytes).map_err(|e| {
        HostError::Other(format!(
            "{}: Omni's spec does not decode: {e}",
            id_of(resource)
        ))
    })
}

fn id_of(resource: &cosi::Resource) -> String {
    resource
        .metadata
        .as_ref()
        .map(|m| m.id.clone())
        .unwrap_or_default()
}

fn describe(resource: &cosi::Resource) -> String {
    match &resource.metadata {
        Some(m) => format!("{}({})", m.r#type, m.id),
        None => "a resource without metadata".into(),
    }
}

/// Go's spelling of a status code, as `rpc error: code = … desc = …` prints it.
fn go_code(code: Code) -> &'static str {
    match code {
        Code::Ok => "OK",
        Code::Cancelled => "Canceled",
        Code::Unknown => "Unknown",
        Code::InvalidArgument => "InvalidArgument",
        Code::DeadlineExceeded => "DeadlineExceeded",
        Code::NotFound => "NotFound",
        Code::AlreadyExists => "AlreadyExists",
        Code::PermissionDenied => "PermissionDenied",
        Code::ResourceExhausted => "ResourceExhausted",
        Code::FailedPrecondition => "FailedPrecondition",
        Code::Aborted => "Aborted",
        Code::OutOfRange => "OutOfRange",
        Code::Unimplemented => "Unimplemented",
        Code::Internal => "Internal",
        Code::Unavailable => "Unavailable",
        Code::DataLoss => "DataLoss",
        Code::Unauthenticated => "Unauthenticated",
    }
}

/// A call whose connection failed under it (reset, closed, refused) comes back from tonic as `Unknown` with the
/// transport error as its source; grpc-go, which Omni's own clients use, reports it as `Unavailable`, and so must
/// the host, or plugins would take an outage for an unknown failure. The description, from the error chain.
fn transport_failure(status: &Status) -> Option<String> {
    if status.code() != Code::Unknown {
        return None;
    }
    let mut source = std::error::Error::source(status);
    while let Some(e) = source {
        if e.is::<tonic::transport::Error>() {
            let mut desc = e.to_string();
            let mut cause = e.source();
            while let Some(c) = cause {
                desc.push_str(": ");
                desc.push_str(&c.to_string());
                cause = c.source();
            }
            return Some(desc);
        }
        source = e.source();
    }
    None
}

/// Maps a gRPC status to the contract's typed error; Omni keeps each error's gRPC code through its validation
/// wrapper, so the code decides.
pub fn rpc_error(what: &str, status: &Status) -> HostError {
    let (code, desc) = match transport_failure(status) {
        Some(cause) => (Code::Unavailable, cause),
        None => (status.code(), status.message().to_string()),
    };
    let message = format!("{what}: rpc error: code = {} desc = {desc}", go_code(code));
    match code {
        // The account cannot use Omni until someone accepts the EULA: not a conflict to retry after a re-read.
        Code::FailedPrecondition if status.message().contains("EULA has not been accepted") => {
            HostError::Forbidden(message)
        }
        // A message over Omni's 32 MiB limit will not shrink by retrying.
        Code::ResourceExhausted => HostError::Invalid(message),
        Code::Unauthenticated => HostError::Unauthenticated(message),
        Code::PermissionDenied => HostError::Forbidden(message),
        Code::NotFound => HostError::NotFound(message),
        // Create of an existing resource, a stale version, pending finalizers.
        Code::AlreadyExists | Code::FailedPrecondition | Code::Aborted => {
            HostError::Conflict(message)
        }
        // Omni's validation failures and phase conflicts.
        Code::InvalidArgument | Code::OutOfRange => HostError::Invalid(message),
        // tonic's own deadline (the `grpc-timeout` the request carries) ends the call as Cancelled: the budget
        // ran out, which is a timeout like any other.
        Code::Cancelled if status.message() == "Timeout expired" => HostError::Timeout(message),
        Code::Unavailable | Code::Cancelled => HostError::Unavailable(message),
        Code::DeadlineExceeded => HostError::Timeout(message),
        _ => HostError::Other(message),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use prost::Message as _;

    #[test]
    fn statuses_map_to_typed_errors_with_gos_text() {
        let e = rpc_error(
            "list Omni clusters",
            &Status::unauthenticated("invalid signature"),
        );
        assert_eq!(
            e,
            HostError::Unauthenticated(
                "list Omni clusters: rpc error: code = Unauthenticated desc = invalid signature"
                    .into()
            )
        );
        assert!(matches!(
            rpc_error("x", &Status::permission_denied("no")),
            HostError::Forbidden(_)
        ));
        assert!(matches!(
            rpc_error("x", &Status::failed_precondition("update conflict")),
            HostError::Conflict(_)
        ));
        assert!(matches!(
            rpc_error("x", &Status::already_exists("exists")),
            HostError::Conflict(_)
        ));
        assert!(matches!(
            rpc_error("x", &Status::invalid_argument("failed to validate")),
            HostError::Invalid(_)
        ));
        assert!(matches!(
            rpc_error("x", &Status::unavailable("down")),
            HostError::Unavailable(_)
        ));
        assert!(matches!(
            rpc_error("x", &Status::deadline_exceeded("slow")),
            HostError::Timeout(_)
        ));
        assert!(matches!(
            rpc_error("x", &Status::not_found("gone")),
            HostError::NotFound(_)
        ));
        assert!(
            rpc_error("x", &Status::cancelled("c"))
                .to_string()
                .contains("code = Canceled")
        );
        assert!(matches!(
            rpc_error("x", &Status::cancelled("c")),
            HostError::Unavailable(_)
        ));
        assert!(
            matches!(
                rpc_error("x", &Status::cancelled("Timeout expired")),
                HostError::Timeout(_)
            ),
            "tonic's deadline"
        );
        let eula = Status::failed_precondition(
            "EULA has not been accepted; please accept the End User License Agreement before using Omni: https://omni/eula",
        );
        assert!(matches!(rpc_error("x", &eula), HostError::Forbidden(_)));
        assert!(matches!(
            rpc_error("x", &Status::resource_exhausted("too big")),
            HostError::Invalid(_)
        ));
    }

    #[test]
    fn compressed_patches_are_inflated_or_reported_unreadable() {
        let path = concat!(
            env!("CARGO_MANIFEST_DIR"),
            "/../../shared/data/omni/config.1.zdict"
        );
        let dictionary = Dictionary::new(std::fs::read(path).expect("dictionary")).expect("valid");
        let plain = "machine:\n    install:\n        disk: /dev/sda\n".repeat(80);
        let compressed = specs::ConfigPatchSpec {
            data: String::new(),
            compressed_data: dictionary.compress(plain.as_bytes()).expect("compress"),
        }
        .encode_to_vec();
        let mut bytes = compressed.clone();
        assert_eq!(
            inflate::<specs::ConfigPatchSpec>(&mut bytes, Some(&dictionary)),
            None
        );
        let spec = specs::ConfigPatchSpec::decode(bytes.as_slice()).expect("decodes");
        assert_eq!(spec.data, plain);
        assert!(spec.compressed_data.is_empty());

        let mut bytes = compressed.clone();
        let why = inflate::<specs::ConfigPatchSpec>(&mut bytes, None)
            .expect("unreadable without a dictionary");
        assert!(why.contains("no Omni dictionary"), "{why}");
        assert_eq!(bytes, compressed, "left as received");

        let mut plain_spec = specs::ConfigPatchSpec {
            data: "a: 1\n".into(),
            compressed_data: Vec::new(),
        }
        .encode_to_vec();
        let before = plain_spec.clone();
        assert_eq!(
            inflate::<specs::ConfigPatchSpec>(&mut plain_spec, None),
            None
        );
        assert_eq!(plain_spec, before);
    }
}
