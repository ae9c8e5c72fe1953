//! `kube-write`: applies, creates, patches and deletes objects in the management cluster for a plugin, under a
//! field manager that names it. Every write is checked before it leaves the host, against the kind discovery
//! resolved (and, for the kinds no grant reaches, the plugin's spelling too): the kind granted exactly and not one
//! no grant reaches, the namespace the object's own or granted, owner references naming only the reconciled
//! object, Pods within Pod Security's baseline ([`pods`]), Secrets only with `secrets-write` and never a
//! service-account token, and the budgets: bytes per object, writes per call, writes per second per loaded plugin
//! (so per binding). A refused write writes nothing and is reported on the object (an Event and the
//! `CapabilityDenied` condition), as every refusal is.

mod ledger;
mod owners;
mod pods;

use std::sync::Arc;
use std::time::Duration;

use serde_json::Value;
use wasmtime::component::Resource;

use self::owners::Owner;
use super::call::budget::{self, within};
use super::{
    CallContext, Capability, DeleteRequest, GetRequest, HostError, HostFailure, KubeReader,
    KubeWriter, NoKubeReader, NoKubeWriter, Propagation, WriteOp, WriteRequest, never_writable,
    never_writable_object,
};
use crate::contract::bindings::omni::operator::kube_write as wit;
pub use ledger::WriteLedger;

/// The largest object (or patch) a plugin may write, as JSON: a ConfigMap's own limit, well under etcd's.
pub const MAX_WRITE_BYTES: usize = 1 << 20;
/// The most writes (of any sort, refused ones included) one call may ask for.
pub const WRITES_PER_CALL: usize = 100;
/// Writes per second per loaded plugin (per binding) once its burst is spent, and the burst.
pub const WRITES_PER_SECOND: u32 = 100;
pub const WRITE_BURST: u32 = 200;
/// The Secret type that carries a ServiceAccount's token: never written by a plugin.
const SERVICE_ACCOUNT_TOKEN: &str = "kubernetes.io/service-account-token";
/// Annotations that copy an object's whole content (values included): dropped from a Secret's answer as its data.
const VALUE_ANNOTATIONS: [&str; 1] = ["kubectl.kubernetes.io/last-applied-configuration"];
/// The API server's limit on a field manager's length.
const MAX_FIELD_MANAGER: usize = 128;

/// What `kube-write` serves with: discovery and the watch caches (to resolve the kind a write names, and to see
/// whether an apply would change anything), the writer, and the ledger every call of the plugin shares.
#[derive(Clone)]
pub struct Services {
    pub(crate) kinds: Arc<dyn KubeReader>,
    pub(crate) writer: Arc<dyn KubeWriter>,
    pub(crate) ledger: Arc<WriteLedger>,
}

impl Default for Services {
    /// No Kubernetes behind `kube-write`: every write that passes the checks answers `unavailable`.
    fn default() -> Self {
        Services {
            kinds: Arc::new(NoKubeReader),
            writer: Arc::new(NoKubeWriter),
            ledger: Arc::new(WriteLedger::new(WRITES_PER_SECOND, WRITE_BURST)),
        }
    }
}

/// What `kube-write` keeps for one call: the writes asked for so far.
#[derive(Debug, Default)]
pub(crate) struct State {
    writes: usize,
}

super::capability_view!(
    /// The `kube-write` capability's view of a call.
    KubeWriteCap,
    wit,
    kube_write
);

/// Where a checked write goes.
struct Target {
    api_version: String,
    group: String,
    kind: String,
    /// `None`: a cluster-scoped kind.
    namespace: Option<String>,
    name: String,
    budget: Duration,
}

impl Target {
    fn is_secret(&self) -> bool {
        super::is_secret(&self.group, &self.kind)
    }

    /// How the ledger names the object.
    fn key(&self) -> String {
        format!(
            "{}|{}|{}|{}",
            self.api_version,
            self.kind,
            self.namespace.as_deref().unwrap_or_default(),
            self.name
        )
    }

    fn get(&self) -> GetRequest {
        GetRequest {
            api_version: self.api_version.clone(),
            kind: self.kind.clone(),
            namespace: self.namespace.clone(),
            name: self.name.clone(),
        }
    }
}

/// The object as the host's watch cache holds it (the API server's copy when the kind has no cache), if it can be
/// had within the call's time.
async fn cached(kinds: Arc<dyn KubeReader>, target: &Target) -> Option<Value> {
    let read = kinds.get(target.get());
    tokio::time::timeout(target.budget, read).await.ok()?.ok()?
}

