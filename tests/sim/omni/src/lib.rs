//! `omni-sim`: an in-memory Omni API server for tests and local development.
//!
//! It serves `cosi.resource.State` (all eight RPCs) and `management.ManagementService/Kubeconfig` over
//! plaintext h2c or TLS, verifies siderov1 request signatures against registered service-account keys, and
//! runs Omni-like controllers (cluster status, UUIDs, teardown cascades) so an operator can be tested against
//! it end to end. README.md lists the Omni behaviours it reproduces and where it deviates from Omni.
//!
//! ```no_run
//! # async fn demo() -> anyhow::Result<()> {
//! let sim = omni_sim::OmniSim::start().await?;
//! let key = sim.mint_key("omni-operator", omni_sim::Role::Operator); // OMNI_SERVICE_ACCOUNT_KEY
//! println!("{} {}", sim.endpoint(), key);
//! # Ok(()) }
//! ```
#![cfg_attr(not(test), deny(clippy::unwrap_used, clippy::expect_used))]

pub mod clock;
mod controllers;
pub mod faults;
pub mod keys;
mod kubeconfig;
pub mod query;
mod server;
mod service;
mod spec_yaml;
pub mod store;
pub mod types;
pub mod validate;

use std::net::SocketAddr;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex, OnceLock};
use std::time::Duration;

use anyhow::{Context, Result};
use omni_wire::compression::Dictionary;
use omni_wire::cosi::Resource;
use tokio::sync::watch;
use tonic::codec::CompressionEncoding;

pub use clock::SimClock;
pub use faults::{FaultAction, Faults, Matcher};
pub use keys::{KeyOptions, Role};
pub use kubeconfig::{JwtVerifier, VerifiedToken};
pub use store::{Change, ChangeKind, StateError, Store};
pub use validate::TalosVersion;

/// The gRPC message size limit Omni uses both ways (32 MiB).
pub const MAX_MESSAGE_BYTES: usize = 32 * 1024 * 1024;

/// One RPC as the server saw it.
#[derive(Debug, Clone)]
pub struct RpcRecord {
    /// Full method path, e.g. `/cosi.resource.State/List`.
    pub method: String,
    /// ASCII request metadata in arrival order.
    pub metadata: Vec<(String, String)>,
    /// `Debug` rendering of the request message.
    pub request: String,
    /// `Ok` for success.
    pub code: tonic::Code,
    pub message: String,
    /// `<name>@serviceaccount.omni.sidero.dev` when the signature was accepted.
    pub identity: Option<String>,
    /// Id of the TCP/h2 connection the call arrived on, counting from 1.
    pub connection: u64,
}

/// Options for starting a simulator.
#[derive(Debug, Clone)]
pub struct Builder {
    listen: SocketAddr,
    tls: bool,
    clock: SimClock,
    account_name: String,
    kubernetes_proxy_url: Option<String>,
    kubernetes_proxy_ca: Option<String>,
    eula_accepted: bool,
    talos_versions: Vec<TalosVersion>,
    controller_delay: Duration,
    cluster_health: bool,
    teardown_unimplemented: bool,
    record_only_auth: bool,
    dictionary: Option<Dictionary>,
}

impl Default for Builder {
    fn default() -> Self {
        Builder {
            listen: SocketAddr::from(([127, 0, 0, 1], 0)),
            tls: false,
            clock: SimClock::new(),
            account_name: "omni-sim".into(),
            kubernetes_proxy_url: None,
            kubernetes_proxy_ca: None,
            eula_accepted: true,
            talos_versions: TalosVersion::defaults(),
            controller_delay: Duration::from_millis(50),
            cluster_health: true,
            teardown_unimplemented: false,
            record_only_auth: false,
            dictionary: None,
        }
    }
}

