//! A [`Host`](crate::Host) for native unit tests of plugin logic: objects to read are seeded, outputs are
//! recorded for assertions.

use std::cell::RefCell;
use std::collections::BTreeMap;

use serde_json::{Map, Value};

use crate::helm::{DriftIgnore, Drifted, Observation, ReleaseRef, ReleaseSource, Step, StepRecord};
use crate::omni::{ClusterHealth, LabelTerm, OmniResource, Phase, ResourceKey};
use crate::secrets::{
    Copied, KubeconfigExport, OwnerLabel, Removal, SecretCopy, SecretInfo, SecretKeyRef,
};
use crate::{Condition, EventType, HostError, ListQuery, LogLevel, ObjectRef};

mod kube_write;
mod secrets;

pub use kube_write::Write;
pub use secrets::FakeSecret;

/// Records every output a plugin produced in one call.
#[derive(Debug, Default, Clone, PartialEq)]
pub struct Outputs {
    pub status: Map<String, Value>,
    pub conditions: Vec<Condition>,
    pub requeue_after: Option<u64>,
    pub events: Vec<(EventType, String, String)>,
    pub logs: Vec<(LogLevel, String)>,
}

/// What the plugin asked of the mock's Secrets and workload cluster, in order, whatever the answer was: tests
/// check the requests themselves (labels sent, owner, kubeconfig used), not only their effect.
#[derive(Debug, Default, Clone, PartialEq)]
pub struct Requests {
    pub exports: Vec<KubeconfigExport>,
    /// `(namespace, name)` of every `secret_delete_owned`.
    pub secret_deletions: Vec<(Option<String>, String)>,
    /// The kubeconfig of every `workload_probe`.
    pub probes: Vec<SecretKeyRef>,
    pub copies: Vec<(SecretKeyRef, SecretCopy)>,
    /// `(kubeconfig, namespace, name, owner)` of every `workload_delete_secret`.
    pub workload_deletions: Vec<(SecretKeyRef, String, String, OwnerLabel)>,
    /// Every `helm_observe`: the release and the source asked about.
    pub helm_observes: Vec<(ReleaseRef, Option<ReleaseSource>)>,
    /// Every `helm_start`.
    pub helm_starts: Vec<(ReleaseRef, Step)>,
    /// `helm_cancel` calls: the release and the action's id.
    pub helm_cancels: Vec<(ReleaseRef, String)>,
    /// Every `helm_detect_drift`: the release and the ignore rules.
    pub helm_drift_checks: Vec<(ReleaseRef, Vec<DriftIgnore>)>,
}

pub struct MockHost {
    object: Value,
    /// (apiVersion, kind, namespace, name) → object.
    objects: RefCell<BTreeMap<(String, String, String, String), Value>>,
    /// Every `kube-write` call, in order, and the failures to answer the next ones with.
    writes: RefCell<Vec<Write>>,
    write_failures: RefCell<std::collections::VecDeque<HostError>>,
    /// (template root, path relative to it) → file bytes.
    files: BTreeMap<(String, String), Vec<u8>>,
    /// Capabilities that answer `Denied`.
    denied: Vec<&'static str>,
    now: String,
    outputs: RefCell<Outputs>,
    omni: RefCell<FakeOmni>,
    /// Management-cluster Secrets by (namespace, name).
    secrets: RefCell<secrets::SecretMap>,
    /// Kubeconfigs exported so far (the serial of the next one).
    exports: RefCell<u64>,
    workload: RefCell<secrets::FakeWorkload>,
    remaining_ms: u64,
    requests: RefCell<Requests>,
    /// `secret_info` answers "absent" (a Secret appearing between the plugin's look and the host's write).
    hide_secret_info: bool,
    /// What `helm_observe` answers once the kubeconfig checks pass.
    observation: Result<Observation, HostError>,
    /// What `helm_start` answers; None: a record of the step, started at the mock's time.
    start: Option<Result<StepRecord, HostError>>,
    /// What `helm_detect_drift` answers.
    drift: Result<Vec<Drifted>, HostError>,
    /// Kinds whose reads (`kube_get`, `kube_list`) fail, and with what.
    read_failures: BTreeMap<String, HostError>,
}

