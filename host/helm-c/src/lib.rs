//! A safe wrapper around libhelm_c 0.2.2 (Helm SDK v4.2.3 built as a C library):
//! the library is loaded once from a path and never unloaded (the Go runtime it starts cannot be stopped), handles
//! are owned values freed on drop, strings cross as UTF-8 and results as JSON, and every failure is a typed
//! [`HelmError`] with Helm's own message.
//!
//! Calls block the calling thread (cluster and network I/O happen inside them): async callers run them on a
//! blocking pool. Actions on different releases may run concurrently; actions on one release must be serialised
//! by the caller.
#![cfg_attr(not(test), deny(clippy::unwrap_used, clippy::expect_used))]

mod ffi;

use std::ffi::{CString, c_char};
use std::path::Path;
use std::sync::Arc;

use serde_json::Value;

pub use ffi::Library;

/// The library version this wrapper is written against.
pub const HELM_C_VERSION: &str = "0.2.2";
/// The Helm SDK version inside it.
pub const HELM_SDK_VERSION: &str = "v4.2.3";

/// The library's error classes (`helm_error_code`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ErrorCode {
    Unknown,
    InvalidArgument,
    InvalidHandle,
    WrongHandleType,
    /// A Go panic the library recovered.
    Panic,
    /// Cancelled through a context, or a timeout (`context deadline exceeded`).
    Cancelled,
    NotFound,
    Io,
    ChartLoad,
    ChartInvalid,
    Values,
    Render,
    Registry,
    Repository,
    Kube,
    Storage,
    Release,
    /// A code this wrapper does not know.
    Other(i32),
}

impl ErrorCode {
    fn from_code(code: i32) -> Self {
        match code {
            -1 => ErrorCode::Unknown,
            -2 => ErrorCode::InvalidArgument,
            -3 => ErrorCode::InvalidHandle,
            -4 => ErrorCode::WrongHandleType,
            -5 => ErrorCode::Panic,
            -6 => ErrorCode::Cancelled,
            -7 => ErrorCode::NotFound,
            -8 => ErrorCode::Io,
            -20 => ErrorCode::ChartLoad,
            -21 => ErrorCode::ChartInvalid,
            -22 => ErrorCode::Values,
            -23 => ErrorCode::Render,
            -40 => ErrorCode::Registry,
            -41 => ErrorCode::Repository,
            -60 => ErrorCode::Kube,
            -61 => ErrorCode::Storage,
            -62 => ErrorCode::Release,
            other => ErrorCode::Other(other),
        }
    }
}

#[derive(Debug, thiserror::Error)]
pub enum HelmError {
    #[error("loading libhelm_c from {path}: {reason}")]
    Load { path: String, reason: String },
    #[error(
        "libhelm_c {found} (Helm {sdk}) is loaded, but this operator is built for {HELM_C_VERSION} (Helm {HELM_SDK_VERSION})"
    )]
    Version { found: String, sdk: String },
    #[error("{call}: {message} (helm error {code:?})")]
    Call {
        call: &'static str,
        code: ErrorCode,
        message: String,
    },
    #[error("{call}: {what} contains a NUL byte")]
    Nul {
        call: &'static str,
        what: &'static str,
    },
    #[error("{call}: the library answered something that is not JSON: {reason}")]
    Answer { call: &'static str, reason: String },
}

impl HelmError {
    /// The library's error class, for a failed call.
    pub fn code(&self) -> Option<ErrorCode> {
        match self {
            HelmError::Call { code, .. } => Some(*code),
            _ => None,
        }
    }
}

pub type Result<T> = std::result::Result<T, HelmError>;

fn cstring(call: &'static str, what: &'static str, s: &str) -> Result<CString> {
    CString::new(s).map_err(|_| HelmError::Nul { call, what })
}

fn json(call: &'static str, text: String) -> Result<Value> {
    serde_json::from_str(&text).map_err(|e| HelmError::Answer {
        call,
        reason: e.to_string(),
    })
}

/// The loaded library: cheap to clone, shared by every handle made from it.
#[derive(Clone)]
pub struct Helm {
    lib: Arc<Library>,
}

