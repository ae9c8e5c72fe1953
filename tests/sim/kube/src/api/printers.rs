//! kube-apiserver's table printers for built-in kinds (pkg/printers/internalversion/printers.go): the columns
//! `kubectl get` shows and how each cell is computed. The server prints with `Wide` on, so every row carries
//! every column; kubectl hides those of priority 1 unless asked for `-o wide`.

use serde_json::{Value, json};

use super::table::human_duration;
use crate::resources::ResourceType;
use crate::selectors::LabelSelector;

/// One column: its name (kubectl prints it upper-cased), Table type and priority.
pub struct Printed {
    pub name: &'static str,
    pub kind: &'static str,
    pub priority: i64,
}

const fn col(name: &'static str, kind: &'static str, priority: i64) -> Printed {
    Printed {
        name,
        kind,
        priority,
    }
}

const POD: &[Printed] = &[
    col("Name", "string", 0),
    col("Ready", "string", 0),
    col("Status", "string", 0),
    col("Restarts", "string", 0),
    col("Age", "string", 0),
    col("IP", "string", 1),
    col("Node", "string", 1),
    col("Nominated Node", "string", 1),
    col("Readiness Gates", "string", 1),
];
const EVENT: &[Printed] = &[
    col("Last Seen", "string", 0),
    col("Type", "string", 0),
    col("Reason", "string", 0),
    col("Object", "string", 0),
    col("Subobject", "string", 1),
    col("Source", "string", 1),
    col("Message", "string", 0),
    col("First Seen", "string", 1),
    col("Count", "string", 1),
    col("Name", "string", 1),
];
const DEPLOYMENT: &[Printed] = &[
    col("Name", "string", 0),
    col("Ready", "string", 0),
    col("Up-to-date", "string", 0),
    col("Available", "string", 0),
    col("Age", "string", 0),
    col("Containers", "string", 1),
    col("Images", "string", 1),
    col("Selector", "string", 1),
];
const REPLICA_SET: &[Printed] = &[
    col("Name", "string", 0),
    col("Desired", "integer", 0),
    col("Current", "integer", 0),
    col("Ready", "integer", 0),
    col("Age", "string", 0),
    col("Containers", "string", 1),
    col("Images", "string", 1),
    col("Selector", "string", 1),
];
const STATEFUL_SET: &[Printed] = &[
    col("Name", "string", 0),
    col("Ready", "string", 0),
    col("Age", "string", 0),
    col("Containers", "string", 1),
    col("Images", "string", 1),
];
const DAEMON_SET: &[Printed] = &[
    col("Name", "string", 0),
    col("Desired", "integer", 0),
    col("Current", "integer", 0),
    col("Ready", "integer", 0),
    col("Up-to-date", "integer", 0),
    col("Available", "integer", 0),
    col("Node Selector", "string", 0),
    col("Age", "string", 0),
    col("Containers", "string", 1),
    col("Images", "string", 1),
    col("Selector", "string", 1),
];
const JOB: &[Printed] = &[
    col("Name", "string", 0),
    col("Status", "string", 0),
    col("Completions", "string", 0),
    col("Duration", "string", 0),
    col("Age", "string", 0),
    col("Containers", "string", 1),
    col("Images", "string", 1),
    col("Selector", "string", 1),
];
const CRON_JOB: &[Printed] = &[
    col("Name", "string", 0),
    col("Schedule", "string", 0),
    col("Timezone", "string", 0),
    col("Suspend", "boolean", 0),
    col("Active", "integer", 0),
    col("Last Schedule", "string", 0),
    col("Age", "string", 0),
    col("Containers", "string", 1),
    col("Images", "string", 1),
    col("Selector", "string", 1),
];
const SERVICE: &[Printed] = &[
    col("Name", "string", 0),
    col("Type", "string", 0),
    col("Cluster-IP", "string", 0),
    col("External-IP", "string", 0),
    col("Port(s)", "string", 0),
    col("Age", "string", 0),
    col("Selector", "string", 1),
];
const NODE: &[Printed] = &[
    col("Name", "string", 0),
    col("Status", "string", 0),
    col("Roles", "string", 0),
    col("Age", "string", 0),
    col("Version", "string", 0),
    col("Internal-IP", "string", 1),
    col("External-IP", "string", 1),
    col("OS-Image", "string", 1),
    col("Kernel-Version", "string", 1),
    col("Container-Runtime", "string", 1),
];
const PERSISTENT_VOLUME_CLAIM: &[Printed] = &[
    col("Name", "string", 0),
    col("Status", "string", 0),
    col("Volume", "string", 0),
    col("Capacity", "string", 0),
    col("Access Modes", "string", 0),
    col("StorageClass", "string", 0),
    col("VolumeAttributesClass", "string", 0),
    col("Age", "string", 0),
    col("VolumeMode", "string", 1),
];
const ENDPOINTS: &[Printed] = &[
    col("Name", "string", 0),
    col("Endpoints", "string", 0),
    col("Age", "string", 0),
];
const INGRESS: &[Printed] = &[
    col("Name", "string", 0),
    col("Class", "string", 0),
    col("Hosts", "string", 0),
    col("Address", "string", 0),
    col("Ports", "string", 0),
    col("Age", "string", 0),
];
const POD_DISRUPTION_BUDGET: &[Printed] = &[
    col("Name", "string", 0),
    col("Min Available", "string", 0),
    col("Max Unavailable", "string", 0),
    col("Allowed Disruptions", "integer", 0),
    col("Age", "string", 0),
];