/// An in-memory Omni with COSI's write rules (versions, phases, finalizers), enough to unit-test plugin logic;
/// the real protocol is tested against the Omni simulator.
#[derive(Debug)]
struct FakeOmni {
    ping: Result<String, HostError>,
    failure: Option<HostError>,
    resources: BTreeMap<ResourceKey, OmniResource>,
    health: BTreeMap<String, ClusterHealth>,
    calls: Vec<String>,
}

impl Default for FakeOmni {
    fn default() -> Self {
        FakeOmni {
            ping: Ok("grpc://omni.mock:80".into()),
            failure: None,
            resources: BTreeMap::new(),
            health: BTreeMap::new(),
            calls: Vec::new(),
        }
    }
}

impl MockHost {
    /// A host reconciling `object`.
    pub fn new(object: Value) -> Self {
        MockHost {
            object,
            objects: RefCell::default(),
            writes: RefCell::default(),
            write_failures: RefCell::default(),
            files: BTreeMap::new(),
            denied: Vec::new(),
            now: "2026-01-01T00:00:00Z".into(),
            outputs: RefCell::new(Outputs::default()),
            omni: RefCell::new(FakeOmni::default()),
            secrets: RefCell::new(secrets::SecretMap::new()),
            exports: RefCell::new(0),
            workload: RefCell::new(secrets::FakeWorkload::default()),
            remaining_ms: 5_000,
            requests: RefCell::default(),
            hide_secret_info: false,
            observation: Ok(Observation::default()),
            start: None,
            drift: Ok(Vec::new()),
            read_failures: BTreeMap::new(),
        }
    }

    /// What `helm_observe` answers (by default: no release, nothing running or remembered, no digest).
    pub fn with_observation(mut self, answer: Result<Observation, HostError>) -> Self {
        self.observation = answer;
        self
    }

    /// What `helm_start` answers (by default: a record of the step, id `mock-N`, started at the mock's time).
    pub fn with_start(mut self, answer: Result<StepRecord, HostError>) -> Self {
        self.start = Some(answer);
        self
    }

    /// What `helm_detect_drift` answers (by default: nothing drifted).
    pub fn with_drift(mut self, answer: Result<Vec<Drifted>, HostError>) -> Self {
        self.drift = answer;
        self
    }

    /// Every request to the Secrets and workload calls so far.
    pub fn requests(&self) -> Requests {
        self.requests.borrow().clone()
    }

    /// Makes `secret_info` answer that no Secret exists while the Secrets stay in place for the host's own
    /// checks: the race where a Secret appears between the plugin's look and the write.
    pub fn hiding_secret_info(mut self) -> Self {
        self.hide_secret_info = true;
        self
    }

    /// Seeds a management-cluster Secret (`namespace: None`: the reconciled object's namespace).
    pub fn with_secret(self, namespace: Option<&str>, name: &str, secret: FakeSecret) -> Self {
        let ns = self.resolve_ns(namespace);
        self.secrets.borrow_mut().insert((ns, name.into()), secret);
        self
    }

    /// A management-cluster Secret as it is now.
    pub fn secret(&self, namespace: Option<&str>, name: &str) -> Option<FakeSecret> {
        self.secrets
            .borrow()
            .get(&(self.resolve_ns(namespace), name.into()))
            .cloned()
    }

    /// Seeds a workload-cluster Secret.
    pub fn with_workload_secret(self, namespace: &str, name: &str, secret: FakeSecret) -> Self {
        self.workload
            .borrow_mut()
            .namespaces
            .insert(namespace.into());
        self.workload
            .borrow_mut()
            .secrets
            .insert((namespace.into(), name.into()), secret);
        self
    }

    /// A workload-cluster Secret as it is now.
    pub fn workload_secret(&self, namespace: &str, name: &str) -> Option<FakeSecret> {
        self.workload
            .borrow()
            .secrets
            .get(&(namespace.into(), name.into()))
            .cloned()
    }

    /// Whether the workload cluster has this namespace (`default` and `kube-system` exist from the start).
    pub fn workload_has_namespace(&self, namespace: &str) -> bool {
        self.workload.borrow().namespaces.contains(namespace)
    }

    /// What `workload_probe` answers (by default `Ok("v1.34.1")`).
    pub fn with_workload_probe(self, answer: Result<String, HostError>) -> Self {
        self.workload.borrow_mut().probe = answer;
        self
    }