impl Builder {
    /// Address to listen on; port 0 (the default, on 127.0.0.1) picks a free port.
    pub fn listen(mut self, addr: SocketAddr) -> Self {
        self.listen = addr;
        self
    }
    /// TLS with a generated CA (see [`OmniSim::ca_pem`]) instead of plaintext h2c.
    pub fn tls(mut self, yes: bool) -> Self {
        self.tls = yes;
        self
    }
    pub fn clock(mut self, clock: SimClock) -> Self {
        self.clock = clock;
        self
    }
    /// The Omni account name (JWT issuer, kubeconfig names). Default `omni-sim`.
    pub fn account_name(mut self, name: &str) -> Self {
        self.account_name = name.into();
        self
    }
    /// The `server:` of minted kubeconfigs. Default `https://<account>.kubernetes.omni-sim.invalid`.
    pub fn kubernetes_proxy_url(mut self, url: &str) -> Self {
        self.kubernetes_proxy_url = Some(url.into());
        self
    }
    /// The CA (PEM) that signed the proxy's serving certificate, written into minted kubeconfigs as
    /// `certificate-authority-data`. Omni's own proxy serves a certificate clients already trust and its
    /// kubeconfigs carry no CA; a simulated proxy serves a self-signed one, so its kubeconfigs name the CA
    /// instead of turning verification off.
    pub fn kubernetes_proxy_ca(mut self, pem: &str) -> Self {
        self.kubernetes_proxy_ca = Some(pem.into());
        self
    }
    pub fn eula_accepted(mut self, yes: bool) -> Self {
        self.eula_accepted = yes;
        self
    }
    /// Known Talos versions with their compatible Kubernetes versions (default [`TalosVersion::defaults`]).
    pub fn talos_versions(mut self, versions: Vec<TalosVersion>) -> Self {
        self.talos_versions = versions;
        self
    }
    /// How long ClusterStatus / MachineSetStatus stay "scaling up" before turning ready. Default 50 ms.
    pub fn controller_delay(mut self, d: Duration) -> Self {
        self.controller_delay = d;
        self
    }
    /// Whether clusters and machine sets ever become ready. Default true.
    pub fn cluster_health(mut self, healthy: bool) -> Self {
        self.cluster_health = healthy;
        self
    }
    /// Teardown and TeardownAndDestroy answer `Unimplemented`, like Omni before those RPCs existed.
    pub fn teardown_unimplemented(mut self, yes: bool) -> Self {
        self.teardown_unimplemented = yes;
        self
    }
    /// Accept invalid signatures (logging them) instead of refusing them.
    pub fn record_only_auth(mut self, yes: bool) -> Self {
        self.record_only_auth = yes;
        self
    }
    /// Store ConfigPatch / KubernetesManifestGroup content of 2 KiB or more compressed with this dictionary,
    /// and decompress such content for validation.
    pub fn zstd_dictionary(mut self, d: Dictionary) -> Self {
        self.dictionary = Some(d);
        self
    }

    pub async fn start(self) -> Result<OmniSim> {
        let listener = tokio::net::TcpListener::bind(self.listen)
            .await
            .with_context(|| format!("binding {}", self.listen))?;
        let addr = listener.local_addr().context("reading the bound address")?;
        let endpoint = format!("{}://{addr}", if self.tls { "https" } else { "grpc" });
        let pki = if self.tls {
            Some(server::Pki::generate().context("generating the TLS certificate")?)
        } else {
            None
        };
        let (shutdown_tx, shutdown_rx) = watch::channel(false);
        let conns = Arc::new(server::Connections::default());
        let shared = Arc::new(service::Shared {
            store: Arc::new(Store::new(self.clock.clone())),
            registry: keys::Registry::default(),
            verified: Default::default(),
            clock: self.clock.clone(),
            faults: Faults::default(),
            records: Mutex::new(Vec::new()),
            conns,
            config: service::Config {
                kubernetes_proxy_url: self.kubernetes_proxy_url.unwrap_or_else(|| {
                    format!("https://{}.kubernetes.omni-sim.invalid", self.account_name)
                }),
                kubernetes_proxy_ca: self.kubernetes_proxy_ca,
                account_name: self.account_name,
                eula_accepted: AtomicBool::new(self.eula_accepted),
                talos_versions: self.talos_versions,
                controller_delay: self.controller_delay,
                cluster_health: AtomicBool::new(self.cluster_health),
                teardown_unimplemented: AtomicBool::new(self.teardown_unimplemented),
                record_only_auth: AtomicBool::new(self.record_only_auth),
                dictionary: self.dictionary,
                endpoint: endpoint.clone(),
            },
            jwt: OnceLock::new(),
            shutdown: shutdown_rx.clone(),
            spec_yaml: spec_yaml::SpecYaml::new().map_err(anyhow::Error::msg)?,
        });
        let ca_pem = pki.as_ref().map(|p| p.ca_pem.clone());
        let tls = pki.map(|p| p.config);
        let tasks = serve_tasks(&shared, listener, tls.clone(), shutdown_rx);
        tracing::info!(%endpoint, "omni-sim listening");
        Ok(OmniSim {
            shared,
            addr,
            endpoint,
            ca_pem,
            tls,
            shutdown: shutdown_tx,
            tasks,
        })
    }
}

