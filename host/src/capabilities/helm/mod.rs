//! `helm`: Helm releases in workload clusters, observed and acted on in steps that run in the background
//! ([`Releases`]). The checks at the top of each call are the grant: `helm` granted; the kubeconfig Secret named
//! by the object's spec (for an uninstall, also by its status: `call::reach`); the chart from a source the
//! operator allows ([`ChartSources`]); the values and the actions within their budgets ([`limits`]). The release
//! itself must be the object's own ([`Owner`]). The kubeconfig goes from the management cluster to the Helm worker
//! without passing through the plugin, and no answer carries a credential.

use std::sync::Arc;

use serde_json::Value;
use wasmtime::component::Resource;

use super::call::Management;
use super::call::budget::{self, within};
use super::call::reach::{Reach, SecretScope};
use super::{CallContext, Capability, HostError, HostFailure};
use crate::contract::Wakeups;
use crate::contract::bindings::omni::operator::helm as wit;
use crate::contract::bindings::omni::operator::types::SecretKeyRef;
use crate::helm::drift::{DriftError, Ignore, Reason, Target as DriftTarget};
use crate::helm::health::{self, HealthCheck};
use crate::helm::inventory::Owned;
use crate::helm::manifest::ManifestError;
use crate::helm::post_render::PostRender;
use crate::helm::protocol::{ChartAuth, GitRef};
use crate::helm::releases::{
    self, ADOPT_ANNOTATION, ApplyMethod, ApplySettings, ChartLocation, Cluster, InstallSettings,
    Observation, Outcome, Owner, Propagation, ReleaseError, Releases, RollbackSettings, Running,
    Settings, StepRequest, TestSettings, UninstallSettings, UpgradeSettings, Wanted,
};
use crate::helm::storage::StoredRevision;
use crate::registry::TrustedKeys;
use crate::secrets::quoted;

mod auth;
mod limits;
mod sources;
mod values;

pub use limits::{ActionBudget, MAX_VALUES_BYTES, STARTS_PER_CALL};
use sources::SourceUrl;
pub use sources::{ChartSources, TargetNamespaces};

/// Helm refuses release names longer than this (its DNS-1123 rule plus room for revision suffixes).
const MAX_RELEASE_NAME: usize = 53;

/// The operator's Helm settings, which the `helm` capability serves under: the releases the worker converges,
/// the chart sources and target namespaces it allows, where it wakes objects whose action ended, and the action
/// budgets.
#[derive(Debug, Clone)]
pub struct HelmSettings {
    pub releases: Arc<Releases>,
    pub sources: ChartSources,
    /// The workload-cluster namespaces releases may live in.
    pub namespaces: TargetNamespaces,
    pub wakeups: Arc<Wakeups>,
    /// How many actions each plugin and object may start.
    pub budget: Arc<ActionBudget>,
    /// The ServiceAccount (in each release's namespace) a release that names none impersonates (Flux's
    /// `--default-service-account`); None: such releases act with the kubeconfig's identity.
    pub default_service_account: Option<String>,
}

impl Default for HelmSettings {
    fn default() -> Self {
        HelmSettings {
            releases: Arc::new(Releases::new(None, "this host runs no Helm")),
            sources: ChartSources::any(),
            namespaces: TargetNamespaces::default(),
            wakeups: Arc::default(),
            budget: Arc::default(),
            default_service_account: None,
        }
    }
}

/// What `helm` serves with: the operator's Helm settings and the management cluster, where the kubeconfig,
/// values and chart credential Secrets are.
#[derive(Debug, Clone, Default)]
pub struct Services {
    pub(crate) config: HelmSettings,
    pub(crate) cluster: Management,
}

/// What `helm` keeps for one call: the actions it started.
#[derive(Default)]
pub(crate) struct State {
    starts: u32,
}

super::capability_view!(
    /// The `helm` capability's view of a call.
    HelmCap,
    wit,
    helm
);

