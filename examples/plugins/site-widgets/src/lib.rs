//! site-widgets: an example third-party operator for omni-operator. It serves a kind of its own,
//! `sites.example.com/v1alpha1 SiteWidget`, and for each SiteWidget keeps two children: a ConfigMap with the
//! widget's settings and a Deployment running it. A widget that does not say how many replicas it wants gets the
//! site's default, from the `site-defaults` ConfigMap in its namespace. The widget is Ready when its Deployment's
//! replicas are; deleting the widget deletes its children (they are owned: the garbage collector follows their
//! owner references), and a child deleted or changed behind the plugin's back is put back at once (the operator
//! watches the owned kinds and calls the plugin for the owner).
//!
//! It was started with `omni-operator plugin new site-widgets --group sites.example.com --kind SiteWidget`;
//! `crd.yaml` beside it installs the kind, and docs/plugins.md shows the whole way from build to binding.

use omni_plugin_sdk::{
    Condition, Gvk, Host, Info, ObjectRef, Plugin, ReconcileError, Related, Value, Verdict, json,
};

pub struct SiteWidgets;

/// The most replicas a SiteWidget may ask for, by site rule.
const MAX_REPLICAS: i64 = 10;

/// The image every widget runs.
const IMAGE: &str = "registry.k8s.io/pause:3.10";

impl Plugin for SiteWidgets {
    fn describe() -> Info {
        Info {
            name: "site-widgets".into(),
            version: env!("CARGO_PKG_VERSION").into(),
            kinds: vec![Gvk::new("sites.example.com", "v1alpha1", "SiteWidget")],
            // The children it owns: their changes call it again for their owner.
            related: vec![
                Related::owned(Gvk::new("", "v1", "ConfigMap")),
                Related::owned(Gvk::new("apps", "v1", "Deployment")),
            ],
            ..Info::default()
        }
    }

    fn reconcile<H: Host>(host: &H) -> Result<(), ReconcileError> {
        let object = host.object();
        let name = object["metadata"]["name"].as_str().unwrap_or_default();
        let (replicas, source) = replicas(host, &object)?;

        host.apply_owned(&settings(name, replicas, source))?;
        let deployment = host.apply_owned(&deployment(name, replicas))?;

        let ready = deployment["status"]["readyReplicas"].as_i64().unwrap_or(0);
        host.set_status(json!({ "replicas": replicas, "readyReplicas": ready }));
        let condition = if ready >= replicas {
            Condition::new(
                "Ready",
                true,
                "Available",
                format!("{ready} of {replicas} replicas ready ({replicas} from {source})"),
            )
        } else {
            Condition::new(
                "Ready",
                false,
                "Progressing",
                format!("{ready} of {replicas} replicas ready"),
            )
        };
        host.set_condition(condition);
        Ok(())
    }

    fn validate(object: &Value, _old: Option<&Value>) -> Verdict {
        let mut verdict = Verdict::default();
        let replicas = &object["spec"]["replicas"];
        if replicas
            .as_i64()
            .is_some_and(|r| !(0..=MAX_REPLICAS).contains(&r))
        {
            verdict.invalid(
                "spec.replicas",
                replicas.clone(),
                &format!("must be between 0 and {MAX_REPLICAS}"),
            );
        }
        verdict
    }
}

/// How many replicas the widget runs, and where that number came from.
fn replicas<H: Host>(host: &H, object: &Value) -> Result<(i64, &'static str), ReconcileError> {
    if let Some(r) = object["spec"]["replicas"].as_i64() {
        return Ok((r, "spec"));
    }
    let defaults = host.kube_get(&ObjectRef::local("v1", "ConfigMap", "site-defaults"))?;
    let from_site = defaults
        .as_ref()
        .and_then(|cm| cm["data"]["replicas"].as_str())
        .and_then(|r| r.parse().ok());
    Ok(match from_site {
        Some(r) => (r, "ConfigMap site-defaults"),
        None => (1, "the built-in default"),
    })
}

/// The widget's settings, mounted into its Pods.
fn settings(name: &str, replicas: i64, source: &str) -> Value {
    json!({
        "apiVersion": "v1", "kind": "ConfigMap",
        "metadata": {"name": format!("{name}-settings"), "labels": labels(name)},
        "data": {"replicas": replicas.to_string(), "replicas-from": source},
    })
}