/// The printer's columns for a built-in kind that has one here.
pub fn columns(rt: &ResourceType) -> Option<&'static [Printed]> {
    if crate::events::is_event(rt) {
        return Some(EVENT);
    }
    Some(match (rt.group.as_str(), rt.plural.as_str()) {
        ("apps", "deployments") => DEPLOYMENT,
        ("apps", "replicasets") => REPLICA_SET,
        ("apps", "statefulsets") => STATEFUL_SET,
        ("apps", "daemonsets") => DAEMON_SET,
        ("batch", "jobs") => JOB,
        ("batch", "cronjobs") => CRON_JOB,
        ("", "services") => SERVICE,
        ("", "pods") => POD,
        ("", "nodes") => NODE,
        ("", "persistentvolumeclaims") => PERSISTENT_VOLUME_CLAIM,
        ("", "endpoints") => ENDPOINTS,
        ("networking.k8s.io", "ingresses") => INGRESS,
        ("policy", "poddisruptionbudgets") => POD_DISRUPTION_BUDGET,
        _ => return None,
    })
}

/// HumanDuration since an RFC 3339 time, or `<unknown>` (translateTimestampSince) for a missing one.
fn since(time: &Value) -> String {
    match time
        .as_str()
        .and_then(|s| s.parse::<jiff::Timestamp>().ok())
    {
        Some(t) => human_duration(jiff::Timestamp::now().as_second() - t.as_second()),
        None => "<unknown>".into(),
    }
}

fn text(v: &Value) -> String {
    v.as_str().unwrap_or_default().to_string()
}

fn int(v: &Value) -> i64 {
    v.as_i64().unwrap_or(0)
}

/// `labels.FormatLabels`: sorted `k=v` pairs, or `<none>`.
fn format_labels(map: &Value) -> String {
    let mut pairs: Vec<String> = map
        .as_object()
        .map(|m| {
            m.iter()
                .map(|(k, v)| format!("{k}={}", v.as_str().unwrap_or_default()))
                .collect()
        })
        .unwrap_or_default();
    pairs.sort();
    if pairs.is_empty() {
        "<none>".into()
    } else {
        pairs.join(",")
    }
}

/// A label selector as `metav1.LabelSelectorAsSelector(...).String()` prints it (empty when it selects by
/// nothing), or `<invalid>` as printDeployment shows a selector that does not convert.
pub fn selector_string(sel: &Value) -> String {
    LabelSelector::from_json(sel)
        .map(|s| s.to_string())
        .unwrap_or_else(|_| "<invalid>".into())
}

/// `metav1.FormatLabelSelector`: the selector string, `<none>` when it selects by nothing, `<error>` when it
/// does not convert.
fn format_label_selector(sel: &Value) -> String {
    match LabelSelector::from_json(sel).map(|s| s.to_string()) {
        Ok(s) if s.is_empty() => "<none>".into(),
        Ok(s) => s,
        Err(_) => "<error>".into(),
    }
}

/// `layoutContainerCells`: container names and images, comma-joined.
fn containers(template_spec: &Value) -> (String, String) {
    let list = template_spec["containers"]
        .as_array()
        .cloned()
        .unwrap_or_default();
    let join = |field: &str| {
        list.iter()
            .map(|c| c[field].as_str().unwrap_or_default())
            .collect::<Vec<_>>()
            .join(",")
    };
    (join("name"), join("image"))
}