impl HelmCap<'_> {
    /// The grant checks every `helm` call shares, before anything else is looked at: `helm` granted, the
    /// kubeconfig Secret named by the object's spec (for an uninstall, also by the plugin's own status: the
    /// release must then still be the object's own, [`Owner`]) in a namespace in reach; then Helm's rules for the
    /// release name and namespace.
    fn helm_scope(
        &mut self,
        ctx: &Resource<CallContext>,
        kubeconfig: &SecretKeyRef,
        (name, namespace): (&str, &str),
        reach: Reach,
        what: &str,
    ) -> Result<SecretScope, HostFailure> {
        let scope = self.core.secret_scope(
            ctx,
            &[Capability::Helm],
            reach,
            (kubeconfig.namespace.clone(), &kubeconfig.name),
            what,
            &self.services.cluster,
        )?;
        check_release_name(name).map_err(|why| HostError::Invalid(format!("{what}: {why}")))?;
        check_namespace(namespace).map_err(|why| HostError::Invalid(format!("{what}: {why}")))?;
        if !self.services.config.namespaces.allows(namespace) {
            let reason = format!(
                "namespace {namespace:?} is not among the operator's allowed target namespaces ({})",
                self.services.config.namespaces.describe()
            );
            return Err(self.core.denied(Capability::Helm, what, &reason).into());
        }
        Ok(scope)
    }

    /// [`HelmCap::helm_scope`] for a release named by reference.
    fn release_scope(
        &mut self,
        ctx: &Resource<CallContext>,
        release: &wit::ReleaseRef,
        reach: Reach,
        what: &str,
    ) -> Result<SecretScope, HostFailure> {
        self.helm_scope(
            ctx,
            &release.kubeconfig,
            (&release.name, &release.namespace),
            reach,
            what,
        )
    }

    /// Who the call reconciles, as `helm` keys releases, budgets and wake-ups by it.
    fn reconciled(&self, ctx: &Resource<CallContext>) -> Result<Reconciled, HostFailure> {
        let object = self.core.table.get(ctx)?.object_value();
        let text = |path: &str| {
            object
                .pointer(path)
                .and_then(Value::as_str)
                .unwrap_or_default()
                .to_string()
        };
        let group = text("/apiVersion")
            .rsplit_once('/')
            .map_or(String::new(), |(g, _)| g.to_string());
        Ok(Reconciled {
            group,
            kind: text("/kind"),
            namespace: text("/metadata/namespace"),
            name: text("/metadata/name"),
            uid: text("/metadata/uid"),
            adopt: object
                .pointer("/metadata/annotations")
                .and_then(|a| a.get(ADOPT_ANNOTATION))
                .and_then(Value::as_str)
                .map(str::to_string),
        })
    }

    /// The workload cluster behind the kubeconfig Secret of a checked scope, and the time left for the call.
    async fn helm_cluster(
        &mut self,
        ctx: &Resource<CallContext>,
        scope: SecretScope,
        release: &wit::ReleaseRef,
        what: &str,
    ) -> Result<(Cluster, std::time::Duration), HostFailure> {
        let as_user = self.impersonation(release, what)?;
        let kubeconfig = &release.kubeconfig;
        let budget = self.core.budget(ctx, budget::SECRET)?;
        let clients = self.services.cluster.workloads().clone();
        let reading = format!("{what}: reading the kubeconfig Secret");
        let access = clients.access(
            &scope.management,
            &scope.namespace,
            &kubeconfig.name,
            &kubeconfig.key,
            as_user.as_deref(),
        );
        let (client, config) = within(&reading, budget, access).await?;
        let mut id = format!("{}/{}/{}", scope.namespace, kubeconfig.name, kubeconfig.key);
        if let Some(user) = &as_user {
            id.push_str("#as=");
            id.push_str(user);
        }
        let cluster = Cluster {
            id,
            client,
            kubeconfig: config,
            as_user,
        };
        Ok((cluster, budget))
    }

    /// Whom the release is acted on as: the ServiceAccount it names (which needs `helm-impersonate`: the
    /// kubeconfig's identity may be allowed to impersonate accounts that may do more than it may), else the
    /// operator's default service account, else nobody (the kubeconfig's own identity). Always an account of the
    /// release's own namespace.
    fn impersonation(
        &mut self,
        release: &wit::ReleaseRef,
        what: &str,
    ) -> Result<Option<String>, HostFailure> {
        let account = match &release.service_account {
            Some(named) => {
                if !self.core.grants.allows(Capability::HelmImpersonate) {
                    let reason = format!(
                        "impersonating service account {named:?} needs the grant \"helm-impersonate\""
                    );
                    return Err(self.core.denied(Capability::Helm, what, &reason).into());
                }
                check_service_account(named).map_err(|why| {
                    HostError::Invalid(format!("{what}: service account {named:?}: {why}"))
                })?;
                Some(named.clone())
            }
            None => self.services.config.default_service_account.clone(),
        };
        Ok(account.map(|a| format!("system:serviceaccount:{}:{a}", release.namespace)))
    }

    /// Checks a chart's location against the operator's allowed sources; answers whether to reach it over plain
    /// HTTP (an OCI registry the operator named).
    fn check_chart(&mut self, what: &str, location: &ChartLocation) -> Result<bool, HostFailure> {
        let source_url = match location {
            ChartLocation::Repository { url, name } => {
                if name.trim().is_empty() {
                    return Err(
                        HostError::Invalid(format!("{what}: the chart name is empty")).into(),
                    );
                }
                url.as_str()
            }
            ChartLocation::Oci(reference) => reference.as_str(),
            ChartLocation::Git { url, path, .. } => {
                // A path inside the repository: never absolute, never up and out.
                let escapes = path.starts_with('/')
                    || path.split('/').any(|segment| segment == "..")
                    || path.contains('\\');
                if escapes {
                    return Err(HostError::Invalid(format!(
                        "{what}: the chart path {path:?} must be relative and inside the repository"
                    ))
                    .into());
                }
                url.as_str()
            }
        };
        let parsed = SourceUrl::parse(source_url)
            .map_err(|why| HostError::Invalid(format!("{what}: chart source {why}")))?;
        let oci = matches!(location, ChartLocation::Oci(_));
        if oci != (parsed.scheme == "oci") {
            return Err(HostError::Invalid(format!(
                "{what}: an OCI chart is an oci:// reference, a repository or Git chart an http(s) URL"
            ))
            .into());
        }
        if !self.services.config.sources.allows(&parsed) {
            let reason = format!(
                "chart source {source_url:?} is not among the operator's allowed chart sources ({})",
                self.services.config.sources.describe()
            );
            return Err(self.core.denied(Capability::Helm, what, &reason).into());
        }
        Ok(self.services.config.sources.plain_http(&parsed))
    }

    /// What a step's source resolves to: the chart's location (checked against the allowed sources), its version
    /// and the merged values, plus whether to reach the registry over plain HTTP. Referenced values are read here,
    /// from ConfigMaps and Secrets the object names in its own namespace.
    async fn release_source(
        &mut self,
        ctx: &Resource<CallContext>,
        what: &str,
        source: &wit::ReleaseSource,
    ) -> Result<Resolved, HostFailure> {
        let location = match &source.chart.location {
            wit::ChartLocation::Repository(r) => ChartLocation::Repository {
                url: r.url.clone(),
                name: r.name.clone(),
            },
            wit::ChartLocation::Oci(reference) => ChartLocation::Oci(reference.clone()),
            wit::ChartLocation::Git(g) => ChartLocation::Git {
                url: g.url.clone(),
                reference: match &g.reference {
                    wit::GitReference::Branch(b) => GitRef::Branch(b.clone()),
                    wit::GitReference::Tag(t) => GitRef::Tag(t.clone()),
                    wit::GitReference::Commit(c) => GitRef::Commit(c.clone()),
                },
                path: g.path.clone(),
            },
        };
        let plain_http = self.check_chart(what, &location)?;
        let auth = self.chart_auth(ctx, what, &source.chart).await?;
        let mut values = serde_json::Map::new();
        for (i, part) in source.values.iter().enumerate() {
            match part {
                wit::ValuesPart::Inline(text) => {
                    limits::check_part(i, text)
                        .map_err(|why| HostError::Invalid(format!("{what}: {why}")))?;
                    let Value::Object(part) = serde_json::from_str(text).map_err(|e| {
                        HostError::Invalid(format!("{what}: values part {i} is not JSON: {e}"))
                    })?
                    else {
                        return Err(HostError::Invalid(format!(
                            "{what}: values part {i} must be a JSON object"
                        ))
                        .into());
                    };
                    values::merge_values(&mut values, part);
                }
                wit::ValuesPart::Referenced(r) => {
                    let kind = values::kind_name(r.kind);
                    // Secret data goes to Helm, never to the plugin, but only for a plugin granted Secrets.
                    if r.kind == wit::ValuesKind::Secret
                        && !self.core.grants.allows(Capability::Secrets)
                    {
                        let reason =
                            format!("values from Secret {:?} need the \"secrets\" grant", r.name);
                        return Err(self.core.denied(Capability::Secrets, what, &reason).into());
                    }
                    let namespace =
                        self.core
                            .named_local_source(ctx, Capability::Helm, kind, &r.name, what)?;
                    let budget = self.core.budget(ctx, budget::SECRET)?;
                    let client = self.services.cluster.client(what)?;
                    let reading = format!("{what}: reading valuesFrom {kind} {:?}", r.name);
                    let text = within(&reading, budget, async {
                        values::read(&client, &namespace, r).await
                    })
                    .await?;
                    if let Some(text) = text {
                        values::merge_referenced(&mut values, &text, r, &namespace)?;
                    }
                }
            }
        }
        let values = Value::Object(values);
        limits::check_values(&values)
            .map_err(|why| HostError::Invalid(format!("{what}: {why}")))?;
        let post_render = match &source.post_render {
            Some(text) => {
                limits::check_post_render(text)
                    .map_err(|why| HostError::Invalid(format!("{what}: {why}")))?;
                let spec: Value = serde_json::from_str(text).map_err(|e| {
                    HostError::Invalid(format!("{what}: the post-render spec is not JSON: {e}"))
                })?;
                // Checked whole here, so a bad patch is the plugin's `invalid` before anything runs.
                PostRender::from_spec(&spec)
                    .map_err(|e| HostError::Invalid(format!("{what}: post-render {e}")))?;
                Some(spec)
            }
            None => None,
        };
        // A version constraint is resolved to the newest matching version, so the digest (and the revision) follow
        // new chart versions as they appear.
        let budget = self.core.budget(ctx, budget::CHART)?;
        let releases = self.services.config.releases.clone();
        let resolving = format!("{what}: resolving chart version {:?}", source.chart.version);
        let version = within(&resolving, budget, async {
            releases
                .resolve_version(&location, &source.chart.version, plain_http, auth.as_ref())
                .await
                .map_err(|e| release_error(what, e))
        })
        .await?;
        // Values files packaged in the chart come under every other part (Flux's order).
        let values = if source.chart.values_files.is_empty() {
            values
        } else {
            let reading = format!("{what}: reading the chart's valuesFiles");
            let files = within(&reading, budget, async {
                releases
                    .values_files(
                        (&location, &version),
                        (
                            &source.chart.values_files,
                            source.chart.ignore_missing_values_files,
                        ),
                        plain_http,
                        auth.as_ref(),
                    )
                    .await
                    .map_err(|why| HostError::Invalid(format!("{what}: {why}")))
            })
            .await?;
            let Value::Object(mut merged) = files else {
                return Err(
                    HostError::Invalid(format!("{what}: valuesFiles are not a map")).into(),
                );
            };
            if let Value::Object(over) = values {
                values::merge_values(&mut merged, over);
            }
            let merged = Value::Object(merged);
            limits::check_values(&merged)
                .map_err(|why| HostError::Invalid(format!("{what}: {why}")))?;
            merged
        };
        if let Some(keys) = &source.chart.verify {
            self.verify_chart(
                ctx,
                what,
                keys,
                (&location, &version),
                plain_http,
                auth.as_ref(),
            )
            .await?;
        }
        // Within the call's time, or unknown (then the latest revision's is taken): a slow index never fails
        // the call.
        let content = tokio::time::timeout(
            budget,
            releases.content_digest(&location, &version, plain_http, auth.as_ref()),
        )
        .await
        .unwrap_or(None);
        Ok(Resolved {
            location,
            version,
            values,
            plain_http,
            auth,
            post_render,
            content,
        })
    }

    /// Refuses the chart unless its OCI manifest is signed by one of the cosign public keys in Secret `keys`
    /// (named by the object, read by the host; the plugin needs the `secrets` grant for it).
    async fn verify_chart(
        &mut self,
        ctx: &Resource<CallContext>,
        what: &str,
        keys: &str,
        (location, version): (&ChartLocation, &str),
        plain_http: bool,
        auth: Option<&ChartAuth>,
    ) -> Result<(), HostFailure> {
        let ChartLocation::Oci(reference) = location else {
            return Err(HostError::Invalid(format!(
                "{what}: chart verification needs an oci:// chart (only OCI charts carry cosign signatures)"
            ))
            .into());
        };
        if !self.core.grants.allows(Capability::Secrets) {
            let reason =
                format!("the chart's public keys in Secret {keys:?} need the \"secrets\" grant");
            return Err(self.core.denied(Capability::Secrets, what, &reason).into());
        }
        let namespace =
            self.core
                .named_local_source(ctx, Capability::Helm, "Secret", keys, what)?;
        let budget = self.core.budget(ctx, budget::CHART)?;
        let client = self.services.cluster.client(what)?;
        let reading = format!("{what}: reading the chart's public keys");
        let pems = within(&reading, budget, async {
            auth::public_keys(&client, &namespace, keys, what).await
        })
        .await?;
        let trusted = TrustedKeys::from_pems(pems.iter().map(|(n, p)| (n.clone(), p.as_bytes())))
            .map_err(|e| HostError::Invalid(format!("{what}: Secret {keys:?}: {e}")))?;
        let fingerprint = crate::helm::sha256_prefix(
            pems.iter()
                .flat_map(|(n, p)| [n.as_bytes(), p.as_bytes()])
                .collect::<Vec<_>>()
                .concat()
                .as_slice(),
            32,
        );
        let releases = self.services.config.releases.clone();
        let verifying = format!("{what}: verifying the chart's signature");
        let verdict = within(&verifying, budget, async {
            Ok(releases
                .verify_chart(
                    reference,
                    version,
                    plain_http,
                    auth,
                    (&fingerprint, &trusted),
                )
                .await)
        })
        .await?;
        verdict.map(|_| ()).map_err(|why| {
            HostError::Forbidden(format!(
                "{what}: chart {reference} version {version} is not verified: {why}"
            ))
            .into()
        })
    }

    /// The credentials and TLS material the chart source's Secrets hold; each Secret must be named by the object
    /// in its own namespace, and the plugin granted Secrets.
    async fn chart_auth(
        &mut self,
        ctx: &Resource<CallContext>,
        what: &str,
        chart: &wit::ChartPull,
    ) -> Result<Option<ChartAuth>, HostFailure> {
        if chart.credentials.is_none() && chart.tls.is_none() {
            return Ok(None);
        }
        if !self.core.grants.allows(Capability::Secrets) {
            let names: Vec<&str> = [&chart.credentials, &chart.tls]
                .into_iter()
                .flatten()
                .map(String::as_str)
                .collect();
            let reason = format!(
                "chart credentials from Secret {:?} need the \"secrets\" grant",
                names.join(", ")
            );
            return Err(self.core.denied(Capability::Secrets, what, &reason).into());
        }
        let mut found = ChartAuth::default();
        for (name, is_tls) in [(&chart.credentials, false), (&chart.tls, true)] {
            let Some(name) = name else { continue };
            let namespace =
                self.core
                    .named_local_source(ctx, Capability::Helm, "Secret", name, what)?;
            let budget = self.core.budget(ctx, budget::SECRET)?;
            let client = self.services.cluster.client(what)?;
            let reading = format!("{what}: reading chart Secret {name:?}");
            within(&reading, budget, async {
                if is_tls {
                    auth::tls(&client, &namespace, name, &mut found, what).await
                } else {
                    auth::credentials(&client, &namespace, name, &mut found, what).await
                }
            })
            .await?;
        }
        Ok(Some(found))
    }

    /// An install or upgrade step as the release wanted.
    async fn apply_request(
        &mut self,
        ctx: &Resource<CallContext>,
        what: &str,
        a: &wit::ApplyRequest,
    ) -> Result<Wanted, HostFailure> {
        let Resolved {
            location: chart,
            version,
            values,
            plain_http,
            auth,
            post_render,
            content,
        } = self.release_source(ctx, what, &a.source).await?;
        let skip_crds = a.crds == wit::CrdPolicy::Skip;
        let replace_crds = a.crds == wit::CrdPolicy::CreateReplace;
        let method = apply_method(a.apply_method, a.force, what)?;
        // Adopting objects reaches past what the release made: another release's objects, or objects made by
        // hand. A grant of its own, so `helm` alone never lets a plugin take them over.
        if a.take_ownership && !self.core.grants.allows(Capability::HelmTakeOwnership) {
            let reason = "taking ownership of existing objects (take-ownership) needs the grant \
                          \"helm-take-ownership\"";
            return Err(self.core.denied(Capability::Helm, what, reason).into());
        }
        let health = health_checks(&a.health_checks, what)?;
        Ok(Wanted {
            chart,
            version,
            values,
            settings: settings(&a.options),
            install: InstallSettings {
                create_namespace: a.create_namespace,
                skip_crds,
                rollback_on_failure: a.rollback_on_failure,
                replace: a.replace,
                replace_crds,
            },
            upgrade: UpgradeSettings {
                skip_crds,
                rollback_on_failure: a.rollback_on_failure,
                cleanup_on_fail: a.cleanup_on_fail,
                max_history: a.max_history,
                force: a.force,
                replace_crds,
                reuse_values: a.reuse_values,
            },
            apply: ApplySettings {
                method,
                take_ownership: a.take_ownership,
                skip_schema_validation: a.skip_schema_validation,
                skip_openapi_validation: a.skip_openapi_validation,
            },
            plain_http,
            auth,
            post_render,
            content,
            health,
        })
    }

    /// Counts one start against this call's [`STARTS_PER_CALL`], before any of the start's work: resolving a
    /// chart source costs network round trips, so a plugin looping over starts (each refused later or not) must
    /// meet the bound first.
    fn count_start(&mut self, what: &str) -> Result<(), HostFailure> {
        self.state.starts += 1;
        if self.state.starts > STARTS_PER_CALL {
            return Err(HostError::Unavailable(format!(
                "{what}: a call may start at most {STARTS_PER_CALL} Helm actions"
            ))
            .into());
        }
        Ok(())
    }

    /// Charges one Helm action to the plugin and the object ([`limits`]), once the start is known to be valid and
    /// allowed: over either, it is refused as `unavailable`, with the time to wait.
    fn take_start(&mut self, who: &Reconciled, what: &str) -> Result<(), HostFailure> {
        let key = format!("{}/{}/{}", who.kind, who.namespace, who.name);
        if let Err(wait) =
            self.services
                .config
                .budget
                .take(&self.core.plugin, &key, std::time::Instant::now())
        {
            tracing::warn!(plugin = %self.core.plugin, object = %key, "a Helm action was refused: over the plugin's or the object's action budget");
            return Err(HostError::Unavailable(format!(
                "{what}: over the Helm action budget of the plugin or this object; retry in {} s",
                wait.as_secs().max(1)
            ))
            .into());
        }
        Ok(())
    }

    /// Wakes the reconciled object when a background action it started ends.
    fn helm_wake(&self, who: &Reconciled) -> releases::Wake {
        let (group, kind, name) = (who.group.clone(), who.kind.clone(), who.name.clone());
        let namespace = Some(who.namespace.clone()).filter(|ns| !ns.is_empty());
        let wakeups = self.services.config.wakeups.clone();
        Arc::new(move || {
            wakeups.wake(&group, &kind, (namespace.clone(), name.clone()));
        })
    }
}

