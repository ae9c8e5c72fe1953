//! Admission: validating webhooks answered by each plugin's `validate` export, with the Go operator's paths,
//! names and messages, served over TLS with certificates the operator makes and
//! renews itself ([`certs`]; no cert-manager).
//!
//! The Go operator has no mutating webhook (defaults come from the CRD schemas or are applied in controller
//! code), so neither has this one. Beyond it, the webhooks of the kinds whose deletion destroys something remote
//! also receive DELETE, for the opt-in deletion guard ([`guard`]).

pub mod certs;
pub mod guard;
pub mod review;
pub mod server;

use std::net::SocketAddr;
use std::sync::Arc;
use std::time::Duration;

use anyhow::{Context, Result};
use serde_json::{Value, json};

pub use certs::{CertSettings, ServingCert};
pub use server::{FailurePolicy, Webhooks, validate_path, webhook_name};

use crate::runtime::PluginRegistry;

/// How much of a name, path, group, version or kind from a request an answer or a log line quotes: the longest a
/// real one can be (a name or group is a DNS subdomain, 253 characters). `fuzz_admission_reviews` found answers
/// of 140 KB made from a 70 KB group.
const MAX_QUOTED: usize = 253;

/// What a dry run of one of the operator's kinds would do, in one line (`omni-operator plan`'s summary), returned
/// to the client as an admission warning so `kubectl apply --dry-run=server`, Flux and Argo CD diffs show it.
pub trait Preview: Send + Sync + std::fmt::Debug {
    /// The one-line summary of applying `object`, or why it could not be made.
    fn summary<'a>(
        &'a self,
        object: &'a serde_json::Value,
    ) -> std::pin::Pin<Box<dyn std::future::Future<Output = Result<String, String>> + Send + 'a>>;
}

/// The field manager of the dry runs `omni-operator plan` sends while it plans: their reviews are not previewed.
pub const PREVIEW_FIELD_MANAGER: &str = "omni-operator-plan";

/// How the webhook server runs.
#[derive(Debug, Clone)]
pub struct AdmissionOptions {
    pub listen: SocketAddr,
    /// How long a plugin's `validate` may take; the webhook configuration's `timeoutSeconds` should exceed it.
    pub deadline: Duration,
    pub failure: FailurePolicy,
    pub certs: CertSettings,
    /// How often the certificates are checked for renewal.
    pub check_every: Duration,
    /// Previews dry runs of allowed creates and updates; None answers them as any other request.
    pub preview: Option<Arc<dyn Preview>>,
}

/// A running webhook server.
pub struct Admission {
    pub addr: SocketAddr,
    /// The CA bundle (PEM) clients trust, when the certificates were ready at start.
    pub ca_bundle: Option<String>,
    pub webhooks: Arc<Webhooks>,
    pub serving: Arc<ServingCert>,
}

/// Binds the listener, makes sure the certificates exist (and the webhook configurations trust them) before
/// answering, then serves and keeps the certificates current until `shutdown`. A failure to write the
/// certificates at start is logged and retried: the webhooks start answering once it succeeds.
pub async fn start(
    client: kube::Client,
    registry: Arc<PluginRegistry>,
    options: AdmissionOptions,
    shutdown: impl std::future::Future<Output = ()> + Clone + Send + 'static,
) -> Result<Admission> {
    let listener = tokio::net::TcpListener::bind(options.listen)
        .await
        .with_context(|| format!("binding the webhook server to {}", options.listen))?;
    let addr = listener
        .local_addr()
        .context("the webhook server's bound address")?;
    let serving = Arc::new(ServingCert::default());
    let now = jiff::Timestamp::now().as_second();
    let mut ca_bundle = None;
    match certs::ensure(&client, &options.certs, now).await {
        Ok(bundle) => {
            // The CA is trusted before the certificate it signed is presented.
            if let Err(e) = certs::inject_ca(
                &client,
                &options.certs.webhook_configurations,
                &bundle.ca_bundle,
            )
            .await
            {
                tracing::warn!(error = %format!("{e:#}"), "could not update the webhook caBundle");
            }
            serving.set(bundle.tls()?);
            ca_bundle = Some(bundle.ca_bundle.clone());
        }
        Err(e) => {
            tracing::error!(error = %format!("{e:#}"), "webhook certificates not ready; retrying")
        }
    }
    let mut webhooks = Webhooks::new(registry, options.deadline, options.failure);
    if let Some(preview) = options.preview.clone() {
        webhooks = webhooks.with_preview(preview);
    }
    let webhooks = Arc::new(webhooks);
    tokio::spawn(certs::maintain(
        client,
        options.certs.clone(),
        serving.clone(),
        options.check_every,
        shutdown.clone(),
    ));
    {
        let (serving, webhooks) = (serving.clone(), webhooks.clone());
        tokio::spawn(async move {
            if let Err(e) = server::serve(listener, serving, webhooks, shutdown).await {
                tracing::error!(error = %format!("{e:#}"), "the webhook server stopped");
            }
        });
    }
    tracing::info!(%addr, "admission webhooks served");
    Ok(Admission {
        addr,
        ca_bundle,
        webhooks,
        serving,
    })
}

/// Where the API server sends reviews.
#[derive(Debug, Clone)]
pub enum Target {
    /// `clientConfig.url`: this base URL plus each kind's path (`dev`, where the operator is a local process).
    Url(String),
    /// `clientConfig.service` (in a cluster).
    Service {
        namespace: String,
        name: String,
        port: i32,
    },
}