    /// Makes every workload call fail with `error` (the cluster is gone, the credentials revoked).
    pub fn with_workload_failure(self, error: HostError) -> Self {
        self.workload.borrow_mut().failure = Some(error);
        self
    }

    /// Kubeconfigs exported through this host so far.
    pub fn exports(&self) -> u64 {
        *self.exports.borrow()
    }

    /// What `remaining_ms` answers (5,000 by default).
    pub fn with_remaining_ms(mut self, ms: u64) -> Self {
        self.remaining_ms = ms;
        self
    }

    fn resolve_ns(&self, namespace: Option<&str>) -> String {
        namespace
            .or_else(|| self.namespace())
            .unwrap_or_default()
            .to_string()
    }

    /// The kubeconfig Secret's key must hold something, as the real host requires before it builds a client.
    fn workload_access(
        &self,
        kubeconfig: &SecretKeyRef,
    ) -> Result<std::cell::RefMut<'_, secrets::FakeWorkload>, HostError> {
        self.check("workload")?;
        self.kubeconfig_held(kubeconfig)?;
        let workload = self.workload.borrow_mut();
        match workload.failure.clone() {
            Some(e) => Err(e),
            None => Ok(workload),
        }
    }

    fn kubeconfig_held(&self, kubeconfig: &SecretKeyRef) -> Result<(), HostError> {
        let ns = self.resolve_ns(kubeconfig.namespace.as_deref());
        let held = self
            .secrets
            .borrow()
            .get(&(ns.clone(), kubeconfig.name.clone()))
            .and_then(|s| s.data.get(&kubeconfig.key).cloned());
        match held {
            None => {
                return Err(HostError::NotFound(format!(
                    "kubeconfig Secret \"{ns}/{}\" key {:?} does not exist",
                    kubeconfig.name, kubeconfig.key
                )));
            }
            Some(v) if v.is_empty() => {
                return Err(HostError::NotFound(format!(
                    "kubeconfig Secret \"{ns}/{}\" key {:?} is empty",
                    kubeconfig.name, kubeconfig.key
                )));
            }
            Some(_) => {}
        }
        Ok(())
    }

    /// What `omni_ping` answers (by default `Ok("grpc://omni.mock:80")`).
    pub fn with_omni_ping(self, answer: Result<String, HostError>) -> Self {
        self.omni.borrow_mut().ping = answer;
        self
    }

    /// Makes every read of `kind` (get and list) fail with `error`, as an API server in trouble answers.
    pub fn with_read_failure(mut self, kind: &str, error: HostError) -> Self {
        self.read_failures.insert(kind.to_string(), error);
        self
    }

    /// Makes every Omni call fail with `error`.
    pub fn with_omni_failure(self, error: HostError) -> Self {
        self.omni.borrow_mut().failure = Some(error);
        self
    }

    /// Seeds a stored Omni resource (kept as given, version included).
    pub fn with_omni_resource(self, resource: OmniResource) -> Self {
        self.omni
            .borrow_mut()
            .resources
            .insert(resource.key.clone(), resource);
        self
    }

    pub fn with_cluster_health(self, cluster: &str, health: ClusterHealth) -> Self {
        self.omni.borrow_mut().health.insert(cluster.into(), health);
        self
    }

    /// The fake Omni's resources, sorted by key.
    pub fn omni_resources(&self) -> Vec<OmniResource> {
        self.omni.borrow().resources.values().cloned().collect()
    }

    /// Omni calls in order, as `"<verb> <Type>(<id>)"` (`"ping"`, `"list <Type>"`).
    pub fn omni_calls(&self) -> Vec<String> {
        self.omni.borrow().calls.clone()
    }

    fn omni_call(&self, call: String) -> Result<std::cell::RefMut<'_, FakeOmni>, HostError> {
        self.check("omni")?;
        let mut omni = self.omni.borrow_mut();
        omni.calls.push(call);
        match omni.failure.clone() {
            Some(e) => Err(e),
            None => Ok(omni),
        }
    }

    /// Makes `obj` readable through `kube_get`/`kube_list` (namespace defaults to the reconciled object's).
    pub fn with_object(self, obj: Value) -> Self {
        let key = self.object_key(&obj);
        self.objects.borrow_mut().insert(key, obj);
        self
    }

    /// Where an object is kept: (apiVersion, kind, namespace, name), the namespace defaulting to the reconciled
    /// object's.
    fn object_key(&self, obj: &Value) -> (String, String, String, String) {
        let text = |v: &Value| v.as_str().unwrap_or_default().to_string();
        (
            text(&obj["apiVersion"]),
            text(&obj["kind"]),
            self.resolve_ns(obj["metadata"]["namespace"].as_str()),
            text(&obj["metadata"]["name"]),
        )
    }

    /// Makes a file readable through `read_file` under template root `root`; `path` is relative to the root or
    /// absolute inside it, as the plugin will ask for it. Any other file is `NotFound`.
    pub fn with_file(mut self, root: &str, path: &str, bytes: impl Into<Vec<u8>>) -> Self {
        self.files.insert(
            (root.to_string(), relative_to(root, path).to_string()),
            bytes.into(),
        );
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
        self.outputs
            .borrow()
            .conditions
            .iter()
            .rev()
            .find(|c| c.type_ == type_)
            .cloned()
    }

    fn namespace(&self) -> Option<&str> {
        self.object["metadata"]["namespace"].as_str()
    }

    fn check(&self, capability: &str) -> Result<(), HostError> {
        if self.denied.contains(&capability) {
            return Err(HostError::Denied(format!(
                "capability {capability:?} is not granted"
            )));
        }
        Ok(())
    }
}

