//! The defaults the real server fills into built-in objects while decoding them (the `SetDefaults_*` functions
//! of `pkg/apis/<group>/v1/defaults.go`), for the kinds clients read back and act on: Pods and pod templates,
//! the apps/v1 workloads, Jobs, CronJobs and Services. Helm's readiness checks and `kubectl rollout` dereference
//! these fields (a Deployment's `spec.replicas`, its rolling-update budget), so a stored object must carry them.
//!
//! Defaults never overwrite what the request set. They run on every decode (create, update, patch), as on the
//! real server.

use serde_json::{Map, Value, json};

use crate::resources::ResourceType;

/// Fills the kind's defaults into `obj` (a decoded built-in object).
pub fn apply(rt: &ResourceType, obj: &mut Value) {
    let Some(o) = obj.as_object_mut() else {
        return;
    };
    match (rt.group.as_str(), rt.plural.as_str()) {
        ("", "pods") => {
            if let Some(spec) = object(o, "spec") {
                pod_spec(spec);
                // SetDefaults_Pod: only Pods (not templates) get service links and requests from limits.
                put(spec, "enableServiceLinks", json!(true));
                for c in containers_mut(spec) {
                    requests_from_limits(c);
                }
            }
        }
        ("", "services") => {
            if let Some(spec) = object(o, "spec") {
                service_spec(spec);
            }
        }
        ("apps", "deployments") => {
            if let Some(spec) = object(o, "spec") {
                put(spec, "replicas", json!(1));
                if let Some(strategy) = entry_object(spec, "strategy") {
                    put(strategy, "type", json!("RollingUpdate"));
                    if is_rolling(strategy)
                        && let Some(ru) = entry_object(strategy, "rollingUpdate")
                    {
                        put(ru, "maxUnavailable", json!("25%"));
                        put(ru, "maxSurge", json!("25%"));
                    }
                }
                put(spec, "revisionHistoryLimit", json!(10));
                put(spec, "progressDeadlineSeconds", json!(600));
                template(spec);
            }
        }
        ("apps", "replicasets") => {
            if let Some(spec) = object(o, "spec") {
                put(spec, "replicas", json!(1));
                template(spec);
            }
        }
        ("apps", "statefulsets") => {
            if let Some(spec) = object(o, "spec") {
                put(spec, "podManagementPolicy", json!("OrderedReady"));
                if let Some(strategy) = entry_object(spec, "updateStrategy") {
                    put(strategy, "type", json!("RollingUpdate"));
                    if is_rolling(strategy)
                        && let Some(ru) = entry_object(strategy, "rollingUpdate")
                    {
                        put(ru, "partition", json!(0));
                    }
                }
                put(spec, "replicas", json!(1));
                put(spec, "revisionHistoryLimit", json!(10));
                if let Some(retention) = entry_object(spec, "persistentVolumeClaimRetentionPolicy")
                {
                    put(retention, "whenDeleted", json!("Retain"));
                    put(retention, "whenScaled", json!("Retain"));
                }
                if let Some(Value::Array(claims)) = spec.get_mut("volumeClaimTemplates") {
                    for claim in claims.iter_mut().filter_map(Value::as_object_mut) {
                        if let Some(cs) = object(claim, "spec") {
                            put(cs, "volumeMode", json!("Filesystem"));
                        }
                        if let Some(status) = entry_object(claim, "status") {
                            put(status, "phase", json!("Pending"));
                        }
                    }
                }
                template(spec);
            }
        }
        ("apps", "daemonsets") => {
            if let Some(spec) = object(o, "spec") {
                if let Some(strategy) = entry_object(spec, "updateStrategy") {
                    put(strategy, "type", json!("RollingUpdate"));
                    if is_rolling(strategy)
                        && let Some(ru) = entry_object(strategy, "rollingUpdate")
                    {
                        put(ru, "maxUnavailable", json!(1));
                        put(ru, "maxSurge", json!(0));
                    }
                }
                put(spec, "revisionHistoryLimit", json!(10));
                template(spec);
            }
        }
        ("batch", "jobs") => {
            if let Some(spec) = object(o, "spec") {
                job_spec(spec);
            }
        }
        ("batch", "cronjobs") => {
            if let Some(spec) = object(o, "spec") {
                put(spec, "concurrencyPolicy", json!("Allow"));
                put(spec, "suspend", json!(false));
                put(spec, "successfulJobsHistoryLimit", json!(3));
                put(spec, "failedJobsHistoryLimit", json!(1));
                if let Some(job) = object(spec, "jobTemplate").and_then(|t| object(t, "spec")) {
                    template(job);
                }
            }
        }
        _ => {}
    }
}

