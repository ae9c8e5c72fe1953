//! The Helm worker: `omni-operator helm-worker --lib <libhelm_c>`. It loads the library (so a Go fatal error, a
//! deadlock or Helm's memory stay out of the host), then answers requests from stdin, each on a thread of its
//! own, writing replies to stdout as they finish. The host serialises actions per release and bounds how many
//! run at once.

use std::collections::{HashMap, HashSet};
use std::io::{BufRead, Write};
use std::path::Path;
use std::sync::{Arc, Mutex};

use base64::Engine as _;
use helm_c::{ChartSource, Helm, HelmError};
use serde_json::{Value, json};

use super::git::{self, GitError};
use super::protocol::{ChartAuth, ChartRef, Op, Outcome, Reply, Request, Target};

/// The contexts of running actions, and cancels that arrived before their action's context existed.
#[derive(Default)]
struct Contexts {
    running: HashMap<u64, Arc<helm_c::Context>>,
    cancelled: HashSet<u64>,
}

/// Serves requests until stdin closes. Failing to load the library is reported on every request (so the host
/// can say why releases cannot proceed) rather than by exiting.
pub fn serve(lib: &Path) -> anyhow::Result<()> {
    let helm = Helm::load(lib).map_err(|e| e.to_string());
    let out = Arc::new(Mutex::new(std::io::stdout()));
    let contexts: Arc<Mutex<Contexts>> = Arc::default();
    for line in std::io::stdin().lock().lines() {
        let line = line?;
        let request: Request = match serde_json::from_str(&line) {
            Ok(r) => r,
            Err(e) => {
                // Without an id the reply cannot be matched; the host never sends such lines.
                eprintln!("helm-worker: a request that is not one: {e}");
                continue;
            }
        };
        let helm = match &helm {
            Ok(h) => h.clone(),
            Err(reason) => {
                let outcome = Outcome::Err {
                    code: "Unavailable".into(),
                    call: String::new(),
                    message: reason.clone(),
                };
                write(
                    &out,
                    &Reply {
                        id: request.id,
                        outcome,
                    },
                );
                continue;
            }
        };
        if let Op::Cancel { id } = request.op {
            // A cancel may overtake the action it names (its thread has not made its context yet): it is
            // remembered, and the action cancels itself as soon as its context exists.
            let cancelled = contexts
                .lock()
                .map(|mut c| match c.running.get(&id) {
                    Some(ctx) => Some(ctx.cancel()),
                    None => {
                        c.cancelled.insert(id);
                        None
                    }
                })
                .ok()
                .flatten();
            let outcome = match cancelled {
                Some(Err(e)) => failure(&WorkerError::Helm(e)),
                _ => Outcome::Ok(Value::Null),
            };
            write(
                &out,
                &Reply {
                    id: request.id,
                    outcome,
                },
            );
            continue;
        }
        let out = out.clone();
        let contexts = contexts.clone();
        std::thread::spawn(move || {
            let id = request.id;
            let outcome = match run(&helm, id, request.op, &contexts) {
                Ok(v) => Outcome::Ok(v),
                Err(e) => failure(&e),
            };
            if let Ok(mut c) = contexts.lock() {
                c.running.remove(&id);
                c.cancelled.remove(&id);
            }
            write(&out, &Reply { id, outcome });
        });
    }
    Ok(())
}

