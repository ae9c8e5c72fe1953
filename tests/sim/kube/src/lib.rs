//! `kube-sim`: an in-memory Kubernetes API server for tests and local development.
//!
//! It speaks the real HTTP/JSON API closely enough that kubectl, kube-rs and Helm's Go SDK cannot tell it from
//! kube-apiserver for the operations they use: discovery and OpenAPI v3, CRUD with the real object semantics,
//! watches, server-side apply, CRDs with structural schemas, RBAC, admission webhooks and garbage collection.
//! Several independent servers can run in one process (a management cluster and workload clusters).
//!
//! ```no_run
//! # async fn demo() -> anyhow::Result<()> {
//! let sim = kube_sim::KubeSim::start().await?;
//! sim.apply_yaml("apiVersion: v1\nkind: ConfigMap\nmetadata: {name: demo, namespace: default}\ndata: {k: v}\n").await?;
//! let client = sim.client().await?; // a kube::Client with cluster-admin rights
//! # let _ = client; Ok(()) }
//! ```
#![cfg_attr(not(test), deny(clippy::unwrap_used, clippy::expect_used))]

pub mod admission;
pub mod api;
pub mod auth;
pub mod cluster;
pub mod defaults;
pub mod error;
pub mod events;
pub mod faults;
pub mod gc;
pub mod gofmt;
pub mod jsonpath;
pub mod kubeconfig;
pub mod managed_fields;
pub mod patch;
pub mod pods;
pub mod rbac;
pub mod request_log;
pub mod resources;
pub mod schema;
pub mod selectors;
pub mod server;
pub mod snapshot;
pub mod store;
pub mod strategies;
pub mod tls;
pub mod validation;
pub mod workloads;
pub mod yaml_body;

use std::net::SocketAddr;
use std::path::{Path, PathBuf};
use std::sync::Arc;

use anyhow::{Context, Result, anyhow};
use serde_json::Value;
use tokio::sync::watch;

pub use auth::{Anonymous, TokenVerifier};
pub use cluster::{Cluster, ClusterOptions};
pub use faults::{Faults, Matcher};
pub use kubeconfig::Credential;
pub use rbac::UserInfo;

use api::Api;
use auth::Authenticator;
use cluster::{PatchKind, WriteCtx};
use tls::Pki;

/// Options for starting a server.
#[derive(Debug, Clone)]
pub struct Builder {
    listen: SocketAddr,
    tls: bool,
    anonymous: Option<Anonymous>,
    state_file: Option<PathBuf>,
    options: ClusterOptions,
    workloads: Option<workloads::WorkloadOptions>,
}

impl Default for Builder {
    fn default() -> Self {
        Builder {
            listen: SocketAddr::from(([127, 0, 0, 1], 0)),
            tls: true,
            anonymous: None,
            state_file: None,
            options: ClusterOptions::default(),
            workloads: None,
        }
    }
}

impl Builder {
    /// Address to listen on; port 0 (the default) picks a free port.
    pub fn listen(mut self, addr: SocketAddr) -> Self {
        self.listen = addr;
        self
    }

    /// Plain HTTP instead of HTTPS. kubectl sends no credentials over plain HTTP, so unless `anonymous` says
    /// otherwise, anonymous requests act as a cluster admin in this mode.
    pub fn insecure_http(mut self, yes: bool) -> Self {
        self.tls = !yes;
        self
    }

    /// How requests without credentials are treated (default over HTTPS: `Anonymous::Reject`).
    pub fn anonymous(mut self, a: Anonymous) -> Self {
        self.anonymous = Some(a);
        self
    }

    /// Load objects from and save them to this file.
    pub fn state_file(mut self, path: impl Into<PathBuf>) -> Self {
        self.state_file = Some(path.into());
        self
    }

    /// Runs the workload controllers (see [`workloads`]): Pods for workloads, Nodes, readiness, Jobs that
    /// complete, Endpoints. Off by default, as a bare API server has no controllers.
    pub fn workloads(mut self, options: workloads::WorkloadOptions) -> Self {
        self.workloads = Some(options);
        self
    }

    /// Number of changes kept for watch resumes (older resumes get 410 Gone).
    pub fn history_limit(mut self, n: usize) -> Self {
        self.options.history_limit = n.max(1);
        self
    }