fn deployment(name: &str, replicas: i64) -> Value {
    json!({
        "apiVersion": "apps/v1", "kind": "Deployment",
        "metadata": {"name": name, "labels": labels(name)},
        "spec": {
            "replicas": replicas,
            "selector": {"matchLabels": labels(name)},
            "template": {
                "metadata": {"labels": labels(name)},
                "spec": {
                    "containers": [{"name": "widget", "image": IMAGE,
                        "volumeMounts": [{"name": "settings", "mountPath": "/etc/widget"}]}],
                    "volumes": [{"name": "settings", "configMap": {"name": format!("{name}-settings")}}],
                },
            },
        },
    })
}

fn labels(name: &str) -> Value {
    json!({"app.kubernetes.io/name": "site-widget", "app.kubernetes.io/instance": name})
}

// It reads ConfigMaps and writes its two children's kinds; an operator never grants it more.
omni_plugin_sdk::export_plugin!(
    SiteWidgets,
    capabilities = "kube-read:core/ConfigMap,kube-read:apps/Deployment,kube-write:core/v1/ConfigMap,kube-write:apps/v1/Deployment"
);

#[cfg(test)]
mod tests {
    use super::*;
    use omni_plugin_sdk::mock::{MockHost, Write};
    use omni_plugin_sdk::{ConditionStatus, HostError};

    fn widget(spec: Value) -> Value {
        json!({"apiVersion": "sites.example.com/v1alpha1", "kind": "SiteWidget",
            "metadata": {"name": "w", "namespace": "site-a", "uid": "uid-w"}, "spec": spec})
    }

    #[test]
    fn a_widget_without_replicas_gets_the_sites_default() {
        let host = MockHost::new(widget(json!({}))).with_object(json!({
            "apiVersion": "v1", "kind": "ConfigMap",
            "metadata": {"name": "site-defaults", "namespace": "site-a"},
            "data": {"replicas": "3"}
        }));
        SiteWidgets::reconcile(&host).expect("reconcile");
        assert_eq!(host.outputs().status["replicas"], 3);
        let deployment = host
            .stored("apps/v1", "Deployment", None, "w")
            .expect("a Deployment");
        assert_eq!(deployment["spec"]["replicas"], 3);
    }

    #[test]
    fn the_children_are_owned_and_ready_follows_the_deployment() {
        let host = MockHost::new(widget(json!({"replicas": 2})));
        SiteWidgets::reconcile(&host).expect("reconcile");
        let writes = host.writes();
        assert_eq!(writes.len(), 2);
        assert!(
            writes
                .iter()
                .all(|w| matches!(w, Write::Apply { options, .. } if options.owned))
        );
        let settings = host
            .stored("v1", "ConfigMap", None, "w-settings")
            .expect("settings");
        assert_eq!(settings["metadata"]["ownerReferences"][0]["uid"], "uid-w");
        assert_eq!(settings["data"]["replicas"], "2");
        let ready = host.condition("Ready").expect("Ready");
        assert_eq!(
            ready.status,
            ConditionStatus::False,
            "no replica is ready yet"
        );

        // The Deployment's replicas become ready: the next call (its change wakes the plugin) says so.
        let mut deployment = host
            .stored("apps/v1", "Deployment", None, "w")
            .expect("a Deployment");
        deployment["status"] = json!({"readyReplicas": 2});
        let host = MockHost::new(widget(json!({"replicas": 2}))).with_object(deployment);
        SiteWidgets::reconcile(&host).expect("reconcile");
        let ready = host.condition("Ready").expect("Ready");
        assert_eq!(ready.status, ConditionStatus::True, "{}", ready.message);
    }

    #[test]
    fn a_conflicting_write_is_retried() {
        let host = MockHost::new(widget(json!({"replicas": 1}))).with_write_failure(
            HostError::Conflict("another manager owns .data.replicas".into()),
        );
        let err = SiteWidgets::reconcile(&host).expect_err("the conflict is reported");
        assert!(
            matches!(err, ReconcileError::Transient(ref m) if m.contains("another manager")),
            "{err:?}"
        );
    }

    #[test]
    fn too_many_replicas_are_refused_with_the_field_named() {
        let verdict = SiteWidgets::validate(&widget(json!({"replicas": 11})), None);
        assert_eq!(
            verdict.messages(),
            ["spec.replicas: Invalid value: 11: must be between 0 and 10"]
        );
    }
}
