//! `omni`: Omni resources on the endpoint an OmniConnection in the reconciled object's namespace names. The
//! connection is resolved once per plugin call; clients (and their channels) are pooled across calls by
//! [`OmniConnections`](crate::omni::OmniConnections). Keys never leave the host: errors carry Secret names and
//! gRPC statuses, never values.

use std::collections::{BTreeMap, HashMap};
use std::sync::Arc;
use std::time::Duration;

use omni_wire::cosi;
use wasmtime::component::Resource;

use super::call::Management;
use super::call::budget::{self, within};
use super::call::reach::Reach;
use super::call::secret_types::string_map;
use super::{CallContext, Capability, HostError, HostFailure, KubeReader, NoKubeReader};
use crate::contract::bindings::omni::operator::omni as wit;
use crate::omni::client::{Key, ReadResource};
use crate::omni::{OmniClient, OmniConnections, SetupError};
use crate::secrets::{self as store, quoted};

type Answer<T> = Result<T, HostFailure>;

/// What `omni` serves with: the pooled clients by connection, the reader the OmniConnection objects and their key
/// Secrets are read through, and the management cluster (for `export-kubeconfig`'s Secret writes).
#[derive(Clone)]
pub struct Services {
    pub(crate) connections: Arc<OmniConnections>,
    pub(crate) reader: Arc<dyn KubeReader>,
    pub(crate) cluster: Management,
}

impl Default for Services {
    fn default() -> Self {
        Services {
            connections: Arc::default(),
            reader: Arc::new(NoKubeReader),
            cluster: Management::default(),
        }
    }
}

/// What `omni` keeps for one call: the clients it resolved, by connection name, so a connection and its Secret
/// are read once per call.
#[derive(Default)]
pub(crate) struct State {
    clients: HashMap<String, Arc<OmniClient>>,
}

super::capability_view!(
    /// The `omni` capability's view of a call.
    OmniCap,
    wit,
    omni
);

impl OmniCap<'_> {
    /// The client for `connection`, resolved at most once per plugin call.
    async fn omni_client(
        &mut self,
        ctx: &Resource<CallContext>,
        connection: &str,
    ) -> Answer<Result<Arc<OmniClient>, SetupError>> {
        if !self.core.grants.allows(Capability::Omni) {
            let denied = self.core.denied(
                Capability::Omni,
                &format!("omni connection {connection:?}"),
                "the plugin is not granted \"omni\"",
            );
            return Ok(Err(SetupError::Connection(denied)));
        }
        let budget = self.core.budget(ctx, budget::OMNI)?;
        if let Some(client) = self.state.clients.get(connection) {
            return Ok(Ok(client.clone()));
        }
        let call = self.core.table.get(ctx)?;
        let Some(namespace) = call.namespace().map(str::to_owned) else {
            return Ok(Err(SetupError::Connection(HostError::Invalid(
                "Omni connections are namespaced; this object is cluster-scoped".into(),
            ))));
        };
        let (connections, reader) = (
            self.services.connections.clone(),
            self.services.reader.clone(),
        );
        let resolving = connections.resolve(reader.as_ref(), &namespace, connection);
        let client = match tokio::time::timeout(budget, resolving).await {
            Err(_) => {
                return Ok(Err(SetupError::Connection(HostError::Timeout(format!(
                    "reading OmniConnection {connection:?} and its Secret did not answer within {} ms",
                    budget.as_millis()
                )))));
            }
            Ok(Err(e)) => return Ok(Err(e)),
            Ok(Ok(client)) => client,
        };
        self.state
            .clients
            .insert(connection.to_owned(), client.clone());
        Ok(Ok(client))
    }

    /// Resolves `connection` and runs `op` with the client and the call's budget.
    async fn with_omni<T, F, Fut>(
        &mut self,
        ctx: &Resource<CallContext>,
        connection: &str,
        op: F,
    ) -> Answer<T>
    where
        F: FnOnce(Arc<OmniClient>, Duration) -> Fut,
        Fut: Future<Output = Result<T, HostError>>,
    {
        let client = self
            .omni_client(ctx, connection)
            .await?
            .map_err(SetupError::into_host_error)?;
        let budget = self.core.budget(ctx, budget::OMNI)?;
        // Operations of several requests (cluster status, the teardown fallback) share one budget, so the plugin
        // always gets a `timeout` answer before its own call deadline.
        let what = format!("the call on Omni connection {connection:?}");
        Ok(within(&what, budget, op(client, budget)).await?)
    }
}