/// Every cell of a row, in the columns' order.
pub fn cells(rt: &ResourceType, obj: &Value) -> Vec<Value> {
    let name = obj["metadata"]["name"].clone();
    let age = json!(since(&obj["metadata"]["creationTimestamp"]));
    let spec = &obj["spec"];
    let status = &obj["status"];
    let (names, images) = containers(&spec["template"]["spec"]);
    if crate::events::is_event(rt) {
        return event(rt, obj);
    }
    match (rt.group.as_str(), rt.plural.as_str()) {
        ("apps", "deployments") => vec![
            name,
            json!(format!(
                "{}/{}",
                int(&status["readyReplicas"]),
                spec["replicas"].as_i64().unwrap_or(1)
            )),
            json!(int(&status["updatedReplicas"])),
            json!(int(&status["availableReplicas"])),
            age,
            json!(names),
            json!(images),
            json!(selector_string(&spec["selector"])),
        ],
        ("apps", "replicasets") => vec![
            name,
            json!(spec["replicas"].as_i64().unwrap_or(1)),
            json!(int(&status["replicas"])),
            json!(int(&status["readyReplicas"])),
            age,
            json!(names),
            json!(images),
            json!(format_label_selector(&spec["selector"])),
        ],
        ("apps", "statefulsets") => vec![
            name,
            json!(format!(
                "{}/{}",
                int(&status["readyReplicas"]),
                spec["replicas"].as_i64().unwrap_or(1)
            )),
            age,
            json!(names),
            json!(images),
        ],
        ("apps", "daemonsets") => vec![
            name,
            json!(int(&status["desiredNumberScheduled"])),
            json!(int(&status["currentNumberScheduled"])),
            json!(int(&status["numberReady"])),
            json!(int(&status["updatedNumberScheduled"])),
            json!(int(&status["numberAvailable"])),
            json!(format_labels(&spec["template"]["spec"]["nodeSelector"])),
            age,
            json!(names),
            json!(images),
            json!(format_label_selector(&spec["selector"])),
        ],
        ("batch", "jobs") => {
            let mut row = vec![name];
            row.extend(job(obj));
            row.extend([
                age,
                json!(names),
                json!(images),
                json!(format_label_selector(&spec["selector"])),
            ]);
            row
        }
        ("batch", "cronjobs") => {
            let job_spec = &spec["jobTemplate"]["spec"];
            let (names, images) = containers(&job_spec["template"]["spec"]);
            let last = match &status["lastScheduleTime"] {
                Value::String(_) => since(&status["lastScheduleTime"]),
                _ => "<none>".into(),
            };
            let suspend = match spec["suspend"].as_bool() {
                Some(true) => "True",
                Some(false) => "False",
                None => "<unset>",
            };
            vec![
                name,
                json!(text(&spec["schedule"])),
                json!(spec["timeZone"].as_str().unwrap_or("<none>")),
                json!(suspend),
                json!(status["active"].as_array().map_or(0, Vec::len)),
                json!(last),
                age,
                json!(names),
                json!(images),
                json!(format_label_selector(&job_spec["selector"])),
            ]
        }
        ("", "pods") => pod(obj),
        ("", "nodes") => node(obj),
        ("", "persistentvolumeclaims") => persistent_volume_claim(obj),
        ("", "endpoints") => vec![name, json!(endpoints(obj)), age],
        ("networking.k8s.io", "ingresses") => ingress(obj),
        ("policy", "poddisruptionbudgets") => {
            let or_na = |v: &Value| match v {
                Value::Number(n) => n.to_string(),
                Value::String(s) => s.clone(),
                _ => "N/A".into(),
            };
            vec![
                name,
                json!(or_na(&spec["minAvailable"])),
                json!(or_na(&spec["maxUnavailable"])),
                json!(int(&status["disruptionsAllowed"])),
                age,
            ]
        }
        ("", "services") => vec![
            name,
            json!(spec["type"].as_str().unwrap_or("ClusterIP")),
            json!(
                spec["clusterIPs"][0]
                    .as_str()
                    .or(spec["clusterIP"].as_str())
                    .unwrap_or("<none>")
            ),
            json!(external_ip(obj)),
            json!(ports(&spec["ports"])),
            age,
            json!(format_labels(&spec["selector"])),
        ],
        _ => Vec::new(),
    }
}