/// The text at a JSON pointer of `object`, if it is a string.
fn text<'a>(object: &'a Value, pointer: &str) -> Option<&'a str> {
    object.pointer(pointer).and_then(Value::as_str)
}

impl KubeWriteCap<'_> {
    fn refuse(&mut self, what: &str, reason: &str) -> HostFailure {
        self.core.denied(Capability::KubeWrite, what, reason).into()
    }

    /// The checks every write starts with: the grant and the call's write count.
    fn admit(&mut self, what: &str) -> Result<(), HostFailure> {
        if !self.core.grants.allows(Capability::KubeWrite) {
            return Err(self.refuse(what, "the plugin is not granted \"kube-write\""));
        }
        self.state.writes += 1;
        if self.state.writes > WRITES_PER_CALL {
            let reason = format!(
                "the call asked for more than {WRITES_PER_CALL} writes; a plugin writes at most \
                 {WRITES_PER_CALL} objects per call"
            );
            return Err(self.refuse(what, &reason));
        }
        Ok(())
    }

    /// Takes one request from the plugin's rate budget right before it is sent, waiting for its turn when the
    /// burst is spent (within half of `budget`, and [`ledger::MAX_QUEUE`]); refused when its turn is further off.
    /// Returns the time left of `budget` for the write itself.
    async fn spend(&mut self, what: &str, budget: Duration) -> Result<Duration, HostFailure> {
        let wait = match self.services.ledger.reserve(budget / 2) {
            Ok(wait) => wait,
            Err(wait) => return Err(self.over_rate(what, wait)),
        };
        if !wait.is_zero() {
            tokio::time::sleep(wait).await;
        }
        Ok(budget.saturating_sub(wait))
    }

    fn over_rate(&mut self, what: &str, wait: Duration) -> HostFailure {
        let reason = format!(
            "the plugin writes faster than its budget of {} writes per second; retry in {} ms",
            self.services.ledger.per_second(),
            wait.as_millis().max(1)
        );
        // Reported as a refusal is (a Warning Event), but answered as a busy dependency: waiting fixes it.
        let denied = self.core.denied(Capability::KubeWrite, what, &reason);
        HostError::Unavailable(denied.message().to_owned()).into()
    }

    /// Resolves and checks where a write of `api_version`/`kind` named `name` goes: the kind served, granted
    /// exactly and not one no grant reaches; a Secret only with `secrets-write`; the namespace (`requested`, or
    /// the reconciled object's) its own or granted, none for a cluster-scoped kind.
    async fn target(
        &mut self,
        ctx: &Resource<CallContext>,
        (api_version, kind, name): (&str, &str, &str),
        requested: Option<&str>,
        what: &str,
    ) -> Result<Target, HostFailure> {
        if name.is_empty() {
            return Err(HostError::Invalid(format!("{what}: metadata.name is required")).into());
        }
        // The kinds no grant reaches are refused as the plugin spells them too, before discovery: served or not
        // (an API server without ValidatingAdmissionPolicy), the attempt is refused and reported as such.
        let spelled_group = api_version.rsplit_once('/').map_or("", |(g, _)| g);
        if let Some(why) = never_writable(spelled_group, kind)
            .or_else(|| never_writable_object(spelled_group, kind, name))
        {
            let reason = format!("{api_version} {kind} can be written by no grant: {why}");
            return Err(self.refuse(what, &reason));
        }
        let own = self.core.table.get(ctx)?.namespace().map(str::to_owned);
        let budget = self.core.budget(ctx, budget::WRITE)?;
        let resolving = format!("{what}: resolving the kind");
        let scope = within(
            &resolving,
            budget,
            self.services.kinds.kind_scope(api_version, kind),
        )
        .await?;
        let version = api_version.rsplit('/').next().unwrap_or(api_version);
        let group = if scope.group.is_empty() {
            "core"
        } else {
            &scope.group
        };
        let spelled = format!("{group}/{version}/{}", scope.kind);
        if let Some(why) = never_writable(&scope.group, &scope.kind)
            .or_else(|| never_writable_object(&scope.group, &scope.kind, name))
        {
            let reason = format!("{spelled} can be written by no grant: {why}");
            return Err(self.refuse(what, &reason));
        }
        if !self
            .core
            .grants
            .may_write_kind(&scope.group, version, &scope.kind, scope.namespaced)
        {
            let grant = if scope.namespaced {
                "kube-write"
            } else {
                "kube-write-cluster"
            };
            let reason = format!("the plugin is not granted `{grant}:{spelled}`");
            return Err(self.refuse(what, &reason));
        }
        if super::is_secret(&scope.group, &scope.kind)
            && !self.core.grants.allows(Capability::SecretsWrite)
        {
            let reason =
                "a Secret is written only with the grant \"secrets-write\" besides its kind's";
            return Err(self.refuse(what, reason));
        }
        let requested = requested.filter(|ns| !ns.is_empty());
        let namespace = if scope.namespaced {
            let Some(namespace) = requested.map(str::to_owned).or_else(|| own.clone()) else {
                return Err(HostError::Invalid(format!(
                    "{what}: {} is namespaced; name the namespace (the reconciled object is cluster-scoped)",
                    scope.kind
                ))
                .into());
            };
            if !self.core.grants.may_write_in(own.as_deref(), &namespace) {
                let own = own.map_or_else(
                    || "a cluster-scoped object".to_owned(),
                    |ns| format!("namespace {ns:?}"),
                );
                let reason = format!(
                    "writes in namespace {namespace:?} are not granted to a plugin reconciling an object in \
                     {own} (grant `kube-write-namespace:{namespace}`)"
                );
                return Err(self.refuse(what, &reason));
            }
            Some(namespace)
        } else {
            if requested.is_some() {
                return Err(HostError::Invalid(format!(
                    "{what}: {} is cluster-scoped; write it without metadata.namespace",
                    scope.kind
                ))
                .into());
            }
            None
        };
        Ok(Target {
            api_version: api_version.to_owned(),
            group: scope.group,
            kind: scope.kind,
            namespace,
            name: name.to_owned(),
            budget,
        })
    }

    /// Refuses a write to a Secret that is (or, per `written`, would become) a service-account token.
    async fn check_secret(
        &mut self,
        target: &Target,
        written: Option<&Value>,
        what: &str,
    ) -> Result<(), HostFailure> {
        if !target.is_secret() {
            return Ok(());
        }
        let token = |o: &Value| text(o, "/type") == Some(SERVICE_ACCOUNT_TOKEN);
        let reason = "a Secret of type kubernetes.io/service-account-token holds a ServiceAccount's credentials; \
                      no plugin writes one";
        if written.is_some_and(token) {
            return Err(self.refuse(what, reason));
        }
        let stored = within(what, target.budget, self.services.writer.get(target.get())).await?;
        if stored.as_ref().is_some_and(token) {
            return Err(self.refuse(what, reason));
        }
        Ok(())
    }

    /// Checks an object about to be written (or, for a patch, as the dry run stored it): Pods within the grants.
    fn check_content(
        &mut self,
        target: &Target,
        object: &Value,
        what: &str,
    ) -> Result<(), HostFailure> {
        match pods::refusal(&self.core.grants, &target.group, &target.kind, object) {
            Some(reason) => Err(self.refuse(what, &reason)),
            None => Ok(()),
        }
    }

    /// The field manager the plugin's writes are made under.
    fn field_manager(&self) -> String {
        let mut manager = format!("omni-plugin:{}", self.core.plugin);
        crate::contract::truncate(&mut manager, MAX_FIELD_MANAGER);
        manager
    }

    /// The object as the plugin may see it: without managed fields (as `kube-read` serves objects), and a
    /// Secret without its values unless the plugin is granted to read them.
    fn answer(&self, target: &Target, mut stored: Value) -> String {
        if let Some(metadata) = stored.get_mut("metadata").and_then(Value::as_object_mut) {
            metadata.remove("managedFields");
        }
        if target.is_secret() && !self.core.grants.allows(Capability::SecretsReadValues) {
            if let Some(object) = stored.as_object_mut() {
                object.remove("data");
                object.remove("stringData");
            }
            if let Some(annotations) = stored
                .pointer_mut("/metadata/annotations")
                .and_then(Value::as_object_mut)
            {
                annotations.retain(|k, _| !VALUE_ANNOTATIONS.contains(&k.as_str()));
            }
        }
        stored.to_string()
    }

    /// Apply or create: the whole object from the plugin.
    async fn write_object(
        &mut self,
        ctx: Resource<CallContext>,
        json: String,
        options: wit::WriteOptions,
        apply: bool,
    ) -> Result<String, HostFailure> {
        let verb = if apply { "apply" } else { "create" };
        let mut what = format!("kube-write {verb}");
        if json.len() > MAX_WRITE_BYTES {
            let reason = format!(
                "the object is {} bytes; a plugin writes objects of at most {MAX_WRITE_BYTES} bytes",
                json.len()
            );
            return Err(self.refuse(&what, &reason));
        }
        let mut object: Value = serde_json::from_str(&json)
            .map_err(|e| HostError::Invalid(format!("{what}: the object is not JSON: {e}")))?;
        if !object.is_object() {
            return Err(
                HostError::Invalid(format!("{what}: the object must be a JSON object")).into(),
            );
        }
        let field = |pointer: &str| text(&object, pointer).unwrap_or_default().to_owned();
        let (api_version, kind, name) = (
            field("/apiVersion"),
            field("/kind"),
            field("/metadata/name"),
        );
        let namespace = text(&object, "/metadata/namespace").map(str::to_owned);
        for (value, path) in [(&api_version, "apiVersion"), (&kind, "kind")] {
            if value.is_empty() {
                return Err(HostError::Invalid(format!("{what}: {path} is required")).into());
            }
        }
        what = format!("kube-write {verb} {kind} {name:?}");
        self.admit(&what)?;
        if options.force && !self.core.grants.permits(super::WritePermit::Force) {
            let reason = "apply with force takes fields other managers own; that needs the grant \
                          `kube-write-allow:force`";
            return Err(self.refuse(&what, reason));
        }
        let target = self
            .target(
                &ctx,
                (&api_version, &kind, &name),
                namespace.as_deref(),
                &what,
            )
            .await?;
        let owner = Owner::of(self.core.table.get(&ctx)?.object_value());
        if let Some(reason) = owners::foreign_reference(&object, owner.as_ref()) {
            return Err(self.refuse(&what, &reason));
        }
        if options.owned {
            let Some(owner) = owner else {
                return Err(HostError::Invalid(format!(
                    "{what}: the reconciled object has no UID to own the object by"
                ))
                .into());
            };
            if owner.namespace.is_some() && owner.namespace != target.namespace {
                return Err(HostError::Invalid(format!(
                    "{what}: an owned object lives in its owner's namespace {:?}; the garbage collector would \
                     delete it anywhere else",
                    owner.namespace.as_deref().unwrap_or_default()
                ))
                .into());
            }
            owners::set_controller(&mut object, &owner);
        }
        self.check_content(&target, &object, &what)?;
        self.check_secret(&target, Some(&object), &what).await?;
        if let Some(namespace) = &target.namespace {
            object["metadata"]["namespace"] = Value::String(namespace.clone());
        }
        let key = target.key();
        if !apply {
            let stored = self.send(&target, WriteOp::Create { object }, options.dry_run, &what);
            let stored = stored.await?;
            self.services.ledger.forget(&key);
            return Ok(self.answer(&target, stored));
        }
        let body = ledger::digest(&object);
        // An apply that would change nothing is answered from the watch cache (see `ledger`); a dry run or a
        // forced apply is always sent.
        if !options.dry_run
            && !options.force
            && self.services.ledger.applied_last(&key, &body)
            && let Some(live) = cached(self.services.kinds.clone(), &target).await
            && ledger::holds(&live, &object)
        {
            tracing::debug!(
                plugin = %self.core.plugin,
                object = %key,
                resource_version = text(&live, "/metadata/resourceVersion").unwrap_or_default(),
                "an apply that would change nothing, answered from the cache"
            );
            return Ok(self.answer(&target, live));
        }
        let op = WriteOp::Apply {
            object,
            force: options.force,
        };
        let stored = self.send(&target, op, options.dry_run, &what).await?;
        tracing::debug!(plugin = %self.core.plugin, object = %key, "applied");
        if !options.dry_run {
            self.services.ledger.remember(key, body);
        }
        Ok(self.answer(&target, stored))
    }

    /// Sends one write to the writer, under the plugin's field manager, within the plugin's rate.
    async fn send(
        &mut self,
        target: &Target,
        op: WriteOp,
        dry_run: bool,
        what: &str,
    ) -> Result<Value, HostFailure> {
        let budget = self.spend(what, target.budget).await?;
        let writer = self.services.writer.clone();
        let request = WriteRequest {
            api_version: target.api_version.clone(),
            kind: target.kind.clone(),
            namespace: target.namespace.clone(),
            name: target.name.clone(),
            op,
            field_manager: self.field_manager(),
            dry_run,
        };
        Ok(within(what, budget, writer.write(request)).await?)
    }
}