/// The reconciled object, as `helm` names it.
struct Reconciled {
    group: String,
    kind: String,
    namespace: String,
    name: String,
    uid: String,
    /// The release its user asked to adopt (`namespace/name`), if any.
    adopt: Option<String>,
}

impl Reconciled {
    /// The object as the owner of release `namespace/name`: its identity and UID, and whether its user
    /// annotated it to adopt exactly this release ([`ADOPT_ANNOTATION`]). Read from the object as the host
    /// observed it; a plugin cannot write annotations.
    fn owner_of(&self, namespace: &str, name: &str) -> Owner {
        let adopt = self
            .adopt
            .as_ref()
            .is_some_and(|wanted| *wanted == format!("{namespace}/{name}"));
        Owner::new(
            &self.group,
            &self.kind,
            &self.namespace,
            &self.name,
            &self.uid,
            adopt,
        )
    }
}

/// What a release source resolves to.
struct Resolved {
    location: ChartLocation,
    /// The exact version (a constraint resolved).
    version: String,
    /// The merged values, a JSON object.
    values: Value,
    plain_http: bool,
    auth: Option<ChartAuth>,
    /// The post-render spec, checked.
    post_render: Option<Value>,
    /// The content digest the chart source publishes for the version; None when unknown.
    content: Option<String>,
}