/// The server and the controllers, serving `shared` on `listener` until `shutdown` turns true.
fn serve_tasks(
    shared: &Arc<service::Shared>,
    listener: tokio::net::TcpListener,
    tls: Option<Arc<rustls::ServerConfig>>,
    shutdown: watch::Receiver<bool>,
) -> Vec<tokio::task::JoinHandle<()>> {
    let state =
        omni_wire::cosi::state_server::StateServer::new(service::StateService(shared.clone()))
            .accept_compressed(CompressionEncoding::Gzip)
            .send_compressed(CompressionEncoding::Gzip)
            .max_decoding_message_size(MAX_MESSAGE_BYTES)
            .max_encoding_message_size(MAX_MESSAGE_BYTES);
    let management =
        omni_wire::management::management_service_server::ManagementServiceServer::new(
            service::ManagementService(shared.clone()),
        )
        .accept_compressed(CompressionEncoding::Gzip)
        .send_compressed(CompressionEncoding::Gzip)
        .max_decoding_message_size(MAX_MESSAGE_BYTES)
        .max_encoding_message_size(MAX_MESSAGE_BYTES);
    let routes = tonic::service::Routes::new(state)
        .add_service(management)
        .prepare();
    vec![
        tokio::spawn(server::serve(
            listener,
            routes,
            tls,
            shared.conns.clone(),
            shutdown,
        )),
        tokio::spawn(controllers::run(shared.clone())),
    ]
}

/// A running simulator. Dropping it stops the server (or call [`OmniSim::stop`]).
pub struct OmniSim {
    shared: Arc<service::Shared>,
    addr: SocketAddr,
    endpoint: String,
    ca_pem: Option<String>,
    /// Kept for a restart, which serves with the same certificate.
    tls: Option<Arc<rustls::ServerConfig>>,
    shutdown: watch::Sender<bool>,
    tasks: Vec<tokio::task::JoinHandle<()>>,
}

impl std::fmt::Debug for OmniSim {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("OmniSim")
            .field("endpoint", &self.endpoint)
            .finish_non_exhaustive()
    }
}

impl OmniSim {
    /// Plaintext h2c on 127.0.0.1 and a free port.
    pub async fn start() -> Result<OmniSim> {
        Builder::default().start().await
    }

    pub fn builder() -> Builder {
        Builder::default()
    }

    /// `grpc://127.0.0.1:PORT` (plaintext) or `https://127.0.0.1:PORT` (TLS).
    pub fn endpoint(&self) -> String {
        self.endpoint.clone()
    }

    pub fn addr(&self) -> SocketAddr {
        self.addr
    }

    /// Mints an Ed25519 service-account key valid for 365 days, registers it with `role`, and returns the
    /// base64 `OMNI_SERVICE_ACCOUNT_KEY` value.
    pub fn mint_key(&self, name: &str, role: Role) -> String {
        self.mint_key_with(KeyOptions::new(name, role))
    }

    /// [`OmniSim::try_mint_key_with`] for tests: panics on its error.
    pub fn mint_key_with(&self, o: KeyOptions) -> String {
        // Key generation only fails on an internal pgp error; there is nothing a test could do about it.
        self.try_mint_key_with(o)
            .unwrap_or_else(|e| panic!("omni-sim: {e:#}"))
    }

    /// Mints a key as `o` says and, unless `o.registered` is false, registers it; returns the base64
    /// `OMNI_SERVICE_ACCOUNT_KEY` value. Fails only on an internal pgp error.
    pub fn try_mint_key_with(&self, o: KeyOptions) -> Result<String> {
        let value = keys::mint(&o.name, o.lifetime).context("minting a key failed")?;
        if o.registered {
            let now = self.shared.clock.unix();
            let expiration = if o.expired {
                now - 60
            } else {
                now + o.lifetime.as_secs() as i64
            };
            let entry = keys::entry_for(&value, o.role, Some(expiration), o.confirmed)
                .context("a freshly minted key does not parse")?;
            self.shared.registry.insert(entry);
        }
        Ok(value)
    }