impl Helm {
    /// Loads libhelm_c from `path` and checks it is the version this wrapper speaks.
    pub fn load(path: &Path) -> Result<Helm> {
        let lib = Library::open(path)?;
        let helm = Helm { lib: Arc::new(lib) };
        let (found, sdk) = helm.versions();
        if found != HELM_C_VERSION || sdk != HELM_SDK_VERSION {
            return Err(HelmError::Version { found, sdk });
        }
        Ok(helm)
    }

    /// (libhelm_c version, Helm SDK version).
    pub fn versions(&self) -> (String, String) {
        (self.lib.c_version(), self.lib.sdk_version())
    }

    /// Handles not yet freed (a leak gate for tests).
    pub fn open_handles(&self) -> i64 {
        self.lib.open_handles_count()
    }

    /// `helm create`: a new chart `name` in `dir`; returns its path.
    pub fn create_chart(&self, name: &str, dir: &Path) -> Result<String> {
        const CALL: &str = "helm_chart_create";
        let name = cstring(CALL, "the chart name", name)?;
        let dir = cstring(CALL, "the directory", &dir.to_string_lossy())?;
        self.lib.call_out(CALL, |f, out, err| unsafe {
            (f.chart_create)(name.as_ptr(), dir.as_ptr(), out, err)
        })
    }

    /// Loads a chart from a directory or archive path.
    pub fn load_chart(&self, path: &Path) -> Result<Chart> {
        const CALL: &str = "helm_chart_load";
        let path = cstring(CALL, "the chart path", &path.to_string_lossy())?;
        let handle = self.lib.call_handle(CALL, |f, h, err| unsafe {
            (f.chart_load)(path.as_ptr(), h, err)
        })?;
        Ok(Chart {
            helm: self.clone(),
            handle,
        })
    }

    /// Loads a chart from the bytes of a `.tgz` archive.
    pub fn load_chart_archive(&self, archive: &[u8]) -> Result<Chart> {
        const CALL: &str = "helm_chart_load_archive";
        let handle = self.lib.call_handle(CALL, |f, h, err| unsafe {
            (f.chart_load_archive)(archive.as_ptr(), archive.len() as u64, h, err)
        })?;
        Ok(Chart {
            helm: self.clone(),
            handle,
        })
    }

    /// `helm lint` of the chart directory `dir` with `values`: the library's report (its messages with their
    /// severities).
    pub fn lint(&self, dir: &Path, values: &Value) -> Result<Value> {
        const CALL: &str = "helm_lint_run";
        let dir = cstring(CALL, "the directory", &dir.to_string_lossy())?;
        let values = cstring(CALL, "the values", &values.to_string())?;
        let text = self.lib.call_out(CALL, |f, out, err| unsafe {
            (f.lint_run)(dir.as_ptr(), values.as_ptr(), out, err)
        })?;
        json(CALL, text)
    }

    /// `helm repo index`: the repository index of the chart archives in `dir`, as JSON (options: `base_url`, the
    /// URL the entries point under; `merge`, an existing index file to merge). JSON is valid YAML, so the text
    /// serves as `index.yaml` as it is.
    pub fn repo_index(&self, dir: &Path, options: &Value) -> Result<String> {
        const CALL: &str = "helm_repo_index_generate";
        let dir = cstring(CALL, "the directory", &dir.to_string_lossy())?;
        let opts = cstring(CALL, "the options", &options.to_string())?;
        self.lib.call_out(CALL, |f, out, err| unsafe {
            (f.repo_index_generate)(dir.as_ptr(), opts.as_ptr(), out, err)
        })
    }

    /// `helm push`: uploads a chart archive to an OCI registry (`oci://host/path`; options such as
    /// `plain_http`); returns the library's report.
    pub fn push(&self, archive: &Path, remote: &str, options: &Value) -> Result<Value> {
        const CALL: &str = "helm_push";
        let archive = cstring(CALL, "the archive path", &archive.to_string_lossy())?;
        let remote = cstring(CALL, "the remote", remote)?;
        let opts = cstring(CALL, "the options", &options.to_string())?;
        let text = self.lib.call_out(CALL, |f, out, err| unsafe {
            (f.push)(
                0,
                archive.as_ptr(),
                remote.as_ptr(),
                opts.as_ptr(),
                out,
                err,
            )
        })?;
        json(CALL, text)
    }

