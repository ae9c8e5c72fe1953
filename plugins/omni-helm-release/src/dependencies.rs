//! What must be ready before a release is installed or upgraded: the OmniHelmReleases in `spec.dependsOn` (Flux's
//! field and its rule: the dependency's `Ready` is `True` for its current generation), and, implicitly, the
//! OmniKubeconfigExport that writes the kubeconfig Secret the release uses, when one does. A cycle through
//! `dependsOn` is refused with the cycle spelled out, where Flux would wait for ever.
//!
//! Only installs and upgrades wait: a release already deployed from what is wanted stays Ready while a dependency
//! changes, and deletion never waits.

use std::collections::BTreeSet;

use omni_api::{API_VERSION, OmniHelmReleaseSpec, OmniKind, OmniKubeconfigExportSpec};
use omni_plugin_sdk::{Host, HostError, ListQuery, ObjectRef, Value};

use crate::messages::q;
use crate::object::ReleaseObject;
use crate::ready_expr;

/// How many releases a dependency walk looks at before it gives up looking for a cycle.
const MAX_WALK: usize = 64;

/// Why the release cannot be installed or upgraded yet.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Blocked {
    /// Waiting for these (Flux's `DependencyNotReady`).
    NotReady(String),
    /// `dependsOn` leads back to this release: nothing will ever be ready.
    Cycle(String),
}

/// `namespace/name` of a dependency as the object lists it.
fn key(own: &str, dep: &Value) -> Option<(String, String)> {
    let name = dep["name"].as_str().filter(|n| !n.is_empty())?;
    let namespace = dep["namespace"]
        .as_str()
        .filter(|n| !n.is_empty())
        .unwrap_or(own);
    Some((namespace.to_string(), name.to_string()))
}

/// Each `dependsOn` entry's `readyExpr`, in the order of [`dependencies_of`] (entries without a name left out
/// alike).
fn ready_exprs(object: &Value) -> Vec<Option<String>> {
    object["spec"]["dependsOn"]
        .as_array()
        .map(|deps| {
            deps.iter()
                .filter(|d| d["name"].as_str().is_some_and(|n| !n.is_empty()))
                .map(|d| {
                    d["readyExpr"]
                        .as_str()
                        .filter(|e| !e.trim().is_empty())
                        .map(str::to_string)
                })
                .collect()
        })
        .unwrap_or_default()
}

fn dependencies_of(object: &Value, own: &str) -> Vec<(String, String)> {
    object["spec"]["dependsOn"]
        .as_array()
        .map(|deps| deps.iter().filter_map(|d| key(own, d)).collect())
        .unwrap_or_default()
}

fn get<H: Host>(host: &H, namespace: &str, name: &str) -> Result<Option<Value>, HostError> {
    host.kube_get(&ObjectRef {
        api_version: API_VERSION.into(),
        kind: OmniHelmReleaseSpec::KIND.into(),
        namespace: Some(namespace.into()),
        name: name.into(),
    })
}

/// `Ready=True` observed for the current generation.
pub fn ready(object: &Value) -> bool {
    let generation = object["metadata"]["generation"].as_i64();
    let observed = object["status"]["observedGeneration"].as_i64();
    let ready = object["status"]["conditions"].as_array().is_some_and(|c| {
        c.iter()
            .any(|c| c["type"] == "Ready" && c["status"] == "True")
    });
    ready && (generation.is_none() || generation == observed)
}

/// None when everything the release depends on is ready.
pub fn blocked<H: Host>(host: &H, release: &ReleaseObject) -> Result<Option<Blocked>, HostError> {
    let own = release.namespace().to_string();
    let me = (own.clone(), release.typed.name().to_string());
    let direct = dependencies_of(&release.raw, &own);
    if let Some(cycle) = find_cycle(host, &me, &direct)? {
        return Ok(Some(Blocked::Cycle(cycle)));
    }
    let mut waiting = Vec::new();
    let exprs = ready_exprs(&release.raw);
    for (i, (namespace, name)) in direct.iter().enumerate() {
        let named = q(&format!("{namespace}/{name}"));
        let Some(dep) = get(host, namespace, name)? else {
            waiting.push(format!("OmniHelmRelease {named} does not exist"));
            continue;
        };
        match exprs.get(i).cloned().flatten() {
            // Its readyExpr decides in place of the built-in check.
            Some(expr) => match ready_expr::holds(&expr, &release.raw, &dep) {
                Ok(true) => {}
                Ok(false) => waiting.push(format!(
                    "OmniHelmRelease {named} is not ready by its readyExpr"
                )),
                Err(why) => waiting.push(format!("OmniHelmRelease {named}: {why}")),
            },
            None if !ready(&dep) => waiting.push(format!("OmniHelmRelease {named} is not Ready")),
            None => {}
        }
    }
    if let Some(export) = kubeconfig_export_not_ready(host, release)? {
        waiting.push(export);
    }
    Ok((!waiting.is_empty()).then(|| Blocked::NotReady(waiting.join("; "))))
}

/// Walks `dependsOn` from the release's direct dependencies; a path back to the release is a cycle, spelled
/// `a → b → a`. Dependencies that cannot be read end their branch (the wait reports them).
fn find_cycle<H: Host>(
    host: &H,
    me: &(String, String),
    direct: &[(String, String)],
) -> Result<Option<String>, HostError> {
    let mut seen = BTreeSet::new();
    let mut stack: Vec<Vec<(String, String)>> =
        direct.iter().map(|d| vec![me.clone(), d.clone()]).collect();
    while let Some(path) = stack.pop() {
        let Some(last) = path.last().cloned() else {
            continue;
        };
        if last == *me {
            let names: Vec<String> = path.iter().map(|(ns, n)| format!("{ns}/{n}")).collect();
            return Ok(Some(names.join(" → ")));
        }
        if !seen.insert(last.clone()) || seen.len() > MAX_WALK {
            continue;
        }
        let dep = match get(host, &last.0, &last.1) {
            Ok(Some(dep)) => dep,
            // Missing, or in a namespace this plugin may not read: the wait names it.
            Ok(None) | Err(HostError::Denied(_)) => continue,
            Err(e) => return Err(e),
        };
        for next in dependencies_of(&dep, &last.0) {
            let mut longer = path.clone();
            longer.push(next);
            stack.push(longer);
        }
    }
    Ok(None)
}

/// An OmniKubeconfigExport in this namespace that writes the release's kubeconfig Secret and is not Ready.
fn kubeconfig_export_not_ready<H: Host>(
    host: &H,
    release: &ReleaseObject,
) -> Result<Option<String>, HostError> {
    let exports = host.kube_list(&ListQuery {
        api_version: API_VERSION.into(),
        kind: OmniKubeconfigExportSpec::KIND.into(),
        namespace: None,
        label_selector: None,
        field_selector: Some(format!(
            "spec.targetSecretRef.name={}",
            release.kubeconfig_name()
        )),
    })?;
    let own = release.namespace();
    Ok(exports
        .iter()
        .filter(|e| {
            // An export writes into its own namespace unless it names another.
            let target_ns = e["spec"]["targetSecretRef"]["namespace"]
                .as_str()
                .filter(|n| !n.is_empty())
                .unwrap_or(own);
            target_ns == own && !ready(e)
        })
        .map(|e| {
            let name = e["metadata"]["name"].as_str().unwrap_or_default();
            format!(
                "OmniKubeconfigExport {} (which writes kubeconfig Secret {}) is not Ready",
                q(&format!("{own}/{name}")),
                q(release.kubeconfig_name())
            )
        })
        .next())
}