fn check_release_name(name: &str) -> Result<(), String> {
    if name.is_empty() || name.len() > MAX_RELEASE_NAME {
        return Err(format!(
            "release name {name:?} must have 1 to {MAX_RELEASE_NAME} characters"
        ));
    }
    if !dns_subdomain(name) {
        return Err(format!(
            "release name {name:?} must consist of lower-case letters, digits, '-' and '.', and start and end \
             with a letter or digit"
        ));
    }
    Ok(())
}

/// A ServiceAccount name as the API server takes one (a DNS subdomain of at most 253 characters); anything else
/// would be spliced into the impersonated user name (`system:serviceaccount:NS:NAME`), colons included.
pub fn check_service_account(name: &str) -> Result<(), String> {
    if name.len() <= 253 && dns_subdomain(name) {
        Ok(())
    } else {
        Err("not a valid ServiceAccount name (lower-case letters, digits, '-' and '.', at most 253)".into())
    }
}

fn check_namespace(namespace: &str) -> Result<(), String> {
    let label = namespace.len() <= 63 && dns_subdomain(namespace) && !namespace.contains('.');
    if label {
        Ok(())
    } else {
        Err(format!(
            "namespace {namespace:?} is not a valid namespace name"
        ))
    }
}

fn dns_subdomain(text: &str) -> bool {
    !text.is_empty()
        && text.split('.').all(|part| {
            !part.is_empty()
                && part
                    .bytes()
                    .all(|b| b.is_ascii_lowercase() || b.is_ascii_digit() || b == b'-')
                && !part.starts_with('-')
                && !part.ends_with('-')
        })
}

fn settings(o: &wit::ActionOptions) -> Settings {
    Settings {
        timeout_seconds: o.timeout_seconds.max(1),
        wait_ready: o.wait == wit::WaitStrategy::Ready,
        wait_for_jobs: o.wait_for_jobs,
        disable_hooks: o.disable_hooks,
    }
}

/// The apply method a step asked for. Helm replaces objects (`force`) only client-side and refuses the two
/// together, so a forced step that asks for server-side apply is `invalid`, and `auto` means client-side.
/// The most health checks one step takes: one per kind the chart makes is plenty, and each is read on every poll.
const MAX_HEALTH_CHECKS: usize = 32;

/// A step's health checks, each expression compiled behind the CEL guard: bad ones are `invalid`, naming the
/// field.
fn health_checks(checks: &[wit::HealthCheck], what: &str) -> Result<Vec<HealthCheck>, HostError> {
    if checks.len() > MAX_HEALTH_CHECKS {
        return Err(HostError::Invalid(format!(
            "{what}: {} health checks; at most {MAX_HEALTH_CHECKS} are taken",
            checks.len()
        )));
    }
    let checks: Vec<HealthCheck> = checks
        .iter()
        .map(|h| HealthCheck {
            api_version: h.api_version.clone(),
            kind: h.kind.clone(),
            current: h.current.clone(),
            in_progress: h.in_progress.clone(),
            failed: h.failed.clone(),
        })
        .collect();
    health::check_expressions(&checks).map_err(|e| HostError::Invalid(format!("{what}: {e}")))?;
    Ok(checks)
}

fn apply_method(
    method: wit::ApplyMethod,
    force: bool,
    what: &str,
) -> Result<ApplyMethod, HostError> {
    Ok(match (method, force) {
        (wit::ApplyMethod::ServerSide, true) => {
            return Err(HostError::Invalid(format!(
                "{what}: force replaces objects, which Helm does only client-side: ask for apply-method \
                 client-side or auto with it"
            )));
        }
        (_, true) | (wit::ApplyMethod::ClientSide, false) => ApplyMethod::ClientSide,
        (wit::ApplyMethod::ServerSide, false) => ApplyMethod::ServerSide,
        (wit::ApplyMethod::Auto, false) => ApplyMethod::Auto,
    })
}

