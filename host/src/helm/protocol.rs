//! What the host and its Helm worker say to each other: one JSON object per line, requests on the worker's stdin
//! and replies on its stdout, matched by id. Kubeconfigs travel in requests (the worker needs them to reach the
//! workload cluster) and are never written anywhere else.

use serde::{Deserialize, Serialize};

use serde_json::Value;

#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct Request {
    pub id: u64,
    pub op: Op,
}

/// Where a chart comes from: a `.tgz` archive (base64) or a reference Helm resolves (`oci://…`, or a name with
/// `chart_repo_url` in the options).
#[derive(Debug, Clone, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum ChartRef {
    Archive(String),
    Reference(String),
}

/// The cluster and namespace an action runs against.
#[derive(Clone, Serialize, Deserialize)]
pub struct Target {
    pub kubeconfig: String,
    pub namespace: String,
    /// The user Helm impersonates (`system:serviceaccount:NS:NAME`); None: the kubeconfig's own identity.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub as_user: Option<String>,
}

impl std::fmt::Debug for Target {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        // The kubeconfig is a credential: never in a debug print.
        f.debug_struct("Target")
            .field("namespace", &self.namespace)
            .field("as_user", &self.as_user)
            .finish_non_exhaustive()
    }
}

/// What reaching a chart source takes besides its URL: basic-auth credentials, a CA to trust, a client certificate.
/// Read by the host from the Secrets an object names; only the worker unpacks it, into Helm's options and files
/// it removes when the call ends.
#[derive(Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct ChartAuth {
    pub username: Option<String>,
    pub password: Option<String>,
    pub ca_pem: Option<String>,
    pub cert_pem: Option<String>,
    pub key_pem: Option<String>,
}

impl ChartAuth {
    /// A digest of the material, for keeping apart what different credentials fetched or resolved (one
    /// object's credentials must never open another's cached chart).
    pub fn fingerprint(auth: Option<&ChartAuth>) -> String {
        let Some(a) = auth else {
            return "anonymous".into();
        };
        let mut material = Vec::new();
        for part in [&a.username, &a.password, &a.ca_pem, &a.cert_pem, &a.key_pem] {
            material.extend_from_slice(part.as_deref().unwrap_or_default().as_bytes());
            material.push(0);
        }
        super::sha256_prefix(&material, 32)
    }
}

impl std::fmt::Debug for ChartAuth {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        // Credentials: what is set, never what it is.
        f.debug_struct("ChartAuth")
            .field("basic_auth", &self.username.is_some())
            .field("ca", &self.ca_pem.is_some())
            .field("client_cert", &self.cert_pem.is_some())
            .finish()
    }
}

#[derive(Debug, Clone, Serialize, Deserialize)]
#[serde(rename_all = "snake_case", tag = "action")]
pub enum Op {
    /// (libhelm_c version, Helm SDK version).
    Versions,
    Render {
        chart: ChartRef,
        values: Value,
        options: Value,
    },
    Install {
        target: Target,
        chart: ChartRef,
        release: String,
        values: Value,
        options: Value,
        #[serde(default, skip_serializing_if = "Option::is_none")]
        auth: Option<ChartAuth>,
    },
    Upgrade {
        target: Target,
        chart: ChartRef,
        release: String,
        values: Value,
        options: Value,
        #[serde(default, skip_serializing_if = "Option::is_none")]
        auth: Option<ChartAuth>,
    },
    Uninstall {
        target: Target,
        release: String,
        options: Value,
    },
    /// Back to `options.version` (0: the previous revision).
    Rollback {
        target: Target,
        release: String,
        options: Value,
    },
    /// Runs the release's test hooks.
    Test {
        target: Target,
        release: String,
        options: Value,
    },
    /// A chart's `Chart.yaml` (or another part, as `options.format` says), resolving a version constraint as an
    /// install would.
    Show {
        chart: String,
        options: Value,
        #[serde(default, skip_serializing_if = "Option::is_none")]
        auth: Option<ChartAuth>,
    },
    /// The commit a Git reference names (`ls-remote`).
    GitResolve {
        url: String,
        reference: GitRef,
        #[serde(default, skip_serializing_if = "Option::is_none")]
        auth: Option<ChartAuth>,
    },
    /// Writes the directory `path` of `commit` under `cache` for Helm to load; answers `{"chart": dir}`.
    GitCheckout {
        url: String,
        commit: String,
        path: String,
        cache: String,
        #[serde(default, skip_serializing_if = "Option::is_none")]
        auth: Option<ChartAuth>,
    },
    Status {
        target: Target,
        release: String,
    },
    History {
        target: Target,
        release: String,
    },
    /// Packages each chart directory into `dir` and writes the repository's `index.yaml` there, with chart URLs
    /// under `base_url`: a chart repository Helm can install from, made by Helm itself.
    Publish {
        charts: Vec<String>,
        dir: String,
        base_url: String,
    },
    /// Cancels the request `id` (its Helm context); the cancelled request answers `cancelled`.
    Cancel {
        id: u64,
    },
}

/// The worker's answer to request `id`.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct Reply {
    pub id: u64,
    #[serde(flatten)]
    pub outcome: Outcome,
}

#[derive(Debug, Clone, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Outcome {
    Ok(Value),
    /// Helm's error class (`helm_error_code`, e.g. `Cancelled`, `NotFound`), the libhelm_c call that failed
    /// (`helm_upgrade`; empty for a failure around the calls), and Helm's message as Helm words it.
    Err {
        code: String,
        #[serde(default)]
        call: String,
        message: String,
    },
}

/// A branch, tag or commit of a repository.
#[derive(Debug, Clone, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum GitRef {
    Branch(String),
    Tag(String),
    Commit(String),
}

impl std::fmt::Display for GitRef {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            GitRef::Branch(b) => write!(f, "branch {b:?}"),
            GitRef::Tag(t) => write!(f, "tag {t:?}"),
            GitRef::Commit(c) => write!(f, "commit {c}"),
        }
    }
}
