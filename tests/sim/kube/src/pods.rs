//! What kube-apiserver's pod strategy does on create (pkg/registry/core/pod/strategy.go `PrepareForCreate`):
//! the status starts as `Pending` with the pod's QoS class (pkg/apis/core/helper/qos `GetPodQOS`), and a pod with
//! scheduling gates carries `PodScheduled=False/SchedulingGated`.

use serde_json::{Map, Value, json};

/// The status a new pod is stored with, whatever the request carried.
pub fn status_on_create(pod: &Value) -> Value {
    let mut status = json!({"phase": "Pending", "qosClass": qos_class(&pod["spec"])});
    if pod["spec"]["schedulingGates"]
        .as_array()
        .is_some_and(|g| !g.is_empty())
    {
        status["conditions"] = json!([{"type": "PodScheduled", "status": "False", "reason": "SchedulingGated",
            "message": "Scheduling is blocked due to non-empty scheduling gates", "lastProbeTime": null,
            "lastTransitionTime": null}]);
    }
    status
}

/// GetPodQOS over the containers and init containers (cpu and memory only): BestEffort without any request or
/// limit; Guaranteed when every container limits both and requests (defaulting to the limits) equal the limits;
/// Burstable otherwise.
fn qos_class(spec: &Value) -> &'static str {
    let empty = Map::new();
    let containers = spec["containers"]
        .as_array()
        .into_iter()
        .flatten()
        .chain(spec["initContainers"].as_array().into_iter().flatten());
    let mut any = false;
    let mut guaranteed = true;
    for c in containers {
        let requests = c["resources"]["requests"].as_object().unwrap_or(&empty);
        let limits = c["resources"]["limits"].as_object().unwrap_or(&empty);
        for resource in ["cpu", "memory"] {
            let limit = limits.get(resource).filter(|v| !is_zero(v));
            let request = requests.get(resource).filter(|v| !is_zero(v)).or(limit);
            any |= limit.is_some() || request.is_some();
            guaranteed &= limit.is_some() && request == limit;
        }
    }
    match (any, guaranteed) {
        (false, _) => "BestEffort",
        (true, true) => "Guaranteed",
        (true, false) => "Burstable",
    }
}

fn is_zero(quantity: &Value) -> bool {
    match quantity {
        Value::String(s) => s.trim_start_matches('0').is_empty() || s == "0",
        Value::Number(n) => n.as_f64() == Some(0.0),
        _ => true,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn qos_classes_follow_requests_and_limits() {
        let pod = |resources: Value| json!({"spec": {"containers": [{"name": "a", "resources": resources}]}});
        assert_eq!(status_on_create(&pod(json!({})))["qosClass"], "BestEffort");
        assert_eq!(
            status_on_create(&pod(json!({"limits": {"cpu": "1", "memory": "1Gi"}})))["qosClass"],
            "Guaranteed"
        );
        assert_eq!(
            status_on_create(&pod(
                json!({"requests": {"cpu": "500m"}, "limits": {"cpu": "1", "memory": "1Gi"}})
            ))["qosClass"],
            "Burstable"
        );
        assert_eq!(status_on_create(&pod(json!({})))["phase"], "Pending");
        let gated =
            json!({"spec": {"schedulingGates": [{"name": "wait"}], "containers": [{"name": "a"}]}});
        assert_eq!(
            status_on_create(&gated)["conditions"][0]["reason"],
            "SchedulingGated"
        );
    }
}