impl wit::Host for OmniCap<'_> {
    async fn ping(
        &mut self,
        ctx: Resource<CallContext>,
        connection: String,
    ) -> Answer<wit::EndpointInfo> {
        // The messages follow the Go operator's Ping: set-up problems as they are, the client's construction
        // as `create Omni client: …`, and everything from the first RPC on as `list Omni clusters: …`.
        let client = match self.omni_client(&ctx, &connection).await? {
            Ok(client) => client,
            Err(SetupError::Key(m)) => {
                return Err(HostError::Unauthenticated(format!("list Omni clusters: {m}")).into());
            }
            Err(e) => return Err(e.into_host_error().into()),
        };
        let budget = self.core.budget(&ctx, budget::OMNI)?;
        client.ping(budget).await?;
        Ok(wit::EndpointInfo {
            endpoint: client.endpoint().normalized.clone(),
        })
    }

    async fn get(
        &mut self,
        ctx: Resource<CallContext>,
        connection: String,
        key: wit::ResourceKey,
    ) -> Answer<Option<wit::Resource>> {
        let key = to_key(key);
        self.with_omni(&ctx, &connection, |client, budget| async move {
            Ok(client.get(&key, budget).await?.map(from_cosi))
        })
        .await
    }

    async fn list(
        &mut self,
        ctx: Resource<CallContext>,
        connection: String,
        namespace: String,
        type_: String,
        labels: Vec<wit::LabelTerm>,
    ) -> Answer<Vec<wit::Resource>> {
        let terms = labels.into_iter().map(to_term).collect();
        self.with_omni(&ctx, &connection, |client, budget| async move {
            let items = client.list(&namespace, &type_, terms, budget).await?;
            Ok(items.into_iter().map(from_cosi).collect())
        })
        .await
    }

    async fn create(
        &mut self,
        ctx: Resource<CallContext>,
        connection: String,
        resource: wit::Resource,
    ) -> Answer<wit::Resource> {
        // New resources carry version "undefined" (as Omni's Go client sends them), whatever the plugin put there.
        let resource = to_cosi(resource, Some(omni_wire::VERSION_UNDEFINED));
        self.with_omni(&ctx, &connection, |client, budget| async move {
            Ok(from_cosi(client.create(resource, budget).await?))
        })
        .await
    }

    async fn update(
        &mut self,
        ctx: Resource<CallContext>,
        connection: String,
        resource: wit::Resource,
    ) -> Answer<wit::Resource> {
        let resource = to_cosi(resource, None);
        self.with_omni(&ctx, &connection, |client, budget| async move {
            Ok(from_cosi(client.update(resource, budget).await?))
        })
        .await
    }

    async fn teardown(
        &mut self,
        ctx: Resource<CallContext>,
        connection: String,
        key: wit::ResourceKey,
    ) -> Answer<bool> {
        let key = to_key(key);
        self.with_omni(&ctx, &connection, |client, budget| async move {
            client.teardown(&key, budget).await
        })
        .await
    }

    async fn destroy(
        &mut self,
        ctx: Resource<CallContext>,
        connection: String,
        key: wit::ResourceKey,
    ) -> Answer<()> {
        let key = to_key(key);
        self.with_omni(&ctx, &connection, |client, budget| async move {
            client.destroy(&key, budget).await
        })
        .await
    }

    async fn cluster_status(
        &mut self,
        ctx: Resource<CallContext>,
        connection: String,
        cluster: String,
    ) -> Answer<Option<wit::ClusterHealth>> {
        self.with_omni(&ctx, &connection, |client, budget| async move {
            Ok(client
                .cluster_status(&cluster, budget)
                .await?
                .map(|h| wit::ClusterHealth {
                    phase: h.phase,
                    ready: h.ready,
                    healthy: h.healthy,
                    findings: h.findings,
                }))
        })
        .await
    }

    async fn export_kubeconfig(
        &mut self,
        ctx: Resource<CallContext>,
        connection: String,
        request: wit::KubeconfigExport,
    ) -> Answer<wit::Exported> {
        let name = request.target.name.clone();
        let what = format!(
            "export a kubeconfig of Omni cluster {:?} to Secret {name:?}",
            request.cluster
        );
        let needed = [
            Capability::Omni,
            Capability::Secrets,
            Capability::SecretsWrite,
        ];
        let namespace = request.target.namespace.clone();
        let scope = self.core.secret_scope(
            &ctx,
            &needed,
            Reach::Spec,
            (namespace, &name),
            &what,
            &self.services.cluster,
        )?;
        let labels = string_map(&request.labels, "labels")?;
        let mut annotations = string_map(&request.annotations, "annotations")?;
        let owner = self
            .core
            .own_label(&ctx, Capability::SecretsWrite, request.owner, &what)?;
        let target = quoted(&scope.namespace, &name);
        // Ownership is checked before Omni mints a token: a Secret someone else owns costs no credential. The
        // version read here is the precondition of the write below.
        let reading = store::get(&scope.management, "", &scope.namespace, &name);
        let existing = within(&what, scope.budget, reading).await?;
        if existing.as_ref().is_some_and(|s| !owner.marks(s)) {
            tracing::info!(plugin = %self.core.plugin, secret = %target, "left a Secret alone: it lacks the owner label");
            return Err(store::not_owned(&target, &owner).into());
        }
        let (cluster, user, groups) = (
            request.cluster.clone(),
            request.user.clone(),
            request.groups.clone(),
        );
        let ttl = Duration::from_nanos(request.ttl_ns);
        let mut bytes = self
            .with_omni(&ctx, &connection, |client, budget| async move {
                client
                    .kubeconfig(&cluster, &user, &groups, ttl, budget)
                    .await
            })
            .await?;
        store::check_generated(&bytes).map_err(HostError::Invalid)?;
        if let Some(ns) = &request.context_namespace {
            bytes = store::set_context_namespace(&bytes, ns).map_err(HostError::Invalid)?;
        }
        let digest = store::sha256_hex(&bytes);
        if let Some(key) = request.digest_annotation {
            annotations.insert(key, digest.clone());
        }
        let write = store::KubeconfigWrite {
            key: request.target.key,
            remove_key: request.remove_key,
            bytes,
            labels,
            annotations,
            owner,
        };
        let budget = self.core.budget(&ctx, budget::OMNI)?.min(scope.budget);
        let op =
            store::write_kubeconfig(&scope.management, &scope.namespace, &name, existing, write);
        within(&what, budget, op).await?;
        Ok(wit::Exported { digest })
    }
}