/// A release failure as the plugin sees it: a workload cluster that did not answer is `unavailable`; one that
/// refused is `unauthenticated`/`forbidden`; another action running, or a release that is not the object's own,
/// is `conflict`; release Secrets that do not decode are `other`.
fn release_error(what: &str, e: ReleaseError) -> HostError {
    match e {
        ReleaseError::Unavailable(why) => HostError::Unavailable(why),
        ReleaseError::Storage(crate::helm::storage::StorageError::Kube { source, .. }) => {
            HostError::from_kube(&format!("{what}: reading the release"), source)
        }
        ReleaseError::Storage(other) => HostError::Other(format!("{what}: {other}")),
        e @ ReleaseError::Busy(_) => HostError::Conflict(format!("{what}: {e}")),
        ReleaseError::Inapplicable(why) => HostError::Invalid(format!("{what}: {why}")),
        e @ ReleaseError::Resolve { .. } => HostError::Other(format!("{what}: {e}")),
        ReleaseError::Drift(DriftError::Kube { object, source }) => {
            HostError::from_kube(&format!("{what}: {object}"), source)
        }
        ReleaseError::Drift(DriftError::Resolve(ManifestError::Discovery {
            object,
            api_version,
            source,
        })) => HostError::from_kube(
            &format!("{what}: {object} (discovering {api_version})"),
            source,
        ),
        ReleaseError::Drift(other) => HostError::Other(format!("{what}: {other}")),
        // Another object's release is left alone, as a Secret without the object's owner label is.
        e @ ReleaseError::NotOwned { .. } => HostError::Conflict(format!("{what}: {e}")),
    }
}

fn to_action(a: releases::Action) -> wit::Action {
    match a {
        releases::Action::Install => wit::Action::Install,
        releases::Action::Upgrade => wit::Action::Upgrade,
        releases::Action::Uninstall => wit::Action::Uninstall,
        releases::Action::Rollback => wit::Action::Rollback,
        releases::Action::Test => wit::Action::Test,
        releases::Action::Recover => wit::Action::Recover,
        releases::Action::Correct => wit::Action::Correct,
    }
}

fn to_revision(r: StoredRevision) -> wit::Revision {
    wit::Revision {
        revision: r.revision,
        status: r.status,
        chart: r.chart,
        chart_version: r.chart_version,
        app_version: r.app_version,
        updated: r.updated,
        description: r.description,
        digest: r.digest,
    }
}

fn drift_ignore(i: &wit::DriftIgnore) -> Ignore {
    Ignore {
        paths: i.paths.clone(),
        target: i.target.as_ref().map(|t| DriftTarget {
            group: t.group.clone(),
            version: t.version.clone(),
            kind: t.kind.clone(),
            name: t.name.clone(),
            namespace: t.namespace.clone(),
            label_selector: t.label_selector.clone(),
            annotation_selector: t.annotation_selector.clone(),
        }),
    }
}

fn running_record(r: Running) -> wit::StepRecord {
    wit::StepRecord {
        id: r.id,
        action: to_action(r.action),
        digest: r.digest,
        started: r.started,
        finished: String::new(),
        revision: 0,
        error: None,
        cancelled: false,
    }
}

fn outcome_record(o: Outcome) -> wit::StepRecord {
    wit::StepRecord {
        id: o.id,
        action: to_action(o.action),
        digest: o.digest,
        started: o.started,
        finished: o.finished,
        revision: o.revision,
        error: o.error,
        cancelled: o.cancelled,
    }
}

fn release_state(
    revisions: Vec<StoredRevision>,
    inventory: Option<Arc<Vec<Owned>>>,
) -> Option<wit::ReleaseState> {
    let mut revisions = revisions.into_iter();
    revisions.next().map(|current| wit::ReleaseState {
        current: to_revision(current),
        history: revisions.map(to_revision).collect(),
        inventory: inventory.map(|owned| {
            owned
                .iter()
                .map(|o| wit::OwnedObject {
                    api_version: o.api_version.clone(),
                    kind: o.kind.clone(),
                    namespace: o.namespace.clone(),
                    name: o.name.clone(),
                })
                .collect()
        }),
    })
}

fn to_observation(o: Observation, wanted: String, chart_version: String) -> wit::Observation {
    let tests = o
        .revisions
        .first()
        .map(|r| {
            r.tests
                .iter()
                .map(|t| wit::TestHook {
                    name: t.name.clone(),
                    phase: t.phase.clone(),
                    started: t.started.clone(),
                    completed: t.completed.clone(),
                })
                .collect()
        })
        .unwrap_or_default();
    wit::Observation {
        release: release_state(o.revisions, o.inventory),
        tests,
        running: o.running.map(running_record),
        last: o.last.map(outcome_record),
        wanted,
        chart_version,
    }
}

