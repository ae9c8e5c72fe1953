//! What a written Pod (or pod template) may run as: Pod Security's baseline, unless a grant says otherwise. A
//! plugin that may write Deployments must not thereby gain the node: a privileged container, a host path, the
//! host's network, PID or IPC namespace, or a ServiceAccount with more rights than `default` is each a step out of
//! the plugin's grants, so each needs a grant of its own (`kube-write-allow:privileged`, `host-path`,
//! `host-namespaces`, `kube-write-service-account:NAME`).

use serde_json::Value;

use crate::capabilities::{Grants, WritePermit};

/// Where the pod spec sits in an object of each built-in kind that carries one, as a path of fields.
fn pod_spec_path(group: &str, kind: &str) -> Option<&'static [&'static str]> {
    Some(match (group, kind) {
        ("", "Pod") => &["spec"],
        ("", "PodTemplate") => &["template", "spec"],
        ("", "ReplicationController")
        | ("apps", "Deployment" | "ReplicaSet" | "StatefulSet" | "DaemonSet")
        | ("batch", "Job") => &["spec", "template", "spec"],
        ("batch", "CronJob") => &["spec", "jobTemplate", "spec", "template", "spec"],
        _ => return None,
    })
}

/// Whether objects of this kind carry a pod spec the host checks.
pub(super) fn carries_pods(group: &str, kind: &str) -> bool {
    pod_spec_path(group, kind).is_some()
}

/// Capabilities Pod Security's baseline lets a container add (the container runtime's defaults).
const BASELINE_CAPABILITIES: [&str; 13] = [
    "AUDIT_WRITE",
    "CHOWN",
    "DAC_OVERRIDE",
    "FOWNER",
    "FSETID",
    "KILL",
    "MKNOD",
    "NET_BIND_SERVICE",
    "SETFCAP",
    "SETGID",
    "SETPCAP",
    "SETUID",
    "SYS_CHROOT",
];

/// Why the pod spec of `object` (of `group`/`kind`) is not allowed by `grants`, if it is not: the first thing
/// found, naming the field and the grant that would allow it.
pub(super) fn refusal(grants: &Grants, group: &str, kind: &str, object: &Value) -> Option<String> {
    let path = pod_spec_path(group, kind)?;
    let spec = path.iter().try_fold(object, |v, field| v.get(field))?;
    let at = path.join(".");
    let needs = |permit: WritePermit| (!grants.permits(permit)).then_some(permit);

    for field in ["serviceAccountName", "serviceAccount"] {
        if let Some(name) = spec.get(field).and_then(Value::as_str)
            && !grants.may_run_as(name)
        {
            return Some(format!(
                "{at}.{field} runs the Pods as ServiceAccount {name:?}; only `default` is allowed without the \
                 grant `kube-write-service-account:{name}`"
            ));
        }
    }
    if let Some(permit) = needs(WritePermit::HostNamespaces) {
        for field in ["hostNetwork", "hostPID", "hostIPC", "hostUsers"] {
            // `hostUsers: false` is the safe setting (a user namespace); only `true` for the others.
            let joins = field != "hostUsers" && spec.get(field) == Some(&Value::Bool(true));
            if joins {
                return Some(format!(
                    "{at}.{field} joins the node's namespace; that needs the grant `kube-write-allow:{permit}`"
                ));
            }
        }
    }
    if let Some(permit) = needs(WritePermit::HostPath)
        && let Some(volumes) = spec.get("volumes").and_then(Value::as_array)
        && let Some((i, _)) = volumes
            .iter()
            .enumerate()
            .find(|(_, v)| v.get("hostPath").is_some_and(|h| !h.is_null()))
    {
        return Some(format!(
            "{at}.volumes[{i}].hostPath mounts a path of the node; that needs the grant `kube-write-allow:{permit}`"
        ));
    }
    if spec.pointer("/securityContext/windowsOptions/hostProcess") == Some(&Value::Bool(true))
        && let Some(permit) = needs(WritePermit::Privileged)
    {
        return Some(format!(
            "{at}.securityContext.windowsOptions.hostProcess runs on the node as a host process; that needs the \
             grant `kube-write-allow:{permit}`"
        ));
    }
    for list in ["initContainers", "containers", "ephemeralContainers"] {
        let Some(containers) = spec.get(list).and_then(Value::as_array) else {
            continue;
        };
        for (i, container) in containers.iter().enumerate() {
            let here = format!("{at}.{list}[{i}]");
            if let Some(why) = container_refusal(grants, container, &here) {
                return Some(why);
            }
        }
    }
    None
}