impl crate::Context for MockHost {
    fn object(&self) -> Value {
        self.object.clone()
    }

    fn remaining_ms(&self) -> u64 {
        self.remaining_ms
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
        self.outputs
            .borrow_mut()
            .events
            .push((kind, reason.into(), message.into()));
    }

    fn log(&self, level: LogLevel, message: &str, _fields: &[(&str, &str)]) {
        self.outputs.borrow_mut().logs.push((level, message.into()));
    }
}

impl crate::Clock for MockHost {
    fn now(&self) -> String {
        self.now.clone()
    }
}

impl crate::KubeRead for MockHost {
    fn kube_get(&self, target: &ObjectRef) -> Result<Option<Value>, HostError> {
        self.check("kube-read")?;
        if let Some(e) = self.read_failures.get(&target.kind) {
            return Err(e.clone());
        }
        let ns = target
            .namespace
            .as_deref()
            .or_else(|| self.namespace())
            .unwrap_or_default();
        let key = (
            target.api_version.clone(),
            target.kind.clone(),
            ns.to_string(),
            target.name.clone(),
        );
        Ok(self.objects.borrow().get(&key).cloned())
    }

    fn kube_list(&self, query: &ListQuery) -> Result<Vec<Value>, HostError> {
        self.check("kube-read")?;
        if let Some(e) = self.read_failures.get(&query.kind) {
            return Err(e.clone());
        }
        let fields = match &query.field_selector {
            Some(selector) => field_terms(selector)?,
            None => Vec::new(),
        };
        let ns = query
            .namespace
            .as_deref()
            .or_else(|| self.namespace())
            .unwrap_or_default();
        Ok(self
            .objects
            .borrow()
            .iter()
            .filter(|((av, k, n, _), _)| *av == query.api_version && *k == query.kind && n == ns)
            .filter(|(_, v)| fields.iter().all(|term| term.holds(v)))
            .map(|(_, v)| v.clone())
            .collect())
    }
}

impl crate::Files for MockHost {
    fn read_file(&self, root: &str, path: &str) -> Result<Vec<u8>, HostError> {
        self.check("files")?;
        self.files
            .get(&(root.to_string(), relative_to(root, path).to_string()))
            .cloned()
            .ok_or_else(|| HostError::NotFound(format!("open {path}: no such file or directory")))
    }
}

impl crate::Omni for MockHost {
    fn omni_ping(&self, _connection: &str) -> Result<String, HostError> {
        self.omni_call("ping".into())?.ping.clone()
    }

    fn omni_get(
        &self,
        _connection: &str,
        key: &ResourceKey,
    ) -> Result<Option<OmniResource>, HostError> {
        Ok(self
            .omni_call(format!("get {key}"))?
            .resources
            .get(key)
            .cloned())
    }

    fn omni_list(
        &self,
        _connection: &str,
        namespace: &str,
        type_: &str,
        labels: &[LabelTerm],
    ) -> Result<Vec<OmniResource>, HostError> {
        let omni = self.omni_call(format!("list {type_}"))?;
        Ok(omni
            .resources
            .values()
            .filter(|r| {
                r.key.namespace == namespace
                    && r.key.type_ == type_
                    && labels.iter().all(|t| t.matches(&r.labels))
            })
            .cloned()
            .collect())
    }