impl wit::Host for HelmCap<'_> {
    async fn observe(
        &mut self,
        ctx: Resource<CallContext>,
        release: wit::ReleaseRef,
        source: Option<wit::ReleaseSource>,
    ) -> Result<wit::Observation, HostFailure> {
        let what = format!("Helm release {}", quoted(&release.namespace, &release.name));
        let scope = self.release_scope(&ctx, &release, Reach::Spec, &what)?;
        let who = self.reconciled(&ctx)?;
        let owner = who.owner_of(&release.namespace, &release.name);
        let resolved = match &source {
            Some(source) => Some(self.release_source(&ctx, &what, source).await?),
            None => None,
        };
        let (cluster, budget) = self.helm_cluster(&ctx, scope, &release, &what).await?;
        let releases = self.services.config.releases.clone();
        let op = async {
            releases
                .observe(&cluster, &release.namespace, &release.name, &owner)
                .await
                .map_err(|e| release_error(&what, e))
        };
        let observed = within(&what, budget, op).await?;
        // What a revision made from the source would carry, judged against the latest one, as `start` judges it.
        let (wanted, chart_version) = match resolved {
            Some(r) => (
                releases::wanted_digest(
                    (&r.location, &r.version, &r.values),
                    r.post_render.as_ref(),
                    r.content.as_deref(),
                    observed.revisions.first(),
                ),
                r.version,
            ),
            None => (String::new(), String::new()),
        };
        Ok(to_observation(observed, wanted, chart_version))
    }

    async fn detect_drift(
        &mut self,
        ctx: Resource<CallContext>,
        release: wit::ReleaseRef,
        ignore: Vec<wit::DriftIgnore>,
    ) -> Result<Vec<wit::Drifted>, HostFailure> {
        let what = format!(
            "drift of Helm release {}",
            quoted(&release.namespace, &release.name)
        );
        let scope = self.release_scope(&ctx, &release, Reach::Spec, &what)?;
        let who = self.reconciled(&ctx)?;
        let owner = who.owner_of(&release.namespace, &release.name);
        let ignore: Vec<Ignore> = ignore.iter().map(drift_ignore).collect();
        let (cluster, budget) = self.helm_cluster(&ctx, scope, &release, &what).await?;
        let releases = self.services.config.releases.clone();
        let op = async {
            releases
                .drift(&cluster, &release.namespace, &release.name, &ignore, &owner)
                .await
                .map_err(|e| release_error(&what, e))
        };
        let answer = within(&what, budget, op).await?;
        let drifted = answer;
        Ok(drifted
            .into_iter()
            .map(|d| wit::Drifted {
                api_version: d.api_version,
                kind: d.kind,
                namespace: d.namespace,
                name: d.name,
                reason: match d.reason {
                    Reason::Missing => wit::DriftReason::Missing,
                    Reason::Modified => wit::DriftReason::Modified,
                },
                fields: d.fields,
            })
            .collect())
    }

    async fn start(
        &mut self,
        ctx: Resource<CallContext>,
        release: wit::ReleaseRef,
        step: wit::Step,
    ) -> Result<wit::StepRecord, HostFailure> {
        let what = format!("Helm release {}", quoted(&release.namespace, &release.name));
        self.count_start(&what)?;
        // Only an uninstall may go through a kubeconfig the plugin's status names: cleaning up a release this
        // object made (the ownership check below holds it to that).
        let reach = match step {
            wit::Step::Uninstall(_) => Reach::Cleanup,
            _ => Reach::Spec,
        };
        let scope = self.release_scope(&ctx, &release, reach, &what)?;
        let who = self.reconciled(&ctx)?;
        let owner = who.owner_of(&release.namespace, &release.name);
        let request = match &step {
            wit::Step::Install(a) | wit::Step::Upgrade(a) => {
                let wanted = self.apply_request(&ctx, &what, a).await?;
                if matches!(step, wit::Step::Install(_)) {
                    StepRequest::Install(Box::new(wanted))
                } else {
                    StepRequest::Upgrade(Box::new(wanted))
                }
            }
            wit::Step::Rollback(r) => StepRequest::Rollback(RollbackSettings {
                revision: r.revision,
                settings: settings(&r.options),
                force: r.force,
                cleanup_on_fail: r.cleanup_on_fail,
                max_history: r.max_history,
                method: apply_method(r.apply_method, r.force, &what)?,
            }),
            wit::Step::Uninstall(u) => StepRequest::Uninstall(UninstallSettings {
                settings: settings(&u.options),
                keep_history: u.keep_history,
                propagation: match u.propagation {
                    wit::DeletionPropagation::Background => Propagation::Background,
                    wit::DeletionPropagation::Foreground => Propagation::Foreground,
                    wit::DeletionPropagation::Orphan => Propagation::Orphan,
                },
            }),
            wit::Step::Test(t) => {
                let names = |exclude: bool| {
                    t.filters
                        .iter()
                        .filter(|f| f.exclude == exclude)
                        .map(|f| f.name.clone())
                        .collect()
                };
                StepRequest::Test(TestSettings {
                    timeout_seconds: t.timeout_seconds.max(1),
                    include: names(false),
                    exclude: names(true),
                })
            }
            wit::Step::Unlock => StepRequest::Unlock,
            wit::Step::CorrectDrift(ignore) => {
                StepRequest::CorrectDrift(ignore.iter().map(drift_ignore).collect())
            }
        };
        let (cluster, budget) = self.helm_cluster(&ctx, scope, &release, &what).await?;
        self.take_start(&who, &what)?;
        let wake = self.helm_wake(&who);
        let releases = self.services.config.releases.clone();
        let op = async {
            releases
                .start(
                    &cluster,
                    &release.namespace,
                    &release.name,
                    request,
                    &owner,
                    wake,
                )
                .await
                .map_err(|e| release_error(&what, e))
        };
        let answer = within(&what, budget, op).await?;
        Ok(running_record(answer))
    }

    async fn cancel(
        &mut self,
        ctx: Resource<CallContext>,
        release: wit::ReleaseRef,
        id: String,
    ) -> Result<bool, HostFailure> {
        let what = format!(
            "cancelling on Helm release {}",
            quoted(&release.namespace, &release.name)
        );
        // As observing: only through the kubeconfig the spec names, only the object's own release.
        let scope = self.release_scope(&ctx, &release, Reach::Spec, &what)?;
        let who = self.reconciled(&ctx)?;
        let owner = who.owner_of(&release.namespace, &release.name);
        let (cluster, budget) = self.helm_cluster(&ctx, scope, &release, &what).await?;
        let releases = self.services.config.releases.clone();
        let op = async {
            releases
                .cancel(&cluster, &release.namespace, &release.name, &owner, &id)
                .await
                .map_err(|e| release_error(&what, e))
        };
        Ok(within(&what, budget, op).await?)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn release_names_and_namespaces_follow_helms_rules() {
        assert!(check_release_name("demo").is_ok());
        assert!(check_release_name("my.app-1").is_ok());
        assert!(check_release_name(&"a".repeat(53)).is_ok());
        assert!(check_release_name(&"a".repeat(54)).is_err());
        for bad in ["", "Demo", "-x", "x-", "a_b", "a..b"] {
            assert!(check_release_name(bad).is_err(), "{bad:?}");
        }
        assert!(check_namespace("apps").is_ok());
        assert!(check_namespace("a.b").is_err());
        assert!(check_namespace(&"a".repeat(64)).is_err());
    }

    /// A plugin's health checks are its output: a flood, or an expression the CEL guard refuses, is `invalid`
    /// before any action starts, naming what is wrong.
    #[test]
    fn health_checks_are_bounded_and_guarded() {
        let check = |current: &str| wit::HealthCheck {
            api_version: "example.com/v1".into(),
            kind: "Widget".into(),
            current: current.into(),
            in_progress: String::new(),
            failed: String::new(),
        };
        let ok = health_checks(&[check("status.phase == 'Ready'")], "install").unwrap();
        assert_eq!(ok[0].kind, "Widget");
        let flood = vec![check("true"); MAX_HEALTH_CHECKS + 1];
        assert!(matches!(
            health_checks(&flood, "install"),
            Err(HostError::Invalid(m)) if m.contains("at most 32")
        ));
        for bad in ["status.n / 0 == 1", "'\\u{0}' == status.x", "", "status =="] {
            assert!(
                matches!(
                    health_checks(&[check("true"), check(bad)], "install"),
                    Err(HostError::Invalid(m)) if m.starts_with("install: healthCheckExprs[1].current")
                ),
                "{bad:?}"
            );
        }
    }
}

#[cfg(test)]
mod grant_checks {
    use serde_json::json;
    use wit::Host as _;

    use super::*;
    use crate::capabilities::call::testing::{KUBECONFIG, NS, TestCall, management};

    /// The spec names the kubeconfig `edge`, the values Secret `db` and the chart credentials `registry`; the
    /// status names `admin`, a kubeconfig the plugin wrote there.
    fn call(grants: &[&str]) -> TestCall {
        let object = json!({"apiVersion": "omni.texashpc.com/v1alpha1", "kind": "OmniHelmRelease",
            "spec": {"kubeconfig": "edge", "values": "db", "credentials": "registry"},
            "status": {"kubeconfig": "admin"}});
        let fields = [
            ("spec.kubeconfig", None),
            ("spec.values", None),
            ("spec.credentials", None),
            ("status.kubeconfig", None),
        ];
        TestCall::new(grants, object, &fields)
    }

    fn services() -> Services {
        Services {
            config: HelmSettings {
                sources: ChartSources::only(["oci://charts.example/team"]).expect("sources"),
                namespaces: TargetNamespaces::only(["apps"]).expect("namespaces"),
                ..HelmSettings::default()
            },
            cluster: management(&[
                (NS, "edge", "kubeconfig", KUBECONFIG),
                (NS, "admin", "kubeconfig", KUBECONFIG),
                (NS, "loot", "kubeconfig", KUBECONFIG),
                (NS, "db", "values.yaml", "a: 1"),
                (NS, "registry", "username", "u"),
            ]),
        }
    }