fn to_key(key: wit::ResourceKey) -> Key {
    Key {
        namespace: key.namespace,
        type_: key.type_,
        id: key.id,
    }
}

fn to_term(term: wit::LabelTerm) -> cosi::LabelTerm {
    use cosi::label_term::Operation;
    let op = match term.op {
        wit::LabelOp::Exists => Operation::Exists,
        wit::LabelOp::Equal => Operation::Equal,
        wit::LabelOp::In => Operation::In,
        wit::LabelOp::Lt => Operation::Lt,
        wit::LabelOp::Lte => Operation::Lte,
        wit::LabelOp::LtNumeric => Operation::LtNumeric,
        wit::LabelOp::LteNumeric => Operation::LteNumeric,
    };
    cosi::LabelTerm {
        key: term.key,
        op: op as i32,
        value: term.values,
        invert: term.invert,
    }
}

/// The wire form; `version` overrides the plugin's (creates). The spec submessage is always present, as Omni
/// rejects resources without one.
fn to_cosi(resource: wit::Resource, version: Option<&str>) -> cosi::Resource {
    let phase = match resource.phase {
        wit::Phase::Running => omni_wire::phase::RUNNING,
        wit::Phase::TearingDown => omni_wire::phase::TEARING_DOWN,
    };
    cosi::Resource {
        metadata: Some(cosi::Metadata {
            namespace: resource.key.namespace,
            r#type: resource.key.type_,
            id: resource.key.id,
            version: version.map_or(resource.version, str::to_owned),
            owner: resource.owner,
            phase: phase.into(),
            created: None,
            updated: None,
            finalizers: resource.finalizers,
            labels: resource.labels.into_iter().collect(),
            annotations: resource.annotations.into_iter().collect(),
        }),
        spec: Some(cosi::Spec {
            proto_spec: resource.spec,
            yaml_spec: String::new(),
        }),
    }
}

fn from_cosi(read: ReadResource) -> wit::Resource {
    let metadata = read.resource.metadata.unwrap_or_default();
    let sorted = |m: std::collections::HashMap<String, String>| -> Vec<(String, String)> {
        m.into_iter()
            .collect::<BTreeMap<_, _>>()
            .into_iter()
            .collect()
    };
    wit::Resource {
        key: wit::ResourceKey {
            namespace: metadata.namespace,
            type_: metadata.r#type,
            id: metadata.id,
        },
        version: metadata.version,
        owner: metadata.owner,
        phase: if metadata.phase == omni_wire::phase::TEARING_DOWN {
            wit::Phase::TearingDown
        } else {
            wit::Phase::Running
        },
        labels: sorted(metadata.labels),
        annotations: sorted(metadata.annotations),
        finalizers: metadata.finalizers,
        spec: read.resource.spec.map(|s| s.proto_spec).unwrap_or_default(),
        unreadable: read.unreadable,
    }
}