    fn omni_create(
        &self,
        _connection: &str,
        resource: &OmniResource,
    ) -> Result<OmniResource, HostError> {
        let mut omni = self.omni_call(format!("create {}", resource.key))?;
        if omni.resources.contains_key(&resource.key) {
            return Err(HostError::Conflict(format!(
                "resource {} already exists",
                resource.key
            )));
        }
        let stored = OmniResource {
            version: "1".into(),
            owner: String::new(),
            ..resource.clone()
        };
        omni.resources.insert(stored.key.clone(), stored.clone());
        Ok(stored)
    }

    fn omni_update(
        &self,
        _connection: &str,
        resource: &OmniResource,
    ) -> Result<OmniResource, HostError> {
        let mut omni = self.omni_call(format!("update {}", resource.key))?;
        let Some(current) = omni.resources.get(&resource.key) else {
            return Err(HostError::NotFound(format!(
                "resource {} doesn't exist",
                resource.key
            )));
        };
        if current.version != resource.version {
            return Err(HostError::Conflict(format!(
                "resource {} update conflict: expected version {:?}, actual version {:?}",
                resource.key, resource.version, current.version
            )));
        }
        if current.phase != Phase::Running {
            return Err(HostError::Invalid(format!(
                "resource {} is not in phase running",
                resource.key
            )));
        }
        let next = current.version.parse::<u64>().unwrap_or(0) + 1;
        let stored = OmniResource {
            version: next.to_string(),
            ..resource.clone()
        };
        omni.resources.insert(stored.key.clone(), stored.clone());
        Ok(stored)
    }

    fn omni_teardown(&self, _connection: &str, key: &ResourceKey) -> Result<bool, HostError> {
        let mut omni = self.omni_call(format!("teardown {key}"))?;
        let Some(current) = omni.resources.get_mut(key) else {
            return Err(HostError::NotFound(format!("resource {key} doesn't exist")));
        };
        current.phase = Phase::TearingDown;
        Ok(current.finalizers.is_empty())
    }

    fn omni_destroy(&self, _connection: &str, key: &ResourceKey) -> Result<(), HostError> {
        let mut omni = self.omni_call(format!("destroy {key}"))?;
        match omni.resources.get(key) {
            None => Err(HostError::NotFound(format!("resource {key} doesn't exist"))),
            Some(r) if !r.finalizers.is_empty() => Err(HostError::Conflict(format!(
                "resource {key} has pending finalizers {:?}",
                r.finalizers
            ))),
            Some(_) => {
                omni.resources.remove(key);
                Ok(())
            }
        }
    }

    fn omni_cluster_status(
        &self,
        _connection: &str,
        cluster: &str,
    ) -> Result<Option<ClusterHealth>, HostError> {
        Ok(self
            .omni_call(format!("status {cluster}"))?
            .health
            .get(cluster)
            .cloned())
    }

    fn omni_export_kubeconfig(
        &self,
        connection: &str,
        request: &KubeconfigExport,
    ) -> Result<String, HostError> {
        self.requests.borrow_mut().exports.push(request.clone());
        self.check("secrets-write")?;
        let ns = self.resolve_ns(request.target.namespace.as_deref());
        // The host refuses an unowned target before it asks Omni for anything.
        secrets::refuse_unowned(
            &self.secrets.borrow(),
            &ns,
            &request.target.name,
            &request.owner,
        )?;
        drop(self.omni_call(format!("kubeconfig {} via {connection}", request.cluster))?);
        let serial = {
            let mut n = self.exports.borrow_mut();
            *n += 1;
            *n
        };
        secrets::export(&mut self.secrets.borrow_mut(), ns, request, serial)
    }
}

impl crate::Secrets for MockHost {
    fn secret_info(
        &self,
        namespace: Option<&str>,
        name: &str,
    ) -> Result<Option<SecretInfo>, HostError> {
        if self.hide_secret_info {
            return Ok(None);
        }
        self.check("secrets")?;
        Ok(self.secret(namespace, name).map(|s| s.info()))
    }