    fn release(kubeconfig: &str, namespace: &str) -> wit::ReleaseRef {
        wit::ReleaseRef {
            kubeconfig: SecretKeyRef {
                namespace: None,
                name: kubeconfig.into(),
                key: "kubeconfig".into(),
            },
            name: "web".into(),
            namespace: namespace.into(),
            service_account: None,
        }
    }

    fn source(
        chart: &str,
        values: Vec<wit::ValuesPart>,
        credentials: Option<&str>,
    ) -> wit::ReleaseSource {
        wit::ReleaseSource {
            chart: wit::ChartPull {
                location: wit::ChartLocation::Oci(chart.into()),
                version: "1.0.0".into(),
                credentials: credentials.map(str::to_string),
                tls: None,
                verify: None,
                values_files: Vec::new(),
                ignore_missing_values_files: false,
            },
            values,
            post_render: None,
        }
    }

    fn from_secret(name: &str) -> wit::ValuesPart {
        wit::ValuesPart::Referenced(wit::ValuesRef {
            kind: wit::ValuesKind::Secret,
            name: name.into(),
            key: "values.yaml".into(),
            target_path: None,
            optional: false,
        })
    }

    const CHART: &str = "oci://charts.example/team/web";

    fn options() -> wit::ActionOptions {
        wit::ActionOptions {
            timeout_seconds: 60,
            wait: wit::WaitStrategy::Hooks,
            wait_for_jobs: false,
            disable_hooks: false,
        }
    }

    fn install(source: wit::ReleaseSource) -> wit::Step {
        wit::Step::Install(wit::ApplyRequest {
            source,
            options: options(),
            crds: wit::CrdPolicy::Skip,
            create_namespace: false,
            replace: false,
            force: false,
            cleanup_on_fail: false,
            rollback_on_failure: false,
            max_history: 0,
            apply_method: wit::ApplyMethod::Auto,
            take_ownership: false,
            skip_schema_validation: false,
            skip_openapi_validation: false,
            reuse_values: false,
            health_checks: Vec::new(),
        })
    }

    fn uninstall() -> wit::Step {
        wit::Step::Uninstall(wit::UninstallRequest {
            options: options(),
            keep_history: false,
            propagation: wit::DeletionPropagation::Background,
        })
    }

    async fn observe(
        call: &mut TestCall,
        release: wit::ReleaseRef,
        source: Option<wit::ReleaseSource>,
    ) -> Result<wit::Observation, HostFailure> {
        let services = services();
        let ctx = call.ctx();
        HelmCap::over(&mut call.core, &mut State::default(), &services)
            .observe(ctx, release, source)
            .await
    }

    async fn start(
        call: &mut TestCall,
        state: &mut State,
        release: wit::ReleaseRef,
        step: wit::Step,
    ) -> Result<wit::StepRecord, HostFailure> {
        let services = services();
        let ctx = call.ctx();
        HelmCap::over(&mut call.core, state, &services)
            .start(ctx, release, step)
            .await
    }

    #[tokio::test]
    async fn a_release_needs_the_helm_grant_and_a_kubeconfig_the_spec_names() {
        let mut ungranted = call(&[]);
        let answer = observe(&mut ungranted, release("edge", "apps"), None).await;
        ungranted.assert_denied(
            answer,
            "helm",
            "Helm release \"apps/web\"",
            "not granted \"helm\"",
        );
        let mut unnamed = call(&["helm"]);
        let answer = observe(&mut unnamed, release("loot", "apps"), None).await;
        unnamed.assert_denied(
            answer,
            "helm",
            "loot",
            "is not named by the reconciled object's spec",
        );
        let mut named = call(&["helm"]);
        let answer = observe(&mut named, release("edge", "apps"), None).await;
        // Through every check to the workload cluster, which nobody serves.
        named.assert_allowed(&answer);
        assert!(answer.is_err());
    }

    #[tokio::test]
    async fn a_kubeconfig_the_status_names_reaches_only_an_uninstall() {
        let mut reading = call(&["helm"]);
        let answer = observe(&mut reading, release("admin", "apps"), None).await;
        reading.assert_denied(
            answer,
            "helm",
            "admin",
            "a name in the status reaches only the removal",
        );
        let mut installing = call(&["helm"]);
        let step = install(source(CHART, Vec::new(), None));
        let answer = start(
            &mut installing,
            &mut State::default(),
            release("admin", "apps"),
            step,
        )
        .await;
        installing.assert_denied(
            answer,
            "helm",
            "admin",
            "a name in the status reaches only the removal",
        );
        let mut removing = call(&["helm"]);
        let answer = start(
            &mut removing,
            &mut State::default(),
            release("admin", "apps"),
            uninstall(),
        )
        .await;
        removing.assert_allowed(&answer);
        // Cancelling reaches what observing reaches: the spec's kubeconfig, never the status's.
        for (kubeconfig, allowed) in [("admin", false), ("edge", true)] {
            let mut cancelling = call(&["helm"]);
            let services = services();
            let ctx = cancelling.ctx();
            let answer = HelmCap::over(&mut cancelling.core, &mut State::default(), &services)
                .cancel(ctx, release(kubeconfig, "apps"), "1-1".into())
                .await;
            if allowed {
                cancelling.assert_allowed(&answer);
            } else {
                cancelling.assert_denied(
                    answer,
                    "helm",
                    "admin",
                    "a name in the status reaches only the removal",
                );
            }
        }
    }

    /// Taking ownership adopts objects another release (or a person) made: `helm` alone never allows it, for an
    /// install or an upgrade; `helm-take-ownership` does.
    #[tokio::test]
    async fn taking_ownership_of_existing_objects_needs_a_grant_of_its_own() {
        let taking = |upgrade: bool| {
            let wit::Step::Install(mut a) = install(source(CHART, Vec::new(), None)) else {
                unreachable!()
            };
            a.take_ownership = true;
            if upgrade {
                wit::Step::Upgrade(a)
            } else {
                wit::Step::Install(a)
            }
        };
        for upgrade in [false, true] {
            let mut helm_only = call(&["helm"]);
            let answer = start(
                &mut helm_only,
                &mut State::default(),
                release("edge", "apps"),
                taking(upgrade),
            )
            .await;
            helm_only.assert_denied(
                answer,
                "helm",
                "Helm release \"apps/web\"",
                "needs the grant \"helm-take-ownership\"",
            );
            let mut granted = call(&["helm", "helm-take-ownership"]);
            let answer = start(
                &mut granted,
                &mut State::default(),
                release("edge", "apps"),
                taking(upgrade),
            )
            .await;
            granted.assert_allowed(&answer);
        }
    }