/// Why one container is not allowed, if it is not.
fn container_refusal(grants: &Grants, container: &Value, at: &str) -> Option<String> {
    let security = container.get("securityContext");
    let field = |path: &str| security.and_then(|s| s.pointer(path));
    if !grants.permits(WritePermit::Privileged) {
        let privileged = WritePermit::Privileged;
        if field("/privileged") == Some(&Value::Bool(true)) {
            return Some(format!(
                "{at}.securityContext.privileged runs the container with the node's devices and every capability; \
                 that needs the grant `kube-write-allow:{privileged}`"
            ));
        }
        if field("/windowsOptions/hostProcess") == Some(&Value::Bool(true)) {
            return Some(format!(
                "{at}.securityContext.windowsOptions.hostProcess runs on the node as a host process; that needs \
                 the grant `kube-write-allow:{privileged}`"
            ));
        }
        if let Some(added) = field("/capabilities/add").and_then(Value::as_array)
            && let Some(extra) = added
                .iter()
                .filter_map(Value::as_str)
                .find(|c| !BASELINE_CAPABILITIES.contains(&c.trim_start_matches("CAP_")))
        {
            return Some(format!(
                "{at}.securityContext.capabilities.add adds {extra:?}, beyond Pod Security's baseline; that needs \
                 the grant `kube-write-allow:{privileged}`"
            ));
        }
    }
    if !grants.permits(WritePermit::HostNamespaces)
        && let Some(ports) = container.get("ports").and_then(Value::as_array)
        && let Some((j, _)) = ports
            .iter()
            .enumerate()
            .find(|(_, p)| p.get("hostPort").and_then(Value::as_i64).unwrap_or(0) != 0)
    {
        let permit = WritePermit::HostNamespaces;
        return Some(format!(
            "{at}.ports[{j}].hostPort listens on the node's network; that needs the grant \
             `kube-write-allow:{permit}`"
        ));
    }
    None
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    fn deployment(pod: Value) -> Value {
        json!({"apiVersion": "apps/v1", "kind": "Deployment", "spec": {"template": {"spec": pod}}})
    }

    fn container(extra: Value) -> Value {
        let mut c = json!({"name": "app", "image": "nginx"});
        if let (Some(c), Some(extra)) = (c.as_object_mut(), extra.as_object()) {
            c.extend(extra.clone());
        }
        c
    }

    #[test]
    fn a_plain_pod_passes_and_each_escape_needs_its_grant() {
        let none = Grants::parse(["kube-write"]).expect("grants");
        let plain = deployment(json!({"containers": [container(json!({}))]}));
        assert_eq!(refusal(&none, "apps", "Deployment", &plain), None);
        let cases = [
            (
                json!({"containers": [container(json!({"securityContext": {"privileged": true}}))]}),
                "containers[0].securityContext.privileged",
                "kube-write-allow:privileged",
            ),
            (
                json!({"initContainers": [container(json!({"securityContext": {"capabilities": {"add": ["SYS_ADMIN"]}}}))]}),
                "initContainers[0].securityContext.capabilities.add",
                "kube-write-allow:privileged",
            ),
            (
                json!({"containers": [container(json!({}))], "volumes": [{"name": "v", "emptyDir": {}}, {"name": "root", "hostPath": {"path": "/"}}]}),
                "volumes[1].hostPath",
                "kube-write-allow:host-path",
            ),
            (
                json!({"containers": [container(json!({}))], "hostPID": true}),
                "hostPID",
                "kube-write-allow:host-namespaces",
            ),
            (
                json!({"containers": [container(json!({"ports": [{"containerPort": 80, "hostPort": 80}]}))]}),
                "ports[0].hostPort",
                "kube-write-allow:host-namespaces",
            ),
            (
                json!({"containers": [container(json!({}))], "serviceAccountName": "admin"}),
                "serviceAccountName",
                "kube-write-service-account:admin",
            ),
            (
                json!({"containers": [container(json!({}))], "serviceAccount": "admin"}),
                "serviceAccount",
                "kube-write-service-account:admin",
            ),
        ];
        for (pod, field, grant) in cases {
            let object = deployment(pod);
            let why = refusal(&none, "apps", "Deployment", &object)
                .unwrap_or_else(|| panic!("{field} passed"));
            assert!(why.contains(field), "{why}");
            assert!(why.contains(grant), "{why}");
            let granted = Grants::parse(["kube-write", grant]).expect("grants");
            assert_eq!(
                refusal(&granted, "apps", "Deployment", &object),
                None,
                "{grant} allows {field}"
            );
        }
    }

    #[test]
    fn every_kind_with_a_pod_template_is_checked_where_its_template_is() {
        let none = Grants::parse(["kube-write"]).expect("grants");
        let bad = json!({"containers": [container(json!({}))], "hostNetwork": true});
        let objects = [
            ("", "Pod", json!({"spec": bad})),
            ("", "PodTemplate", json!({"template": {"spec": bad}})),
            (
                "",
                "ReplicationController",
                json!({"spec": {"template": {"spec": bad}}}),
            ),
            (
                "apps",
                "StatefulSet",
                json!({"spec": {"template": {"spec": bad}}}),
            ),
            (
                "apps",
                "DaemonSet",
                json!({"spec": {"template": {"spec": bad}}}),
            ),
            (
                "apps",
                "ReplicaSet",
                json!({"spec": {"template": {"spec": bad}}}),
            ),
            ("batch", "Job", json!({"spec": {"template": {"spec": bad}}})),
            (
                "batch",
                "CronJob",
                json!({"spec": {"jobTemplate": {"spec": {"template": {"spec": bad}}}}}),
            ),
        ];
        for (group, kind, object) in objects {
            assert!(carries_pods(group, kind));
            let why = refusal(&none, group, kind, &object);
            assert!(
                why.as_deref().is_some_and(|w| w.contains("hostNetwork")),
                "{kind}: {why:?}"
            );
        }
        assert!(!carries_pods("", "ConfigMap"));
        assert!(!carries_pods("example.com", "Deployment"));
    }

    #[test]
    fn the_default_service_account_and_baseline_capabilities_need_nothing() {
        let none = Grants::parse(["kube-write"]).expect("grants");
        let pod = json!({"serviceAccountName": "default", "hostUsers": false, "containers": [container(
            json!({"securityContext": {"privileged": false, "capabilities": {"add": ["NET_BIND_SERVICE", "CAP_CHOWN"], "drop": ["ALL"]}},
                   "ports": [{"containerPort": 8080}]}))]});
        assert_eq!(refusal(&none, "apps", "Deployment", &deployment(pod)), None);
    }
}