/// printPod: readiness, the aggregate status (init containers, waiting and terminated reasons, terminating),
/// restarts with the time of the last one, and with `Wide` the IP, node, nominated node and readiness gates.
fn pod(pod: &Value) -> Vec<Value> {
    let (spec, status) = (&pod["spec"], &pod["status"]);
    let list = |v: &Value| v.as_array().cloned().unwrap_or_default();
    let ts = |v: &Value| v.as_str().and_then(|s| s.parse::<jiff::Timestamp>().ok());
    let init_specs = list(&spec["initContainers"]);
    // An init container with restartPolicy Always is a sidecar: it counts as a container.
    let sidecar = |name: &str| {
        init_specs
            .iter()
            .any(|c| c["name"] == name && c["restartPolicy"] == "Always")
    };
    let total = list(&spec["containers"]).len()
        + init_specs
            .iter()
            .filter(|c| c["restartPolicy"] == "Always")
            .count();
    let mut ready = 0usize;
    let mut restarts = 0i64;
    let mut sidecar_restarts = 0i64;
    let mut last_restart: Option<jiff::Timestamp> = None;
    let mut last_sidecar_restart: Option<jiff::Timestamp> = None;
    let later = |a: Option<jiff::Timestamp>, b: Option<jiff::Timestamp>| match (a, b) {
        (Some(a), Some(b)) => Some(a.max(b)),
        (a, b) => a.or(b),
    };
    let phase = text(&status["phase"]);
    let mut reason = match text(&status["reason"]) {
        r if r.is_empty() => phase.clone(),
        r => r,
    };
    let conditions = list(&status["conditions"]);
    if conditions
        .iter()
        .any(|c| c["type"] == "PodScheduled" && c["reason"] == "SchedulingGated")
    {
        reason = "SchedulingGated".into();
    }
    let mut initializing = false;
    let init_statuses = list(&status["initContainerStatuses"]);
    for (i, c) in init_statuses.iter().enumerate() {
        let name = c["name"].as_str().unwrap_or_default();
        restarts += int(&c["restartCount"]);
        let finished = ts(&c["lastState"]["terminated"]["finishedAt"]);
        last_restart = later(last_restart, finished);
        if sidecar(name) {
            sidecar_restarts += int(&c["restartCount"]);
            last_sidecar_restart = later(last_sidecar_restart, finished);
        }
        let terminated = &c["state"]["terminated"];
        let waiting_reason = text(&c["state"]["waiting"]["reason"]);
        if terminated.is_object() && int(&terminated["exitCode"]) == 0 {
            continue;
        }
        if sidecar(name) && c["started"] == json!(true) {
            if c["ready"] == json!(true) {
                ready += 1;
            }
            continue;
        }
        reason = if terminated.is_object() {
            match text(&terminated["reason"]) {
                r if !r.is_empty() => format!("Init:{r}"),
                _ if int(&terminated["signal"]) != 0 => {
                    format!("Init:Signal:{}", int(&terminated["signal"]))
                }
                _ => format!("Init:ExitCode:{}", int(&terminated["exitCode"])),
            }
        } else if !waiting_reason.is_empty() && waiting_reason != "PodInitializing" {
            format!("Init:{waiting_reason}")
        } else {
            format!("Init:{i}/{}", init_specs.len())
        };
        initializing = true;
        break;
    }
    let initialized = conditions
        .iter()
        .any(|c| c["type"] == "Initialized" && c["status"] == "True");
    if !initializing || initialized {
        restarts = sidecar_restarts;
        last_restart = last_sidecar_restart;
        let mut running = false;
        for c in list(&status["containerStatuses"]).iter().rev() {
            restarts += int(&c["restartCount"]);
            last_restart = later(
                last_restart,
                ts(&c["lastState"]["terminated"]["finishedAt"]),
            );
            let waiting = text(&c["state"]["waiting"]["reason"]);
            let terminated = &c["state"]["terminated"];
            if !waiting.is_empty() {
                reason = waiting;
            } else if terminated.is_object() {
                reason = match text(&terminated["reason"]) {
                    r if !r.is_empty() => r,
                    _ if int(&terminated["signal"]) != 0 => {
                        format!("Signal:{}", int(&terminated["signal"]))
                    }
                    _ => format!("ExitCode:{}", int(&terminated["exitCode"])),
                };
            } else if c["ready"] == json!(true) && c["state"]["running"].is_object() {
                running = true;
                ready += 1;
            }
        }
        if reason == "Completed" && running {
            let pod_ready = conditions
                .iter()
                .any(|c| c["type"] == "Ready" && c["status"] == "True");
            reason = if pod_ready { "Running" } else { "NotReady" }.into();
        }
    }
    if pod["metadata"]["deletionTimestamp"].is_string() {
        if text(&status["reason"]) == "NodeLost" {
            reason = "Unknown".into();
        } else if phase != "Succeeded" && phase != "Failed" {
            reason = "Terminating".into();
        }
    }
    let restarts = match last_restart {
        Some(at) if restarts != 0 => format!(
            "{restarts} ({} ago)",
            human_duration(jiff::Timestamp::now().as_second() - at.as_second())
        ),
        _ => restarts.to_string(),
    };
    let or_none = |s: String| {
        if s.is_empty() {
            "<none>".to_string()
        } else {
            s
        }
    };
    let gates = list(&spec["readinessGates"]);
    let readiness_gates = if gates.is_empty() {
        "<none>".to_string()
    } else {
        let met = gates
            .iter()
            .filter(|g| {
                conditions
                    .iter()
                    .find(|c| c["type"] == g["conditionType"])
                    .is_some_and(|c| c["status"] == "True")
            })
            .count();
        format!("{met}/{}", gates.len())
    };
    vec![
        pod["metadata"]["name"].clone(),
        json!(format!("{ready}/{total}")),
        json!(reason),
        json!(restarts),
        json!(since(&pod["metadata"]["creationTimestamp"])),
        json!(or_none(text(&status["podIPs"][0]["ip"]))),
        json!(or_none(text(&spec["nodeName"]))),
        json!(or_none(text(&status["nominatedNodeName"]))),
        json!(readiness_gates),
    ]
}

