//! What built-in registries and admission plugins add to a new object beyond its defaults: a Job's generated
//! selector and labels (batch's `PrepareForCreate`), a Service's cluster IP and node ports (the service
//! registry's allocators, which keep them on update), and a Pod's service account, priority and default
//! tolerations (the ServiceAccount, Priority and DefaultTolerationSeconds admission plugins).

use std::collections::{HashMap, HashSet};

use serde_json::{Map, Value, json};

/// Job: unless `spec.manualSelector` is true, the selector is generated from the Job's uid and the template
/// gets the matching labels (both the `batch.kubernetes.io/` names and the legacy ones).
pub fn job_on_create(job: &mut Value) {
    if job["spec"]["manualSelector"] == json!(true) {
        return;
    }
    let uid = job["metadata"]["uid"]
        .as_str()
        .unwrap_or_default()
        .to_string();
    let name = job["metadata"]["name"]
        .as_str()
        .unwrap_or_default()
        .to_string();
    let Some(spec) = job.get_mut("spec").and_then(Value::as_object_mut) else {
        return;
    };
    if spec.get("selector").is_some_and(|s| !s.is_null()) {
        // The real server refuses a selector without manualSelector; validation reports it.
        return;
    }
    spec.insert(
        "selector".into(),
        json!({"matchLabels": {"batch.kubernetes.io/controller-uid": uid}}),
    );
    let labels = [
        ("batch.kubernetes.io/controller-uid", &uid),
        ("batch.kubernetes.io/job-name", &name),
        ("controller-uid", &uid),
        ("job-name", &name),
    ];
    if let Some(template) = spec.get_mut("template").and_then(Value::as_object_mut) {
        let meta = template
            .entry("metadata")
            .or_insert_with(|| json!({}))
            .as_object_mut();
        if let Some(meta) = meta {
            let l = meta.entry("labels").or_insert_with(|| json!({}));
            if let Some(l) = l.as_object_mut() {
                for (k, v) in labels {
                    l.insert(k.into(), Value::String(v.clone()));
                }
            }
        }
    }
    // SetDefaults_Job gives a Job without labels its template's, and the real server defaults again whenever
    // it reads a Job back: the generated labels show on the Job too.
    let template_labels = job["spec"]["template"]["metadata"]["labels"].clone();
    if let Some(meta) = job.get_mut("metadata").and_then(Value::as_object_mut) {
        let empty = meta
            .get("labels")
            .and_then(Value::as_object)
            .is_none_or(Map::is_empty);
        if empty && template_labels.is_object() {
            meta.insert("labels".into(), template_labels);
        }
    }
}

/// The addresses and ports other Services hold, so allocation never hands out one twice.
#[derive(Default)]
pub struct Allocated {
    pub cluster_ips: HashSet<String>,
    pub node_ports: HashSet<i64>,
}

impl Allocated {
    pub fn from_services<'a>(services: impl Iterator<Item = &'a Value>) -> Self {
        let mut a = Allocated::default();
        for s in services {
            if let Some(ip) = s["spec"]["clusterIP"].as_str() {
                a.cluster_ips.insert(ip.to_string());
            }
            for p in s["spec"]["ports"].as_array().into_iter().flatten() {
                if let Some(n) = p["nodePort"].as_i64() {
                    a.node_ports.insert(n);
                }
            }
        }
        a
    }
}

/// Service create: a cluster IP from 10.96.0.0/12 (unless headless or ExternalName), the single-stack IPv4
/// family fields, node ports from 30000-32767 for NodePort and LoadBalancer Services, and an empty load-balancer
/// status.
pub fn service_on_create(svc: &mut Value, taken: &Allocated) {
    if let Some(spec) = svc.get_mut("spec").and_then(Value::as_object_mut) {
        allocate(spec, taken);
    }
    svc["status"] = json!({"loadBalancer": {}});
}