    pub async fn start(self) -> Result<KubeSim> {
        let snapshot = match &self.state_file {
            Some(p) => snapshot::load(p)?,
            None => None,
        };
        let pki = match &snapshot {
            Some(s) => Pki::from_ca(&s.ca_cert_pem, &s.ca_key_pem)?,
            None => Pki::generate()?,
        };
        let mut options = self.options.clone();
        options.root_ca_pem = pki.ca_cert_pem().to_string();
        let cluster = Cluster::new(options);
        if let Some(s) = snapshot {
            snapshot::restore(&cluster, s);
        }
        let anonymous = self.anonymous.clone().unwrap_or(if self.tls {
            Anonymous::Reject
        } else {
            Anonymous::As(admin_user())
        });
        let listener = tokio::net::TcpListener::bind(self.listen)
            .await
            .with_context(|| format!("binding {}", self.listen))?;
        let addr = listener.local_addr().context("reading the bound address")?;
        let api = Arc::new(Api {
            cluster: cluster.clone(),
            auth: Authenticator::new(anonymous),
            faults: Faults::default(),
            address: addr.to_string(),
            log: request_log::RequestLog::default(),
        });
        let admin_token = uuid::Uuid::new_v4().simple().to_string();
        api.auth.add_token(&admin_token, admin_user());
        let (shutdown, rx) = watch::channel(false);
        let tls_config = if self.tls {
            Some(Arc::new(pki.server_config()?))
        } else {
            None
        };
        let mut tasks = vec![
            tokio::spawn(server::serve(listener, api.clone(), tls_config, rx)),
            gc::spawn(&cluster),
        ];
        if let Some(w) = &self.workloads {
            tasks.push(workloads::spawn(&cluster, w.clone()));
        }
        if let Some(p) = &self.state_file {
            tasks.push(snapshot::spawn_writer(
                &cluster,
                p.clone(),
                pki.ca_cert_pem().into(),
                pki.ca_key_pem().into(),
            ));
        }
        Ok(KubeSim {
            api,
            pki,
            addr,
            tls: self.tls,
            admin_token,
            shutdown,
            tasks,
            state_file: self.state_file,
        })
    }
}

/// The built-in administrator (`system:masters`).
pub fn admin_user() -> UserInfo {
    UserInfo {
        name: "kube-sim-admin".into(),
        groups: vec!["system:masters".into()],
        ..Default::default()
    }
}

/// A user known to the server, with the credential a kubeconfig carries for it.
#[derive(Debug, Clone)]
pub struct User {
    pub name: String,
    pub groups: Vec<String>,
    pub credential: Credential,
}

/// A running server. Dropping it stops the listener and background tasks.
pub struct KubeSim {
    api: Arc<Api>,
    pki: Pki,
    addr: SocketAddr,
    tls: bool,
    admin_token: String,
    shutdown: watch::Sender<bool>,
    tasks: Vec<tokio::task::JoinHandle<()>>,
    state_file: Option<PathBuf>,
}

impl KubeSim {
    pub fn builder() -> Builder {
        Builder::default()
    }

    /// An HTTPS server on a free local port.
    pub async fn start() -> Result<KubeSim> {
        Builder::default().start().await
    }

    pub fn addr(&self) -> SocketAddr {
        self.addr
    }

    pub fn url(&self) -> String {
        format!(
            "{}://{}",
            if self.tls { "https" } else { "http" },
            self.addr
        )
    }

    pub fn ca_pem(&self) -> &str {
        self.pki.ca_cert_pem()
    }

    pub fn cluster(&self) -> &Arc<Cluster> {
        &self.api.cluster
    }

    pub fn faults(&self) -> &Faults {
        &self.api.faults
    }

    /// The requests answered so far, in order, with their users and statuses.
    pub fn requests(&self) -> Vec<request_log::RequestRecord> {
        self.api.log.records()
    }

    /// The requests answered after the one numbered `seq` (0: all kept), so a long run can follow the log
    /// without copying it whole each time.
    pub fn requests_since(&self, seq: u64) -> Vec<request_log::RequestRecord> {
        self.api.log.records_since(seq)
    }

    /// The cluster administrator, authenticating with a bearer token.
    pub fn admin(&self) -> User {
        let u = admin_user();
        User {
            name: u.name,
            groups: u.groups,
            credential: Credential::Token(self.admin_token.clone()),
        }
    }

    /// Registers a user reached with a bearer token.
    pub fn add_token_user(&self, name: &str, groups: &[&str]) -> User {
        let token = uuid::Uuid::new_v4().simple().to_string();
        let groups: Vec<String> = groups.iter().map(|g| g.to_string()).collect();
        self.api.auth.add_token(
            &token,
            UserInfo {
                name: name.into(),
                groups: groups.clone(),
                ..Default::default()
            },
        );
        User {
            name: name.into(),
            groups,
            credential: Credential::Token(token),
        }
    }