impl wit::Host for KubeWriteCap<'_> {
    async fn apply(
        &mut self,
        ctx: Resource<CallContext>,
        object: String,
        options: wit::WriteOptions,
    ) -> Result<String, HostFailure> {
        self.write_object(ctx, object, options, true).await
    }

    async fn create(
        &mut self,
        ctx: Resource<CallContext>,
        object: String,
        options: wit::WriteOptions,
    ) -> Result<String, HostFailure> {
        self.write_object(ctx, object, options, false).await
    }

    async fn patch(
        &mut self,
        ctx: Resource<CallContext>,
        obj: wit::ObjectRef,
        patch_type: wit::PatchType,
        patch: String,
        options: wit::WriteOptions,
    ) -> Result<String, HostFailure> {
        let what = format!("kube-write patch {} {:?}", obj.kind, obj.name);
        self.admit(&what)?;
        if patch.len() > MAX_WRITE_BYTES {
            let reason = format!(
                "the patch is {} bytes; a plugin writes at most {MAX_WRITE_BYTES} bytes at once",
                patch.len()
            );
            return Err(self.refuse(&what, &reason));
        }
        let body: Value = serde_json::from_str(&patch)
            .map_err(|e| HostError::Invalid(format!("{what}: the patch is not JSON: {e}")))?;
        let json_patch = patch_type == wit::PatchType::Json;
        match (json_patch, &body) {
            (true, Value::Array(_)) | (false, Value::Object(_)) => {}
            (true, _) => {
                return Err(HostError::Invalid(format!(
                    "{what}: a JSON patch is a list of operations"
                ))
                .into());
            }
            (false, _) => {
                return Err(
                    HostError::Invalid(format!("{what}: a merge patch is a JSON object")).into(),
                );
            }
        }
        let target = self
            .target(
                &ctx,
                (&obj.api_version, &obj.kind, &obj.name),
                obj.namespace.as_deref(),
                &what,
            )
            .await?;
        if owners::patch_touches_owners(&body, json_patch) {
            let reason =
                "a patch never changes owner references; apply the object with `owned` instead";
            return Err(self.refuse(&what, reason));
        }
        self.check_secret(&target, None, &what).await?;
        let op = || {
            if json_patch {
                WriteOp::JsonPatch(body.clone())
            } else {
                WriteOp::MergePatch(body.clone())
            }
        };
        // What a patch makes depends on the stored object: for the kinds whose content is checked, the API
        // server's dry run says what it would store, and that is checked before anything is written.
        let checked = pods::carries_pods(&target.group, &target.kind) || target.is_secret();
        if checked {
            let preview = self.send(&target, op(), true, &what).await?;
            self.check_content(&target, &preview, &what)?;
            if target.is_secret() && text(&preview, "/type") == Some(SERVICE_ACCOUNT_TOKEN) {
                return Err(
                    self.refuse(&what, "the patch would make a service-account-token Secret")
                );
            }
            if options.dry_run {
                return Ok(self.answer(&target, preview));
            }
        }
        let stored = self.send(&target, op(), options.dry_run, &what).await?;
        if !options.dry_run {
            self.services.ledger.forget(&target.key());
        }
        Ok(self.answer(&target, stored))
    }

    async fn delete(
        &mut self,
        ctx: Resource<CallContext>,
        obj: wit::ObjectRef,
        options: wit::DeleteOptions,
    ) -> Result<bool, HostFailure> {
        let what = format!("kube-write delete {} {:?}", obj.kind, obj.name);
        self.admit(&what)?;
        let target = self
            .target(
                &ctx,
                (&obj.api_version, &obj.kind, &obj.name),
                obj.namespace.as_deref(),
                &what,
            )
            .await?;
        self.check_secret(&target, None, &what).await?;
        let request = DeleteRequest {
            api_version: target.api_version.clone(),
            kind: target.kind.clone(),
            namespace: target.namespace.clone(),
            name: target.name.clone(),
            uid: options.uid.filter(|u| !u.is_empty()),
            resource_version: options.resource_version.filter(|v| !v.is_empty()),
            propagation: match options.propagation {
                wit::Propagation::Background => Propagation::Background,
                wit::Propagation::Foreground => Propagation::Foreground,
                wit::Propagation::Orphan => Propagation::Orphan,
            },
            dry_run: options.dry_run,
        };
        let budget = self.spend(&what, target.budget).await?;
        let writer = self.services.writer.clone();
        let deleted = within(&what, budget, writer.delete(request)).await?;
        if !options.dry_run {
            self.services.ledger.forget(&target.key());
        }
        Ok(deleted)
    }
}

#[cfg(test)]
mod grant_checks;
