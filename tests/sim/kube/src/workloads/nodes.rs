//! The simulated Nodes, registered as a kubelet registers itself: Ready, with capacity, addresses and the
//! well-known labels, and a pod CIDR each (`10.244.<index>.0/24`) that Pod IPs come from.

use serde_json::json;

use super::writes::{KUBELET, create, resource, write_status};
use crate::cluster::Cluster;

/// The name of simulated Node `i`.
pub fn node_name(i: usize) -> String {
    format!("kube-sim-node-{i}")
}

/// Registers the Nodes that are missing, and reports the status of those that have none yet (every pass, so a
/// refused write is retried). True when it wrote.
pub async fn ensure(cluster: &Cluster, count: usize) -> bool {
    let Some(rt) = resource(cluster, "", "v1", "nodes") else {
        return false;
    };
    let mut wrote = false;
    for i in 0..count {
        let name = node_name(i);
        let existing = cluster.store().get(&rt.storage_key(), "", &name);
        if existing
            .as_ref()
            .is_some_and(|n| n["status"]["conditions"].is_array())
        {
            continue;
        }
        let now = Cluster::now();
        let condition = |ty: &str, status: &str, reason: &str, message: &str| {
            json!({"type": ty, "status": status, "reason": reason, "message": message,
                "lastHeartbeatTime": now, "lastTransitionTime": now})
        };
        let capacity =
            json!({"cpu": "8", "memory": "32Gi", "pods": "110", "ephemeral-storage": "100Gi"});
        let node = json!({
            "apiVersion": "v1", "kind": "Node",
            "metadata": {"name": name, "labels": {
                "kubernetes.io/hostname": name,
                "kubernetes.io/os": "linux",
                "kubernetes.io/arch": "amd64",
                "beta.kubernetes.io/os": "linux",
                "beta.kubernetes.io/arch": "amd64",
                "type": "kube-sim",
            }, "annotations": {"node.alpha.kubernetes.io/ttl": "0"}},
            "spec": {"podCIDR": format!("10.244.{i}.0/24"), "podCIDRs": [format!("10.244.{i}.0/24")]},
            "status": {
                "capacity": capacity,
                "allocatable": capacity,
                "conditions": [
                    condition("MemoryPressure", "False", "KubeletHasSufficientMemory", "kubelet has sufficient memory available"),
                    condition("DiskPressure", "False", "KubeletHasNoDiskPressure", "kubelet has no disk pressure"),
                    condition("PIDPressure", "False", "KubeletHasSufficientPID", "kubelet has sufficient PID available"),
                    condition("Ready", "True", "KubeletReady", "kubelet is posting ready status"),
                ],
                "addresses": [
                    {"type": "InternalIP", "address": node_ip(i)},
                    {"type": "Hostname", "address": name},
                ],
                "daemonEndpoints": {"kubeletEndpoint": {"Port": 10250}},
                "nodeInfo": {
                    "machineID": "", "systemUUID": "", "bootID": "",
                    "kernelVersion": "6.1.0", "osImage": "kube-sim",
                    "containerRuntimeVersion": "kube-sim://1.0.0",
                    "kubeletVersion": "v1.32.0", "kubeProxyVersion": "v1.32.0",
                    "operatingSystem": "linux", "architecture": "amd64",
                },
            },
        });
        // Node has a status subresource, so a create stores no status: the kubelet reports it next.
        let status = node["status"].clone();
        if existing.is_none() {
            wrote |= create(cluster, &rt, "", node, KUBELET).await;
        }
        let stored = cluster.store().get(&rt.storage_key(), "", &name);
        if let Some(stored) = stored {
            wrote |= write_status(cluster, &rt, &stored, status, KUBELET).await;
        }
    }
    wrote
}

/// The InternalIP of simulated Node `i` (below [`super::MAX_NODES`]): 10.0.0.10 onwards.
pub fn node_ip(i: usize) -> String {
    format!("10.0.{}.{}", (10 + i) / 256, (10 + i) % 256)
}