    /// Accepts bearer tokens this server did not issue: those that are not static tokens (`admin`,
    /// `add_token_user`, ...) go to `verifier`, and `None` from it is the real 401. With it a second server can
    /// play an Omni workload cluster behind Omni's Kubernetes proxy, taking the JWTs of omni-sim's kubeconfigs:
    ///
    /// ```no_run
    /// # async fn demo() -> anyhow::Result<()> {
    /// let workload = kube_sim::KubeSim::start().await?;
    /// workload.set_token_verifier(|token: &str| {
    ///     // With omni-sim: `jwt.verify(token).ok().map(|t| UserInfo { name: t.user, groups: t.groups, .. })`.
    ///     (token == "trusted").then(|| kube_sim::UserInfo::new("op", &["system:masters"]))
    /// });
    /// # Ok(()) }
    /// ```
    pub fn set_token_verifier(&self, verifier: impl TokenVerifier + 'static) {
        self.api.auth.set_token_verifier(Some(Arc::new(verifier)));
    }

    /// Back to static tokens only.
    pub fn clear_token_verifier(&self) {
        self.api.auth.set_token_verifier(None);
    }

    /// A user reached with a client certificate signed by the server's CA (CN = name, O = groups).
    pub fn add_cert_user(&self, name: &str, groups: &[&str]) -> Result<User> {
        let groups: Vec<String> = groups.iter().map(|g| g.to_string()).collect();
        let (cert_pem, key_pem) = self.pki.issue_client_cert(name, &groups)?;
        Ok(User {
            name: name.into(),
            groups,
            credential: Credential::ClientCertificate { cert_pem, key_pem },
        })
    }

    /// A service account's identity (`system:serviceaccount:<ns>:<name>`), reached with a token.
    pub fn add_service_account_user(&self, namespace: &str, name: &str) -> User {
        let full = format!("system:serviceaccount:{namespace}:{name}");
        let groups_owned = [
            "system:serviceaccounts".to_string(),
            format!("system:serviceaccounts:{namespace}"),
        ];
        let groups: Vec<&str> = groups_owned.iter().map(String::as_str).collect();
        self.add_token_user(&full, &groups)
    }

    pub fn set_anonymous(&self, a: Anonymous) {
        self.api.auth.set_anonymous(a);
    }

    pub fn kubeconfig(&self, user: &User) -> String {
        let ca = if self.tls {
            Some(self.pki.ca_cert_pem())
        } else {
            None
        };
        kubeconfig::render(&self.url(), ca, &user.name, &user.credential, "default")
    }

    /// Writes a kubeconfig atomically with mode 0600: it carries the user's credentials.
    pub fn write_kubeconfig(&self, path: &Path, user: &User) -> Result<()> {
        snapshot::write_private(path, self.kubeconfig(user).as_bytes())
            .context("writing the kubeconfig")
    }

    /// A kube-rs client acting as the administrator.
    pub async fn client(&self) -> Result<kube::Client> {
        self.client_for(&self.admin()).await
    }

    pub async fn client_for(&self, user: &User) -> Result<kube::Client> {
        let kc = kube::config::Kubeconfig::from_yaml(&self.kubeconfig(user))
            .context("parsing the generated kubeconfig")?;
        let cfg =
            kube::Config::from_custom_kubeconfig(kc, &kube::config::KubeConfigOptions::default())
                .await
                .context("building a client config")?;
        kube::Client::try_from(cfg).context("building a kube client")
    }

    /// A serving certificate signed by this server's CA, for test webhook servers (caBundle = `ca_pem()`).
    pub fn issue_server_cert(&self, hosts: &[&str]) -> Result<(String, String)> {
        self.pki
            .issue_server_cert(&hosts.iter().map(|h| h.to_string()).collect::<Vec<_>>())
    }

    /// Sends `clientConfig.service` webhooks for that Service to a local address.
    pub fn route_service(&self, namespace: &str, name: &str, addr: SocketAddr) {
        self.api
            .cluster
            .admission
            .route_service(namespace, name, addr);
    }

    /// Server-side applies every document of a (multi-document) YAML string as field manager `kube-sim`,
    /// returning the stored objects. Namespaced objects without a namespace go to `default`.
    pub async fn apply_yaml(&self, yaml: &str) -> Result<Vec<Value>> {
        let mut out = Vec::new();
        for doc in yaml_documents(yaml)? {
            out.push(self.apply(&doc).await?);
        }
        Ok(out)
    }

