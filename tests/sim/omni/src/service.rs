//! The gRPC services: `cosi.resource.State` and `management.ManagementService/Kubeconfig`, each call going
//! through faults → EULA → siderov1 signature → role, in the order of Omni's interceptors, then Omni's validated
//! state and the store. Every call is recorded.

use std::pin::Pin;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex, OnceLock};
use std::time::Duration;

use futures::Stream;
use omni_wire::compression::Dictionary;
use omni_wire::cosi::{self, Event, EventType, Resource, WatchResponse};
use omni_wire::management::{KubeconfigRequest, KubeconfigResponse};
use omni_wire::{phase, specs};
use prost::Message as _;
use tokio::sync::{mpsc, watch};
use tonic::{Code, Request, Response, Status};

use crate::clock::SimClock;
use crate::faults::{FaultAction, Faults, UNAVAILABLE_MESSAGE};
use crate::keys::{Registry, Role};
use crate::query::{Filter, IdMatcher};
use crate::server::{ConnId, Connections};
use crate::spec_yaml::SpecYaml;
use crate::store::{Change, ChangeKind, Store, describe, md, tombstone};
use crate::types::*;
use crate::validate::{self, TalosVersion};
use crate::{RpcRecord, kubeconfig};

/// Settings fixed at start, plus runtime switches.
pub(crate) struct Config {
    pub account_name: String,
    pub kubernetes_proxy_url: String,
    /// The proxy's CA (PEM), for `certificate-authority-data`.
    pub kubernetes_proxy_ca: Option<String>,
    pub eula_accepted: AtomicBool,
    pub talos_versions: Vec<TalosVersion>,
    pub controller_delay: Duration,
    pub cluster_health: AtomicBool,
    pub teardown_unimplemented: AtomicBool,
    pub record_only_auth: AtomicBool,
    pub dictionary: Option<Dictionary>,
    pub endpoint: String,
}

/// State shared by the services, the controllers and the `OmniSim` handle.
pub(crate) struct Shared {
    pub store: Arc<Store>,
    pub registry: Registry,
    /// Signatures already checked this second. Omni checks every request's; so does this simulator, but a
    /// client sends one signature with dozens of calls a second, and its cryptography is the same every time.
    pub verified: omni_wire::signature::VerifiedSignatures,
    pub clock: SimClock,
    pub faults: Faults,
    pub records: Mutex<Vec<RpcRecord>>,
    pub conns: Arc<Connections>,
    pub config: Config,
    pub jwt: OnceLock<Result<kubeconfig::JwtKey, String>>,
    pub shutdown: watch::Receiver<bool>,
    pub spec_yaml: SpecYaml,
}

/// One call in progress: what gets recorded.
struct Call {
    method: &'static str,
    metadata: Vec<(String, String)>,
    request: String,
    conn: u64,
    ty: Option<String>,
    identity: Option<String>,
}

/// What passing the gates gave the handler.
struct Admitted {
    actions: Vec<FaultAction>,
    role: Role,
}

fn metadata_of<T>(req: &Request<T>) -> Vec<(String, String)> {
    req.metadata()
        .iter()
        .filter_map(|kv| match kv {
            tonic::metadata::KeyAndValueRef::Ascii(k, v) => Some((
                k.as_str().to_string(),
                v.to_str().unwrap_or_default().to_string(),
            )),
            tonic::metadata::KeyAndValueRef::Binary(_, _) => None,
        })
        .collect()
}

/// cosi's decoding of a Resource from the wire; failures are plain errors, so `Unknown`.
fn parse_input(r: Option<Resource>) -> Result<Resource, Status> {
    let r = r.ok_or_else(|| Status::unknown("metadata is missing"))?;
    let m = r
        .metadata
        .as_ref()
        .ok_or_else(|| Status::unknown("metadata is missing"))?;
    if r.spec.is_none() {
        return Err(Status::unknown("spec is missing"));
    }
    if m.version != omni_wire::VERSION_UNDEFINED && m.version.parse::<u64>().is_err() {
        return Err(Status::unknown(format!(
            "error parsing version: strconv.ParseUint: parsing {:?}: invalid syntax",
            m.version
        )));
    }
    if m.phase != phase::RUNNING && m.phase != phase::TEARING_DOWN {
        return Err(Status::unknown(format!("unknown phase: {:?}", m.phase)));
    }
    Ok(r)
}

