//! Releases belong to the object that made them (issue "the sandbox, round three"): the host stamps each revision
//! with the owning object's identity and UID, and answers `conflict` to every call of another object on it —
//! through a kubeconfig both objects name, with the real built-in plugin, real Helm and a workload kube-sim. A
//! release nobody owns is taken over only when its object's user annotates it, and an object deleted and created
//! again under its name keeps its release.

use kube::api::{Api, Patch, PatchParams};
use omni_operator::helm::releases::ADOPT_ANNOTATION;
use omni_operator::helm::storage::{OWNER_LABEL, OWNER_UID_LABEL};
use serde_json::{Value, json};

use super::helm_env::{Env, cond, message};

/// The owner labels of every revision Secret of `release`.
fn owners(env: &Env, release: &str) -> Vec<(Value, Value)> {
    env.revisions(release)
        .into_iter()
        .map(|(_, s)| {
            (
                s["metadata"]["labels"][OWNER_LABEL].clone(),
                s["metadata"]["labels"][OWNER_UID_LABEL].clone(),
            )
        })
        .collect()
}

/// Whether the object is Ready, whatever the reason (a release taken over as it stands needs no action).
fn ready(o: &Value) -> bool {
    cond(o, "Ready").is_some_and(|c| c["status"] == "True")
}

async fn installed(env: &Env, name: &str) -> Value {
    env.wait(name, "Ready", ready).await
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn another_objects_release_is_never_upgraded_read_or_uninstalled_and_adoption_is_explicit() {
    let env = Env::start().await;
    env.apply(&env.release("a", json!({"releaseName": "shared"})))
        .await;
    let a = installed(&env, "a").await;
    let a_uid = a["metadata"]["uid"].clone();
    let stamps = owners(&env, "shared");
    assert_eq!(stamps.len(), 1);
    assert!(
        stamps[0].0.is_string(),
        "the revision carries no owner: {stamps:?}"
    );
    assert_eq!(stamps[0].1, a_uid);

    // b names the same release through the same kubeconfig, with another chart: refused, nothing changed.
    let mut b = env.release("b", json!({"releaseName": "shared"}));
    b["spec"]["chart"]["chart"] = json!("cilium");
    b["spec"]["chart"]["version"] = json!("1.18.2");
    env.apply(&b).await;
    let refused = env
        .wait("b", "refused", |o| {
            message(o, "Ready").contains("belongs to another object")
        })
        .await;
    assert!(
        message(&refused, "Ready").contains("belongs to another object"),
        "{:#}",
        refused["status"]
    );
    let revisions = env.revisions("shared");
    assert_eq!(revisions.len(), 1, "b made a revision of a's release");

    // Deleting b releases b and leaves a's release alone.
    env.delete("b").await;
    env.wait("b", "gone", Value::is_null).await;
    assert_eq!(env.revisions("shared").len(), 1);
    assert!(ready(&env.get("a")));

    // a deleted with its release kept, then created again under its name: still its release.
    env.patch_spec("a", json!({"deletionPolicy": "Orphan"}))
        .await;
    env.delete("a").await;
    env.wait("a", "gone", Value::is_null).await;
    assert_eq!(env.revisions("shared").len(), 1, "Orphan kept the release");
    env.apply(&env.release("a", json!({"releaseName": "shared"})))
        .await;
    let again = env
        .wait("a", "Ready again", |o| {
            o["metadata"]["uid"] != a_uid && ready(o)
        })
        .await;
    assert_ne!(again["metadata"]["uid"], a_uid);

    // A release nobody owns (its stamps removed, as a release made by hand or by another tool has none).
    env.patch_spec("a", json!({"deletionPolicy": "Orphan"}))
        .await;
    env.delete("a").await;
    env.wait("a", "gone", Value::is_null).await;
    let client = env.workload.client().await.expect("workload client");
    let secrets: Api<k8s_openapi::api::core::v1::Secret> = Api::namespaced(client, "apps");
    for (_, s) in env.revisions("shared") {
        let name = s["metadata"]["name"].as_str().expect("name");
        let unstamp = json!({"metadata": {"labels": {OWNER_LABEL: null, OWNER_UID_LABEL: null}}});
        secrets
            .patch(name, &PatchParams::default(), &Patch::Merge(&unstamp))
            .await
            .expect("unstamp");
    }
    assert!(owners(&env, "shared").iter().all(|(o, _)| o.is_null()));
    env.apply(&env.release("c", json!({"releaseName": "shared"})))
        .await;
    let unowned = env
        .wait("c", "refused", |o| {
            message(o, "Ready").contains(ADOPT_ANNOTATION)
        })
        .await;
    assert!(
        message(&unowned, "Ready").contains(&format!("{ADOPT_ANNOTATION}=apps/shared")),
        "{:#}",
        unowned["status"]
    );
    // An annotation naming another release adopts nothing.
    env.annotate("c", json!({ADOPT_ANNOTATION: "apps/other"}))
        .await;
    env.annotate("c", json!({ADOPT_ANNOTATION: "apps/shared"}))
        .await;
    let c = installed(&env, "c").await;
    let stamps = owners(&env, "shared");
    assert!(
        stamps.iter().all(|(_, uid)| *uid == c["metadata"]["uid"]),
        "the adopted release is not stamped as c's: {stamps:?}"
    );
}