/// Service update, as the service registry's `dropTypeDependentFields` and `patchAllocatedValues` do: a type
/// that no longer needs a cluster IP or node ports drops the ones the client left as they were; values the
/// request left out that both types need are kept (node ports matched by port name); then anything still
/// missing is allocated.
pub fn service_on_update(new: &mut Value, old: &Value, taken: &Allocated) {
    let old_spec = &old["spec"];
    let Some(spec) = new.get_mut("spec").and_then(Value::as_object_mut) else {
        return;
    };
    let (old_ty, new_ty) = (service_type(old_spec), service_type_of(spec));
    let ports_of = |ports: Option<&Value>| -> Vec<i64> {
        ports
            .and_then(Value::as_array)
            .into_iter()
            .flatten()
            .filter_map(|p| p["nodePort"].as_i64())
            .filter(|n| *n != 0)
            .collect()
    };
    if needs_cluster_ip(&old_ty)
        && !needs_cluster_ip(&new_ty)
        && spec.get("clusterIP") == old_spec.get("clusterIP")
    {
        for k in ["clusterIP", "clusterIPs", "ipFamilies", "ipFamilyPolicy"] {
            spec.remove(k);
        }
    }
    if needs_node_ports(&old_ty)
        && !needs_node_ports(&new_ty)
        && ports_of(spec.get("ports")) == ports_of(old_spec.get("ports"))
    {
        for p in ports_mut(spec) {
            p.remove("nodePort");
        }
    }
    if needs_cluster_ip(&old_ty) && needs_cluster_ip(&new_ty) {
        let empty = spec
            .get("clusterIP")
            .and_then(Value::as_str)
            .unwrap_or_default()
            .is_empty();
        if empty {
            for k in ["clusterIP", "clusterIPs", "ipFamilies", "ipFamilyPolicy"] {
                if let Some(v) = old_spec.get(k) {
                    spec.insert(k.into(), v.clone());
                }
            }
        }
    }
    if needs_node_ports(&old_ty) && needs_node_ports(&new_ty) {
        let old_ports = ports_of(old_spec.get("ports"));
        let new_ports = ports_of(spec.get("ports"));
        let by_name: HashMap<String, i64> = old_spec["ports"]
            .as_array()
            .into_iter()
            .flatten()
            .filter_map(|p| {
                Some((
                    p["name"].as_str().unwrap_or_default().to_string(),
                    p["nodePort"].as_i64()?,
                ))
            })
            .collect();
        for p in ports_mut(spec) {
            if p.get("nodePort").and_then(Value::as_i64).unwrap_or(0) != 0 {
                continue;
            }
            let port_name = p.get("name").and_then(Value::as_str).unwrap_or_default();
            // A node port both versions already use for another port cannot be patched in.
            if let Some(n) = by_name
                .get(port_name)
                .filter(|n| !(old_ports.contains(n) && new_ports.contains(n)))
            {
                p.insert("nodePort".into(), json!(n));
            }
        }
    }
    allocate(spec, taken);
}

/// A Service spec's ports, each as an object.
fn ports_mut(spec: &mut Map<String, Value>) -> impl Iterator<Item = &mut Map<String, Value>> {
    spec.get_mut("ports")
        .and_then(Value::as_array_mut)
        .into_iter()
        .flatten()
        .filter_map(Value::as_object_mut)
}

fn service_type(spec: &Value) -> String {
    spec["type"].as_str().unwrap_or("ClusterIP").to_string()
}

fn service_type_of(spec: &Map<String, Value>) -> String {
    spec.get("type")
        .and_then(Value::as_str)
        .unwrap_or("ClusterIP")
        .to_string()
}

fn needs_cluster_ip(ty: &str) -> bool {
    ty != "ExternalName"
}

fn needs_node_ports(ty: &str) -> bool {
    ty == "NodePort" || ty == "LoadBalancer"
}