/// Why a request failed in the worker: Helm's own error, a Git repository's, or files the worker writes for Helm.
#[derive(Debug, thiserror::Error)]
enum WorkerError {
    #[error(transparent)]
    Helm(#[from] HelmError),
    #[error(transparent)]
    Git(#[from] GitError),
    #[error("{0}")]
    Files(String),
}

/// A failed request as the host receives it. A failed Helm call keeps Helm's own message apart from the call's
/// name and error class: the message is what users see (in `lastError`, conditions and Events, as the Go operator
/// shows Helm's error and Helm's CLI prints it), the rest is for the logs.
fn failure(e: &WorkerError) -> Outcome {
    match e {
        WorkerError::Helm(HelmError::Call {
            call,
            code,
            message,
        }) => Outcome::Err {
            code: format!("{code:?}"),
            call: call.to_string(),
            message: message.clone(),
        },
        WorkerError::Helm(h) => Outcome::Err {
            code: h
                .code()
                .map_or_else(|| "Wrapper".to_string(), |c| format!("{c:?}")),
            call: String::new(),
            message: h.to_string(),
        },
        WorkerError::Git(g) => Outcome::Err {
            code: "Git".into(),
            call: String::new(),
            message: g.to_string(),
        },
        WorkerError::Files(f) => Outcome::Err {
            code: "Files".into(),
            call: String::new(),
            message: f.clone(),
        },
    }
}

fn write(out: &Mutex<std::io::Stdout>, reply: &Reply) {
    let Ok(line) = serde_json::to_string(reply) else {
        return;
    };
    if let Ok(mut o) = out.lock() {
        // The host reading our stdout is gone when this fails; the next read of stdin ends the worker.
        let _ = writeln!(o, "{line}").and_then(|()| o.flush());
    }
}

fn chart(helm: &Helm, chart: &ChartRef) -> Result<Option<helm_c::Chart>, HelmError> {
    match chart {
        ChartRef::Archive(b64) => {
            let bytes = base64::engine::general_purpose::STANDARD
                .decode(b64)
                .map_err(|e| HelmError::Answer {
                    call: "chart archive",
                    reason: format!("not base64: {e}"),
                })?;
            helm.load_chart_archive(&bytes).map(Some)
        }
        ChartRef::Reference(_) => Ok(None),
    }
}

fn config(helm: &Helm, target: &Target) -> Result<helm_c::Config, HelmError> {
    let mut options =
        json!({"kubeconfig_content": target.kubeconfig, "namespace": target.namespace});
    if let Some(user) = &target.as_user {
        options["kube_as_user"] = json!(user);
    }
    helm.config(&options)
}

fn run(helm: &Helm, id: u64, op: Op, contexts: &Mutex<Contexts>) -> Result<Value, WorkerError> {
    let upgrade = matches!(op, Op::Upgrade { .. });
    match op {
        Op::Versions => {
            let (c, sdk) = helm.versions();
            Ok(json!({"helm_c": c, "helm": sdk}))
        }
        Op::Render {
            chart: source,
            values,
            options,
        } => match chart(helm, &source)? {
            Some(c) => Ok(c.render(&values, &options)?),
            None => Err(HelmError::Answer {
                call: "render",
                reason: "rendering needs the chart's archive".into(),
            }
            .into()),
        },
        Op::Install {
            target,
            chart,
            release,
            values,
            options,
            auth,
        }
        | Op::Upgrade {
            target,
            chart,
            release,
            values,
            options,
            auth,
        } => {
            let (options, _spec) = with_post_render(options)?;
            let (options, files) = with_auth(options, auth.as_ref())?;
            let registry = registry_login(
                helm,
                reference_of(&chart),
                &options,
                auth.as_ref(),
                files.as_ref(),
            )?;
            Ok(install_or_upgrade(
                helm,
                id,
                contexts,
                (upgrade, registry.as_ref()),
                (&target, &chart, &release, &values, &options),
            )?)
        }
        Op::Uninstall {
            target,
            release,
            options,
        } => Ok(config(helm, &target)?.uninstall(&release, &options)?),
        Op::Rollback {
            target,
            release,
            options,
        } => {
            let cfg = config(helm, &target)?;
            cfg.rollback(&release, &options)?;
            // Rollback answers nothing; the release's summary says which revision it made.
            Ok(cfg.status(&release, &json!({}))?)
        }
        Op::Test {
            target,
            release,
            options,
        } => Ok(config(helm, &target)?.test(&release, &options)?),
        Op::Publish {
            charts,
            dir,
            base_url,
        } => {
            let out = Path::new(&dir);
            let mut archives = Vec::new();
            for chart in &charts {
                archives.push(helm.load_chart(Path::new(chart))?.save(out)?);
            }
            let index = helm.repo_index(out, &json!({"base_url": base_url}))?;
            std::fs::write(out.join("index.yaml"), index)
                .map_err(|e| WorkerError::Files(format!("writing index.yaml in {dir}: {e}")))?;
            Ok(json!({"archives": archives}))
        }
        Op::Show {
            chart,
            options,
            auth,
        } => {
            let (options, files) = with_auth(options, auth.as_ref())?;
            let registry = registry_login(helm, &chart, &options, auth.as_ref(), files.as_ref())?;
            Ok(Value::String(helm.show(
                registry.as_ref(),
                &chart,
                &options,
            )?))
        }
        Op::GitResolve {
            url,
            reference,
            auth,
        } => {
            let commit = git::resolve(&url, &reference, auth.as_ref())?;
            Ok(json!({ "commit": commit }))
        }
        Op::GitCheckout {
            url,
            commit,
            path,
            cache,
            auth,
        } => {
            let chart = git::checkout(&url, &commit, &path, Path::new(&cache), auth.as_ref())?;
            Ok(json!({ "chart": chart.to_string_lossy() }))
        }
        Op::Status { target, release } => Ok(config(helm, &target)?.status(&release, &json!({}))?),
        Op::History { target, release } => {
            Ok(config(helm, &target)?.history(&release, &json!({}))?)
        }
        // Answered on the reading thread (see `serve`).
        Op::Cancel { .. } => Ok(Value::Null),
    }
}

/// PEM files Helm reads a CA or a client certificate from, in a directory only this process may read; removed
/// when dropped, at the end of the call that needed them.
struct AuthFiles(std::path::PathBuf);

impl Drop for AuthFiles {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.0);
    }
}