#[cfg(test)]
mod grant_checks {
    use serde_json::json;
    use wit::Host as _;

    use super::*;
    use crate::capabilities::call::testing::{FakeKinds, NS, TestCall, UID, management};
    use crate::contract::bindings::omni::operator::types::{OwnerLabel, SecretKeyRef};

    /// The spec names the export target `admin-kubeconfig`; the status names `stolen`.
    fn call(grants: &[&str]) -> TestCall {
        let object =
            json!({"spec": {"target": "admin-kubeconfig"}, "status": {"target": "stolen"}});
        TestCall::new(
            grants,
            object,
            &[("spec.target", None), ("status.target", None)],
        )
    }

    fn services() -> Services {
        Services {
            connections: Arc::default(),
            reader: Arc::new(FakeKinds),
            cluster: management(&[(NS, "admin-kubeconfig", "kubeconfig", "old")]),
        }
    }

    fn export(target: &str, owner: &str) -> wit::KubeconfigExport {
        wit::KubeconfigExport {
            cluster: "edge".into(),
            user: "u".into(),
            groups: vec!["system:masters".into()],
            ttl_ns: 1,
            target: SecretKeyRef {
                namespace: None,
                name: target.into(),
                key: "kubeconfig".into(),
            },
            remove_key: None,
            context_namespace: None,
            labels: "{}".into(),
            annotations: "{}".into(),
            owner: OwnerLabel {
                key: "omni.texashpc.com/owner".into(),
                value: owner.into(),
            },
            digest_annotation: None,
        }
    }

    #[tokio::test]
    async fn every_omni_call_needs_the_omni_grant() {
        let services = services();
        let mut ungranted = call(&[]);
        let ctx = ungranted.ctx();
        let answer = OmniCap::over(&mut ungranted.core, &mut State::default(), &services)
            .ping(ctx, "omni".into())
            .await;
        ungranted.assert_denied(
            answer,
            "omni",
            "omni connection \"omni\"",
            "not granted \"omni\"",
        );
        let mut granted = call(&["omni"]);
        let ctx = granted.ctx();
        let answer = OmniCap::over(&mut granted.core, &mut State::default(), &services)
            .ping(ctx, "omni".into())
            .await;
        granted.assert_allowed(&answer);
        assert!(
            matches!(&answer, Err(HostFailure::Host(HostError::NotFound(m))) if m.contains("OmniConnection \"omni\" not found")),
            "the connection was looked up: {answer:?}"
        );
    }

    #[tokio::test]
    async fn an_export_writes_only_a_secret_the_spec_names_with_secrets_write_and_the_objects_label()
     {
        let services = services();
        let ask = async |grants: &[&str], target: &str, owner: &str| {
            let mut call = call(grants);
            let ctx = call.ctx();
            let answer = OmniCap::over(&mut call.core, &mut State::default(), &services)
                .export_kubeconfig(ctx, "omni".into(), export(target, owner))
                .await;
            (call, answer)
        };
        let (call, answer) = ask(&["omni", "secrets"], "admin-kubeconfig", UID).await;
        call.assert_denied(
            answer,
            "secrets-write",
            "admin-kubeconfig",
            "not granted \"secrets-write\"",
        );
        let writer = ["omni", "secrets", "secrets-write"];
        let (call, answer) = ask(&writer, "kube-root", UID).await;
        call.assert_denied(
            answer,
            "omni",
            "kube-root",
            "is not named by the reconciled object's spec",
        );
        let (call, answer) = ask(&writer, "stolen", UID).await;
        call.assert_denied(
            answer,
            "omni",
            "stolen",
            "a name in the status reaches only the removal",
        );
        let (call, answer) = ask(&writer, "admin-kubeconfig", "uid-2").await;
        call.assert_denied(
            answer,
            "secrets-write",
            "admin-kubeconfig",
            "does not carry the reconciled object's UID",
        );
        let (call, answer) = ask(&writer, "admin-kubeconfig", UID).await;
        call.assert_allowed(&answer);
    }
}