/// What the type needs and the spec lacks: a cluster IP with its family fields, and node ports.
fn allocate(spec: &mut Map<String, Value>, taken: &Allocated) {
    let ty = service_type_of(spec);
    if needs_cluster_ip(&ty) {
        let ip = match spec.get("clusterIP").and_then(Value::as_str) {
            Some(ip) if !ip.is_empty() => ip.to_string(),
            _ => free_cluster_ip(&taken.cluster_ips),
        };
        spec.insert("clusterIP".into(), Value::String(ip.clone()));
        spec.insert("clusterIPs".into(), json!([ip]));
        spec.entry("ipFamilies").or_insert_with(|| json!(["IPv4"]));
        spec.entry("ipFamilyPolicy")
            .or_insert_with(|| json!("SingleStack"));
    }
    if needs_node_ports(&ty) {
        let mut used = taken.node_ports.clone();
        for p in ports_mut(spec) {
            if p.get("nodePort").and_then(Value::as_i64).unwrap_or(0) == 0 {
                let port = free_node_port(&used);
                used.insert(port);
                p.insert("nodePort".into(), json!(port));
            }
        }
    }
}

fn random_u32() -> u32 {
    let b = uuid::Uuid::new_v4().into_bytes();
    u32::from_le_bytes([b[0], b[1], b[2], b[3]])
}

fn free_cluster_ip(taken: &HashSet<String>) -> String {
    // 10.96.0.0/12 without its network address, broadcast address and 10.96.0.1 (the `kubernetes` Service).
    let size = 1u32 << 20;
    let start = random_u32() % size;
    for i in 0..size {
        let offset = (start + i) % size;
        if offset < 2 || offset == size - 1 {
            continue;
        }
        let n = (10u32 << 24) | (96 << 16) | offset;
        let ip = format!(
            "{}.{}.{}.{}",
            n >> 24,
            (n >> 16) & 255,
            (n >> 8) & 255,
            n & 255
        );
        if !taken.contains(&ip) {
            return ip;
        }
    }
    // A million Services: the real allocator fails here too; hand out the range's first address.
    "10.96.0.2".into()
}

fn free_node_port(taken: &HashSet<i64>) -> i64 {
    let size = 2768;
    let start = i64::from(random_u32() % 2768);
    (0..size)
        .map(|i| 30000 + (start + i) % size)
        .find(|p| !taken.contains(p))
        .unwrap_or(30000)
}