    fn secret_digest(&self, key: &SecretKeyRef) -> Result<Option<String>, HostError> {
        self.check("secrets")?;
        Ok(self
            .secret(key.namespace.as_deref(), &key.name)
            .and_then(|s| s.data.get(&key.key).map(|v| crate::sha256_hex(v))))
    }

    fn secret_read(&self, key: &SecretKeyRef) -> Result<Option<Vec<u8>>, HostError> {
        self.check("secrets")?;
        self.check("secrets-read-values")?;
        Ok(self
            .secret(key.namespace.as_deref(), &key.name)
            .and_then(|s| s.data.get(&key.key).cloned()))
    }

    fn secret_delete_owned(
        &self,
        namespace: Option<&str>,
        name: &str,
        owner: &OwnerLabel,
    ) -> Result<Removal, HostError> {
        self.requests
            .borrow_mut()
            .secret_deletions
            .push((namespace.map(String::from), name.to_string()));
        self.check("secrets-write")?;
        Ok(secrets::delete_owned(
            &mut self.secrets.borrow_mut(),
            (self.resolve_ns(namespace), name.into()),
            owner,
        ))
    }
}

impl crate::Workload for MockHost {
    fn workload_probe(&self, kubeconfig: &SecretKeyRef) -> Result<String, HostError> {
        self.requests.borrow_mut().probes.push(kubeconfig.clone());
        self.workload_access(kubeconfig)?.probe.clone()
    }

    fn workload_copy_secret(
        &self,
        kubeconfig: &SecretKeyRef,
        request: &SecretCopy,
    ) -> Result<Copied, HostError> {
        self.requests
            .borrow_mut()
            .copies
            .push((kubeconfig.clone(), request.clone()));
        let mut workload = self.workload_access(kubeconfig)?;
        let ns = self.resolve_ns(None);
        let source = self
            .secrets
            .borrow()
            .get(&(ns.clone(), request.source_name.clone()))
            .cloned();
        let Some(source) = source else {
            return Err(HostError::NotFound(format!(
                "source Secret \"{ns}/{}\" does not exist",
                request.source_name
            )));
        };
        workload.copy(&source, request)
    }

    fn workload_delete_secret(
        &self,
        kubeconfig: &SecretKeyRef,
        namespace: &str,
        name: &str,
        owner: &OwnerLabel,
    ) -> Result<Removal, HostError> {
        self.requests.borrow_mut().workload_deletions.push((
            kubeconfig.clone(),
            namespace.into(),
            name.into(),
            owner.clone(),
        ));
        let mut workload = self.workload_access(kubeconfig)?;
        Ok(secrets::delete_owned(
            &mut workload.secrets,
            (namespace.into(), name.into()),
            owner,
        ))
    }
}

/// `path` relative to `root` when it is absolute inside it (as the operator resolves it), else unchanged.
fn relative_to<'a>(root: &str, path: &'a str) -> &'a str {
    path.strip_prefix(root.trim_end_matches('/'))
        .and_then(|rest| rest.strip_prefix('/'))
        .unwrap_or(path)
}

/// One `path=value` / `path!=value` term of a field selector.
struct FieldTerm {
    path: String,
    equal: bool,
    value: String,
}

impl FieldTerm {
    /// Exact comparison with the string at the dotted path; a missing field compares as `""`, as on the API server.
    fn holds(&self, object: &Value) -> bool {
        let found = self.path.split('.').try_fold(object, |v, key| v.get(key));
        let have = match found {
            Some(Value::String(s)) => s.clone(),
            Some(Value::Null) | None => String::new(),
            Some(other) => other.to_string(),
        };
        (have == self.value) == self.equal
    }
}

/// A field selector as the mock understands it: terms split on commas, each at its first `!=`, `==` or `=`. Enough
/// for plugin tests; the operator parses escapes too, exactly as Kubernetes does.
fn field_terms(selector: &str) -> Result<Vec<FieldTerm>, HostError> {
    let mut terms = Vec::new();
    for term in selector.split(',').filter(|t| !t.is_empty()) {
        let split = ["!=", "==", "="]
            .iter()
            .filter_map(|op| term.find(op).map(|at| (at, *op)))
            .min_by_key(|(at, op)| (*at, usize::MAX - op.len()));
        let Some((at, op)) = split.filter(|(at, _)| *at > 0) else {
            return Err(HostError::Invalid(format!(
                "invalid field selector {selector:?}: {term:?} is not of the form path=value"
            )));
        };
        terms.push(FieldTerm {
            path: term[..at].to_string(),
            equal: op != "!=",
            value: term[at + op.len()..].to_string(),
        });
    }
    Ok(terms)
}