    /// `helm show`: a chart's `Chart.yaml` (options `format: chart`), values, README or CRDs, as text. A remote
    /// chart (`chart_repo_url` + name, or `oci://…`) is resolved as an install resolves it: `chart_version` may be
    /// a constraint, and the newest matching version is shown.
    pub fn show(
        &self,
        registry: Option<&RegistryClient>,
        chart_ref: &str,
        options: &Value,
    ) -> Result<String> {
        const CALL: &str = "helm_show";
        let chart_ref = cstring(CALL, "the chart reference", chart_ref)?;
        let opts = cstring(CALL, "the options", &options.to_string())?;
        let client = registry.map_or(0, |r| r.handle);
        self.lib.call_out(CALL, |f, out, err| unsafe {
            (f.show)(client, chart_ref.as_ptr(), opts.as_ptr(), out, err)
        })
    }

    /// An OCI registry client (`helm_registry_client_new` options: `plain_http`, `credentials_file`: where
    /// logins are kept; without it, Helm's shared per-user file).
    pub fn registry_client(&self, options: &Value) -> Result<RegistryClient> {
        const CALL: &str = "helm_registry_client_new";
        let opts = cstring(CALL, "the options", &options.to_string())?;
        let handle = self.lib.call_handle(CALL, |f, h, err| unsafe {
            (f.registry_client_new)(opts.as_ptr(), h, err)
        })?;
        Ok(RegistryClient {
            helm: self.clone(),
            handle,
        })
    }

    /// A cluster configuration (`helm_config_new` options: `kubeconfig_content`, `namespace`, …).
    pub fn config(&self, options: &Value) -> Result<Config> {
        const CALL: &str = "helm_config_new";
        let opts = cstring(CALL, "the options", &options.to_string())?;
        let handle = self.lib.call_handle(CALL, |f, h, err| unsafe {
            (f.config_new)(opts.as_ptr(), h, err)
        })?;
        Ok(Config {
            helm: self.clone(),
            handle,
        })
    }

    /// A cancellation context for one action.
    pub fn context(&self) -> Result<Context> {
        const CALL: &str = "helm_context_new";
        let handle = self
            .lib
            .call_handle(CALL, |f, h, err| unsafe { (f.context_new)(h, err) })?;
        Ok(Context {
            helm: self.clone(),
            handle,
        })
    }
}

/// A loaded chart.
pub struct Chart {
    helm: Helm,
    handle: u64,
}

impl Chart {
    /// Renders the chart's templates with `values` (`helm template`): template path → manifest.
    pub fn render(&self, values: &Value, options: &Value) -> Result<Value> {
        const CALL: &str = "helm_render";
        let values = cstring(CALL, "the values", &values.to_string())?;
        let opts = cstring(CALL, "the options", &options.to_string())?;
        let text = self.helm.lib.call_out(CALL, |f, out, err| unsafe {
            (f.render)(self.handle, values.as_ptr(), opts.as_ptr(), out, err)
        })?;
        json(CALL, text)
    }

    /// `helm package`: writes the chart's `.tgz` archive into `dir`; returns its path.
    pub fn save(&self, dir: &Path) -> Result<String> {
        const CALL: &str = "helm_chart_save";
        let dir = cstring(CALL, "the directory", &dir.to_string_lossy())?;
        self.helm.lib.call_out(CALL, |f, out, err| unsafe {
            (f.chart_save)(self.handle, dir.as_ptr(), out, err)
        })
    }

    /// The chart's metadata (Chart.yaml) as JSON.
    pub fn metadata(&self) -> Result<Value> {
        const CALL: &str = "helm_chart_metadata";
        let text = self.helm.lib.call_out(CALL, |f, out, err| unsafe {
            (f.chart_metadata)(self.handle, out, err)
        })?;
        json(CALL, text)
    }
}