    /// Registers an existing key (e.g. `omni_wire::key::EXAMPLE_KEY_VALUE`) with its own expiration.
    pub fn register_key(&self, base64_key: &str, role: Role) -> Result<()> {
        let entry = keys::entry_for(base64_key, role, None, true)?;
        self.shared.registry.insert(entry);
        Ok(())
    }

    /// Changes the role of every key of the account `name`.
    pub fn set_role(&self, name: &str, role: Role) {
        self.shared.registry.set_role(name, role);
    }

    /// Unregisters every key of the account `name`.
    pub fn revoke(&self, name: &str) {
        self.shared.registry.revoke(name);
    }

    /// Registered keys (no key material).
    pub fn keys(&self) -> Vec<keys::RegisteredKey> {
        self.shared.registry.all()
    }

    pub fn clock(&self) -> &SimClock {
        &self.shared.clock
    }

    pub fn faults(&self) -> &Faults {
        &self.shared.faults
    }

    /// Every RPC so far, in arrival order.
    pub fn records(&self) -> Vec<RpcRecord> {
        self.shared
            .records
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .clone()
    }

    /// The RPCs recorded since the last drain (or the start), which are then forgotten: a long run reads the
    /// record as it goes without keeping every request in memory.
    pub fn drain_records(&self) -> Vec<RpcRecord> {
        std::mem::take(
            &mut *self
                .shared
                .records
                .lock()
                .unwrap_or_else(|p| p.into_inner()),
        )
    }

    pub fn clear_records(&self) {
        self.shared
            .records
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .clear();
    }

    /// How many connections the server has accepted.
    pub fn connections_accepted(&self) -> u64 {
        self.shared.conns.accepted()
    }

    /// Direct store access for fixtures and assertions (no auth, no validation).
    pub fn state(&self) -> &Store {
        &self.shared.store
    }

    /// The CA certificate clients should trust (TLS mode only).
    pub fn ca_pem(&self) -> Option<String> {
        self.ca_pem.clone()
    }

    /// The RSA key minted kubeconfig tokens are signed with (generated on the first Kubeconfig call).
    pub fn jwt_public_key(&self) -> Option<rsa::RsaPublicKey> {
        self.shared
            .jwt
            .get()
            .and_then(|k| k.as_ref().ok())
            .map(|k| k.public.clone())
    }

    /// Checks the tokens of minted kubeconfigs as Omni's Kubernetes proxy does: signature and `kid`, `exp`
    /// against [`OmniSim::clock`], and the `cluster_uuid` against the cluster's current ClusterUUID. A server
    /// standing in for the workload cluster (e.g. kube-sim behind `Builder::kubernetes_proxy_url`) can take
    /// it as its bearer-token authenticator; omni-sim itself depends on no Kubernetes server, so the glue is
    /// a closure on the caller's side:
    ///
    /// ```ignore
    /// let jwt = omni.jwt_verifier();
    /// workload.set_token_verifier(move |token: &str| match jwt.verify(token) {
    ///     Ok(t) => Some(kube_sim::UserInfo { name: t.user, groups: t.groups, ..Default::default() }),
    ///     Err(reason) => {
    ///         tracing::info!(%reason, "Omni kubeconfig token refused");
    ///         None // kube-sim answers 401, as Omni's proxy does
    ///     }
    /// });
    /// ```
    pub fn jwt_verifier(&self) -> JwtVerifier {
        JwtVerifier {
            shared: self.shared.clone(),
        }
    }

    pub fn set_eula_accepted(&self, yes: bool) {
        self.shared
            .config
            .eula_accepted
            .store(yes, Ordering::SeqCst);
    }

    /// Flips whether clusters and machine sets become ready (controllers re-run at once).
    pub fn set_cluster_health(&self, healthy: bool) {
        self.shared
            .config
            .cluster_health
            .store(healthy, Ordering::SeqCst);
        self.shared.store.poke();
    }

    pub fn set_teardown_unimplemented(&self, yes: bool) {
        self.shared
            .config
            .teardown_unimplemented
            .store(yes, Ordering::SeqCst);
    }