/// printJob's Status, Completions and Duration.
fn job(obj: &Value) -> [Value; 3] {
    let (spec, status) = (&obj["spec"], &obj["status"]);
    let succeeded = int(&status["succeeded"]);
    let completions = match spec["completions"].as_i64() {
        Some(c) => format!("{succeeded}/{c}"),
        None => match spec["parallelism"].as_i64().unwrap_or(0) {
            p if p > 1 => format!("{succeeded}/1 of {p}"),
            _ => format!("{succeeded}/1"),
        },
    };
    let ts = |v: &Value| v.as_str().and_then(|s| s.parse::<jiff::Timestamp>().ok());
    let duration = match (ts(&status["startTime"]), ts(&status["completionTime"])) {
        (None, _) => String::new(),
        (Some(start), None) => {
            human_duration(jiff::Timestamp::now().as_second() - start.as_second())
        }
        (Some(start), Some(end)) => human_duration(end.as_second() - start.as_second()),
    };
    let has = |type_: &str| {
        status["conditions"]
            .as_array()
            .into_iter()
            .flatten()
            .any(|c| c["type"] == type_ && c["status"] == "True")
    };
    let state = if has("Complete") {
        "Complete"
    } else if has("Failed") {
        "Failed"
    } else if obj["metadata"]["deletionTimestamp"].is_string() {
        "Terminating"
    } else if has("Suspended") {
        "Suspended"
    } else if has("FailureTarget") {
        "FailureTarget"
    } else {
        "Running"
    };
    [json!(state), json!(completions), json!(duration)]
}

/// getServiceExternalIP (with `Wide`: load balancer addresses are not clipped).
fn external_ip(svc: &Value) -> String {
    let spec = &svc["spec"];
    let external: Vec<String> = spec["externalIPs"]
        .as_array()
        .into_iter()
        .flatten()
        .filter_map(|v| v.as_str().map(String::from))
        .collect();
    match spec["type"].as_str().unwrap_or("ClusterIP") {
        "ClusterIP" | "NodePort" if external.is_empty() => "<none>".into(),
        "ClusterIP" | "NodePort" => external.join(","),
        "LoadBalancer" => {
            let mut lb = load_balancer_addresses(svc);
            lb.sort();
            lb.dedup();
            lb.extend(external);
            if lb.is_empty() {
                "<pending>".into()
            } else {
                lb.join(",")
            }
        }
        "ExternalName" => text(&spec["externalName"]),
        _ => "<unknown>".into(),
    }
}