impl std::fmt::Debug for Chart {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "Chart(handle {})", self.handle)
    }
}

impl std::fmt::Debug for Config {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "Config(handle {})", self.handle)
    }
}

impl std::fmt::Debug for Context {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "Context(handle {})", self.handle)
    }
}

impl std::fmt::Debug for Helm {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "Helm(libhelm_c {HELM_C_VERSION})")
    }
}

impl Drop for Chart {
    fn drop(&mut self) {
        self.helm
            .lib
            .free("helm_chart_free", self.handle, |f| f.chart_free);
    }
}

/// An OCI registry client, logged in to the registries it was given credentials for.
pub struct RegistryClient {
    helm: Helm,
    handle: u64,
}

impl RegistryClient {
    /// `helm registry login` (options: `plain_http`, `insecure`, `ca_file`, `cert_file`, `key_file`).
    pub fn login(&self, host: &str, username: &str, password: &str, options: &Value) -> Result<()> {
        const CALL: &str = "helm_registry_login";
        let host = cstring(CALL, "the registry host", host)?;
        let user = cstring(CALL, "the username", username)?;
        let password = cstring(CALL, "the password", password)?;
        let opts = cstring(CALL, "the options", &options.to_string())?;
        self.helm.lib.call_status(CALL, |f, err| unsafe {
            (f.registry_login)(
                self.handle,
                host.as_ptr(),
                user.as_ptr(),
                password.as_ptr(),
                opts.as_ptr(),
                err,
            )
        })
    }
}

impl std::fmt::Debug for RegistryClient {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "RegistryClient(handle {})", self.handle)
    }
}

impl Drop for RegistryClient {
    fn drop(&mut self) {
        self.helm
            .lib
            .free("helm_registry_client_free", self.handle, |f| {
                f.registry_client_free
            });
    }
}

/// A cancellation context: [`Context::cancel`] from any thread makes the action using it return
/// [`ErrorCode::Cancelled`].
pub struct Context {
    helm: Helm,
    handle: u64,
}

impl Context {
    pub fn cancel(&self) -> Result<()> {
        const CALL: &str = "helm_context_cancel";
        self.helm.lib.call_status(CALL, |f, err| unsafe {
            (f.context_cancel)(self.handle, err)
        })
    }
}

impl Drop for Context {
    fn drop(&mut self) {
        self.helm
            .lib
            .free("helm_context_free", self.handle, |f| f.context_free);
    }
}

/// Where releases live: a cluster (kubeconfig) and a namespace, with Helm's storage driver.
pub struct Config {
    helm: Helm,
    handle: u64,
}