    /// Naming the account a release acts as is granted (`helm-impersonate`), and the name must be a ServiceAccount
    /// name (it is spliced into `system:serviceaccount:NS:NAME`); the operator's default account applies to
    /// releases that name none, granted or not, so no plugin escapes it by staying silent.
    #[tokio::test]
    async fn impersonating_a_service_account_needs_a_grant_and_a_valid_name() {
        let named = |account: &str| wit::ReleaseRef {
            service_account: Some(account.into()),
            ..release("edge", "apps")
        };
        let mut ungranted = call(&["helm"]);
        let answer = observe(&mut ungranted, named("deployer"), None).await;
        ungranted.assert_denied(
            answer,
            "helm",
            "Helm release \"apps/web\"",
            "needs the grant \"helm-impersonate\"",
        );
        let mut granted = call(&["helm", "helm-impersonate"]);
        let answer = observe(&mut granted, named("deployer"), None).await;
        granted.assert_allowed(&answer);
        for bad in ["x:y", "Deployer", "", "a/b"] {
            let mut c = call(&["helm", "helm-impersonate"]);
            let answer = observe(&mut c, named(bad), None).await;
            assert!(
                matches!(&answer, Err(HostFailure::Host(HostError::Invalid(why))) if why.contains("service account")),
                "{bad:?}: {answer:?}"
            );
        }

        let mut c = call(&["helm", "helm-impersonate"]);
        let mut services = services();
        services.config.default_service_account = Some("deployer".into());
        let mut state = State::default();
        let mut cap = HelmCap::over(&mut c.core, &mut state, &services);
        assert_eq!(
            cap.impersonation(&release("edge", "apps"), "r").ok(),
            Some(Some("system:serviceaccount:apps:deployer".to_string())),
            "the default applies to a release that names none"
        );
        assert_eq!(
            cap.impersonation(&named("other"), "r").ok(),
            Some(Some("system:serviceaccount:apps:other".to_string())),
            "a named account wins over the default"
        );
    }

    /// Helm replaces objects only client-side: a forced step that asks for server-side apply is refused before
    /// anything runs, naming both; `auto` with force is allowed (and means client-side).
    #[tokio::test]
    async fn a_forced_step_cannot_ask_for_server_side_apply() {
        let wit::Step::Install(mut a) = install(source(CHART, Vec::new(), None)) else {
            unreachable!()
        };
        a.force = true;
        a.apply_method = wit::ApplyMethod::ServerSide;
        let mut forced = call(&["helm"]);
        let answer = start(
            &mut forced,
            &mut State::default(),
            release("edge", "apps"),
            wit::Step::Upgrade(a.clone()),
        )
        .await;
        match answer {
            Err(HostFailure::Host(HostError::Invalid(why))) => {
                assert!(
                    why.contains("force") && why.contains("client-side"),
                    "{why}"
                );
            }
            other => panic!("expected invalid, got {other:?}"),
        }
        assert_eq!(
            apply_method(wit::ApplyMethod::Auto, true, "r").ok(),
            Some(ApplyMethod::ClientSide)
        );
        assert_eq!(
            apply_method(wit::ApplyMethod::Auto, false, "r").ok(),
            Some(ApplyMethod::Auto)
        );
    }

    #[tokio::test]
    async fn a_release_lives_only_in_the_operators_target_namespaces_and_by_helms_naming_rules() {
        let mut elsewhere = call(&["helm"]);
        let answer = observe(&mut elsewhere, release("edge", "kube-system"), None).await;
        elsewhere.assert_denied(
            answer,
            "helm",
            "kube-system",
            "not among the operator's allowed target namespaces",
        );
        let mut badly_named = call(&["helm"]);
        let mut bad = release("edge", "apps");
        bad.name = "Web_1".into();
        let answer = observe(&mut badly_named, bad, None).await;
        assert!(
            matches!(answer, Err(HostFailure::Host(HostError::Invalid(_)))),
            "{answer:?}"
        );
    }

    #[tokio::test]
    async fn a_chart_comes_only_from_the_operators_allowed_sources() {
        let mut foreign = call(&["helm"]);
        let answer = observe(
            &mut foreign,
            release("edge", "apps"),
            Some(source("oci://evil.test/loot", Vec::new(), None)),
        )
        .await;
        foreign.assert_denied(
            answer,
            "helm",
            "evil.test",
            "not among the operator's allowed chart sources",
        );
        // A spelling that only looks like the allowed path is another path.
        let mut sibling = call(&["helm"]);
        let answer = observe(
            &mut sibling,
            release("edge", "apps"),
            Some(source(
                "oci://charts.example/team-evil/web",
                Vec::new(),
                None,
            )),
        )
        .await;
        sibling.assert_denied(
            answer,
            "helm",
            "team-evil",
            "not among the operator's allowed chart sources",
        );
        let mut allowed = call(&["helm"]);
        let answer = observe(
            &mut allowed,
            release("edge", "apps"),
            Some(source(CHART, Vec::new(), None)),
        )
        .await;
        allowed.assert_allowed(&answer);
    }

    #[tokio::test]
    async fn values_and_chart_credentials_from_secrets_need_the_secrets_grant_and_the_spec_naming_them()
     {
        let checks: [(&[&str], wit::ReleaseSource, &str, &str, &str); 4] = [
            (
                &["helm"],
                source(CHART, vec![from_secret("db")], None),
                "secrets",
                "db",
                "values from Secret \"db\" need the \"secrets\" grant",
            ),
            (
                &["helm", "secrets"],
                source(CHART, vec![from_secret("kube-root")], None),
                "helm",
                "kube-root",
                "is not named by the reconciled object's spec",
            ),
            (
                &["helm"],
                source(CHART, Vec::new(), Some("registry")),
                "secrets",
                "registry",
                "chart credentials from Secret \"registry\" need the \"secrets\" grant",
            ),
            (
                &["helm", "secrets"],
                source(CHART, Vec::new(), Some("kube-root")),
                "helm",
                "kube-root",
                "is not named by the reconciled object's spec",
            ),
        ];
        for (grants, source, capability, target, why) in checks {
            let mut call = call(grants);
            let answer = observe(&mut call, release("edge", "apps"), Some(source)).await;
            call.assert_denied(answer, capability, target, why);
        }
        let mut allowed = call(&["helm", "secrets"]);
        let answer = observe(
            &mut allowed,
            release("edge", "apps"),
            Some(source(CHART, vec![from_secret("db")], None)),
        )
        .await;
        allowed.assert_allowed(&answer);
    }

    #[tokio::test]
    async fn a_call_starts_a_bounded_number_of_actions() {
        let mut looping = call(&["helm"]);
        let mut state = State::default();
        for _ in 0..STARTS_PER_CALL {
            let answer = start(
                &mut looping,
                &mut state,
                release("edge", "apps"),
                uninstall(),
            )
            .await;
            looping.assert_allowed(&answer);
        }
        let answer = start(
            &mut looping,
            &mut state,
            release("edge", "apps"),
            uninstall(),
        )
        .await;
        assert!(
            matches!(&answer, Err(HostFailure::Host(HostError::Unavailable(m))) if m.contains(&format!("at most {STARTS_PER_CALL} Helm actions"))),
            "{answer:?}"
        );
    }

    /// Starts refused for what they ask (here: forced server-side apply) count against the call's bound too, and
    /// past it a start is refused before any of its work: a loop of starts cannot make the host resolve chart
    /// sources without end.
    #[tokio::test]
    async fn refused_starts_count_against_the_call() {
        let mut looping = call(&["helm"]);
        let mut state = State::default();
        let forced = || {
            let mut step = install(source(CHART, Vec::new(), None));
            if let wit::Step::Install(a) = &mut step {
                a.force = true;
                a.apply_method = wit::ApplyMethod::ServerSide;
            }
            step
        };
        for _ in 0..STARTS_PER_CALL {
            let answer = start(&mut looping, &mut state, release("edge", "apps"), forced()).await;
            assert!(
                matches!(&answer, Err(HostFailure::Host(HostError::Invalid(m))) if m.contains("force replaces objects")),
                "{answer:?}"
            );
        }
        let answer = start(&mut looping, &mut state, release("edge", "apps"), forced()).await;
        assert!(
            matches!(&answer, Err(HostFailure::Host(HostError::Unavailable(m))) if m.contains("at most")),
            "{answer:?}"
        );
    }
}