impl Shared {
    /// Fills `yaml_spec` as Omni does on every resource it returns: its rendering of the stored spec.
    pub(crate) fn output(&self, mut r: Resource) -> Resource {
        let ty = md(&r).r#type.clone();
        if let Some(spec) = r.spec.as_mut() {
            spec.yaml_spec =
                self.spec_yaml
                    .render(&ty, &spec.proto_spec, self.config.dictionary.as_ref());
        }
        r
    }

    fn enter<T: std::fmt::Debug>(
        &self,
        method: &'static str,
        req: &Request<T>,
        ty: Option<&str>,
    ) -> Call {
        Call {
            method,
            metadata: metadata_of(req),
            request: format!("{:?}", req.get_ref()),
            conn: req.extensions().get::<ConnId>().map(|c| c.0).unwrap_or(0),
            ty: ty.map(String::from),
            identity: None,
        }
    }

    fn leave<T>(&self, call: Call, res: Result<T, Status>) -> Result<T, Status> {
        let (code, message) = match &res {
            Ok(_) => (Code::Ok, String::new()),
            Err(s) => (s.code(), s.message().to_string()),
        };
        tracing::debug!(method = call.method, ?code, %message, connection = call.conn, "rpc");
        self.records
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .push(RpcRecord {
                method: call.method.to_string(),
                metadata: call.metadata,
                request: call.request,
                code,
                message,
                identity: call.identity,
                connection: call.conn,
            });
        res
    }

    /// Faults, EULA, signature and role, in Omni's interceptor order.
    async fn admit(&self, call: &mut Call, need: Role) -> Result<Admitted, Status> {
        if self.faults.is_unavailable() {
            return Err(Status::unavailable(UNAVAILABLE_MESSAGE));
        }
        let actions = self.faults.take(call.method, call.ty.as_deref());
        for a in &actions {
            match a {
                FaultAction::Latency(d) => tokio::time::sleep(*d).await,
                FaultAction::Error { code, message } => {
                    return Err(Status::new(*code, message.clone()));
                }
                FaultAction::CloseConnection => {
                    self.conns.close(call.conn);
                    return Err(Status::unavailable(
                        "omni-sim: connection closed (fault injected)",
                    ));
                }
                _ => {}
            }
        }
        if !self.config.eula_accepted.load(Ordering::SeqCst) {
            return Err(Status::failed_precondition(format!(
                "EULA has not been accepted; please accept the End User License Agreement before using Omni: {}/eula",
                self.config.endpoint.replacen("grpc://", "http://", 1)
            )));
        }
        let role = match self.authenticate(call) {
            Ok((identity, role)) => {
                call.identity = Some(identity);
                role
            }
            Err(detail) if self.config.record_only_auth.load(Ordering::SeqCst) => {
                tracing::warn!(method = call.method, %detail, "invalid signature accepted (record-only mode)");
                let header = omni_wire::signature::parse_header(&call.metadata).ok();
                let known = header.as_ref().and_then(|(_, fp, _)| self.registry.get(fp));
                call.identity = known
                    .as_ref()
                    .map(|k| k.identity.clone())
                    .or_else(|| header.map(|(name, _, _)| crate::keys::identity_of(&name)));
                known.map(|k| k.role).unwrap_or(Role::Admin)
            }
            Err(detail) => {
                tracing::debug!(method = call.method, %detail, "signature refused");
                return Err(Status::unauthenticated("invalid signature"));
            }
        };
        if let Some(ty) = &call.ty
            && !ty.ends_with(".omni.sidero.dev")
        {
            return Err(Status::permission_denied("no access is permitted"));
        }
        let need = if call.ty.as_deref().is_some_and(|t| ADMIN_ONLY.contains(&t)) {
            Role::Admin
        } else {
            need
        };
        if role < need {
            return Err(Status::permission_denied(format!(
                "unauthorized: access denied: insufficient role: {:?}",
                role.as_str()
            )));
        }
        Ok(Admitted { actions, role })
    }