/// What an install or upgrade installs: a loaded chart or a chart reference Helm resolves itself (`oci://…`, or a
/// name with `chart_repo_url` in the options).
pub enum ChartSource<'a> {
    Loaded(&'a Chart),
    Reference(&'a str),
}

impl Config {
    /// Makes the configuration's actions pull OCI charts through `client` (and its logins).
    pub fn set_registry_client(&self, client: &RegistryClient) -> Result<()> {
        const CALL: &str = "helm_config_set_registry_client";
        self.helm.lib.call_status(CALL, |f, err| unsafe {
            (f.config_set_registry_client)(self.handle, client.handle, err)
        })
    }

    /// `helm install` (options in libhelm_c's keys: `namespace`, `wait`, `timeout_seconds`, …); returns the
    /// release summary.
    pub fn install(
        &self,
        context: Option<&Context>,
        chart: ChartSource<'_>,
        name: &str,
        values: &Value,
        options: &Value,
    ) -> Result<Value> {
        self.install_or_upgrade(
            "helm_install",
            |f| f.install,
            context,
            chart,
            name,
            values,
            options,
        )
    }

    /// `helm upgrade`; returns the release summary.
    pub fn upgrade(
        &self,
        context: Option<&Context>,
        chart: ChartSource<'_>,
        name: &str,
        values: &Value,
        options: &Value,
    ) -> Result<Value> {
        self.install_or_upgrade(
            "helm_upgrade",
            |f| f.upgrade,
            context,
            chart,
            name,
            values,
            options,
        )
    }

    #[allow(clippy::too_many_arguments)]
    fn install_or_upgrade(
        &self,
        call: &'static str,
        select: impl FnOnce(&ffi::Functions) -> ffi::ActionFn,
        context: Option<&Context>,
        chart: ChartSource<'_>,
        name: &str,
        values: &Value,
        options: &Value,
    ) -> Result<Value> {
        let name = cstring(call, "the release name", name)?;
        let values = cstring(call, "the values", &values.to_string())?;
        let opts = cstring(call, "the options", &options.to_string())?;
        let (chart_handle, reference) = match chart {
            ChartSource::Loaded(c) => (c.handle, None),
            ChartSource::Reference(r) => (0, Some(cstring(call, "the chart reference", r)?)),
        };
        let reference_ptr = reference.as_ref().map_or(std::ptr::null(), |r| r.as_ptr());
        let ctx = context.map_or(0, |c| c.handle);
        let text = self.helm.lib.call_out(call, |f, out, err| unsafe {
            select(f)(
                self.handle,
                ctx,
                chart_handle,
                reference_ptr,
                name.as_ptr(),
                values.as_ptr(),
                opts.as_ptr(),
                out,
                err,
            )
        })?;
        json(call, text)
    }

    /// `helm uninstall`.
    pub fn uninstall(&self, name: &str, options: &Value) -> Result<Value> {
        self.named("helm_uninstall", |f| f.uninstall, name, options)
    }

    /// `helm status`: the release summary.
    pub fn status(&self, name: &str, options: &Value) -> Result<Value> {
        self.named("helm_status", |f| f.status, name, options)
    }

    /// `helm history`: every revision's summary.
    pub fn history(&self, name: &str, options: &Value) -> Result<Value> {
        self.named("helm_history", |f| f.history, name, options)
    }

    /// `helm test`: runs the release's test hooks; `{"release", "logs"}`. A failed test is an error naming it.
    pub fn test(&self, name: &str, options: &Value) -> Result<Value> {
        self.named("helm_test_run", |f| f.test_run, name, options)
    }

    /// `helm rollback`.
    pub fn rollback(&self, name: &str, options: &Value) -> Result<()> {
        const CALL: &str = "helm_rollback";
        let name = cstring(CALL, "the release name", name)?;
        let opts = cstring(CALL, "the options", &options.to_string())?;
        self.helm.lib.call_status(CALL, |f, err| unsafe {
            (f.rollback)(self.handle, name.as_ptr(), opts.as_ptr(), err)
        })
    }

    /// `helm list`.
    pub fn list(&self, options: &Value) -> Result<Value> {
        const CALL: &str = "helm_list";
        let opts = cstring(CALL, "the options", &options.to_string())?;
        let text = self.helm.lib.call_out(CALL, |f, out, err| unsafe {
            (f.list)(self.handle, opts.as_ptr(), out, err)
        })?;
        json(CALL, text)
    }

    fn named(
        &self,
        call: &'static str,
        select: impl FnOnce(&ffi::Functions) -> ffi::NamedFn,
        name: &str,
        options: &Value,
    ) -> Result<Value> {
        let name = cstring(call, "the release name", name)?;
        let opts = cstring(call, "the options", &options.to_string())?;
        let text = self.helm.lib.call_out(call, |f, out, err| unsafe {
            select(f)(self.handle, name.as_ptr(), opts.as_ptr(), out, err)
        })?;
        json(call, text)
    }
}

impl Drop for Config {
    fn drop(&mut self) {
        self.helm
            .lib
            .free("helm_config_free", self.handle, |f| f.config_free);
    }
}

/// A C string the library returned, as a Rust string (lossy for invalid UTF-8, which Helm never produces).
fn take_string(ptr: *mut c_char) -> String {
    if ptr.is_null() {
        return String::new();
    }
    // SAFETY: the library returns NUL-terminated strings it allocated; the caller frees them exactly once
    // after this copy.
    unsafe { std::ffi::CStr::from_ptr(ptr) }
        .to_string_lossy()
        .into_owned()
}