/// SetDefaults_Job.
fn job_spec(spec: &mut Map<String, Value>) {
    let completions = spec.get("completions").is_some_and(|v| !v.is_null());
    let parallelism = spec.get("parallelism").is_some_and(|v| !v.is_null());
    if !completions && !parallelism {
        spec.insert("completions".into(), json!(1));
    }
    put(spec, "parallelism", json!(1));
    if spec
        .get("backoffLimitPerIndex")
        .is_some_and(|v| !v.is_null())
    {
        put(spec, "backoffLimit", json!(i32::MAX));
    } else {
        put(spec, "backoffLimit", json!(6));
    }
    put(spec, "completionMode", json!("NonIndexed"));
    put(spec, "suspend", json!(false));
    let policy = if spec.get("podFailurePolicy").is_none_or(Value::is_null) {
        "TerminatingOrFailed"
    } else {
        "Failed"
    };
    put(spec, "podReplacementPolicy", json!(policy));
    template(spec);
}

/// SetDefaults_Service plus what the service registry allocates that does not depend on other Services.
fn service_spec(spec: &mut Map<String, Value>) {
    put(spec, "type", json!("ClusterIP"));
    put(spec, "sessionAffinity", json!("None"));
    let ty = spec
        .get("type")
        .and_then(Value::as_str)
        .unwrap_or_default()
        .to_string();
    if let Some(Value::Array(ports)) = spec.get_mut("ports") {
        for p in ports.iter_mut().filter_map(Value::as_object_mut) {
            put(p, "protocol", json!("TCP"));
            let unset = match p.get("targetPort") {
                None | Some(Value::Null) => true,
                Some(Value::Number(n)) => n.as_i64() == Some(0),
                Some(Value::String(s)) => s.is_empty(),
                Some(_) => false,
            };
            if unset && let Some(port) = p.get("port").cloned() {
                p.insert("targetPort".into(), port);
            }
        }
    }
    if ty != "ExternalName" {
        put(spec, "internalTrafficPolicy", json!("Cluster"));
    }
    if ty == "NodePort" || ty == "LoadBalancer" {
        put(spec, "externalTrafficPolicy", json!("Cluster"));
    }
    if ty == "LoadBalancer" {
        put(spec, "allocateLoadBalancerNodePorts", json!(true));
    }
}

/// The pod template under `spec.template` gets the PodSpec defaults.
fn template(spec: &mut Map<String, Value>) {
    if let Some(ps) = object(spec, "template").and_then(|t| object(t, "spec")) {
        pod_spec(ps);
    }
}

/// SetDefaults_PodSpec with its containers, probes, ports and volumes.
fn pod_spec(spec: &mut Map<String, Value>) {
    put(spec, "dnsPolicy", json!("ClusterFirst"));
    put(spec, "restartPolicy", json!("Always"));
    put(spec, "terminationGracePeriodSeconds", json!(30));
    put(spec, "securityContext", json!({}));
    put(spec, "schedulerName", json!("default-scheduler"));
    for c in containers_mut(spec) {
        container(c);
    }
    if let Some(Value::Array(volumes)) = spec.get_mut("volumes") {
        for v in volumes.iter_mut().filter_map(Value::as_object_mut) {
            for source in ["secret", "configMap", "projected", "downwardAPI"] {
                if let Some(s) = object(v, source) {
                    put(s, "defaultMode", json!(420));
                }
            }
        }
    }
}

fn containers_mut(spec: &mut Map<String, Value>) -> impl Iterator<Item = &mut Map<String, Value>> {
    let mut out = Vec::new();
    for (key, list) in spec.iter_mut() {
        if matches!(key.as_str(), "containers" | "initContainers")
            && let Value::Array(items) = list
        {
            out.extend(items.iter_mut().filter_map(Value::as_object_mut));
        }
    }
    out.into_iter()
}