    /// Omni's signature check: a known, unexpired key, the timestamp skew, the payload and the OpenPGP signature.
    /// The error is the detail for the log; clients only see "invalid signature".
    fn authenticate(&self, call: &Call) -> Result<(String, Role), String> {
        let (_, fingerprint, _) =
            omni_wire::signature::parse_header(&call.metadata).map_err(|e| e.to_string())?;
        let key = self
            .registry
            .get(&fingerprint)
            .ok_or_else(|| format!("unknown key fingerprint {fingerprint}"))?;
        let now = self.clock.unix();
        if key.expiration < now {
            return Err(format!("key {fingerprint} expired at {}", key.expiration));
        }
        if !key.confirmed {
            return Err(format!("key {fingerprint} is not confirmed"));
        }
        self.verified
            .verify(&key.public_key, call.method, &call.metadata, now)
            .map_err(|e| e.to_string())?;
        Ok((key.identity, key.role))
    }

    fn vctx(&self) -> validate::Ctx<'_> {
        validate::Ctx {
            store: &self.store,
            talos_versions: &self.config.talos_versions,
            dictionary: self.config.dictionary.as_ref(),
        }
    }

    /// Stores large ConfigPatch / KubernetesManifestGroup content compressed, as Go clients write it.
    fn compress(&self, r: &mut Resource) {
        let Some(dict) = &self.config.dictionary else {
            return;
        };
        let ty = md(r).r#type.clone();
        let Some(spec) = r.spec.as_mut() else { return };
        match ty.as_str() {
            CONFIG_PATCHES => {
                if let Ok(mut s) = specs::ConfigPatchSpec::decode(spec.proto_spec.as_slice())
                    && s.compressed_data.is_empty()
                    && s.data.len() >= omni_wire::compression::THRESHOLD_BYTES
                    && let Ok(c) = dict.compress(s.data.as_bytes())
                {
                    s.compressed_data = c;
                    s.data.clear();
                    spec.proto_spec = s.encode_to_vec();
                }
            }
            KUBERNETES_MANIFEST_GROUPS => {
                if let Ok(mut s) =
                    specs::KubernetesManifestGroupSpec::decode(spec.proto_spec.as_slice())
                    && s.compressed_data.is_empty()
                    && s.data.len() >= omni_wire::compression::THRESHOLD_BYTES
                    && let Ok(c) = dict.compress(s.data.as_bytes())
                {
                    s.compressed_data = c;
                    s.data.clear();
                    spec.proto_spec = s.encode_to_vec();
                }
            }
            _ => {}
        }
    }

    /// What a client's destroy takes with it. A Link going removes its machine: the
    /// controllers do that when they see the Link tearing down, but a client may destroy it before they look
    /// (Destroy right after a Teardown that found no finalizers, or TeardownAndDestroy, which never leaves it
    /// tearing down), and the machine must not outlive its Link depending on who was faster.
    fn destroyed(&self, ns: &str, ty: &str, id: &str) {
        if ty == LINKS {
            self.store.force_destroy(ns, MACHINE_STATUSES, id);
        }
    }

    fn destroy_checks(&self, ns: &str, ty: &str, id: &str) -> Result<(), Status> {
        if let Some(stored) = self.store.get(ns, ty, id) {
            let mut errs = Vec::new();
            validate::validate_destroy(&self.vctx(), &stored, &mut errs);
            validate::to_status(errs)?;
        }
        Ok(())
    }
}

/// The `cosi.resource.State` service.
#[derive(Clone)]
pub(crate) struct StateService(pub Arc<Shared>);

/// The `management.ManagementService` service.
#[derive(Clone)]
pub(crate) struct ManagementService(pub Arc<Shared>);

type BoxStream<T> = Pin<Box<dyn Stream<Item = Result<T, Status>> + Send>>;