/// makePortString: `port/protocol` or `port:nodePort/protocol`, comma-joined; `<none>` without ports.
fn ports(ports: &Value) -> String {
    let pieces: Vec<String> = ports
        .as_array()
        .into_iter()
        .flatten()
        .map(|p| {
            let protocol = p["protocol"].as_str().unwrap_or("TCP");
            match p["nodePort"].as_i64().filter(|n| *n > 0) {
                Some(node) => format!("{}:{node}/{protocol}", int(&p["port"])),
                None => format!("{}/{protocol}", int(&p["port"])),
            }
        })
        .collect();
    if pieces.is_empty() {
        "<none>".into()
    } else {
        pieces.join(",")
    }
}

/// printEvent.
fn event(rt: &ResourceType, obj: &Value) -> Vec<Value> {
    let e = if crate::events::is_view(rt) {
        crate::events::to_core(obj)
    } else {
        obj.clone()
    };
    let first = if e["firstTimestamp"].is_string() {
        since(&e["firstTimestamp"])
    } else {
        since(&e["eventTime"])
    };
    let series = e.get("series").filter(|s| s.is_object());
    let last = match series {
        Some(s) => since(&s["lastObservedTime"]),
        None if e["lastTimestamp"].is_string() => since(&e["lastTimestamp"]),
        None => first.clone(),
    };
    let first_non_empty = |a: &Value, b: &Value| {
        let a = text(a);
        if a.is_empty() { text(b) } else { a }
    };
    let kind = text(&e["involvedObject"]["kind"]).to_lowercase();
    let involved = text(&e["involvedObject"]["name"]);
    let object = if involved.is_empty() {
        kind
    } else {
        format!("{kind}/{involved}")
    };
    let component = first_non_empty(&e["source"]["component"], &e["reportingComponent"]);
    let instance = first_non_empty(&e["source"]["host"], &e["reportingInstance"]);
    let source = if instance.is_empty() {
        component
    } else {
        format!("{component}, {instance}")
    };
    let count = match series {
        Some(s) => int(&s["count"]),
        None => e["count"].as_i64().filter(|c| *c != 0).unwrap_or(1),
    };
    vec![
        json!(last),
        json!(text(&e["type"])),
        json!(text(&e["reason"])),
        json!(object),
        json!(text(&e["involvedObject"]["fieldPath"])),
        json!(source),
        json!(text(&e["message"]).trim()),
        json!(first),
        json!(count),
        json!(text(&e["metadata"]["name"])),
    ]
}

/// The addresses in `status.loadBalancer.ingress` (Services and Ingresses): each entry's IP, else its hostname.
fn load_balancer_addresses(obj: &Value) -> Vec<String> {
    obj["status"]["loadBalancer"]["ingress"]
        .as_array()
        .into_iter()
        .flatten()
        .filter_map(|i| {
            i["ip"]
                .as_str()
                .filter(|s| !s.is_empty())
                .or(i["hostname"].as_str())
                .map(String::from)
        })
        .collect()
}

/// printNode: readiness (with `SchedulingDisabled`), roles from the `node-role.kubernetes.io/` labels, and with
/// `Wide` the addresses and the node's software.
fn node(obj: &Value) -> Vec<Value> {
    let status = &obj["status"];
    let mut states: Vec<String> = Vec::new();
    for c in status["conditions"].as_array().into_iter().flatten() {
        if c["type"] == "Ready" {
            states.push(match c["status"].as_str() {
                Some("True") => "Ready".into(),
                _ => "NotReady".into(),
            });
        }
    }
    if states.is_empty() {
        states.push("Unknown".into());
    }
    if obj["spec"]["unschedulable"] == json!(true) {
        states.push("SchedulingDisabled".into());
    }
    let mut roles: Vec<String> = obj["metadata"]["labels"]
        .as_object()
        .into_iter()
        .flatten()
        .filter_map(|(k, v)| {
            if let Some(role) = k.strip_prefix("node-role.kubernetes.io/") {
                Some(role.to_string())
            } else if k == "kubernetes.io/role" {
                v.as_str().map(String::from)
            } else {
                None
            }
        })
        .filter(|r| !r.is_empty())
        .collect();
    roles.sort();
    roles.dedup();
    let roles = if roles.is_empty() {
        "<none>".to_string()
    } else {
        roles.join(",")
    };
    let address = |ty: &str| {
        status["addresses"]
            .as_array()
            .into_iter()
            .flatten()
            .find(|a| a["type"] == ty)
            .and_then(|a| a["address"].as_str())
            .unwrap_or("<none>")
            .to_string()
    };
    let info = &status["nodeInfo"];
    let or_unknown = |v: &Value| match v.as_str() {
        Some(s) if !s.is_empty() => s.to_string(),
        _ => "<unknown>".into(),
    };
    vec![
        obj["metadata"]["name"].clone(),
        json!(states.join(",")),
        json!(roles),
        json!(since(&obj["metadata"]["creationTimestamp"])),
        json!(text(&info["kubeletVersion"])),
        json!(address("InternalIP")),
        json!(address("ExternalIP")),
        json!(or_unknown(&info["osImage"])),
        json!(or_unknown(&info["kernelVersion"])),
        json!(or_unknown(&info["containerRuntimeVersion"])),
    ]
}