impl crate::Helm for MockHost {
    fn helm_observe(
        &self,
        release: &ReleaseRef,
        source: Option<&ReleaseSource>,
    ) -> Result<Observation, HostError> {
        self.requests
            .borrow_mut()
            .helm_observes
            .push((release.clone(), source.cloned()));
        self.check("helm")?;
        self.kubeconfig_held(&release.kubeconfig)?;
        self.observation.clone()
    }

    fn helm_detect_drift(
        &self,
        release: &ReleaseRef,
        ignore: &[DriftIgnore],
    ) -> Result<Vec<Drifted>, HostError> {
        self.requests
            .borrow_mut()
            .helm_drift_checks
            .push((release.clone(), ignore.to_vec()));
        self.check("helm")?;
        self.kubeconfig_held(&release.kubeconfig)?;
        self.drift.clone()
    }

    fn helm_start(&self, release: &ReleaseRef, step: &Step) -> Result<StepRecord, HostError> {
        let count = {
            let mut requests = self.requests.borrow_mut();
            requests.helm_starts.push((release.clone(), step.clone()));
            requests.helm_starts.len()
        };
        self.check("helm")?;
        self.kubeconfig_held(&release.kubeconfig)?;
        match &self.start {
            Some(answer) => answer.clone(),
            None => Ok(StepRecord {
                id: format!("mock-{count}"),
                action: step.action(),
                digest: String::new(),
                started: self.now.clone(),
                finished: String::new(),
                revision: 0,
                error: None,
                cancelled: false,
            }),
        }
    }

    fn helm_cancel(&self, release: &ReleaseRef, id: &str) -> Result<bool, HostError> {
        self.requests
            .borrow_mut()
            .helm_cancels
            .push((release.clone(), id.to_string()));
        self.check("helm")?;
        self.kubeconfig_held(&release.kubeconfig)?;
        Ok(true)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::ReconcileError;
    use crate::prelude::*;

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
        assert_eq!(
            host.object_as::<Thing>().expect("fits"),
            Thing {
                spec: ThingSpec { size: 3 }
            }
        );
        let host = MockHost::new(serde_json::json!({"spec": {"size": "big"}}));
        assert!(
            matches!(host.object_as::<Thing>(), Err(ReconcileError::Permanent(m)) if m.contains("invalid type"))
        );
    }

