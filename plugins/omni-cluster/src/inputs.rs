//! What a reconcile reads from Kubernetes and the template root: the
//! connection, the children that reference the cluster, and the files its template names.

use std::collections::BTreeMap;

use omni_api::{
    API_VERSION, GROUP, OmniCluster, OmniConnection, OmniConnectionSpec, OmniControlPlane,
    OmniControlPlaneSpec, OmniKind, OmniMachine, OmniMachineSpec, OmniWorkers, OmniWorkersSpec,
};
use omni_plugin_sdk::{Host, HostError, ListQuery, ObjectRef, Value};
use omni_template::model::{FileSource, NoFiles, Template};

/// Why an input is missing: the Go controller's message, and whether reading it failed (the API server in
/// trouble: retried with the failure backoff) rather than the input being absent or malformed (a configuration
/// problem: checked again at the sync interval, as the Go controller did for both).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Missing {
    pub message: String,
    pub read_failed: bool,
}

impl std::fmt::Display for Missing {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(&self.message)
    }
}

/// The OmniConnection the cluster names, or the Go controller's message when it cannot be read.
pub fn connection<H: Host>(host: &H, name: &str) -> Result<OmniConnection, Missing> {
    let failed = |why: String, read_failed: bool| Missing {
        message: format!("failed to get OmniConnection {name:?}: {why}"),
        read_failed,
    };
    match host.kube_get(&ObjectRef::local(
        API_VERSION,
        OmniConnectionSpec::KIND,
        name,
    )) {
        // The API server's own NotFound text (`<plural>.<group> "<name>" not found`), as the Go client printed it.
        Ok(None) => Err(failed(
            format!("{}.{GROUP} {name:?} not found", OmniConnectionSpec::PLURAL),
            false,
        )),
        Ok(Some(obj)) => serde_json::from_value(obj)
            .map_err(|e| failed(format!("it does not have the expected shape: {e}"), false)),
        Err(e) => Err(failed(e.message().to_string(), true)),
    }
}

/// The children that reference the cluster by `metadata.name` (not `spec.clusterName`, as in Go).
pub struct Children {
    pub control_plane: OmniControlPlane,
    pub workers: Vec<OmniWorkers>,
    pub machines: Vec<OmniMachine>,
}

/// Lists the children; the message is the Go controller's text (reported as `MissingTemplate`).
pub fn children<H: Host>(host: &H, cluster: &OmniCluster) -> Result<Children, Missing> {
    let namespace = cluster.metadata.namespace.as_deref().unwrap_or_default();
    let name = cluster.name();
    let mut control_planes: Vec<OmniControlPlane> = list(host, OmniControlPlaneSpec::KIND, name)?;
    if control_planes.len() != 1 {
        return Err(Missing {
            message: format!(
                "expected exactly one OmniControlPlane referencing {namespace}/{name}, found {}",
                control_planes.len()
            ),
            read_failed: false,
        });
    }
    Ok(Children {
        control_plane: control_planes.remove(0),
        workers: list(host, OmniWorkersSpec::KIND, name)?,
        machines: list(host, OmniMachineSpec::KIND, name)?,
    })
}

fn list<H: Host, T: serde::de::DeserializeOwned>(
    host: &H,
    kind: &str,
    cluster: &str,
) -> Result<Vec<T>, Missing> {
    // Filtered by the host, so a reconcile of one of a thousand clusters does not copy every child across.
    let query = ListQuery {
        api_version: API_VERSION.into(),
        kind: kind.into(),
        field_selector: Some(format!("spec.clusterRef.name={cluster}")),
        ..ListQuery::default()
    };
    let items = host.kube_list(&query).map_err(|e| Missing {
        message: format!("list {kind}: {}", e.message()),
        read_failed: true,
    })?;
    items
        .into_iter()
        // The selector already matched; the check keeps a host without field selectors from mixing clusters.
        .filter(|o: &Value| o["spec"]["clusterRef"]["name"].as_str() == Some(cluster))
        .map(|o| {
            serde_json::from_value(o).map_err(|e| Missing {
                message: format!("{kind} does not have the expected shape: {e}"),
                read_failed: false,
            })
        })
        .collect()
}

/// Every file the template names, read once through the host (`files` capability) under `spec.templateRoot`.
/// Unreadable files are kept as their error, which validation reports as Omni's `failed to access` message.
pub fn files<H: Host>(host: &H, cluster: &OmniCluster, template: &Template) -> Box<dyn FileSource> {
    let refs = template.file_references();
    let root = cluster.spec.template_root.as_deref().unwrap_or_default();
    if refs.is_empty() || root.is_empty() {
        return Box::new(NoFiles);
    }
    let read: BTreeMap<String, Result<Vec<u8>, String>> = refs
        .into_iter()
        .map(|path| {
            let content = host.read_file(root, path).map_err(|e| match e {
                HostError::NotFound(m) | HostError::Denied(m) | HostError::Invalid(m) => m,
                other => other.message().to_string(),
            });
            (path.to_string(), content)
        })
        .collect();
    Box::new(read)
}