/// printPersistentVolumeClaim: phase, bound volume, capacity and access modes once bound, the storage class
/// (field or legacy annotation) and the volume attributes class.
fn persistent_volume_claim(obj: &Value) -> Vec<Value> {
    let spec = &obj["spec"];
    let status = &obj["status"];
    let bound = !text(&spec["volumeName"]).is_empty();
    let (capacity, modes) = if bound {
        // GetAccessModesAsString: each mode once, in this order.
        let have: Vec<&str> = status["accessModes"]
            .as_array()
            .into_iter()
            .flatten()
            .filter_map(Value::as_str)
            .collect();
        let modes: Vec<&str> = [
            ("ReadWriteOnce", "RWO"),
            ("ReadOnlyMany", "ROX"),
            ("ReadWriteMany", "RWX"),
            ("ReadWriteOncePod", "RWOP"),
        ]
        .iter()
        .filter(|(mode, _)| have.contains(mode))
        .map(|(_, short)| *short)
        .collect();
        (text(&status["capacity"]["storage"]), modes.join(","))
    } else {
        (String::new(), String::new())
    };
    // GetPersistentVolumeClaimClass: the beta annotation wins over the field.
    let class = obj["metadata"]["annotations"]["volume.beta.kubernetes.io/storage-class"]
        .as_str()
        .or(spec["storageClassName"].as_str())
        .unwrap_or_default();
    let phase = if obj["metadata"]["deletionTimestamp"].is_string() {
        "Terminating".to_string()
    } else {
        text(&status["phase"])
    };
    let attributes = spec["volumeAttributesClassName"]
        .as_str()
        .filter(|s| !s.is_empty())
        .unwrap_or("<unset>");
    let mode = spec["volumeMode"].as_str().unwrap_or("<unset>");
    vec![
        obj["metadata"]["name"].clone(),
        json!(phase),
        json!(text(&spec["volumeName"])),
        json!(capacity),
        json!(modes),
        json!(class),
        json!(attributes),
        json!(since(&obj["metadata"]["creationTimestamp"])),
        json!(mode),
    ]
}

/// formatEndpoints: `ip:port` for every port of every subset (ports outer, addresses inner; IPv6 in brackets),
/// the first three, then `+ N more...`; `<none>` when there are none.
fn endpoints(obj: &Value) -> String {
    const MAX: usize = 3;
    let mut list = Vec::new();
    let mut count = 0;
    for subset in obj["subsets"].as_array().into_iter().flatten() {
        let addresses: Vec<String> = subset["addresses"]
            .as_array()
            .into_iter()
            .flatten()
            .map(|a| text(&a["ip"]))
            .collect();
        let ports: Vec<i64> = subset["ports"]
            .as_array()
            .into_iter()
            .flatten()
            .map(|p| int(&p["port"]))
            .collect();
        let pairs: Vec<String> = if ports.is_empty() {
            // Headless Services may have no ports.
            addresses.clone()
        } else {
            ports
                .iter()
                .flat_map(|port| {
                    addresses.iter().map(move |ip| {
                        if ip.contains(':') {
                            format!("[{ip}]:{port}")
                        } else {
                            format!("{ip}:{port}")
                        }
                    })
                })
                .collect()
        };
        for pair in pairs {
            count += 1;
            if list.len() < MAX {
                list.push(pair);
            }
        }
    }
    match count {
        0 => "<none>".into(),
        n if n > list.len() => format!("{} + {} more...", list.join(","), n - list.len()),
        _ => list.join(","),
    }
}