/// The post-render spec of one action, removed when it ends.
struct PostRenderFile(std::path::PathBuf);

impl Drop for PostRenderFile {
    fn drop(&mut self) {
        let _ = std::fs::remove_file(&self.0);
    }
}

/// `options` with the host's post-render spec (`omni_post_render`, not an option of Helm's) handed to Helm's
/// post-renderer plugin ([`super::POST_RENDER_PLUGIN`]): written to a private file whose path is the plugin's
/// argument.
fn with_post_render(mut options: Value) -> Result<(Value, Option<PostRenderFile>), WorkerError> {
    let Some(spec) = options
        .as_object_mut()
        .and_then(|o| o.remove(super::POST_RENDER_OPTION))
    else {
        return Ok((options, None));
    };
    let path = std::env::temp_dir().join(format!(
        "omni-operator-post-render-{}-{}.json",
        std::process::id(),
        AUTH_DIRS.fetch_add(1, std::sync::atomic::Ordering::Relaxed)
    ));
    let file = PostRenderFile(path.clone());
    {
        use std::os::unix::fs::OpenOptionsExt as _;
        let mut f = std::fs::OpenOptions::new()
            .write(true)
            .create_new(true)
            .mode(0o600)
            .open(&path)
            .and_then(|mut f| {
                f.write_all(spec.to_string().as_bytes())?;
                Ok(f)
            })
            .map_err(|e| WorkerError::Files(format!("writing the post-render spec: {e}")))?;
        let _ = f.flush();
    }
    options["post_renderer"] = super::POST_RENDER_PLUGIN.into();
    options["post_renderer_args"] = json!([path.to_string_lossy()]);
    Ok((options, Some(file)))
}

/// `options` with `auth` added in Helm's terms: `username`/`password`, and `ca_file`/`cert_file`/`key_file`
/// written to private files (Helm takes paths, not contents).
fn with_auth(
    mut options: Value,
    auth: Option<&ChartAuth>,
) -> Result<(Value, Option<AuthFiles>), WorkerError> {
    let Some(auth) = auth else {
        return Ok((options, None));
    };
    let failed = |e: std::io::Error| {
        WorkerError::Files(format!("writing the chart source's TLS files: {e}"))
    };
    if let (Some(user), Some(password)) = (&auth.username, &auth.password) {
        options["username"] = user.clone().into();
        options["password"] = password.clone().into();
    }
    let pems = [
        ("ca_file", &auth.ca_pem),
        ("cert_file", &auth.cert_pem),
        ("key_file", &auth.key_pem),
    ];
    let dir = std::env::temp_dir().join(format!(
        "omni-operator-chart-tls-{}-{}",
        std::process::id(),
        AUTH_DIRS.fetch_add(1, std::sync::atomic::Ordering::Relaxed)
    ));
    let files = AuthFiles(dir.clone());
    {
        use std::os::unix::fs::DirBuilderExt as _;
        std::fs::DirBuilder::new()
            .mode(0o700)
            .create(&dir)
            .map_err(failed)?;
    }
    for (key, pem) in pems {
        let Some(pem) = pem else { continue };
        let path = dir.join(key);
        {
            use std::os::unix::fs::OpenOptionsExt as _;
            let mut f = std::fs::OpenOptions::new()
                .write(true)
                .create_new(true)
                .mode(0o600)
                .open(&path)
                .map_err(failed)?;
            f.write_all(pem.as_bytes()).map_err(failed)?;
        }
        options[key] = path.to_string_lossy().into_owned().into();
    }
    Ok((options, Some(files)))
}