/// One kind the webhooks validate.
#[derive(Debug, Clone)]
pub struct WebhookKind {
    pub group: String,
    pub version: String,
    pub kind: String,
    pub plural: String,
}

/// A ValidatingWebhookConfiguration as the Go operator registers it: one webhook per kind, CREATE and
/// UPDATE, `sideEffects: None`, AdmissionReview v1, no selectors; DELETE too for the guarded kinds.
pub fn configuration(
    name: &str,
    kinds: &[WebhookKind],
    target: &Target,
    failure: FailurePolicy,
    timeout_seconds: u32,
    ca_bundle: Option<&str>,
) -> Value {
    let webhooks: Vec<Value> = kinds
        .iter()
        .map(|k| {
            let path = validate_path(&k.group, &k.version, &k.kind);
            let mut client_config = match target {
                Target::Url(base) => json!({"url": format!("{}{path}", base.trim_end_matches('/'))}),
                Target::Service {
                    namespace,
                    name,
                    port,
                } => json!({"service": {"namespace": namespace, "name": name, "path": path, "port": port}}),
            };
            if let Some(ca) = ca_bundle {
                client_config["caBundle"] = json!(ca);
            }
            json!({
                "name": webhook_name(&k.version, &k.kind),
                "admissionReviewVersions": ["v1"],
                "sideEffects": "None",
                "failurePolicy": failure.name(),
                "timeoutSeconds": timeout_seconds,
                "clientConfig": client_config,
                "rules": [{
                    "apiGroups": [k.group],
                    "apiVersions": [k.version],
                    "operations": if guard::GUARDED.contains(&k.kind.as_str()) {
                        json!(["CREATE", "UPDATE", "DELETE"])
                    } else {
                        json!(["CREATE", "UPDATE"])
                    },
                    "resources": [k.plural],
                }],
            })
        })
        .collect();
    json!({
        "apiVersion": "admissionregistration.k8s.io/v1",
        "kind": "ValidatingWebhookConfiguration",
        "metadata": {"name": name, "labels": {"app.kubernetes.io/managed-by": "omni-operator"}},
        "webhooks": webhooks,
    })
}

/// The kinds the registry serves, with their plurals from the API server's discovery; kinds it does not serve
/// (their CRD is not installed) are left out.
pub async fn served_kinds(
    client: &kube::Client,
    registry: &PluginRegistry,
) -> Result<Vec<WebhookKind>> {
    let mut out = Vec::new();
    for (_, (gvk, _)) in registry.kinds() {
        let gvk_k = kube::api::GroupVersionKind::gvk(&gvk.group, &gvk.version, &gvk.kind);
        match kube::discovery::pinned_kind(client, &gvk_k).await {
            Ok((resource, _)) => out.push(WebhookKind {
                group: gvk.group.clone(),
                version: gvk.version.clone(),
                kind: gvk.kind.clone(),
                plural: resource.plural,
            }),
            Err(e) => {
                tracing::warn!(kind = %gvk.kind, error = %e, "kind not served by the API server; no webhook for it")
            }
        }
    }
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_configuration_has_one_webhook_per_kind_as_the_go_operator_registers_them() {
        let kinds = [WebhookKind {
            group: "omni.texashpc.com".into(),
            version: "v1alpha1".into(),
            kind: "OmniSecretSync".into(),
            plural: "omnisecretsyncs".into(),
        }];
        let service = Target::Service {
            namespace: "ops".into(),
            name: "omni-operator-webhook-service".into(),
            port: 443,
        };
        let c = configuration("vwc", &kinds, &service, FailurePolicy::Fail, 10, None);
        let hook = &c["webhooks"][0];
        assert_eq!(hook["name"], "vomnisecretsync-v1alpha1.kb.io");
        assert_eq!(hook["failurePolicy"], "Fail");
        assert_eq!(hook["sideEffects"], "None");
        assert_eq!(
            hook["clientConfig"]["service"]["path"],
            "/validate-omni-texashpc-com-v1alpha1-omnisecretsync"
        );
        assert_eq!(hook["rules"][0]["operations"], json!(["CREATE", "UPDATE"]));
        assert_eq!(hook["rules"][0]["resources"], json!(["omnisecretsyncs"]));
        assert!(hook["clientConfig"].get("caBundle").is_none());
        let cluster = [WebhookKind {
            group: "omni.texashpc.com".into(),
            version: "v1alpha1".into(),
            kind: "OmniCluster".into(),
            plural: "omniclusters".into(),
        }];
        let c = configuration("vwc", &cluster, &service, FailurePolicy::Fail, 10, None);
        assert_eq!(
            c["webhooks"][0]["rules"][0]["operations"],
            json!(["CREATE", "UPDATE", "DELETE"]),
            "the deletion guard's kinds receive DELETE"
        );
        let url = Target::Url("https://127.0.0.1:9443/".into());
        let c = configuration("vwc", &kinds, &url, FailurePolicy::Ignore, 5, Some("Q0E="));
        assert_eq!(
            c["webhooks"][0]["clientConfig"]["url"],
            "https://127.0.0.1:9443/validate-omni-texashpc-com-v1alpha1-omnisecretsync"
        );
        assert_eq!(c["webhooks"][0]["clientConfig"]["caBundle"], "Q0E=");
    }
}