    pub fn set_record_only_auth(&self, yes: bool) {
        self.shared
            .config
            .record_only_auth
            .store(yes, Ordering::SeqCst);
    }

    /// A DestroyMachines fixture: `MachineStatuses/<uuid>` with the cluster and disconnected
    /// labels, and `Links/<uuid>` (owner-less, so clients can tear it down; that removes the MachineStatus).
    pub fn add_machine(&self, uuid: &str, cluster: Option<&str>, disconnected: bool) {
        let mut status = store::new_resource(types::NS, types::MACHINE_STATUSES, uuid, Vec::new());
        if let Some(m) = status.metadata.as_mut() {
            if let Some(c) = cluster {
                m.labels.insert(types::LABEL_CLUSTER.into(), c.into());
            }
            if disconnected {
                m.labels
                    .insert(types::LABEL_DISCONNECTED.into(), String::new());
            }
        }
        self.shared
            .store
            .force_destroy(types::NS, types::MACHINE_STATUSES, uuid);
        let _ = self
            .shared
            .store
            .create_as(status, "MachineStatusController");
        if self
            .shared
            .store
            .get(types::NS, types::LINKS, uuid)
            .is_none()
        {
            let _ = self.shared.store.create_as(
                store::new_resource(types::NS, types::LINKS, uuid, Vec::new()),
                "",
            );
        }
    }

    /// Waits until `pred` holds for the store (checked after every change), or `timeout` passes.
    pub async fn wait_for(
        &self,
        timeout: Duration,
        mut pred: impl FnMut(&Store) -> bool,
    ) -> Result<()> {
        let mut changes = self.shared.store.changes();
        let deadline = tokio::time::Instant::now() + timeout;
        loop {
            if pred(&self.shared.store) {
                return Ok(());
            }
            match tokio::time::timeout_at(deadline, changes.changed()).await {
                Ok(Ok(())) => {}
                Ok(Err(_)) => anyhow::bail!("the store is gone"),
                Err(_) => anyhow::bail!("condition not met within {timeout:?}"),
            }
        }
    }

    /// Stops listening, drops every connection and ends every watch.
    /// Restarts the server, as an Omni upgrade or a crashed pod would: every connection drops (calls in flight
    /// and open watches end with `Unavailable`), nothing answers for `down_for`, then it serves again on the same
    /// address. With `keep_state` the resources survive; without, they are gone as after a restore from an empty
    /// backup (service accounts, which Omni keeps apart from cluster resources, survive either way), and
    /// bookmarks from before are refused. Faults and the RPC record carry on.
    pub async fn restart(&mut self, keep_state: bool, down_for: Duration) -> Result<()> {
        let _ = self.shutdown.send(true);
        for t in self.tasks.drain(..) {
            t.abort();
            let _ = t.await;
        }
        if !keep_state {
            self.shared.store.wipe();
        }
        tokio::time::sleep(down_for).await;
        // The port was just closed; another process could take it meanwhile, which is reported, not retried
        // forever.
        let mut bound = None;
        for _ in 0..50 {
            match tokio::net::TcpListener::bind(self.addr).await {
                Ok(l) => {
                    bound = Some(l);
                    break;
                }
                Err(_) => tokio::time::sleep(Duration::from_millis(100)).await,
            }
        }
        let listener =
            bound.with_context(|| format!("binding {} again after the restart", self.addr))?;
        self.shutdown.send_replace(false);
        self.tasks = serve_tasks(
            &self.shared,
            listener,
            self.tls.clone(),
            self.shutdown.subscribe(),
        );
        tracing::info!(endpoint = %self.endpoint, keep_state, "omni-sim restarted");
        Ok(())
    }

    pub async fn stop(mut self) {
        let _ = self.shutdown.send(true);
        for t in self.tasks.drain(..) {
            t.abort();
            let _ = t.await;
        }
    }
}

impl Drop for OmniSim {
    fn drop(&mut self) {
        let _ = self.shutdown.send(true);
        for t in &self.tasks {
            t.abort();
        }
    }
}

/// Convenience for fixtures: a resource with the given spec message, phase running, version undefined.
pub fn resource<M: prost::Message>(ty: &str, id: &str, spec: &M) -> Resource {
    store::new_resource(types::NS, ty, id, spec.encode_to_vec())
}