/// printIngress: class, hosts (`*` for a rule without one, three then `+ N more...`), load-balancer addresses,
/// and ports `80` or `80, 443` with TLS.
fn ingress(obj: &Value) -> Vec<Value> {
    let spec = &obj["spec"];
    let class = spec["ingressClassName"]
        .as_str()
        .unwrap_or("<none>")
        .to_string();
    // formatHosts: rules without a host are left out; none at all prints `*`.
    let hosts: Vec<String> = spec["rules"]
        .as_array()
        .into_iter()
        .flatten()
        .filter_map(|r| r["host"].as_str().filter(|h| !h.is_empty()))
        .map(String::from)
        .collect();
    let hosts = match hosts.len() {
        0 => "*".to_string(),
        n if n > 3 => format!("{} + {} more...", hosts[..3].join(","), n - 3),
        _ => hosts.join(","),
    };
    let mut address = load_balancer_addresses(obj);
    address.sort();
    let ports = if spec["tls"].as_array().is_some_and(|t| !t.is_empty()) {
        "80, 443"
    } else {
        "80"
    };
    vec![
        obj["metadata"]["name"].clone(),
        json!(class),
        json!(hosts),
        json!(address.join(",")),
        json!(ports),
        json!(since(&obj["metadata"]["creationTimestamp"])),
    ]
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn services_print_ports_external_ips_and_selectors_as_the_real_printer() {
        let svc = json!({"spec": {"type": "NodePort", "ports": [{"port": 80, "nodePort": 30080}, {"port": 53, "protocol": "UDP"}],
            "selector": {"b": "2", "a": "1"}}});
        assert_eq!(ports(&svc["spec"]["ports"]), "80:30080/TCP,53/UDP");
        assert_eq!(external_ip(&svc), "<none>");
        assert_eq!(format_labels(&svc["spec"]["selector"]), "a=1,b=2");
        let lb = json!({"spec": {"type": "LoadBalancer"}, "status": {"loadBalancer": {"ingress": [{"ip": "10.0.0.2"}, {"hostname": "lb.example.com"}]}}});
        assert_eq!(external_ip(&lb), "10.0.0.2,lb.example.com");
        assert_eq!(
            external_ip(&json!({"spec": {"type": "LoadBalancer"}})),
            "<pending>"
        );
    }

    #[test]
    fn pods_print_readiness_status_and_restarts_as_the_real_printer() {
        let running = json!({"metadata": {"name": "p"}, "spec": {"containers": [{"name": "a"}, {"name": "b"}]},
            "status": {"phase": "Running", "podIPs": [{"ip": "10.1.0.7"}], "containerStatuses": [
                {"name": "a", "ready": true, "restartCount": 0, "state": {"running": {}}},
                {"name": "b", "ready": false, "restartCount": 2, "state": {"waiting": {"reason": "CrashLoopBackOff"}},
                 "lastState": {"terminated": {"finishedAt": "2020-01-01T00:00:00Z", "exitCode": 1}}}]}});
        let row = pod(&running);
        assert_eq!(row[1], "1/2");
        assert_eq!(row[2], "CrashLoopBackOff");
        assert!(
            row[3]
                .as_str()
                .is_some_and(|r| r.starts_with("2 (") && r.ends_with(" ago)")),
            "{}",
            row[3]
        );
        assert_eq!(row[5], "10.1.0.7");
        assert_eq!(row[6], "<none>");
        let initializing = json!({"metadata": {"name": "p"}, "spec": {"initContainers": [{"name": "i"}], "containers": [{"name": "a"}]},
            "status": {"phase": "Pending", "initContainerStatuses": [{"name": "i", "restartCount": 0, "state": {"running": {}}}]}});
        assert_eq!(pod(&initializing)[2], "Init:0/1");
        let terminating = json!({"metadata": {"name": "p", "deletionTimestamp": "2026-01-01T00:00:00Z"},
            "spec": {"containers": [{"name": "a"}]}, "status": {"phase": "Running"}});
        assert_eq!(pod(&terminating)[2], "Terminating");
    }

    #[test]
    fn jobs_print_status_completions_and_duration() {
        let job = json!({"spec": {"completions": 3}, "status": {"succeeded": 3, "startTime": "2026-01-01T00:00:00Z",
            "completionTime": "2026-01-01T00:02:05Z", "conditions": [{"type": "Complete", "status": "True"}]}});
        assert_eq!(
            super::job(&job),
            [json!("Complete"), json!("3/3"), json!("2m5s")]
        );
        let running = json!({"spec": {"parallelism": 2}, "status": {}});
        assert_eq!(
            super::job(&running),
            [json!("Running"), json!("0/1 of 2"), json!("")]
        );
    }
}