fn reference_of(chart: &ChartRef) -> &str {
    match chart {
        ChartRef::Reference(r) => r,
        ChartRef::Archive(_) => "",
    }
}

/// For an `oci://` chart with credentials: a registry client logged in to its registry, keeping the login in the
/// call's private directory (never Helm's shared per-user file, which would hand it to every later pull).
fn registry_login(
    helm: &Helm,
    chart: &str,
    options: &Value,
    auth: Option<&ChartAuth>,
    files: Option<&AuthFiles>,
) -> Result<Option<helm_c::RegistryClient>, HelmError> {
    let (Some(registry), Some(auth), Some(files)) = (chart.strip_prefix("oci://"), auth, files)
    else {
        return Ok(None);
    };
    let (Some(user), Some(password)) = (&auth.username, &auth.password) else {
        return Ok(None);
    };
    let host = registry.split('/').next().unwrap_or_default();
    let plain_http = options["plain_http"] == true;
    let client = helm.registry_client(&json!({
        "plain_http": plain_http,
        "credentials_file": files.0.join("registry.json").to_string_lossy(),
    }))?;
    let mut login = json!({"plain_http": plain_http});
    for key in ["ca_file", "cert_file", "key_file"] {
        if let Some(path) = options.get(key) {
            login[key] = path.clone();
        }
    }
    client.login(host, user, password, &login)?;
    Ok(Some(client))
}

/// Numbers the directories of [`with_auth`] within this process.
static AUTH_DIRS: std::sync::atomic::AtomicU64 = std::sync::atomic::AtomicU64::new(0);

/// An install or upgrade, cancellable through its context.
fn install_or_upgrade(
    helm: &Helm,
    id: u64,
    contexts: &Mutex<Contexts>,
    (upgrade, registry): (bool, Option<&helm_c::RegistryClient>),
    (target, source, release, values, options): (&Target, &ChartRef, &str, &Value, &Value),
) -> Result<Value, HelmError> {
    let cfg = config(helm, target)?;
    if let Some(client) = registry {
        cfg.set_registry_client(client)?;
    }
    let loaded = chart(helm, source)?;
    let context = cancellable(helm, id, contexts)?;
    let chart = chart_source(&loaded, source);
    if upgrade {
        cfg.upgrade(Some(&context), chart, release, values, options)
    } else {
        cfg.install(Some(&context), chart, release, values, options)
    }
}

fn chart_source<'a>(loaded: &'a Option<helm_c::Chart>, source: &'a ChartRef) -> ChartSource<'a> {
    match (loaded, source) {
        (Some(c), _) => ChartSource::Loaded(c),
        (None, ChartRef::Reference(r)) => ChartSource::Reference(r),
        // An archive always loads (or the action failed before this).
        (None, ChartRef::Archive(_)) => ChartSource::Reference(""),
    }
}

/// A Helm context for request `id`, registered so a `Cancel` can reach it while the action runs.
fn cancellable(
    helm: &Helm,
    id: u64,
    contexts: &Mutex<Contexts>,
) -> Result<Arc<helm_c::Context>, HelmError> {
    let context = Arc::new(helm.context()?);
    if let Ok(mut c) = contexts.lock() {
        c.running.insert(id, context.clone());
        if c.cancelled.remove(&id) {
            context.cancel()?;
        }
    }
    Ok(context)
}
