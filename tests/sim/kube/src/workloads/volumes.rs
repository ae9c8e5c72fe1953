//! The volume binder's part: a Pending PersistentVolumeClaim binds at once to a simulated volume
//! (`pvc-<uid>`) of the requested size, as with a default StorageClass that provisions immediately.

use serde_json::json;

use super::objects::{deleting, uid};
use super::writes::{CONTROLLER_MANAGER, list, resource, write_object, write_status};
use crate::cluster::Cluster;

pub async fn reconcile(cluster: &Cluster) -> bool {
    let Some(rt) = resource(cluster, "", "v1", "persistentvolumeclaims") else {
        return false;
    };
    let mut wrote = false;
    for pvc in list(cluster, &rt, None) {
        if deleting(&pvc) {
            continue;
        }
        if pvc["spec"]["volumeName"]
            .as_str()
            .unwrap_or_default()
            .is_empty()
        {
            let mut next = (*pvc).clone();
            next["spec"]["volumeName"] = json!(format!("pvc-{}", uid(&pvc)));
            next["metadata"]["annotations"]["pv.kubernetes.io/bind-completed"] = json!("yes");
            next["metadata"]["annotations"]["pv.kubernetes.io/bound-by-controller"] = json!("yes");
            wrote |= write_object(cluster, &rt, next, CONTROLLER_MANAGER).await;
            continue;
        }
        if pvc["status"]["phase"] != "Bound" {
            let status = json!({
                "phase": "Bound",
                "accessModes": pvc["spec"]["accessModes"].clone(),
                "capacity": {"storage": pvc["spec"]["resources"]["requests"]["storage"].clone()},
            });
            wrote |= write_status(cluster, &rt, &pvc, status, CONTROLLER_MANAGER).await;
        }
    }
    wrote
}