    #[test]
    fn secret_values_need_the_read_values_grant_as_well_as_secrets() {
        let key = crate::secrets::SecretKeyRef {
            namespace: None,
            name: "s".into(),
            key: "k".into(),
        };
        let host = || {
            MockHost::new(serde_json::json!({"metadata": {"namespace": "t"}})).with_secret(
                None,
                "s",
                FakeSecret::opaque(&[("k", "value")]),
            )
        };
        assert_eq!(
            host().secret_read(&key).expect("granted"),
            Some(b"value".to_vec())
        );
        assert!(matches!(
            host().deny("secrets-read-values").secret_read(&key),
            Err(HostError::Denied(m)) if m.contains("secrets-read-values")
        ));
        assert!(matches!(
            host().deny("secrets").secret_read(&key),
            Err(HostError::Denied(_))
        ));
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

    fn child(name: &str, cluster: &str) -> Value {
        serde_json::json!({"apiVersion": "omni.texashpc.com/v1alpha1", "kind": "OmniWorkers",
            "metadata": {"name": name, "namespace": "t"}, "spec": {"clusterRef": {"name": cluster}}})
    }

    fn workers(field_selector: Option<&str>) -> ListQuery {
        ListQuery {
            api_version: "omni.texashpc.com/v1alpha1".into(),
            kind: "OmniWorkers".into(),
            field_selector: field_selector.map(Into::into),
            ..ListQuery::default()
        }
    }

    fn names(items: Vec<Value>) -> Vec<String> {
        items
            .iter()
            .map(|o| {
                o["metadata"]["name"]
                    .as_str()
                    .unwrap_or_default()
                    .to_string()
            })
            .collect()
    }

    #[test]
    fn lists_honour_field_selectors_by_exact_match() {
        let host = MockHost::new(serde_json::json!({"metadata": {"namespace": "t"}}))
            .with_object(child("a", "edge"))
            .with_object(child("b", "core"))
            .with_object(child("c", "edge"));
        assert_eq!(
            names(host.kube_list(&workers(None)).unwrap()),
            ["a", "b", "c"]
        );
        assert_eq!(
            names(
                host.kube_list(&workers(Some("spec.clusterRef.name=edge")))
                    .unwrap()
            ),
            ["a", "c"]
        );
        assert_eq!(
            names(
                host.kube_list(&workers(Some(
                    "spec.clusterRef.name==edge,metadata.name!=a"
                )))
                .unwrap()
            ),
            ["c"]
        );
        assert_eq!(
            names(
                host.kube_list(&workers(Some("spec.clusterRef.name!=edge")))
                    .unwrap()
            ),
            ["b"]
        );
        assert!(
            host.kube_list(&workers(Some("spec.missing=x")))
                .unwrap()
                .is_empty(),
            "a missing field is \"\""
        );
        assert!(
            matches!(host.kube_list(&workers(Some("spec.clusterRef.name"))),
            Err(HostError::Invalid(m)) if m == "invalid field selector \"spec.clusterRef.name\": \"spec.clusterRef.name\" is not of the form path=value")
        );
    }

    #[test]
    fn files_are_served_by_root_and_path_and_anything_else_is_not_found() {
        let host =
            MockHost::new(serde_json::json!({})).with_file("/templates", "patches/a.yaml", "a: 1");
        assert_eq!(
            host.read_file("/templates", "patches/a.yaml").unwrap(),
            b"a: 1"
        );
        assert_eq!(
            host.read_file("/templates", "/templates/patches/a.yaml")
                .unwrap(),
            b"a: 1",
            "absolute inside the root"
        );
        assert_eq!(
            host.read_file("/templates", "patches/b.yaml"),
            Err(HostError::NotFound(
                "open patches/b.yaml: no such file or directory".into()
            ))
        );
        assert!(matches!(
            host.read_file("/other", "patches/a.yaml"),
            Err(HostError::NotFound(_))
        ));
        let denied = MockHost::new(serde_json::json!({}))
            .with_file("/templates", "a", "x")
            .deny("files");
        assert!(matches!(
            denied.read_file("/templates", "a"),
            Err(HostError::Denied(_))
        ));
    }

    #[test]
    fn the_fake_omni_keeps_cosi_write_rules() {
        use crate::omni::{LabelTerm, OmniResource, ResourceKey};
        let host = MockHost::new(serde_json::json!({}));
        let key = ResourceKey::new("Clusters.omni.sidero.dev", "c1");
        let mut new = OmniResource::new(key.clone(), vec![1]);
        new.labels.push(("team".into(), "a".into()));
        let created = host.omni_create("conn", &new).expect("created");
        assert_eq!(created.version, "1");
        assert!(matches!(
            host.omni_create("conn", &new),
            Err(HostError::Conflict(_))
        ));
        let updated = host.omni_update("conn", &created).expect("updated");
        assert_eq!(updated.version, "2");
        assert!(
            matches!(host.omni_update("conn", &created), Err(HostError::Conflict(m)) if m.contains("expected version"))
        );
        assert_eq!(
            host.omni_list(
                "conn",
                "default",
                "Clusters.omni.sidero.dev",
                &[LabelTerm::equal("team", "a")]
            )
            .expect("list")
            .len(),
            1
        );
        assert!(
            host.omni_list(
                "conn",
                "default",
                "Clusters.omni.sidero.dev",
                &[LabelTerm::equal("team", "b")]
            )
            .expect("list")
            .is_empty()
        );
        assert!(host.omni_teardown("conn", &key).expect("teardown"));
        assert!(
            matches!(
                host.omni_update("conn", &updated),
                Err(HostError::Invalid(_))
            ),
            "tearing down refuses updates"
        );
        host.omni_destroy("conn", &key).expect("destroyed");
        assert_eq!(host.omni_get("conn", &key).expect("get"), None);
        assert_eq!(
            host.omni_calls().first().map(String::as_str),
            Some("create Clusters.omni.sidero.dev(c1)")
        );
        let denied = MockHost::new(serde_json::json!({})).deny("omni");
        assert!(matches!(
            denied.omni_ping("conn"),
            Err(HostError::Denied(_))
        ));
    }
}