/// Pod create: the ServiceAccount admission plugin names the `default` account, Priority admission sets the
/// default priority, and DefaultTolerationSeconds tolerates not-ready and unreachable nodes for 300 s.
pub fn pod_on_create(pod: &mut Value) {
    let Some(spec) = pod.get_mut("spec").and_then(Value::as_object_mut) else {
        return;
    };
    let account = match spec.get("serviceAccountName").and_then(Value::as_str) {
        Some(a) if !a.is_empty() => a.to_string(),
        _ => match spec.get("serviceAccount").and_then(Value::as_str) {
            Some(a) if !a.is_empty() => a.to_string(),
            _ => "default".to_string(),
        },
    };
    spec.insert("serviceAccountName".into(), Value::String(account.clone()));
    spec.insert("serviceAccount".into(), Value::String(account));
    spec.entry("priority").or_insert_with(|| json!(0));
    spec.entry("preemptionPolicy")
        .or_insert_with(|| json!("PreemptLowerPriority"));
    let tolerations = spec.entry("tolerations").or_insert_with(|| json!([]));
    if let Some(list) = tolerations.as_array_mut() {
        for taint in [
            "node.kubernetes.io/not-ready",
            "node.kubernetes.io/unreachable",
        ] {
            // Toleration.ToleratesTaint: an empty key with `Exists` tolerates every taint, an empty effect
            // every effect.
            let present = list.iter().any(|t| {
                let key = t["key"].as_str().unwrap_or_default();
                let key_ok = key == taint || (key.is_empty() && t["operator"] == "Exists");
                key_ok
                    && t["effect"]
                        .as_str()
                        .is_none_or(|e| e.is_empty() || e == "NoExecute")
            });
            if !present {
                let mut t = Map::new();
                t.insert("key".into(), json!(taint));
                t.insert("operator".into(), json!("Exists"));
                t.insert("effect".into(), json!("NoExecute"));
                t.insert("tolerationSeconds".into(), json!(300));
                list.push(Value::Object(t));
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_job_gets_a_selector_from_its_uid_and_the_template_the_labels() {
        let mut job = json!({"metadata": {"name": "pi", "uid": "u-1"},
            "spec": {"template": {"spec": {"containers": [{"name": "c"}]}}}});
        job_on_create(&mut job);
        assert_eq!(
            job["spec"]["selector"]["matchLabels"]["batch.kubernetes.io/controller-uid"],
            "u-1"
        );
        assert_eq!(
            job["spec"]["template"]["metadata"]["labels"]["job-name"],
            "pi"
        );
        assert_eq!(
            job["metadata"]["labels"]["batch.kubernetes.io/job-name"],
            "pi"
        );
        let mut manual = json!({"metadata": {"name": "m", "uid": "u"},
            "spec": {"manualSelector": true, "selector": {"matchLabels": {"a": "b"}}}});
        job_on_create(&mut manual);
        assert_eq!(
            manual["spec"]["selector"],
            json!({"matchLabels": {"a": "b"}})
        );
    }

    #[test]
    fn services_get_free_addresses_and_keep_them_on_update() {
        let taken = Allocated::default();
        let mut svc =
            json!({"spec": {"type": "NodePort", "ports": [{"port": 80, "protocol": "TCP"}]}});
        service_on_create(&mut svc, &taken);
        let ip = svc["spec"]["clusterIP"].as_str().unwrap().to_string();
        assert!(ip.starts_with("10."), "{ip}");
        let port = svc["spec"]["ports"][0]["nodePort"].as_i64().unwrap();
        assert!((30000..=32767).contains(&port));
        let mut replaced =
            json!({"spec": {"type": "NodePort", "ports": [{"port": 80, "protocol": "TCP"}]}});
        service_on_update(&mut replaced, &svc, &taken);
        assert_eq!(replaced["spec"]["clusterIP"], json!(ip));
        assert_eq!(replaced["spec"]["ports"][0]["nodePort"], json!(port));

        // Becoming a ClusterIP Service drops the node ports; becoming ExternalName drops the address.
        let mut internal = replaced.clone();
        internal["spec"]["type"] = json!("ClusterIP");
        service_on_update(&mut internal, &replaced, &taken);
        assert!(
            internal["spec"]["ports"][0].get("nodePort").is_none(),
            "{internal}"
        );
        assert_eq!(internal["spec"]["clusterIP"], json!(ip));
        let mut external = internal.clone();
        external["spec"]["type"] = json!("ExternalName");
        service_on_update(&mut external, &internal, &taken);
        assert!(external["spec"].get("clusterIP").is_none(), "{external}");
        // And back: what the new type needs is allocated.
        let mut back = external.clone();
        back["spec"]["type"] = json!("NodePort");
        service_on_update(&mut back, &external, &taken);
        assert!(
            back["spec"]["clusterIP"]
                .as_str()
                .unwrap()
                .starts_with("10.")
        );
        assert!(back["spec"]["ports"][0]["nodePort"].as_i64().is_some());

        let mut headless = json!({"spec": {"clusterIP": "None"}});
        service_on_create(&mut headless, &taken);
        assert_eq!(headless["spec"]["clusterIPs"], json!(["None"]));
        let all = Allocated::from_services([svc.clone()].iter());
        assert!(all.cluster_ips.contains(&ip));
    }

    #[test]
    fn pods_get_the_default_account_and_tolerations_once() {
        let mut pod = json!({"spec": {"containers": [{"name": "c"}]}});
        pod_on_create(&mut pod);
        pod_on_create(&mut pod);
        assert_eq!(pod["spec"]["serviceAccountName"], "default");
        assert_eq!(pod["spec"]["tolerations"].as_array().unwrap().len(), 2);
    }
}