/// SetDefaults_Container and the defaults of what it holds.
fn container(c: &mut Map<String, Value>) {
    put(c, "terminationMessagePath", json!("/dev/termination-log"));
    put(c, "terminationMessagePolicy", json!("File"));
    let image = c.get("image").and_then(Value::as_str).unwrap_or_default();
    let policy = if image_is_latest(image) {
        "Always"
    } else {
        "IfNotPresent"
    };
    put(c, "imagePullPolicy", json!(policy));
    put(c, "resources", json!({}));
    if let Some(Value::Array(ports)) = c.get_mut("ports") {
        for p in ports.iter_mut().filter_map(Value::as_object_mut) {
            put(p, "protocol", json!("TCP"));
        }
    }
    for probe in ["livenessProbe", "readinessProbe", "startupProbe"] {
        if let Some(p) = object(c, probe) {
            put(p, "timeoutSeconds", json!(1));
            put(p, "periodSeconds", json!(10));
            put(p, "successThreshold", json!(1));
            put(p, "failureThreshold", json!(3));
            if let Some(h) = object(p, "httpGet") {
                put(h, "path", json!("/"));
                put(h, "scheme", json!("HTTP"));
            }
        }
    }
    if let Some(Value::Array(env)) = c.get_mut("env") {
        for e in env.iter_mut().filter_map(Value::as_object_mut) {
            if let Some(f) = object(e, "valueFrom").and_then(|v| object(v, "fieldRef")) {
                put(f, "apiVersion", json!("v1"));
            }
        }
    }
}

/// The pull policy defaults to Always for an image without a tag or tagged `latest` (and without a digest).
fn image_is_latest(image: &str) -> bool {
    !image.contains('@') && image_tag(image).is_none_or(|t| t == "latest")
}

/// An image reference's tag: what follows the last ':' after the last '/' (a ':' before it is a registry port).
fn image_tag(image: &str) -> Option<&str> {
    let without_digest = image.split('@').next().unwrap_or(image);
    let last = without_digest.rsplit('/').next().unwrap_or(without_digest);
    last.rsplit_once(':').map(|(_, tag)| tag)
}

/// An image reference without its tag and digest: `registry:5000/team/app:1.2@sha256:…` → `registry:5000/team/app`.
pub fn image_repository(image: &str) -> &str {
    let without_digest = image.split('@').next().unwrap_or(image);
    match image_tag(without_digest) {
        Some(tag) => &without_digest[..without_digest.len() - tag.len() - 1],
        None => without_digest,
    }
}

/// SetDefaults_Pod: a container's requests default to its limits.
fn requests_from_limits(c: &mut Map<String, Value>) {
    let Some(Value::Object(limits)) = c.get("resources").and_then(|r| r.get("limits")).cloned()
    else {
        return;
    };
    let Some(resources) = object(c, "resources") else {
        return;
    };
    if let Some(requests) = entry_object(resources, "requests") {
        for (k, v) in limits {
            requests.entry(k).or_insert(v);
        }
    }
}

fn is_rolling(strategy: &Map<String, Value>) -> bool {
    strategy.get("type").and_then(Value::as_str) == Some("RollingUpdate")
}

/// Sets `key` when it is absent or null.
fn put(m: &mut Map<String, Value>, key: &str, value: Value) {
    if m.get(key).is_none_or(Value::is_null) {
        m.insert(key.into(), value);
    }
}

fn object<'a>(m: &'a mut Map<String, Value>, key: &str) -> Option<&'a mut Map<String, Value>> {
    m.get_mut(key).and_then(Value::as_object_mut)
}

/// The object under `key`, created when absent or null; None when the request put a non-object there (validation
/// reports it).
fn entry_object<'a>(
    m: &'a mut Map<String, Value>,
    key: &str,
) -> Option<&'a mut Map<String, Value>> {
    put(m, key, json!({}));
    m.get_mut(key).and_then(Value::as_object_mut)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn image_references_split_at_the_tag_not_the_registry_port() {
        assert_eq!(
            image_repository("registry:5000/team/app:1.2"),
            "registry:5000/team/app"
        );
        assert_eq!(
            image_repository("registry:5000/team/app"),
            "registry:5000/team/app"
        );
        assert_eq!(image_repository("nginx@sha256:abc"), "nginx");
        assert_eq!(
            image_repository("kube-sim.invalid/fail:v2"),
            "kube-sim.invalid/fail"
        );
        assert!(image_is_latest("registry:5000/app"));
        assert!(image_is_latest("nginx:latest"));
        assert!(!image_is_latest("nginx:1.27"));
        assert!(!image_is_latest("nginx@sha256:abc"));
    }

    #[test]
    fn a_job_with_a_pod_failure_policy_replaces_only_failed_pods() {
        let mut spec = serde_json::Map::new();
        spec.insert("podFailurePolicy".into(), json!({"rules": []}));
        job_spec(&mut spec);
        assert_eq!(spec["podReplacementPolicy"], "Failed");
        let mut plain = serde_json::Map::new();
        job_spec(&mut plain);
        assert_eq!(plain["podReplacementPolicy"], "TerminatingOrFailed");
        assert_eq!(plain["completions"], 1);
        assert_eq!(plain["backoffLimit"], 6);
    }
}