const GET: &str = "/cosi.resource.State/Get";
const LIST: &str = "/cosi.resource.State/List";
const CREATE: &str = "/cosi.resource.State/Create";
const UPDATE: &str = "/cosi.resource.State/Update";
const DESTROY: &str = "/cosi.resource.State/Destroy";
const WATCH: &str = "/cosi.resource.State/Watch";
const TEARDOWN: &str = "/cosi.resource.State/Teardown";
const TEARDOWN_AND_DESTROY: &str = "/cosi.resource.State/TeardownAndDestroy";
const KUBECONFIG: &str = "/management.ManagementService/Kubeconfig";

fn res_type(r: &Option<Resource>) -> Option<&str> {
    r.as_ref()
        .and_then(|r| r.metadata.as_ref())
        .map(|m| m.r#type.as_str())
}

#[tonic::async_trait]
impl cosi::state_server::State for StateService {
    async fn get(
        &self,
        request: Request<cosi::GetRequest>,
    ) -> Result<Response<cosi::GetResponse>, Status> {
        let s = &self.0;
        let mut call = s.enter(GET, &request, Some(&request.get_ref().r#type));
        let res = async {
            s.admit(&mut call, Role::Reader).await?;
            let r = request.into_inner();
            let found = s.store.get(&r.namespace, &r.r#type, &r.id).ok_or_else(|| {
                Status::not_found(format!(
                    "{} doesn't exist",
                    describe(&r.r#type, &r.namespace, &r.id, omni_wire::VERSION_UNDEFINED)
                ))
            })?;
            Ok(Response::new(cosi::GetResponse {
                resource: Some(s.output(found)),
            }))
        }
        .await;
        s.leave(call, res)
    }

    type ListStream = BoxStream<cosi::ListResponse>;

    async fn list(
        &self,
        request: Request<cosi::ListRequest>,
    ) -> Result<Response<Self::ListStream>, Status> {
        let s = &self.0;
        let mut call = s.enter(LIST, &request, Some(&request.get_ref().r#type));
        let res = async {
            let admitted = s.admit(&mut call, Role::Reader).await?;
            let r = request.into_inner();
            let opts = r.options.unwrap_or_default();
            let filter = Filter {
                labels: opts.label_query,
                id: IdMatcher::new(opts.id_query.as_ref()).map_err(Status::unknown)?,
            };
            let mut items: Vec<Result<cosi::ListResponse, Status>> = s
                .store
                .list_labeled_matching(&r.namespace, &r.r#type, filter.required_label(), |x| {
                    filter.matches(x)
                })
                .into_iter()
                .map(|x| {
                    Ok(cosi::ListResponse {
                        resource: Some(s.output(x)),
                    })
                })
                .collect();
            for a in &admitted.actions {
                if let FaultAction::BreakListAfter(n) = a {
                    items.truncate(*n);
                    items.push(Err(Status::unavailable(
                        "omni-sim: stream broken (fault injected)",
                    )));
                }
            }
            Ok(Response::new(
                Box::pin(tokio_stream::iter(items)) as Self::ListStream
            ))
        }
        .await;
        s.leave(call, res)
    }

    async fn create(
        &self,
        request: Request<cosi::CreateRequest>,
    ) -> Result<Response<cosi::CreateResponse>, Status> {
        let s = &self.0;
        let ty = res_type(&request.get_ref().resource).map(String::from);
        let mut call = s.enter(CREATE, &request, ty.as_deref());
        let res = async {
            s.admit(&mut call, Role::Operator).await?;
            let req = request.into_inner();
            let owner = req.options.map(|o| o.owner).unwrap_or_default();
            let mut r = parse_input(req.resource)?;
            let mut errs = Vec::new();
            validate::metadata_limits(md(&r), None, &mut errs);
            validate::validate_write(&s.vctx(), &r, None, &mut errs);
            validate::to_status(errs)?;
            s.compress(&mut r);
            let stored = s.store.create_as(r, &owner)?;
            Ok(Response::new(cosi::CreateResponse {
                resource: Some(s.output(stored)),
            }))
        }
        .await;
        s.leave(call, res)
    }

    async fn update(
        &self,
        request: Request<cosi::UpdateRequest>,
    ) -> Result<Response<cosi::UpdateResponse>, Status> {
        let s = &self.0;
        let ty = res_type(&request.get_ref().new_resource).map(String::from);
        let mut call = s.enter(UPDATE, &request, ty.as_deref());
        let res = async {
            s.admit(&mut call, Role::Operator).await?;
            let req = request.into_inner();
            let opts = req.options.unwrap_or_default();
            let mut r = parse_input(req.new_resource)?;
            let m = md(&r).clone();
            if let Some(stored) = s.store.get(&m.namespace, &m.r#type, &m.id) {
                let mut errs = Vec::new();
                validate::metadata_limits(&m, Some(md(&stored)), &mut errs);
                if m.phase == phase::TEARING_DOWN {
                    validate::validate_destroy(&s.vctx(), &stored, &mut errs);
                } else {
                    validate::validate_write(&s.vctx(), &r, Some(&stored), &mut errs);
                }
                validate::to_status(errs)?;
            }
            s.compress(&mut r);
            let stored = s
                .store
                .update_as(r, &opts.owner, opts.expected_phase.as_deref())?;
            Ok(Response::new(cosi::UpdateResponse {
                resource: Some(s.output(stored)),
            }))
        }
        .await;
        s.leave(call, res)
    }

    async fn destroy(
        &self,
        request: Request<cosi::DestroyRequest>,
    ) -> Result<Response<cosi::DestroyResponse>, Status> {
        let s = &self.0;
        let mut call = s.enter(DESTROY, &request, Some(&request.get_ref().r#type));
        let res = async {
            s.admit(&mut call, Role::Operator).await?;
            let r = request.into_inner();
            let owner = r.options.map(|o| o.owner).unwrap_or_default();
            s.destroy_checks(&r.namespace, &r.r#type, &r.id)?;
            s.store
                .destroy_as(&r.namespace, &r.r#type, &r.id, Some(&owner))?;
            s.destroyed(&r.namespace, &r.r#type, &r.id);
            Ok(Response::new(cosi::DestroyResponse {}))
        }
        .await;
        s.leave(call, res)
    }

    type WatchStream = BoxStream<WatchResponse>;

    async fn watch(
        &self,
        request: Request<cosi::WatchRequest>,
    ) -> Result<Response<Self::WatchStream>, Status> {
        let s = &self.0;
        let mut call = s.enter(WATCH, &request, Some(&request.get_ref().r#type));
        let res = async {
            let admitted = s.admit(&mut call, Role::Reader).await?;
            let r = request.into_inner();
            start_watch(s.clone(), r, admitted.actions)
        }
        .await;
        s.leave(call, res)
    }

    async fn teardown(
        &self,
        request: Request<cosi::TeardownRequest>,
    ) -> Result<Response<cosi::TeardownResponse>, Status> {
        let s = &self.0;
        let mut call = s.enter(TEARDOWN, &request, Some(&request.get_ref().r#type));
        let res = async {
            if s.config.teardown_unimplemented.load(Ordering::SeqCst) {
                return Err(Status::unimplemented(
                    "unknown method Teardown for service cosi.resource.State",
                ));
            }
            s.admit(&mut call, Role::Operator).await?;
            let r = request.into_inner();
            let owner = r.options.map(|o| o.owner).unwrap_or_default();
            s.destroy_checks(&r.namespace, &r.r#type, &r.id)?;
            let ready = s
                .store
                .teardown_as(&r.namespace, &r.r#type, &r.id, Some(&owner))?;
            Ok(Response::new(cosi::TeardownResponse {
                destroy_ready: ready,
            }))
        }
        .await;
        s.leave(call, res)
    }

    async fn teardown_and_destroy(
        &self,
        request: Request<cosi::TeardownAndDestroyRequest>,
    ) -> Result<Response<cosi::TeardownAndDestroyResponse>, Status> {
        let s = &self.0;
        let mut call = s.enter(
            TEARDOWN_AND_DESTROY,
            &request,
            Some(&request.get_ref().r#type),
        );
        let res = async {
            if s.config.teardown_unimplemented.load(Ordering::SeqCst) {
                return Err(Status::unimplemented(
                    "unknown method TeardownAndDestroy for service cosi.resource.State",
                ));
            }
            s.admit(&mut call, Role::Operator).await?;
            let r = request.into_inner();
            let owner = r.options.map(|o| o.owner).unwrap_or_default();
            s.destroy_checks(&r.namespace, &r.r#type, &r.id)?;
            let mut changes = s.store.changes();
            s.store
                .teardown_as(&r.namespace, &r.r#type, &r.id, Some(&owner))?;
            // Blocks until the finalizers are gone (or something else destroyed it), as the server does.
            loop {
                match s.store.get(&r.namespace, &r.r#type, &r.id) {
                    None => break,
                    Some(x) if md(&x).finalizers.is_empty() => {
                        match s
                            .store
                            .destroy_as(&r.namespace, &r.r#type, &r.id, Some(&owner))
                        {
                            Ok(()) => {
                                s.destroyed(&r.namespace, &r.r#type, &r.id);
                                break;
                            }
                            Err(crate::store::StateError::NotFound(_)) => break,
                            Err(crate::store::StateError::PendingFinalizers(_)) => {}
                            Err(e) => return Err(e.into()),
                        }
                    }
                    Some(_) => {}
                }
                if changes.changed().await.is_err() {
                    return Err(Status::unavailable("omni-sim: shutting down"));
                }
            }
            Ok(Response::new(cosi::TeardownAndDestroyResponse {}))
        }
        .await;
        s.leave(call, res)
    }
}

fn event(
    s: &Shared,
    kind: EventType,
    resource: Resource,
    old: Option<Resource>,
    bookmark: Option<Vec<u8>>,
) -> WatchResponse {
    WatchResponse {
        event: vec![Event {
            resource: Some(s.output(resource)),
            event_type: kind as i32,
            old: old.map(|o| s.output(o)),
            error: None,
            bookmark,
        }],
    }
}

/// Translates a store change into what this watch sends (label-filter transitions included).
fn translate(
    s: &Shared,
    c: &Change,
    id: Option<&str>,
    filter: &Filter,
    bookmark: Vec<u8>,
) -> Option<WatchResponse> {
    if let Some(id) = id
        && md(&c.resource).id != id
    {
        return None;
    }
    let now = filter.matches(&c.resource);
    match c.kind {
        ChangeKind::Created => now.then(|| {
            event(
                s,
                EventType::Created,
                c.resource.clone(),
                None,
                Some(bookmark),
            )
        }),
        ChangeKind::Destroyed => now.then(|| {
            event(
                s,
                EventType::Destroyed,
                c.resource.clone(),
                None,
                Some(bookmark),
            )
        }),
        ChangeKind::Updated => {
            let before = c.old.as_ref().is_some_and(|o| filter.matches(o));
            match (before, now) {
                (true, true) => Some(event(
                    s,
                    EventType::Updated,
                    c.resource.clone(),
                    c.old.clone(),
                    Some(bookmark),
                )),
                (true, false) => Some(event(
                    s,
                    EventType::Destroyed,
                    c.resource.clone(),
                    None,
                    Some(bookmark),
                )),
                (false, true) => Some(event(
                    s,
                    EventType::Created,
                    c.resource.clone(),
                    None,
                    Some(bookmark),
                )),
                (false, false) => None,
            }
        }
    }
}

fn start_watch(
    s: Arc<Shared>,
    r: cosi::WatchRequest,
    actions: Vec<FaultAction>,
) -> Result<Response<BoxStream<WatchResponse>>, Status> {
    let opts = r.options.unwrap_or_default();
    let single = r.id.clone();
    if single.is_some() && (opts.bootstrap_contents || !opts.label_query.is_empty()) {
        return Err(Status::unimplemented(
            "bootstrap contents and label queries are not supported for single resource watch",
        ));
    }
    let filter = Filter {
        labels: opts.label_query.clone(),
        id: IdMatcher::new(opts.id_query.as_ref()).map_err(Status::unknown)?,
    };
    let sub = s
        .store
        .subscribe(&r.namespace, &r.r#type, opts.start_from_bookmark.as_deref())
        .map_err(|()| Status::failed_precondition("invalid watch bookmark"))?;
    let api1 = r.api_version >= 1;
    let no_bootstrapped = actions.contains(&FaultAction::NoBootstrapped);
    let break_after = actions.contains(&FaultAction::BreakWatchAfterBootstrap);
    let errored = actions.iter().find_map(|a| {
        if let FaultAction::ErroredEvent(m) = a {
            Some(m.clone())
        } else {
            None
        }
    });
    let (tx, rx) = mpsc::channel::<Result<WatchResponse, Status>>(256);
    let mut shutdown = s.shutdown.clone();
    tokio::spawn(async move {
        let store = s.store.clone();
        let mut rx_changes = sub.rx;
        let mut last_seq = sub.seq;
        let mut first: Vec<WatchResponse> = vec![WatchResponse::default()];
        if opts.start_from_bookmark.is_some() {
            for c in &sub.backlog {
                if let Some(e) = translate(&s, c, single.as_deref(), &filter, store.bookmark(c.seq))
                {
                    first.push(e);
                }
            }
        } else if opts.tail_events > 0 {
            for c in store
                .tail(&r.namespace, &r.r#type, opts.tail_events as usize)
                .iter()
                .filter(|c| c.seq <= sub.seq)
            {
                if let Some(e) = translate(&s, c, single.as_deref(), &filter, store.bookmark(c.seq))
                {
                    first.push(e);
                }
            }
        } else if let Some(id) = &single {
            match sub.snapshot.iter().find(|x| md(x).id == *id) {
                Some(x) => first.push(event(&s, EventType::Created, x.clone(), None, None)),
                None => first.push(event(
                    &s,
                    EventType::Destroyed,
                    tombstone(&r.namespace, &r.r#type, id),
                    None,
                    None,
                )),
            }
        } else if opts.bootstrap_contents {
            for x in sub.snapshot.iter().filter(|x| filter.matches(x)) {
                first.push(event(&s, EventType::Created, x.clone(), None, None));
            }
            if api1 && !no_bootstrapped {
                first.push(event(
                    &s,
                    EventType::Bootstrapped,
                    tombstone(&r.namespace, &r.r#type, ""),
                    None,
                    Some(store.bookmark(sub.seq)),
                ));
            }
        }
        for m in first {
            if tx.send(Ok(m)).await.is_err() {
                return;
            }
        }
        if break_after {
            let _ = tx
                .send(Err(Status::unavailable(
                    "omni-sim: watch stream broken (fault injected)",
                )))
                .await;
            return;
        }
        if let Some(msg) = errored {
            if api1 {
                let e = Event {
                    resource: None,
                    event_type: EventType::Errored as i32,
                    old: None,
                    error: Some(msg),
                    bookmark: None,
                };
                let _ = tx.send(Ok(WatchResponse { event: vec![e] })).await;
            }
            return;
        }
        loop {
            let change = tokio::select! {
                c = rx_changes.recv() => c,
                // The value, not a change: after a restart the flag is back to false and new streams must not
                // take the earlier flips for their own shutdown.
                _ = shutdown.wait_for(|stop| *stop) => return,
                _ = tx.closed() => return,
            };
            match change {
                Ok(c) => {
                    if c.seq <= last_seq
                        || md(&c.resource).namespace != r.namespace
                        || md(&c.resource).r#type != r.r#type
                    {
                        continue;
                    }
                    last_seq = c.seq;
                    if let Some(e) =
                        translate(&s, &c, single.as_deref(), &filter, store.bookmark(c.seq))
                        && tx.send(Ok(e)).await.is_err()
                    {
                        return;
                    }
                }
                Err(tokio::sync::broadcast::error::RecvError::Lagged(n)) => {
                    if api1 {
                        let e = Event {
                            resource: None,
                            event_type: EventType::Errored as i32,
                            old: None,
                            error: Some(format!("buffer overrun: {n} events lost")),
                            bookmark: None,
                        };
                        let _ = tx.send(Ok(WatchResponse { event: vec![e] })).await;
                    }
                    return;
                }
                Err(tokio::sync::broadcast::error::RecvError::Closed) => return,
            }
        }
    });
    Ok(Response::new(Box::pin(
        tokio_stream::wrappers::ReceiverStream::new(rx),
    )))
}

#[tonic::async_trait]
impl omni_wire::management::management_service_server::ManagementService for ManagementService {
    async fn kubeconfig(
        &self,
        request: Request<KubeconfigRequest>,
    ) -> Result<Response<KubeconfigResponse>, Status> {
        let s = &self.0;
        let mut call = s.enter(KUBECONFIG, &request, None);
        let res = async {
            let admitted = s.admit(&mut call, Role::Reader).await?;
            let md_list = call.metadata.clone();
            let req = request.into_inner();
            if req.break_glass {
                return Err(Status::unimplemented("omni-sim: break-glass kubeconfigs are not simulated"));
            }
            let header = |k: &str| md_list.iter().find(|(key, _)| key == k).map(|(_, v)| v.clone());
            let cluster = header("cluster").or_else(|| header("context")).unwrap_or_default();
            if !req.service_account {
                return Err(Status::unimplemented("omni-sim: only service-account kubeconfigs are simulated"));
            }
            if admitted.role < Role::Operator {
                return Err(Status::permission_denied(format!("unauthorized: access denied: insufficient role: {:?}", admitted.role.as_str())));
            }
            if cluster.is_empty() {
                return Err(Status::invalid_argument("cluster name is not in context"));
            }
            if req.service_account_user.is_empty() {
                return Err(Status::invalid_argument("service account user name is not set"));
            }
            let ttl = req.service_account_ttl.ok_or_else(|| Status::invalid_argument("service account ttl is not set"))?;
            if ttl.seconds < 0 || (ttl.seconds == 0 && ttl.nanos <= 0) {
                return Err(Status::invalid_argument("service account ttl is must be positive"));
            }
            let max = 10 * 365 * 24 * 3600;
            if ttl.seconds > max || (ttl.seconds == max && ttl.nanos > 0) {
                return Err(Status::invalid_argument("service account ttl is too long (max allowed: 87600h0m0s)"));
            }
            let uuid_res = s.store.get(NS, CLUSTER_UUIDS, &cluster).ok_or_else(|| {
                Status::unknown(format!("failed to get cluster UUID: {} doesn't exist", describe(CLUSTER_UUIDS, NS, &cluster, omni_wire::VERSION_UNDEFINED)))
            })?;
            let uuid = specs::ClusterUuid::decode(uuid_res.spec.as_ref().map(|x| x.proto_spec.as_slice()).unwrap_or(&[])).map(|u| u.uuid).unwrap_or_default();
            if admitted.actions.contains(&FaultAction::EmptyKubeconfig) {
                return Ok(Response::new(KubeconfigResponse { kubeconfig: Vec::new() }));
            }
            let key = s.jwt.get_or_init(|| kubeconfig::JwtKey::generate().map_err(|e| format!("{e:#}"))).as_ref().map_err(|e| Status::internal(e.clone()))?;
            let now = s.clock.unix();
            let claims = serde_json::json!({
                "iat": now,
                "exp": now + ttl.seconds,
                "iss": format!("omni-{}-service-account-issuer", s.config.account_name),
                "sub": req.service_account_user,
                "groups": if req.service_account_groups.is_empty() { serde_json::Value::Null } else { serde_json::json!(req.service_account_groups) },
                "cluster": cluster,
                "cluster_uuid": uuid,
            });
            let token = key.sign(&claims).map_err(|e| Status::internal(format!("signing the token: {e:#}")))?;
            let name = format!("{}-{}-{}", s.config.account_name, cluster, req.service_account_user);
            let yaml = kubeconfig::render(
                &name,
                &s.config.kubernetes_proxy_url,
                s.config.kubernetes_proxy_ca.as_deref(),
                &token,
            );
            Ok(Response::new(KubeconfigResponse { kubeconfig: yaml.into_bytes() }))
        }
        .await;
        s.leave(call, res)
    }
}