    /// Server-side applies one object (force) as field manager `kube-sim`.
    pub async fn apply(&self, obj: &Value) -> Result<Value> {
        let api_version = obj["apiVersion"]
            .as_str()
            .ok_or_else(|| anyhow!("object has no apiVersion"))?;
        let kind = obj["kind"]
            .as_str()
            .ok_or_else(|| anyhow!("object has no kind"))?;
        let name = obj["metadata"]["name"]
            .as_str()
            .ok_or_else(|| anyhow!("{kind} has no metadata.name"))?;
        let rt = self
            .cluster()
            .registry()
            .by_kind(api_version, kind)
            .ok_or_else(|| {
                anyhow!("no resource serves {api_version} {kind} (is its CRD applied?)")
            })?;
        let ns = if rt.namespaced {
            obj["metadata"]["namespace"].as_str().unwrap_or("default")
        } else {
            ""
        };
        let body = serde_json::to_vec(obj)?;
        let ctx = WriteCtx::system("kube-sim");
        let w = self
            .cluster()
            .patch(&rt, ns, name, "", PatchKind::Apply, &body, true, &ctx)
            .await
            .map_err(|e| anyhow!("applying {kind} {name}: {}", e.message))?;
        Ok(w.object)
    }

    /// Deletes one object as kubectl does (finalizers still hold it until they are removed); Ok(false) when it
    /// did not exist. Not subject to injected faults: the caller is the test, not a client under test.
    pub async fn delete(
        &self,
        api_version: &str,
        kind: &str,
        namespace: &str,
        name: &str,
    ) -> Result<bool> {
        let rt = self
            .cluster()
            .registry()
            .by_kind(api_version, kind)
            .ok_or_else(|| anyhow!("no resource serves {api_version} {kind}"))?;
        let ns = if rt.namespaced { namespace } else { "" };
        let ctx = WriteCtx::system("kube-sim");
        match self
            .cluster()
            .delete(&rt, ns, name, &cluster::DeleteOptions::default(), &ctx)
            .await
        {
            Ok(_) => Ok(true),
            Err(e) if e.code == 404 => Ok(false),
            Err(e) => Err(anyhow!("deleting {kind} {name}: {}", e.message)),
        }
    }

    /// Reads one object; None when it does not exist.
    pub fn get(&self, api_version: &str, kind: &str, namespace: &str, name: &str) -> Option<Value> {
        let rt = self.cluster().registry().by_kind(api_version, kind)?;
        self.cluster()
            .get(&rt, if rt.namespaced { namespace } else { "" }, name)
            .ok()
    }

    /// Lists objects of a kind, in one namespace or (with None) all.
    pub fn list(&self, api_version: &str, kind: &str, namespace: Option<&str>) -> Vec<Value> {
        let Some(rt) = self.cluster().registry().by_kind(api_version, kind) else {
            return Vec::new();
        };
        let items = self.cluster().store().list(&rt.storage_key(), namespace);
        items
            .iter()
            .map(|o| self.cluster().render(&rt, o))
            .collect()
    }

    pub fn resource_version(&self) -> u64 {
        self.cluster().store().current_rv()
    }

    /// Forgets watch history: resumes from older revisions get 410 Gone.
    pub fn compact(&self) {
        self.cluster().store().compact();
    }

    /// Stops serving (and writes the state file, if any).
    pub async fn stop(mut self) {
        let _ = self.shutdown.send(true);
        // Background tasks end before the final state write, so no periodic write races it.
        for t in self.tasks.iter().skip(1) {
            t.abort();
        }
        for t in self.tasks.drain(..) {
            let _ = t.await;
        }
        self.write_state();
    }

    fn write_state(&self) {
        if let Some(p) = &self.state_file
            && let Err(e) = snapshot::write(
                &self.api.cluster,
                p,
                self.pki.ca_cert_pem(),
                self.pki.ca_key_pem(),
            )
        {
            tracing::warn!(error = %format!("{e:#}"), "could not write the state file at shutdown");
        }
    }
}

impl Drop for KubeSim {
    fn drop(&mut self) {
        if !self.tasks.is_empty() {
            let _ = self.shutdown.send(true);
            for t in &self.tasks {
                t.abort();
            }
            // Unique temporary names keep this write from colliding with an aborted writer's.
            self.write_state();
        }
    }
}

/// Splits a multi-document YAML stream into objects, skipping empty documents; `List` kinds are expanded.
pub fn yaml_documents(yaml: &str) -> Result<Vec<Value>> {
    let mut out = Vec::new();
    for (i, doc) in yaml_serde::Deserializer::from_str(yaml).enumerate() {
        let v: Value = serde::Deserialize::deserialize(doc)
            .with_context(|| format!("parsing YAML document {}", i + 1))?;
        match v {
            Value::Null => {}
            Value::Object(ref m)
                if m.get("kind")
                    .and_then(Value::as_str)
                    .is_some_and(|k| k.ends_with("List"))
                    && m.contains_key("items") =>
            {
                out.extend(
                    m.get("items")
                        .and_then(Value::as_array)
                        .cloned()
                        .unwrap_or_default(),
                );
            }
            Value::Object(_) => out.push(v),
            other => return Err(anyhow!("YAML document {} is not an object: {other}", i + 1)),
        }
    }
    Ok(out)
}
