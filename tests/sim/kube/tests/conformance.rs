//! Conformance: each test states the kube-apiserver behaviour it mirrors (status code, reason, message shape)
//! and checks kube-sim answers the same, over real HTTP through a kube-rs client.

mod common;

use common::*;
use serde_json::{Value, json};

mod object_semantics {
    use super::*;

    #[tokio::test]
    async fn create_sets_uid_creation_timestamp_and_a_global_monotonic_resource_version() {
        let sim = kube_sim::KubeSim::start().await.expect("start");
        let c = sim.client().await.expect("client");
        let a = send_json(&c, "POST", CONFIGMAPS, &configmap("a", json!({"k": "v"}))).await;
        let b = send_json(
            &c,
            "POST",
            SECRETS,
            &json!({"apiVersion": "v1", "kind": "Secret", "metadata": {"name": "b"}}),
        )
        .await;
        assert_eq!((a.status, b.status), (201, 201));
        let rv = |r: &Reply| {
            r.json["metadata"]["resourceVersion"]
                .as_str()
                .expect("rv")
                .parse::<u64>()
                .expect("numeric")
        };
        assert!(
            rv(&b) > rv(&a),
            "resourceVersion is global across resources"
        );
        assert_eq!(a.json["metadata"]["uid"].as_str().expect("uid").len(), 36);
        assert!(
            a.json["metadata"]["creationTimestamp"]
                .as_str()
                .expect("ts")
                .ends_with('Z')
        );
        assert!(
            a.json["metadata"].get("generation").is_none(),
            "ConfigMaps carry no generation on the real server"
        );
    }

    #[tokio::test]
    async fn create_of_an_existing_name_is_409_already_exists() {
        let sim = kube_sim::KubeSim::start().await.expect("start");
        let c = sim.client().await.expect("client");
        send_json(&c, "POST", CONFIGMAPS, &configmap("a", json!({}))).await;
        let r = send_json(&c, "POST", CONFIGMAPS, &configmap("a", json!({}))).await;
        assert_eq!((r.status, r.reason()), (409, "AlreadyExists"));
        assert_eq!(r.message(), "configmaps \"a\" already exists");
        assert_eq!(
            r.json["details"],
            json!({"name": "a", "kind": "configmaps"})
        );
    }

    #[tokio::test]
    async fn generation_bumps_on_spec_changes_only_for_custom_resources() {
        let (_sim, c) = sim_with_widgets().await;
        let w = send_json(&c, "POST", WIDGETS, &widget("w1", 1)).await;
        assert_eq!(w.json["metadata"]["generation"], 1);
        let path = format!("{WIDGETS}/w1");
        let r = patch(
            &c,
            &path,
            "application/merge-patch+json",
            &json!({"metadata": {"labels": {"a": "b"}}}),
        )
        .await;
        assert_eq!(r.json["metadata"]["generation"], 1, "metadata-only change");
        let r = patch(
            &c,
            &format!("{path}/status"),
            "application/merge-patch+json",
            &json!({"status": {"phase": "Up"}}),
        )
        .await;
        assert_eq!(
            (r.status, r.json["metadata"]["generation"].clone()),
            (200, json!(1)),
            "status-only change"
        );
        let r = patch(
            &c,
            &path,
            "application/merge-patch+json",
            &json!({"spec": {"size": 2}}),
        )
        .await;
        assert_eq!(r.json["metadata"]["generation"], 2, "spec change");
    }

    #[tokio::test]
    async fn update_with_a_stale_resource_version_is_409_conflict_with_the_real_message() {
        let sim = kube_sim::KubeSim::start().await.expect("start");
        let c = sim.client().await.expect("client");
        let created = send_json(&c, "POST", CONFIGMAPS, &configmap("a", json!({"k": "1"})))
            .await
            .json;
        let mut first = created.clone();
        first["data"]["k"] = json!("2");
        assert_eq!(
            send_json(&c, "PUT", &format!("{CONFIGMAPS}/a"), &first)
                .await
                .status,
            200
        );
        let mut stale = created;
        stale["data"]["k"] = json!("3");
        let r = send_json(&c, "PUT", &format!("{CONFIGMAPS}/a"), &stale).await;
        assert_eq!((r.status, r.reason()), (409, "Conflict"));
        assert_eq!(
            r.message(),
            "Operation cannot be fulfilled on configmaps \"a\": the object has been modified; please apply your changes to the latest version and try again"
        );
    }

    #[tokio::test]
    async fn custom_resources_refuse_unconditional_updates_but_built_ins_allow_them() {
        let (_sim, c) = sim_with_widgets().await;
        send_json(&c, "POST", WIDGETS, &widget("w1", 1)).await;
        let r = send_json(&c, "PUT", &format!("{WIDGETS}/w1"), &widget("w1", 2)).await;
        assert_eq!(r.status, 422);
        assert!(
            r.message().contains(
                "metadata.resourceVersion: Invalid value: 0x0: must be specified for an update"
            ),
            "{}",
            r.message()
        );
        send_json(&c, "POST", CONFIGMAPS, &configmap("a", json!({}))).await;
        let r = send_json(
            &c,
            "PUT",
            &format!("{CONFIGMAPS}/a"),
            &configmap("a", json!({"x": "y"})),
        )
        .await;
        assert_eq!(r.status, 200);
    }

    #[tokio::test]
    async fn status_subresource_is_isolated_in_both_directions() {
        let (_sim, c) = sim_with_widgets().await;
        let mut w = widget("w1", 1);
        w["status"] = json!({"phase": "ignored-on-create"});
        let created = send_json(&c, "POST", WIDGETS, &w).await.json;
        assert!(
            created.get("status").is_none(),
            "status is dropped on create when the status subresource is on"
        );
        let path = format!("{WIDGETS}/w1");
        let r = patch(
            &c,
            &path,
            "application/merge-patch+json",
            &json!({"spec": {"size": 3}, "status": {"phase": "Main"}}),
        )
        .await;
        assert_eq!(r.json["spec"]["size"], 3);
        assert!(
            r.json.get("status").is_none(),
            "the main resource ignores status"
        );
        let r = patch(
            &c,
            &format!("{path}/status"),
            "application/merge-patch+json",
            &json!({"spec": {"size": 9}, "status": {"phase": "Up"}}),
        )
        .await;
        assert_eq!(r.json["status"]["phase"], "Up");
        assert_eq!(
            r.json["spec"]["size"], 3,
            "the status subresource ignores spec"
        );
    }

    #[tokio::test]
    async fn an_unchanged_update_keeps_the_resource_version_and_sends_no_event() {
        let sim = kube_sim::KubeSim::start().await.expect("start");
        let c = sim.client().await.expect("client");
        let created = send_json(&c, "POST", CONFIGMAPS, &configmap("a", json!({"k": "v"})))
            .await
            .json;
        let r = send_json(&c, "PUT", &format!("{CONFIGMAPS}/a"), &created).await;
        assert_eq!(
            r.json["metadata"]["resourceVersion"],
            created["metadata"]["resourceVersion"]
        );
    }

    #[tokio::test]
    async fn delete_with_finalizers_marks_and_removing_the_last_finalizer_deletes() {
        let sim = kube_sim::KubeSim::start().await.expect("start");
        let c = sim.client().await.expect("client");
        let mut cm = configmap("a", json!({}));
        cm["metadata"]["finalizers"] = json!(["example.com/hold"]);
        send_json(&c, "POST", CONFIGMAPS, &cm).await;
        let path = format!("{CONFIGMAPS}/a");
        let r = raw(&c, "DELETE", &path, None, Vec::new()).await;
        assert_eq!(r.status, 200);
        assert!(r.json["metadata"]["deletionTimestamp"].is_string());
        assert_eq!(
            get(&c, &path).await.status,
            200,
            "still there while a finalizer remains"
        );
        let add = patch(
            &c,
            &path,
            "application/merge-patch+json",
            &json!({"metadata": {"finalizers": ["example.com/hold", "example.com/new"]}}),
        )
        .await;
        assert_eq!(add.status, 422);
        assert!(
            add.message().contains("metadata.finalizers: Forbidden: no new finalizers can be added if the object is being deleted, found new finalizers []string{\"example.com/new\"}"),
            "{}",
            add.message()
        );
        let r = patch(
            &c,
            &path,
            "application/merge-patch+json",
            &json!({"metadata": {"finalizers": null}}),
        )
        .await;
        assert_eq!(r.status, 200);
        assert_eq!(get(&c, &path).await.status, 404);
    }

    #[tokio::test]
    async fn deleting_a_namespace_removes_its_objects_and_refuses_new_ones_while_terminating() {
        let sim = kube_sim::KubeSim::start().await.expect("start");
        let c = sim.client().await.expect("client");
        send_json(
            &c,
            "POST",
            "/api/v1/namespaces",
            &json!({"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": "team"}}),
        )
        .await;
        let mut held = configmap("held", json!({}));
        held["metadata"]["finalizers"] = json!(["example.com/hold"]);
        send_json(&c, "POST", "/api/v1/namespaces/team/configmaps", &held).await;
        send_json(
            &c,
            "POST",
            "/api/v1/namespaces/team/configmaps",
            &configmap("free", json!({})),
        )
        .await;
        let r = raw(&c, "DELETE", "/api/v1/namespaces/team", None, Vec::new()).await;
        assert_eq!(
            (r.status, r.json["status"]["phase"].as_str()),
            (200, Some("Terminating"))
        );
        let refused = send_json(
            &c,
            "POST",
            "/api/v1/namespaces/team/configmaps",
            &configmap("late", json!({})),
        )
        .await;
        assert_eq!((refused.status, refused.reason()), (403, "Forbidden"));
        assert!(
            refused.message().ends_with(
                "unable to create new content in namespace team because it is being terminated"
            ),
            "{}",
            refused.message()
        );
        eventually("free is deleted", || {
            sim.get("v1", "ConfigMap", "team", "free").is_none()
        })
        .await;
        assert!(
            sim.get("v1", "Namespace", "", "team").is_some(),
            "namespace waits for the held object"
        );
        patch(
            &c,
            "/api/v1/namespaces/team/configmaps/held",
            "application/merge-patch+json",
            &json!({"metadata": {"finalizers": null}}),
        )
        .await;
        eventually("namespace is gone", || {
            sim.get("v1", "Namespace", "", "team").is_none()
        })
        .await;
    }

    async fn owner_and_dependent(c: &kube::Client) -> (Value, String) {
        let owner = send_json(c, "POST", CONFIGMAPS, &configmap("owner", json!({})))
            .await
            .json;
        let uid = owner["metadata"]["uid"].as_str().expect("uid").to_string();
        let mut dep = configmap("dep", json!({}));
        dep["metadata"]["ownerReferences"] = json!([{"apiVersion": "v1", "kind": "ConfigMap", "name": "owner", "uid": uid, "blockOwnerDeletion": true}]);
        assert_eq!(send_json(c, "POST", CONFIGMAPS, &dep).await.status, 201);
        (owner, uid)
    }

    #[tokio::test]
    async fn background_propagation_deletes_dependents_after_the_owner() {
        let sim = kube_sim::KubeSim::start().await.expect("start");
        let c = sim.client().await.expect("client");
        owner_and_dependent(&c).await;
        let r = send_json(
            &c,
            "DELETE",
            &format!("{CONFIGMAPS}/owner"),
            &json!({"propagationPolicy": "Background"}),
        )
        .await;
        assert_eq!(r.status, 200);
        assert!(
            sim.get("v1", "ConfigMap", "default", "owner").is_none(),
            "the owner goes at once"
        );
        eventually("dependent collected", || {
            sim.get("v1", "ConfigMap", "default", "dep").is_none()
        })
        .await;
    }

    #[tokio::test]
    async fn foreground_propagation_keeps_the_owner_until_dependents_are_gone() {
        let sim = kube_sim::KubeSim::start().await.expect("start");
        let c = sim.client().await.expect("client");
        owner_and_dependent(&c).await;
        let r = send_json(
            &c,
            "DELETE",
            &format!("{CONFIGMAPS}/owner"),
            &json!({"propagationPolicy": "Foreground"}),
        )
        .await;
        assert_eq!(r.status, 200);
        assert_eq!(
            r.json["metadata"]["finalizers"],
            json!(["foregroundDeletion"])
        );
        assert!(r.json["metadata"]["deletionTimestamp"].is_string());
        eventually("dependent then owner collected", || {
            sim.get("v1", "ConfigMap", "default", "dep").is_none()
                && sim.get("v1", "ConfigMap", "default", "owner").is_none()
        })
        .await;
    }

    #[tokio::test]
    async fn orphan_propagation_keeps_dependents_and_strips_their_owner_reference() {
        let sim = kube_sim::KubeSim::start().await.expect("start");
        let c = sim.client().await.expect("client");
        owner_and_dependent(&c).await;
        let r = send_json(
            &c,
            "DELETE",
            &format!("{CONFIGMAPS}/owner"),
            &json!({"propagationPolicy": "Orphan"}),
        )
        .await;
        assert_eq!(r.json["metadata"]["finalizers"], json!(["orphan"]));
        eventually("owner gone", || {
            sim.get("v1", "ConfigMap", "default", "owner").is_none()
        })
        .await;
        let dep = sim
            .get("v1", "ConfigMap", "default", "dep")
            .expect("dependent kept");
        assert!(
            dep["metadata"]["ownerReferences"]
                .as_array()
                .is_none_or(|a| a.is_empty()),
            "{dep}"
        );
    }

    #[tokio::test]
    async fn dry_run_all_answers_as_if_written_but_stores_nothing() {
        let sim = kube_sim::KubeSim::start().await.expect("start");
        let c = sim.client().await.expect("client");
        let r = send_json(
            &c,
            "POST",
            &format!("{CONFIGMAPS}?dryRun=All"),
            &configmap("a", json!({"k": "v"})),
        )
        .await;
        assert_eq!(r.status, 201);
        assert_eq!(r.json["data"]["k"], "v");
        assert_eq!(get(&c, &format!("{CONFIGMAPS}/a")).await.status, 404);
        let bad = send_json(
            &c,
            "POST",
            &format!("{CONFIGMAPS}?dryRun=Some"),
            &configmap("a", json!({})),
        )
        .await;
        assert_eq!(bad.status, 400);
    }

    #[tokio::test]
    async fn secret_string_data_is_merged_into_data_as_base64() {
        let sim = kube_sim::KubeSim::start().await.expect("start");
        let c = sim.client().await.expect("client");
        let s = json!({"apiVersion": "v1", "kind": "Secret", "metadata": {"name": "s"}, "data": {"a": "YQ=="}, "stringData": {"b": "bee"}});
        let r = send_json(&c, "POST", SECRETS, &s).await;
        assert_eq!(r.json["data"], json!({"a": "YQ==", "b": "YmVl"}));
        assert!(r.json.get("stringData").is_none());
        assert_eq!(r.json["type"], "Opaque", "type defaults to Opaque");
        // `data: null` is a nil map to the real server: stringData still lands in data.
        let s = json!({"apiVersion": "v1", "kind": "Secret", "metadata": {"name": "n"}, "data": null, "stringData": {"b": "bee"}});
        let r = send_json(&c, "POST", SECRETS, &s).await;
        assert_eq!(r.json["data"], json!({"b": "YmVl"}));
    }

    #[tokio::test]
    async fn immutable_secrets_and_config_maps_refuse_data_changes() {
        let sim = kube_sim::KubeSim::start().await.expect("start");
        let c = sim.client().await.expect("client");
        let s = json!({"apiVersion": "v1", "kind": "Secret", "metadata": {"name": "s"}, "immutable": true, "data": {"a": "YQ=="}});
        send_json(&c, "POST", SECRETS, &s).await;
        let r = patch(
            &c,
            &format!("{SECRETS}/s"),
            "application/merge-patch+json",
            &json!({"data": {"a": "Yg=="}}),
        )
        .await;
        assert_eq!(r.status, 422);
        assert!(
            r.message()
                .contains("data: Forbidden: field is immutable when `immutable` is set"),
            "{}",
            r.message()
        );
        let mut cm = configmap("c", json!({"k": "v"}));
        cm["immutable"] = json!(true);
        send_json(&c, "POST", CONFIGMAPS, &cm).await;
        let r = patch(
            &c,
            &format!("{CONFIGMAPS}/c"),
            "application/merge-patch+json",
            &json!({"data": {"k": "w"}}),
        )
        .await;
        assert_eq!(r.status, 422);
    }

    #[tokio::test]
    async fn bodies_over_three_mebibytes_are_413() {
        let sim = kube_sim::KubeSim::start().await.expect("start");
        let c = sim.client().await.expect("client");
        let big = "x".repeat(3 * 1024 * 1024 + 10);
        let r = send_json(&c, "POST", CONFIGMAPS, &configmap("big", json!({"k": big}))).await;
        assert_eq!(r.status, 413);
        assert_eq!(r.message(), "Request entity too large: limit is 3145728");
    }

    #[tokio::test]
    async fn managed_fields_record_the_field_manager_of_each_write() {
        let sim = kube_sim::KubeSim::start().await.expect("start");
        let c = sim.client().await.expect("client");
        let r = send_json(
            &c,
            "POST",
            &format!("{CONFIGMAPS}?fieldManager=tool-a"),
            &configmap("a", json!({"k": "v"})),
        )
        .await;
        let mf = r.json["metadata"]["managedFields"]
            .as_array()
            .expect("managedFields")
            .clone();
        assert_eq!(mf[0]["manager"], "tool-a");
        assert_eq!(mf[0]["operation"], "Update");
        assert_eq!(mf[0]["fieldsType"], "FieldsV1");
        assert!(mf[0]["fieldsV1"]["f:data"]["f:k"].is_object(), "{}", mf[0]);
    }

    #[tokio::test]
    async fn generate_name_appends_five_random_characters() {
        let sim = kube_sim::KubeSim::start().await.expect("start");
        let c = sim.client().await.expect("client");
        let r = send_json(
            &c,
            "POST",
            CONFIGMAPS,
            &json!({"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"generateName": "job-"}}),
        )
        .await;
        let name = r.json["metadata"]["name"].as_str().expect("name");
        assert!(name.starts_with("job-") && name.len() == 9, "{name}");
    }
}

mod bad_input {
    use super::*;

    #[tokio::test]
    async fn malformed_json_is_400_naming_the_kind() {
        let sim = kube_sim::KubeSim::start().await.expect("start");
        let c = sim.client().await.expect("client");
        let r = raw(
            &c,
            "POST",
            CONFIGMAPS,
            Some("application/json"),
            b"{not json".to_vec(),
        )
        .await;
        assert_eq!((r.status, r.reason()), (400, "BadRequest"));
        assert!(
            r.message()
                .starts_with("ConfigMap in version \"v1\" cannot be handled as a ConfigMap:"),
            "{}",
            r.message()
        );
    }

    #[tokio::test]
    async fn malformed_yaml_is_400() {
        let sim = kube_sim::KubeSim::start().await.expect("start");
        let c = sim.client().await.expect("client");
        let r = raw(
            &c,
            "POST",
            CONFIGMAPS,
            Some("application/yaml"),
            b"a: [unclosed".to_vec(),
        )
        .await;
        assert_eq!(r.status, 400);
    }

    #[tokio::test]
    async fn invalid_names_are_422_with_the_rfc_1123_message() {
        let sim = kube_sim::KubeSim::start().await.expect("start");
        let c = sim.client().await.expect("client");
        let r = send_json(&c, "POST", CONFIGMAPS, &configmap("Bad_Name", json!({}))).await;
        assert_eq!((r.status, r.reason()), (422, "Invalid"));
        assert!(
            r.message().starts_with("ConfigMap \"Bad_Name\" is invalid: metadata.name: Invalid value: \"Bad_Name\": a lowercase RFC 1123 subdomain must consist of"),
            "{}",
            r.message()
        );
        assert_eq!(r.json["details"]["causes"][0]["field"], "metadata.name");
    }

    #[tokio::test]
    async fn wrong_content_types_are_415() {
        let sim = kube_sim::KubeSim::start().await.expect("start");
        let c = sim.client().await.expect("client");
        let r = raw(
            &c,
            "POST",
            CONFIGMAPS,
            Some("text/plain"),
            b"hello".to_vec(),
        )
        .await;
        assert_eq!((r.status, r.reason()), (415, "UnsupportedMediaType"));
        send_json(&c, "POST", CONFIGMAPS, &configmap("a", json!({}))).await;
        let r = raw(
            &c,
            "PATCH",
            &format!("{CONFIGMAPS}/a"),
            Some("application/json"),
            b"{}".to_vec(),
        )
        .await;
        assert_eq!(r.status, 415);
    }

    #[tokio::test]
    async fn bad_selectors_are_400() {
        let sim = kube_sim::KubeSim::start().await.expect("start");
        let c = sim.client().await.expect("client");
        let r = get(&c, &format!("{CONFIGMAPS}?labelSelector=a%20in%20(")).await;
        assert_eq!(r.status, 400, "{}", r.text);
        let r = get(&c, &format!("{CONFIGMAPS}?fieldSelector=spec.bogus%3Dx")).await;
        assert_eq!(r.status, 400);
        assert!(r.message().contains("spec.bogus"), "{}", r.message());
    }

    #[tokio::test]
    async fn unknown_paths_are_404_and_unknown_verbs_405() {
        let sim = kube_sim::KubeSim::start().await.expect("start");
        let c = sim.client().await.expect("client");
        assert_eq!(
            get(&c, "/apis/nope.example.com/v1/things").await.status,
            404
        );
        let r = send_json(
            &c,
            "POST",
            &format!("{CONFIGMAPS}/x"),
            &configmap("x", json!({})),
        )
        .await;
        assert_eq!(r.status, 405, "POST is only served on collections");
        let r = raw(&c, "DELETE", "/api/v1/namespaces", None, Vec::new()).await;
        assert_eq!(r.status, 405, "namespaces have no deletecollection");
    }

    #[tokio::test]
    async fn built_in_fields_of_the_wrong_json_type_are_400_like_a_go_decode_error() {
        let sim = kube_sim::KubeSim::start().await.expect("start");
        let c = sim.client().await.expect("client");
        let r = send_json(&c, "POST", "/api/v1/namespaces", &json!({"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": "x"}, "spec": "oops"})).await;
        assert_eq!(r.status, 400);
        assert!(
            r.message().ends_with(
                "json: cannot unmarshal string into Go struct field Namespace.spec of type object"
            ),
            "{}",
            r.message()
        );
        let r = send_json(&c, "POST", CONFIGMAPS, &json!({"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "x"}, "data": {"n": 1}})).await;
        assert_eq!(r.status, 400);
        let r = send_json(&c, "POST", "/apis/apiextensions.k8s.io/v1/customresourcedefinitions", &json!({"apiVersion": "apiextensions.k8s.io/v1", "kind": "CustomResourceDefinition", "metadata": {"name": "a.b.c"}, "status": 5})).await;
        assert_eq!(r.status, 400);
    }

    /// kube-apiserver's update handler compares the body's name with the URL's before storage looks the object
    /// up (handlers.checkName), so the 400 wins over a 404 for a missing object.
    #[tokio::test]
    async fn a_put_whose_body_names_another_object_is_400_even_when_the_url_object_is_missing() {
        let sim = kube_sim::KubeSim::start().await.expect("start");
        let c = sim.client().await.expect("client");
        send_json(&c, "POST", CONFIGMAPS, &configmap("a", json!({}))).await;
        for target in ["a", "b"] {
            let r = send_json(
                &c,
                "PUT",
                &format!("{CONFIGMAPS}/{target}"),
                &configmap("other", json!({})),
            )
            .await;
            assert_eq!(
                (r.status, r.reason()),
                (400, "BadRequest"),
                "{target}: {}",
                r.json
            );
            assert_eq!(
                r.message(),
                format!(
                    "the name of the object (other) does not match the name on the URL ({target})"
                )
            );
        }
        let r = send_json(
            &c,
            "PUT",
            &format!("{CONFIGMAPS}/b"),
            &configmap("b", json!({})),
        )
        .await;
        assert_eq!(
            r.status, 404,
            "a matching body for a missing object is still 404"
        );
    }

    #[tokio::test]
    async fn mismatched_namespace_and_kind_are_400() {
        let sim = kube_sim::KubeSim::start().await.expect("start");
        let c = sim.client().await.expect("client");
        let mut cm = configmap("a", json!({}));
        cm["metadata"]["namespace"] = json!("other");
        let r = send_json(&c, "POST", CONFIGMAPS, &cm).await;
        assert_eq!(r.status, 400);
        assert_eq!(
            r.message(),
            "the namespace of the provided object does not match the namespace sent on the request"
        );
        let r = send_json(
            &c,
            "POST",
            CONFIGMAPS,
            &json!({"apiVersion": "v1", "kind": "Secret", "metadata": {"name": "x"}}),
        )
        .await;
        assert_eq!(r.status, 400);
    }
}

mod reads {
    use super::*;

    async fn seed(c: &kube::Client) {
        for (name, labels) in [
            ("a", json!({"app": "web", "tier": "fe"})),
            ("b", json!({"app": "web"})),
            ("c", json!({"app": "db"})),
            ("d", json!({})),
            ("e", json!({"tier": "be"})),
        ] {
            let mut cm = configmap(name, json!({}));
            cm["metadata"]["labels"] = labels;
            send_json(c, "POST", CONFIGMAPS, &cm).await;
        }
    }

    pub(super) fn names(r: &Reply) -> Vec<String> {
        r.json["items"]
            .as_array()
            .expect("items")
            .iter()
            .map(|i| i["metadata"]["name"].as_str().expect("name").to_string())
            .collect()
    }

    #[tokio::test]
    async fn label_selectors_support_every_operator() {
        let sim = kube_sim::KubeSim::start().await.expect("start");
        let c = sim.client().await.expect("client");
        seed(&c).await;
        let cases = [
            ("app=web", vec!["a", "b"]),
            ("app==web", vec!["a", "b"]),
            // kube-root-ca.crt, which every namespace holds, has no labels.
            ("app!=web", vec!["c", "d", "e", "kube-root-ca.crt"]),
            ("app in (web,db)", vec!["a", "b", "c"]),
            ("app notin (web)", vec!["c", "d", "e", "kube-root-ca.crt"]),
            ("tier", vec!["a", "e"]),
            ("!tier", vec!["b", "c", "d", "kube-root-ca.crt"]),
            ("app=web,tier=fe", vec!["a"]),
        ];
        for (sel, want) in cases {
            let q: String = form_urlencoded::byte_serialize(sel.as_bytes()).collect();
            let r = get(&c, &format!("{CONFIGMAPS}?labelSelector={q}")).await;
            assert_eq!(names(&r), want, "selector {sel}");
        }
    }

    #[tokio::test]
    async fn field_selectors_on_name_namespace_and_secret_type() {
        let sim = kube_sim::KubeSim::start().await.expect("start");
        let c = sim.client().await.expect("client");
        seed(&c).await;
        let r = get(&c, &format!("{CONFIGMAPS}?fieldSelector=metadata.name%3Db")).await;
        assert_eq!(names(&r), vec!["b"]);
        let r = get(
            &c,
            "/api/v1/configmaps?fieldSelector=metadata.namespace%21%3Ddefault",
        )
        .await;
        // Only the other namespaces' kube-root-ca.crt (kube-system, kube-public, kube-node-lease).
        assert_eq!(names(&r), vec!["kube-root-ca.crt"; 3]);
        assert!(
            r.json["items"]
                .as_array()
                .expect("items")
                .iter()
                .all(|i| i["metadata"]["namespace"] != "default")
        );
        send_json(&c, "POST", SECRETS, &json!({"apiVersion": "v1", "kind": "Secret", "metadata": {"name": "tls"}, "type": "kubernetes.io/tls", "data": {"tls.crt": "", "tls.key": ""}})).await;
        send_json(
            &c,
            "POST",
            SECRETS,
            &json!({"apiVersion": "v1", "kind": "Secret", "metadata": {"name": "plain"}}),
        )
        .await;
        let r = get(
            &c,
            &format!("{SECRETS}?fieldSelector=type%3Dkubernetes.io%2Ftls"),
        )
        .await;
        assert_eq!(names(&r), vec!["tls"]);
    }

    /// A CRD whose v1 declares `selectableFields` (Kubernetes 1.31+): `.spec.clusterRef.name` and `.spec.replicas`.
    const GADGET_CRD: &str = r#"
apiVersion: apiextensions.k8s.io/v1
kind: CustomResourceDefinition
metadata: {name: gadgets.example.com}
spec:
  group: example.com
  scope: Namespaced
  names: {plural: gadgets, singular: gadget, kind: Gadget}
  versions:
  - name: v1
    served: true
    storage: true
    selectableFields:
    - jsonPath: .spec.clusterRef.name
    - jsonPath: .spec.replicas
    schema:
      openAPIV3Schema:
        type: object
        properties:
          spec:
            type: object
            properties:
              clusterRef: {type: object, properties: {name: {type: string}}}
              replicas: {type: integer}
              size: {type: integer}
"#;
    const GADGETS: &str = "/apis/example.com/v1/namespaces/default/gadgets";

    async fn sim_with_gadgets() -> (kube_sim::KubeSim, kube::Client) {
        let sim = kube_sim::KubeSim::start().await.expect("start");
        sim.apply_yaml(GADGET_CRD).await.expect("CRD applies");
        let c = sim.client().await.expect("client");
        for _ in 0..50 {
            if get(&c, GADGETS).await.status == 200 {
                for (name, cluster, replicas) in [
                    ("a", Some("edge"), 1),
                    ("b", Some("core"), 3),
                    ("c", Some("edge"), 3),
                    ("d", None, 1),
                ] {
                    let mut spec = json!({"replicas": replicas, "size": 1});
                    if let Some(cluster) = cluster {
                        spec["clusterRef"] = json!({"name": cluster});
                    }
                    let gadget = json!({"apiVersion": "example.com/v1", "kind": "Gadget", "metadata": {"name": name}, "spec": spec});
                    assert_eq!(send_json(&c, "POST", GADGETS, &gadget).await.status, 201);
                }
                return (sim, c);
            }
            tokio::time::sleep(std::time::Duration::from_millis(20)).await;
        }
        panic!("gadgets never became served");
    }

    fn selected(selector: &str) -> String {
        let q: String = form_urlencoded::byte_serialize(selector.as_bytes()).collect();
        format!("{GADGETS}?fieldSelector={q}")
    }

    /// apiextensions-apiserver's crConverter: metadata.name and (namespaced) metadata.namespace always, a version's
    /// `selectableFields` too; an absent field selects as "" and an integer as its decimal text.
    #[tokio::test]
    async fn custom_resources_select_on_metadata_and_their_declared_selectable_fields() {
        let (_sim, c) = sim_with_gadgets().await;
        let cases = [
            ("spec.clusterRef.name=edge", vec!["a", "c"]),
            ("spec.clusterRef.name==core", vec!["b"]),
            ("spec.clusterRef.name!=edge", vec!["b", "d"]),
            ("spec.clusterRef.name=", vec!["d"]),
            ("spec.replicas=3", vec!["b", "c"]),
            ("spec.clusterRef.name=edge,spec.replicas=3", vec!["c"]),
            ("metadata.name=a", vec!["a"]),
            (
                "metadata.namespace=default,metadata.name!=a",
                vec!["b", "c", "d"],
            ),
        ];
        for (sel, want) in cases {
            let r = get(&c, &selected(sel)).await;
            assert_eq!(r.status, 200, "{sel}: {}", r.text);
            assert_eq!(names(&r), want, "selector {sel}");
        }
    }

    /// A field the CRD does not declare selectable: 400 BadRequest with the converter's own text.
    #[tokio::test]
    async fn selecting_on_an_undeclared_custom_resource_field_is_400_field_label_not_supported() {
        let (_sim, c) = sim_with_gadgets().await;
        let r = get(&c, &selected("spec.size=1")).await;
        assert_eq!((r.status, r.reason()), (400, "BadRequest"), "{}", r.text);
        assert_eq!(r.message(), "field label not supported: spec.size");
        let r = get(&c, &format!("{}&watch=true", selected("spec.size=1"))).await;
        assert_eq!(
            (r.status, r.message()),
            (400, "field label not supported: spec.size"),
            "watches check the same"
        );
    }

    #[tokio::test]
    async fn watches_send_only_objects_a_selectable_field_selects() {
        let (_sim, c) = sim_with_gadgets().await;
        let r = get(
            &c,
            &format!(
                "{}&watch=true&timeoutSeconds=1",
                selected("spec.clusterRef.name=edge")
            ),
        )
        .await;
        assert_eq!(r.status, 200, "{}", r.text);
        let added: Vec<String> = r
            .text
            .lines()
            .filter_map(|l| serde_json::from_str::<Value>(l).ok())
            .filter(|e| e["type"] == "ADDED")
            .map(|e| {
                e["object"]["metadata"]["name"]
                    .as_str()
                    .unwrap_or_default()
                    .to_string()
            })
            .collect();
        assert_eq!(added, ["a", "c"]);
    }

    /// apiextensions validation of `selectableFields`: a simple path into the schema, to a string, boolean or
    /// integer field, not in metadata, each once.
    #[tokio::test]
    async fn a_crd_with_an_invalid_selectable_field_is_422() {
        let sim = kube_sim::KubeSim::start().await.expect("start");
        let c = sim.client().await.expect("client");
        let crd = json!({"apiVersion": "apiextensions.k8s.io/v1", "kind": "CustomResourceDefinition", "metadata": {"name": "gizmos.example.com"},
            "spec": {"group": "example.com", "scope": "Namespaced", "names": {"plural": "gizmos", "kind": "Gizmo"},
                "versions": [{"name": "v1", "served": true, "storage": true,
                    "selectableFields": [{"jsonPath": ".spec.missing"}, {"jsonPath": ".spec.tags"}],
                    "schema": {"openAPIV3Schema": {"type": "object", "properties": {"spec": {"type": "object", "properties": {
                        "tags": {"type": "array", "items": {"type": "string"}}}}}}}}]}});
        let r = send_json(
            &c,
            "POST",
            "/apis/apiextensions.k8s.io/v1/customresourcedefinitions",
            &crd,
        )
        .await;
        assert_eq!(r.status, 422, "{}", r.text);
        assert!(
            r.message().contains(r#"spec.versions[0].selectableFields[0].jsonPath: Invalid value: ".spec.missing": is an invalid path: does not refer to a valid field"#),
            "{}",
            r.message()
        );
        assert!(
            r.message().contains(r#"spec.versions[0].selectableFields[1].jsonPath: Invalid value: ".spec.tags": must point to a field of type string, boolean or integer"#),
            "{}",
            r.message()
        );
    }

    #[tokio::test]
    async fn limit_and_continue_page_through_a_consistent_snapshot() {
        let sim = kube_sim::KubeSim::start().await.expect("start");
        let c = sim.client().await.expect("client");
        seed(&c).await;
        let first = get(&c, &format!("{CONFIGMAPS}?&limit=2")).await;
        assert_eq!(names(&first), vec!["a", "b"]);
        // c, d, e and kube-root-ca.crt.
        assert_eq!(first.json["metadata"]["remainingItemCount"], 4);
        let token = first.json["metadata"]["continue"]
            .as_str()
            .expect("continue")
            .to_string();
        // A write between pages is not seen: the continuation lists the first page's snapshot.
        send_json(&c, "POST", CONFIGMAPS, &configmap("bb", json!({}))).await;
        let second = get(&c, &format!("{CONFIGMAPS}?limit=2&continue={token}")).await;
        assert_eq!(names(&second), vec!["c", "d"]);
        assert_eq!(
            second.json["metadata"]["resourceVersion"],
            first.json["metadata"]["resourceVersion"]
        );
        let t2 = second.json["metadata"]["continue"]
            .as_str()
            .expect("continue")
            .to_string();
        let third = get(&c, &format!("{CONFIGMAPS}?limit=2&continue={t2}")).await;
        assert_eq!(names(&third), vec!["e", "kube-root-ca.crt"]);
        assert!(third.json["metadata"].get("continue").is_none());
    }

    #[tokio::test]
    async fn an_expired_continue_token_is_410_expired() {
        let sim = kube_sim::KubeSim::start().await.expect("start");
        let c = sim.client().await.expect("client");
        seed(&c).await;
        let first = get(&c, &format!("{CONFIGMAPS}?limit=2")).await;
        let token = first.json["metadata"]["continue"]
            .as_str()
            .expect("continue")
            .to_string();
        send_json(&c, "POST", CONFIGMAPS, &configmap("later", json!({}))).await;
        sim.compact();
        let r = get(&c, &format!("{CONFIGMAPS}?limit=2&continue={token}")).await;
        assert_eq!((r.status, r.reason()), (410, "Expired"));
        assert!(
            r.message()
                .starts_with("The provided continue parameter is too old"),
            "{}",
            r.message()
        );
        // As the real server, the 410 carries a token that continues after the same key at the latest revision:
        // the rest of the list, including what was created since.
        let fresh = r.json["metadata"]["continue"]
            .as_str()
            .expect("a fresh continue token in the 410")
            .to_string();
        let rest = get(&c, &format!("{CONFIGMAPS}?continue={fresh}")).await;
        assert_eq!(rest.status, 200, "{}", rest.json);
        assert_eq!(
            names(&rest),
            vec!["c", "d", "e", "kube-root-ca.crt", "later"]
        );
        let bad = get(&c, &format!("{CONFIGMAPS}?limit=2&continue=garbage")).await;
        assert_eq!(bad.status, 400);
    }

    #[tokio::test]
    async fn resource_version_match_exact_lists_an_older_state() {
        let sim = kube_sim::KubeSim::start().await.expect("start");
        let c = sim.client().await.expect("client");
        send_json(&c, "POST", CONFIGMAPS, &configmap("a", json!({}))).await;
        let rv = get(&c, CONFIGMAPS).await.json["metadata"]["resourceVersion"]
            .as_str()
            .expect("rv")
            .to_string();
        send_json(&c, "POST", CONFIGMAPS, &configmap("b", json!({}))).await;
        let r = get(
            &c,
            &format!("{CONFIGMAPS}?resourceVersion={rv}&resourceVersionMatch=Exact"),
        )
        .await;
        assert_eq!(names(&r), vec!["a", "kube-root-ca.crt"]);
        let r = get(&c, &format!("{CONFIGMAPS}?resourceVersionMatch=Exact")).await;
        assert_eq!(r.status, 422, "resourceVersionMatch needs resourceVersion");

        // A compacted revision: the real server's list wording (storage's interpretListError), not a watch's.
        sim.compact();
        let r = get(
            &c,
            &format!("{CONFIGMAPS}?resourceVersion={rv}&resourceVersionMatch=Exact"),
        )
        .await;
        assert_eq!((r.status, r.reason()), (410, "Expired"));
        assert_eq!(
            r.message(),
            "The resourceVersion for the provided list is too old."
        );
    }

    pub(super) async fn watch_lines(c: &kube::Client, path: &str, n: usize) -> Vec<Value> {
        use futures::{AsyncBufReadExt, TryStreamExt};
        let req = http::Request::get(path).body(Vec::new()).expect("request");
        let stream = c.request_stream(req).await.expect("watch opens");
        let mut lines = stream.lines();
        let mut out = Vec::new();
        while out.len() < n {
            let next =
                tokio::time::timeout(std::time::Duration::from_secs(5), lines.try_next()).await;
            match next {
                Ok(Ok(Some(l))) => out.push(serde_json::from_str(&l).expect("event json")),
                other => panic!("watch ended early after {} events: {other:?}", out.len()),
            }
        }
        out
    }

    #[tokio::test]
    async fn watch_from_a_resource_version_sends_only_later_events() {
        let sim = kube_sim::KubeSim::start().await.expect("start");
        let c = sim.client().await.expect("client");
        send_json(&c, "POST", CONFIGMAPS, &configmap("a", json!({}))).await;
        let rv = get(&c, CONFIGMAPS).await.json["metadata"]["resourceVersion"]
            .as_str()
            .expect("rv")
            .to_string();
        send_json(&c, "POST", CONFIGMAPS, &configmap("b", json!({}))).await;
        patch(
            &c,
            &format!("{CONFIGMAPS}/b"),
            "application/merge-patch+json",
            &json!({"data": {"x": "y"}}),
        )
        .await;
        raw(&c, "DELETE", &format!("{CONFIGMAPS}/b"), None, Vec::new()).await;
        let ev = watch_lines(
            &c,
            &format!("{CONFIGMAPS}?watch=true&resourceVersion={rv}"),
            3,
        )
        .await;
        let types: Vec<&str> = ev
            .iter()
            .map(|e| e["type"].as_str().expect("type"))
            .collect();
        assert_eq!(types, vec!["ADDED", "MODIFIED", "DELETED"]);
        assert!(ev.iter().all(|e| e["object"]["metadata"]["name"] == "b"));
    }

    #[tokio::test]
    async fn watch_without_resource_version_starts_with_the_current_state() {
        let sim = kube_sim::KubeSim::start().await.expect("start");
        let c = sim.client().await.expect("client");
        send_json(&c, "POST", CONFIGMAPS, &configmap("a", json!({}))).await;
        let ev = watch_lines(&c, &format!("{CONFIGMAPS}?watch=1"), 1).await;
        assert_eq!(
            (
                ev[0]["type"].as_str(),
                ev[0]["object"]["metadata"]["name"].as_str()
            ),
            (Some("ADDED"), Some("a"))
        );
    }

    #[tokio::test]
    async fn send_initial_events_ends_with_an_annotated_bookmark() {
        let sim = kube_sim::KubeSim::start().await.expect("start");
        let c = sim.client().await.expect("client");
        send_json(&c, "POST", CONFIGMAPS, &configmap("a", json!({}))).await;
        let ev = watch_lines(
            &c,
            &format!("{CONFIGMAPS}?watch=true&sendInitialEvents=true&resourceVersionMatch=NotOlderThan&allowWatchBookmarks=true"),
            3,
        )
        .await;
        // "a" and the namespace's kube-root-ca.crt, then the bookmark.
        assert_eq!(
            (ev[0]["type"].as_str(), ev[1]["type"].as_str()),
            (Some("ADDED"), Some("ADDED"))
        );
        assert_eq!(ev[2]["type"], "BOOKMARK");
        assert_eq!(
            ev[2]["object"]["metadata"]["annotations"]["k8s.io/initial-events-end"],
            "true"
        );
        let r = get(
            &c,
            &format!("{CONFIGMAPS}?watch=true&sendInitialEvents=true"),
        )
        .await;
        assert_eq!(
            r.status, 422,
            "sendInitialEvents needs NotOlderThan and bookmarks"
        );
    }

    #[tokio::test]
    async fn watch_from_a_compacted_resource_version_gets_a_410_error_event() {
        let sim = kube_sim::KubeSim::start().await.expect("start");
        let c = sim.client().await.expect("client");
        send_json(&c, "POST", CONFIGMAPS, &configmap("a", json!({}))).await;
        let rv = get(&c, CONFIGMAPS).await.json["metadata"]["resourceVersion"]
            .as_str()
            .expect("rv")
            .to_string();
        send_json(&c, "POST", CONFIGMAPS, &configmap("b", json!({}))).await;
        sim.compact();
        let ev = watch_lines(
            &c,
            &format!("{CONFIGMAPS}?watch=true&resourceVersion={rv}"),
            1,
        )
        .await;
        assert_eq!(ev[0]["type"], "ERROR");
        assert_eq!(ev[0]["object"]["code"], 410);
        assert_eq!(ev[0]["object"]["reason"], "Expired");
        assert!(
            ev[0]["object"]["message"]
                .as_str()
                .expect("msg")
                .starts_with("too old resource version:")
        );
    }

    #[tokio::test]
    async fn watch_with_a_label_selector_reports_objects_leaving_the_selection_as_deleted() {
        let sim = kube_sim::KubeSim::start().await.expect("start");
        let c = sim.client().await.expect("client");
        let rv = get(&c, CONFIGMAPS).await.json["metadata"]["resourceVersion"]
            .as_str()
            .expect("rv")
            .to_string();
        let mut cm = configmap("a", json!({}));
        cm["metadata"]["labels"] = json!({"app": "web"});
        send_json(&c, "POST", CONFIGMAPS, &cm).await;
        patch(
            &c,
            &format!("{CONFIGMAPS}/a"),
            "application/merge-patch+json",
            &json!({"metadata": {"labels": {"app": "db"}}}),
        )
        .await;
        let ev = watch_lines(
            &c,
            &format!("{CONFIGMAPS}?watch=true&labelSelector=app%3Dweb&resourceVersion={rv}"),
            2,
        )
        .await;
        let types: Vec<&str> = ev
            .iter()
            .map(|e| e["type"].as_str().expect("type"))
            .collect();
        assert_eq!(types, vec!["ADDED", "DELETED"]);
    }

    #[tokio::test]
    async fn watch_timeout_seconds_ends_the_stream() {
        use futures::{AsyncBufReadExt, TryStreamExt};
        let sim = kube_sim::KubeSim::start().await.expect("start");
        let c = sim.client().await.expect("client");
        let req = http::Request::get(format!(
            "{CONFIGMAPS}?watch=true&timeoutSeconds=1&resourceVersion=1"
        ))
        .body(Vec::new())
        .expect("req");
        let mut lines = c.request_stream(req).await.expect("watch").lines();
        let end = tokio::time::timeout(std::time::Duration::from_secs(4), async {
            while lines.try_next().await.ok().flatten().is_some() {}
        })
        .await;
        assert!(end.is_ok(), "the stream closes after timeoutSeconds");
    }
}

mod writes {
    use super::*;

    /// serviceaccounts/{name}/token (pkg/registry/core/serviceaccount/storage TokenREST): a TokenRequest gets a
    /// token for the account, valid for expirationSeconds (at least 10 minutes), which authenticates as
    /// system:serviceaccount:{ns}:{name} and passes a TokenReview.
    #[tokio::test]
    async fn a_token_request_issues_a_token_for_the_service_account() {
        let sim = kube_sim::KubeSim::start().await.expect("start");
        let c = sim.client().await.expect("client");
        let sa = json!({"apiVersion": "v1", "kind": "ServiceAccount", "metadata": {"name": "bot"}});
        assert_eq!(
            send_json(
                &c,
                "POST",
                "/api/v1/namespaces/default/serviceaccounts",
                &sa
            )
            .await
            .status,
            201
        );
        let path = "/api/v1/namespaces/default/serviceaccounts/bot/token";
        let request = json!({"apiVersion": "authentication.k8s.io/v1", "kind": "TokenRequest", "spec": {"expirationSeconds": 3600}});
        let r = send_json(&c, "POST", path, &request).await;
        assert_eq!(r.status, 201, "{}", r.json);
        assert_eq!(r.json["kind"], "TokenRequest");
        assert_eq!(
            r.json["spec"]["audiences"],
            json!(["https://kubernetes.default.svc.cluster.local"])
        );
        let token = r.json["status"]["token"]
            .as_str()
            .expect("token")
            .to_string();
        assert!(
            r.json["status"]["expirationTimestamp"]
                .as_str()
                .is_some_and(|t| t.ends_with('Z'))
        );

        let review = json!({"apiVersion": "authentication.k8s.io/v1", "kind": "TokenReview", "spec": {"token": token}});
        let r = send_json(
            &c,
            "POST",
            "/apis/authentication.k8s.io/v1/tokenreviews",
            &review,
        )
        .await;
        assert_eq!(r.json["status"]["authenticated"], true, "{}", r.json);
        assert_eq!(
            r.json["status"]["user"]["username"],
            "system:serviceaccount:default:bot"
        );

        let short = json!({"apiVersion": "authentication.k8s.io/v1", "kind": "TokenRequest", "spec": {"expirationSeconds": 60}});
        let r = send_json(&c, "POST", path, &short).await;
        assert_eq!((r.status, r.reason()), (422, "Invalid"), "{}", r.json);
        assert_eq!(
            r.message(),
            "TokenRequest.authentication.k8s.io \"bot\" is invalid: spec.expirationSeconds: Invalid value: 60: may not specify a duration less than 10 minutes"
        );
        let r = send_json(
            &c,
            "POST",
            "/api/v1/namespaces/default/serviceaccounts/nobody/token",
            &request,
        )
        .await;
        assert_eq!(
            (r.status, r.message()),
            (404, "serviceaccounts \"nobody\" not found")
        );
        let r = get(&c, path).await;
        assert_eq!(r.status, 405, "a token is only ever created");
    }

    /// deployments/scale is an autoscaling/v1 Scale over spec.replicas (pkg/registry/apps/deployment/storage
    /// ScaleREST): its resourceVersion is the Deployment's and a precondition on writes; negative replicas are 422.
    #[tokio::test]
    async fn the_scale_subresource_reads_and_writes_spec_replicas() {
        let sim = kube_sim::KubeSim::start().await.expect("start");
        let c = sim.client().await.expect("client");
        let deployments = "/apis/apps/v1/namespaces/default/deployments";
        let d = json!({"apiVersion": "apps/v1", "kind": "Deployment", "metadata": {"name": "web"},
            "spec": {"replicas": 2, "selector": {"matchLabels": {"app": "web"}, "matchExpressions": [{"key": "tier", "operator": "In", "values": ["b", "a"]}]},
                "template": {"metadata": {"labels": {"app": "web", "tier": "a"}}, "spec": {"containers": [{"name": "c", "image": "i"}]}}}});
        assert_eq!(send_json(&c, "POST", deployments, &d).await.status, 201);
        let path = format!("{deployments}/web/scale");
        let scale = get(&c, &path).await;
        assert_eq!(scale.status, 200, "{}", scale.json);
        assert_eq!(scale.json["kind"], "Scale");
        assert_eq!(scale.json["apiVersion"], "autoscaling/v1");
        assert_eq!(scale.json["spec"]["replicas"], 2);
        assert_eq!(scale.json["status"]["selector"], "app=web,tier in (a,b)");

        let r = patch(
            &c,
            &path,
            "application/merge-patch+json",
            &json!({"spec": {"replicas": 5}}),
        )
        .await;
        assert_eq!(
            (r.status, r.json["spec"]["replicas"].clone()),
            (200, json!(5)),
            "{}",
            r.json
        );
        let stored = get(&c, &format!("{deployments}/web")).await;
        assert_eq!(stored.json["spec"]["replicas"], 5);

        let mut stale = scale.json.clone();
        stale["spec"]["replicas"] = json!(7);
        let r = send_json(&c, "PUT", &path, &stale).await;
        assert_eq!(
            r.status, 409,
            "the old resourceVersion is a precondition: {}",
            r.json
        );
        stale["metadata"]["resourceVersion"] = stored.json["metadata"]["resourceVersion"].clone();
        let r = send_json(&c, "PUT", &path, &stale).await;
        assert_eq!(
            (r.status, r.json["spec"]["replicas"].clone()),
            (200, json!(7)),
            "{}",
            r.json
        );

        let r = patch(
            &c,
            &path,
            "application/merge-patch+json",
            &json!({"spec": {"replicas": -1}}),
        )
        .await;
        assert_eq!((r.status, r.reason()), (422, "Invalid"), "{}", r.json);
        assert_eq!(
            r.message(),
            "Scale.autoscaling \"web\" is invalid: spec.replicas: Invalid value: -1: must be greater than or equal to 0"
        );
        let r = get(&c, "/api/v1/namespaces/default/configmaps/x/scale").await;
        assert_eq!(r.status, 404, "no scale subresource on ConfigMaps");
    }

    #[tokio::test]
    async fn json_patch_applies_operations_and_a_failed_test_is_422() {
        let sim = kube_sim::KubeSim::start().await.expect("start");
        let c = sim.client().await.expect("client");
        send_json(&c, "POST", CONFIGMAPS, &configmap("a", json!({"k": "v"}))).await;
        let path = format!("{CONFIGMAPS}/a");
        let r = patch(&c, &path, "application/json-patch+json", &json!([{"op": "add", "path": "/data/n", "value": "1"}, {"op": "remove", "path": "/data/k"}])).await;
        assert_eq!((r.status, r.json["data"].clone()), (200, json!({"n": "1"})));
        let r = patch(
            &c,
            &path,
            "application/json-patch+json",
            &json!([{"op": "test", "path": "/data/n", "value": "2"}]),
        )
        .await;
        assert_eq!(r.status, 422, "{}", r.text);
        let r = patch(
            &c,
            &path,
            "application/json-patch+json",
            &json!({"op": "add"}),
        )
        .await;
        assert_eq!(r.status, 400, "a JSON patch must be an array");
    }

    #[tokio::test]
    async fn strategic_merge_patch_merges_containers_by_name_and_is_415_for_custom_resources() {
        let (_sim, c) = sim_with_widgets().await;
        let dep = json!({"apiVersion": "apps/v1", "kind": "Deployment", "metadata": {"name": "web"}, "spec": {
            "selector": {"matchLabels": {"app": "web"}},
            "template": {"metadata": {"labels": {"app": "web"}}, "spec": {"containers": [
                {"name": "app", "image": "app:1"}, {"name": "sidecar", "image": "side:1"}]}}}});
        assert_eq!(
            send_json(
                &c,
                "POST",
                "/apis/apps/v1/namespaces/default/deployments",
                &dep
            )
            .await
            .status,
            201
        );
        let r = patch(&c, "/apis/apps/v1/namespaces/default/deployments/web", "application/strategic-merge-patch+json",
            &json!({"spec": {"template": {"spec": {"containers": [{"name": "app", "image": "app:2"}]}}}})).await;
        assert_eq!(r.status, 200, "{}", r.text);
        // Containers merge by name; each also carries the server's container defaults.
        let containers: Vec<(&str, &str, &str)> = r.json["spec"]["template"]["spec"]["containers"]
            .as_array()
            .unwrap()
            .iter()
            .map(|c| {
                (
                    c["name"].as_str().unwrap(),
                    c["image"].as_str().unwrap(),
                    c["terminationMessagePolicy"].as_str().unwrap(),
                )
            })
            .collect();
        assert_eq!(
            containers,
            [("app", "app:2", "File"), ("sidecar", "side:1", "File")]
        );
        assert_eq!(r.json["metadata"]["generation"], 2);
        send_json(&c, "POST", WIDGETS, &widget("w1", 1)).await;
        let r = patch(
            &c,
            &format!("{WIDGETS}/w1"),
            "application/strategic-merge-patch+json",
            &json!({"spec": {"size": 2}}),
        )
        .await;
        assert_eq!((r.status, r.reason()), (415, "UnsupportedMediaType"));
    }

    #[tokio::test]
    async fn server_side_apply_creates_reports_conflicts_and_force_takes_ownership() {
        let sim = kube_sim::KubeSim::start().await.expect("start");
        let c = sim.client().await.expect("client");
        let path = format!("{CONFIGMAPS}/a");
        let apply = |mgr: &str, force: bool| format!("{path}?fieldManager={mgr}&force={force}");
        let r = patch(
            &c,
            &apply("one", false),
            "application/apply-patch+yaml",
            &configmap("a", json!({"k": "1"})),
        )
        .await;
        assert_eq!(r.status, 201, "apply creates: {}", r.text);
        let r = patch(
            &c,
            &apply("two", false),
            "application/apply-patch+yaml",
            &configmap("a", json!({"k": "2"})),
        )
        .await;
        assert_eq!((r.status, r.reason()), (409, "Conflict"), "{}", r.text);
        assert!(
            r.message().contains("conflict with \"one\""),
            "{}",
            r.message()
        );
        assert!(r.message().contains(".data.k"), "{}", r.message());
        let r = patch(
            &c,
            &apply("two", true),
            "application/apply-patch+yaml",
            &configmap("a", json!({"k": "2"})),
        )
        .await;
        assert_eq!((r.status, r.json["data"]["k"].as_str()), (200, Some("2")));
        let r = patch(
            &c,
            &path,
            "application/apply-patch+yaml",
            &configmap("a", json!({})),
        )
        .await;
        assert_eq!(r.status, 422, "apply needs a fieldManager");
    }

    #[tokio::test]
    async fn deletecollection_deletes_what_the_selector_matches() {
        let sim = kube_sim::KubeSim::start().await.expect("start");
        let c = sim.client().await.expect("client");
        for (n, app) in [("a", "x"), ("b", "x"), ("c", "y")] {
            let mut cm = configmap(n, json!({}));
            cm["metadata"]["labels"] = json!({"app": app});
            send_json(&c, "POST", CONFIGMAPS, &cm).await;
        }
        let r = raw(
            &c,
            "DELETE",
            &format!("{CONFIGMAPS}?labelSelector=app%3Dx"),
            None,
            Vec::new(),
        )
        .await;
        assert_eq!(r.status, 200);
        assert_eq!(r.json["items"].as_array().expect("items").len(), 2);
        assert!(sim.get("v1", "ConfigMap", "default", "c").is_some());
        assert!(sim.get("v1", "ConfigMap", "default", "a").is_none());
    }

    #[tokio::test]
    async fn delete_preconditions_on_uid_are_409() {
        let sim = kube_sim::KubeSim::start().await.expect("start");
        let c = sim.client().await.expect("client");
        send_json(&c, "POST", CONFIGMAPS, &configmap("a", json!({}))).await;
        let r = send_json(
            &c,
            "DELETE",
            &format!("{CONFIGMAPS}/a"),
            &json!({"preconditions": {"uid": "not-it"}}),
        )
        .await;
        assert_eq!(r.status, 409);
        assert!(
            r.message()
                .contains("Precondition failed: UID in precondition: not-it"),
            "{}",
            r.message()
        );
    }
}

mod custom_resources {
    use super::*;

    /// A CRD version's `subresources.scale` (apiextensions-apiserver's ScaleREST): the Scale reads the paths it
    /// names (missing replicas are 0, the selector is the stored string) and writes the desired replicas back.
    #[tokio::test]
    async fn a_crd_scale_subresource_reads_and_writes_the_paths_it_names() {
        let sim = kube_sim::KubeSim::start().await.expect("start");
        let crd = r#"
apiVersion: apiextensions.k8s.io/v1
kind: CustomResourceDefinition
metadata: {name: pools.example.com}
spec:
  group: example.com
  scope: Namespaced
  names: {plural: pools, singular: pool, kind: Pool}
  versions:
  - name: v1
    served: true
    storage: true
    subresources:
      status: {}
      scale: {specReplicasPath: .spec.size, statusReplicasPath: .status.ready, labelSelectorPath: .status.selector}
    schema:
      openAPIV3Schema:
        type: object
        properties:
          spec: {type: object, properties: {size: {type: integer}}}
          status: {type: object, properties: {ready: {type: integer}, selector: {type: string}}}
"#;
        sim.apply_yaml(crd).await.expect("CRD applies");
        let c = sim.client().await.expect("client");
        let pools = "/apis/example.com/v1/namespaces/default/pools";
        let pool = json!({"apiVersion": "example.com/v1", "kind": "Pool", "metadata": {"name": "p"}, "spec": {}});
        let created = create_when_served(&c, pools, &pool).await;
        assert_eq!(created, 201);
        let r = patch(
            &c,
            &format!("{pools}/p/status"),
            "application/merge-patch+json",
            &json!({"status": {"ready": 1, "selector": "app=p"}}),
        )
        .await;
        assert_eq!(r.status, 200, "{}", r.json);
        let path = format!("{pools}/p/scale");
        let scale = get(&c, &path).await;
        assert_eq!(scale.status, 200, "{}", scale.json);
        assert_eq!(scale.json["spec"]["replicas"], 0, "no spec.size yet: 0");
        assert_eq!(
            scale.json["status"],
            json!({"replicas": 1, "selector": "app=p"})
        );
        let r = patch(
            &c,
            &path,
            "application/merge-patch+json",
            &json!({"spec": {"replicas": 4}}),
        )
        .await;
        assert_eq!(
            (r.status, r.json["spec"]["replicas"].clone()),
            (200, json!(4)),
            "{}",
            r.json
        );
        assert_eq!(get(&c, &format!("{pools}/p")).await.json["spec"]["size"], 4);
        let discovery = get(&c, "/apis/example.com/v1").await;
        assert!(
            discovery.json["resources"]
                .as_array()
                .expect("resources")
                .iter()
                .any(|r| r["name"] == "pools/scale"
                    && r["kind"] == "Scale"
                    && r["group"] == "autoscaling"),
            "{}",
            discovery.json
        );
    }

    #[tokio::test]
    async fn schema_violations_are_422_with_field_paths() {
        let (_sim, c) = sim_with_widgets().await;
        let r = send_json(&c, "POST", WIDGETS, &widget("w1", 0)).await;
        assert_eq!(r.status, 422, "{}", r.text);
        assert!(r.message().starts_with("Widget.example.com \"w1\" is invalid: spec.size: Invalid value: 0: spec.size in body should be greater than or equal to 1"), "{}", r.message());
        let mut w = widget("w2", 1);
        w["spec"]["mode"] = json!("medium");
        let r = send_json(&c, "POST", WIDGETS, &w).await;
        assert!(
            r.message().contains(
                "spec.mode: Unsupported value: \"medium\": supported values: \"fast\", \"slow\""
            ),
            "{}",
            r.message()
        );
        let r = send_json(&c, "POST", WIDGETS, &json!({"apiVersion": "example.com/v1", "kind": "Widget", "metadata": {"name": "w3"}, "spec": {}})).await;
        assert!(
            r.message().contains("spec.size: Required value"),
            "{}",
            r.message()
        );
    }

    #[tokio::test]
    async fn defaults_are_applied_and_unknown_fields_pruned_or_refused_by_field_validation() {
        let (_sim, c) = sim_with_widgets().await;
        let mut w = widget("w1", 1);
        w["spec"]["bogus"] = json!(1);
        let r = send_json(&c, "POST", &format!("{WIDGETS}?fieldValidation=Strict"), &w).await;
        assert_eq!(r.status, 400);
        assert!(
            r.message()
                .contains("strict decoding error: unknown field \"spec.bogus\""),
            "{}",
            r.message()
        );
        let r = send_json(&c, "POST", &format!("{WIDGETS}?fieldValidation=Warn"), &w).await;
        assert_eq!(r.status, 201);
        assert!(r.json["spec"].get("bogus").is_none(), "pruned");
        assert_eq!(r.json["spec"]["mode"], "fast", "defaulted");
        let warning = r
            .headers
            .get("warning")
            .and_then(|v| v.to_str().ok())
            .unwrap_or_default();
        assert_eq!(warning, "299 - \"unknown field \\\"spec.bogus\\\"\"");
    }

    #[tokio::test]
    async fn int_or_string_accepts_both_and_rejects_others() {
        let (_sim, c) = sim_with_widgets().await;
        for (name, port, ok) in [
            ("a", json!(80), true),
            ("b", json!("http"), true),
            ("c", json!(true), false),
        ] {
            let mut w = widget(name, 1);
            w["spec"]["port"] = port;
            let r = send_json(&c, "POST", WIDGETS, &w).await;
            assert_eq!(r.status == 201, ok, "{name}: {}", r.text);
        }
    }

    #[tokio::test]
    async fn cel_validation_rules_are_enforced_with_their_messages_and_transition_rules_see_old_self()
     {
        let sim = kube_sim::KubeSim::start().await.expect("start");
        let crd = r#"
apiVersion: apiextensions.k8s.io/v1
kind: CustomResourceDefinition
metadata: {name: ranges.example.com}
spec:
  group: example.com
  scope: Namespaced
  names: {plural: ranges, singular: range, kind: Range}
  versions:
  - name: v1
    served: true
    storage: true
    schema:
      openAPIV3Schema:
        type: object
        properties:
          spec:
            type: object
            x-kubernetes-validations:
            - {rule: "self.min <= self.max", message: "min must not exceed max"}
            - {rule: "!has(oldSelf.owner) || self.owner == oldSelf.owner", message: "owner is immutable"}
            properties:
              min: {type: integer}
              max: {type: integer}
              owner: {type: string}
"#;
        sim.apply_yaml(crd).await.expect("crd");
        let c = sim.client().await.expect("client");
        let path = "/apis/example.com/v1/namespaces/default/ranges";
        let r = send_json(&c, "POST", path, &json!({"apiVersion": "example.com/v1", "kind": "Range", "metadata": {"name": "bad"}, "spec": {"min": 5, "max": 1}})).await;
        assert_eq!(r.status, 422, "{}", r.text);
        assert!(
            r.message()
                .contains("spec: Invalid value: \"object\": min must not exceed max"),
            "{}",
            r.message()
        );
        let r = send_json(&c, "POST", path, &json!({"apiVersion": "example.com/v1", "kind": "Range", "metadata": {"name": "ok"}, "spec": {"min": 1, "max": 5, "owner": "a"}})).await;
        assert_eq!(r.status, 201, "{}", r.text);
        let r = patch(
            &c,
            &format!("{path}/ok"),
            "application/merge-patch+json",
            &json!({"spec": {"owner": "b"}}),
        )
        .await;
        assert_eq!(r.status, 422, "{}", r.text);
        assert!(
            r.message().contains("owner is immutable"),
            "{}",
            r.message()
        );
    }

    #[tokio::test]
    async fn list_type_set_rejects_duplicates() {
        let (_sim, c) = sim_with_widgets().await;
        let mut w = widget("w1", 1);
        w["spec"]["tags"] = json!(["a", "a"]);
        let r = send_json(&c, "POST", WIDGETS, &w).await;
        assert_eq!(r.status, 422);
        assert!(
            r.message().contains("spec.tags[1]: Duplicate value: \"a\""),
            "{}",
            r.message()
        );
    }

    #[tokio::test]
    async fn deleting_a_crd_removes_its_objects_and_stops_serving_it() {
        let (sim, c) = sim_with_widgets().await;
        send_json(&c, "POST", WIDGETS, &widget("w1", 1)).await;
        let r = raw(
            &c,
            "DELETE",
            "/apis/apiextensions.k8s.io/v1/customresourcedefinitions/widgets.example.com",
            None,
            Vec::new(),
        )
        .await;
        assert_eq!(r.status, 200);
        eventually("CRD gone", || {
            sim.get(
                "apiextensions.k8s.io/v1",
                "CustomResourceDefinition",
                "",
                "widgets.example.com",
            )
            .is_none()
        })
        .await;
        assert_eq!(get(&c, WIDGETS).await.status, 404);
    }

    #[tokio::test]
    async fn crd_status_reports_established_and_accepted_names() {
        let (sim, _c) = sim_with_widgets().await;
        let crd = sim
            .get(
                "apiextensions.k8s.io/v1",
                "CustomResourceDefinition",
                "",
                "widgets.example.com",
            )
            .expect("crd");
        let conds = crd["status"]["conditions"].as_array().expect("conditions");
        assert!(
            conds
                .iter()
                .any(|c| c["type"] == "Established" && c["status"] == "True")
        );
        assert_eq!(crd["status"]["acceptedNames"]["kind"], "Widget");
        assert_eq!(crd["status"]["storedVersions"], json!(["v1"]));
    }

    #[tokio::test]
    async fn an_invalid_crd_is_422() {
        let sim = kube_sim::KubeSim::start().await.expect("start");
        let c = sim.client().await.expect("client");
        let crd = json!({"apiVersion": "apiextensions.k8s.io/v1", "kind": "CustomResourceDefinition", "metadata": {"name": "wrong.example.com"},
            "spec": {"group": "example.com", "scope": "Namespaced", "names": {"plural": "gadgets", "kind": "Gadget"},
                "versions": [{"name": "v1", "served": true, "storage": true, "schema": {"openAPIV3Schema": {"type": "object"}}}]}});
        let r = send_json(
            &c,
            "POST",
            "/apis/apiextensions.k8s.io/v1/customresourcedefinitions",
            &crd,
        )
        .await;
        assert_eq!(r.status, 422);
        assert!(r.message().contains("metadata.name: Invalid value: \"wrong.example.com\": must be spec.names.plural+\".\"+spec.group"), "{}", r.message());
    }
}

mod discovery_and_openapi {
    use super::*;

    /// `/openapi/v2` as client-go's OpenAPISchema asks for it (kubectl 1.27 and 1.28 before any apply): protobuf,
    /// answered with kube-openapi's content type (`.v1.0`, since Go's mime parser refuses the `@` kubectl sends),
    /// and JSON otherwise.
    #[tokio::test]
    async fn openapi_v2_answers_protobuf_and_json() {
        let sim = kube_sim::KubeSim::start().await.expect("start");
        let c = sim.client().await.expect("client");
        let req = http::Request::get("/openapi/v2")
            .header(
                "accept",
                "application/com.github.proto-openapi.spec.v2@v1.0+protobuf",
            )
            .body(Vec::new())
            .expect("request");
        let resp = c
            .send(req.map(kube::client::Body::from))
            .await
            .expect("answer");
        assert_eq!(resp.status(), 200);
        assert_eq!(
            resp.headers()["content-type"],
            "application/com.github.proto-openapi.spec.v2.v1.0+protobuf"
        );
        use http_body_util::BodyExt as _;
        let body = resp.into_body().collect().await.expect("body").to_bytes();
        // Field 1 of the gnostic Document: swagger = "2.0".
        assert_eq!(&body[..5], b"\x0a\x032.0", "{body:?}");
        let json = get(&c, "/openapi/v2").await;
        assert_eq!(json.status, 200);
        assert_eq!(json.json["swagger"], "2.0");
    }

    /// `/openapi/v2` is `/openapi/v3` in v2's terms: every v3 path and schema of every group-version is there,
    /// built-in kinds with their real definitions (GVK, field types, merge keys) and CRDs with their schemas.
    #[tokio::test]
    async fn openapi_v2_holds_what_every_v3_document_holds() {
        let (_sim, c) = sim_with_widgets().await;
        let v2 = get(&c, "/openapi/v2").await.json;
        let index = get(&c, "/openapi/v3").await.json;
        let mut documents = 0;
        for entry in index["paths"].as_object().unwrap().values() {
            let v3 = get(&c, entry["serverRelativeURL"].as_str().unwrap())
                .await
                .json;
            documents += 1;
            for path in v3["paths"].as_object().unwrap().keys() {
                assert!(
                    v2["paths"].get(path).is_some(),
                    "{path} is missing from /openapi/v2"
                );
            }
            for name in v3["components"]["schemas"].as_object().unwrap().keys() {
                assert!(
                    v2["definitions"].get(name).is_some(),
                    "{name} is missing from /openapi/v2"
                );
            }
        }
        assert!(documents > 5);
        let widget = &v2["definitions"]["com.example.v1.Widget"];
        assert_eq!(
            widget["properties"]["spec"]["properties"]["size"]["type"],
            "integer"
        );
        let deployment = &v2["definitions"]["io.k8s.api.apps.v1.Deployment"];
        assert_eq!(
            deployment["x-kubernetes-group-version-kind"],
            json!([{"group": "apps", "version": "v1", "kind": "Deployment"}])
        );
        assert_eq!(
            deployment["properties"]["spec"]["$ref"],
            "#/definitions/io.k8s.api.apps.v1.DeploymentSpec"
        );
        let containers =
            &v2["definitions"]["io.k8s.api.core.v1.PodSpec"]["properties"]["containers"];
        assert_eq!(containers["x-kubernetes-patch-merge-key"], "name");
        let get_op = &v2["paths"]["/apis/apps/v1/namespaces/{namespace}/deployments/{name}"]["get"];
        assert_eq!(
            get_op["responses"]["200"]["schema"]["$ref"],
            "#/definitions/io.k8s.api.apps.v1.Deployment"
        );
        assert_eq!(
            get_op["x-kubernetes-group-version-kind"]["kind"],
            "Deployment"
        );
        // No reference dangles.
        let text = v2.to_string();
        for r in text.split("\"$ref\":\"#/definitions/").skip(1) {
            let name = &r[..r.find('"').unwrap()];
            assert!(
                v2["definitions"].get(name).is_some(),
                "dangling reference to {name}"
            );
        }
    }

    /// A client that accepts only protobuf gets protobuf: objects, lists and errors (a Status) in the
    /// `runtime.Unknown` envelope; the encoding is what the server itself decodes (a PUT of the answer changes
    /// nothing). Custom resources have no protobuf form: 406, as on the real server.
    #[tokio::test]
    async fn protobuf_only_clients_get_protobuf_answers() {
        use http_body_util::BodyExt as _;
        let (_sim, c) = sim_with_widgets().await;
        let proto = "application/vnd.kubernetes.protobuf";
        let send = |method: &str, path: &str, body: Vec<u8>, content_type: &str| {
            http::Request::builder()
                .method(method)
                .uri(path)
                .header("accept", proto)
                .header("content-type", content_type)
                .body(kube::client::Body::from(body))
                .expect("request")
        };
        let cm = configmap("plain", json!({"k": "v"}));
        assert_eq!(
            send_json(&c, "POST", "/api/v1/namespaces/default/configmaps", &cm)
                .await
                .status,
            201
        );
        let resp = c
            .send(send(
                "GET",
                "/api/v1/namespaces/default/configmaps/plain",
                Vec::new(),
                "application/json",
            ))
            .await
            .expect("get");
        assert_eq!(resp.status(), 200);
        assert_eq!(resp.headers()["content-type"], proto);
        let body = resp
            .into_body()
            .collect()
            .await
            .expect("body")
            .to_bytes()
            .to_vec();
        assert_eq!(&body[..4], b"k8s\x00");
        let before = get(&c, "/api/v1/namespaces/default/configmaps/plain")
            .await
            .json;
        let put = c
            .send(send(
                "PUT",
                "/api/v1/namespaces/default/configmaps/plain",
                body,
                proto,
            ))
            .await
            .expect("put");
        assert_eq!(put.status(), 200);
        let after = get(&c, "/api/v1/namespaces/default/configmaps/plain")
            .await
            .json;
        assert_eq!(after["data"], json!({"k": "v"}));
        assert_eq!(
            after["metadata"]["resourceVersion"], before["metadata"]["resourceVersion"],
            "a no-op write"
        );

        let list = c
            .send(send(
                "GET",
                "/api/v1/namespaces/default/configmaps",
                Vec::new(),
                "application/json",
            ))
            .await
            .expect("list");
        assert_eq!(list.headers()["content-type"], proto);
        let missing = c
            .send(send(
                "GET",
                "/api/v1/namespaces/default/configmaps/nope",
                Vec::new(),
                "application/json",
            ))
            .await
            .expect("missing");
        assert_eq!(missing.status(), 404);
        assert_eq!(missing.headers()["content-type"], proto);
        let widgets = c
            .send(send("GET", WIDGETS, Vec::new(), "application/json"))
            .await
            .expect("widgets");
        assert_eq!(widgets.status(), 406);
        // With JSON also acceptable (what client-go sends), the answer stays JSON.
        let both = http::Request::get("/api/v1/namespaces/default/configmaps/plain")
            .header(
                "accept",
                "application/vnd.kubernetes.protobuf, application/json",
            )
            .body(kube::client::Body::from(Vec::new()))
            .expect("request");
        let both = c.send(both).await.expect("both");
        assert!(
            both.headers()["content-type"]
                .to_str()
                .unwrap()
                .starts_with("application/json")
        );
    }

    #[tokio::test]
    async fn aggregated_discovery_answers_with_its_content_type() {
        let sim = kube_sim::KubeSim::start().await.expect("start");
        let c = sim.client().await.expect("client");
        let req = http::Request::get("/apis")
            .header("accept", "application/json;g=apidiscovery.k8s.io;v=v2;as=APIGroupDiscoveryList,application/json")
            .body(kube::client::Body::from(Vec::new()))
            .expect("req");
        let resp = c.send(req).await.expect("send");
        assert_eq!(
            resp.headers()["content-type"],
            "application/json;g=apidiscovery.k8s.io;v=v2;as=APIGroupDiscoveryList"
        );
        let legacy = get(&c, "/api").await;
        assert_eq!(legacy.json["kind"], "APIVersions");
        let v = get(&c, "/version").await;
        assert_eq!(v.json["major"], "1");
    }

    #[tokio::test]
    async fn openapi_v3_documents_follow_the_index_and_include_crd_schemas() {
        let (_sim, c) = sim_with_widgets().await;
        let idx = get(&c, "/openapi/v3").await;
        let url = idx.json["paths"]["apis/example.com/v1"]["serverRelativeURL"]
            .as_str()
            .expect("gv url")
            .to_string();
        let doc = get(&c, &url).await;
        let schema = &doc.json["components"]["schemas"]["com.example.v1.Widget"];
        assert_eq!(
            schema["properties"]["spec"]["properties"]["size"]["type"],
            "integer"
        );
    }
}

mod faults {
    use super::*;

    /// A fault request the simulator refuses: 400, with `message` in the answer.
    async fn refused(c: &kube::Client, path: &str, body: &Value, message: &str) {
        let bad = send_json(c, "POST", path, body).await;
        assert_eq!(bad.status, 400, "{}", bad.text);
        assert!(bad.text.contains(message), "{}", bad.text);
    }
    use kube_sim::Matcher;

    #[tokio::test]
    async fn injected_failures_use_the_real_error_shapes_and_count_down() {
        let sim = kube_sim::KubeSim::start().await.expect("start");
        let c = client_without_retries(&sim).await;
        sim.faults().fail_next(
            Matcher::verb_resource("list", "configmaps"),
            1,
            429,
            Some(2),
        );
        let r = get(&c, CONFIGMAPS).await;
        assert_eq!((r.status, r.reason()), (429, "TooManyRequests"));
        assert_eq!(r.headers["retry-after"], "2");
        assert_eq!(
            get(&c, CONFIGMAPS).await.status,
            200,
            "only the next one fails"
        );
    }

    #[tokio::test]
    async fn faults_can_be_injected_over_http() {
        let sim = kube_sim::KubeSim::start().await.expect("start");
        let c = sim.client().await.expect("client");
        let r = send_json(
            &c,
            "POST",
            "/__sim/faults",
            &json!({"verb": "get", "resource": "configmaps", "status": 500}),
        )
        .await;
        assert_eq!(r.status, 200, "{}", r.text);
        send_json(&c, "POST", CONFIGMAPS, &configmap("a", json!({}))).await;
        let failed = get(&c, &format!("{CONFIGMAPS}/a")).await;
        assert_eq!((failed.status, failed.reason()), (500, "InternalError"));
        assert_eq!(get(&c, &format!("{CONFIGMAPS}/a")).await.status, 200);
    }

    /// Faults by rate, as a chaos run sets them over HTTP: seeded, counted, refused when out of range, and
    /// survived by a real client. kube-rs's watcher treats a 410 on its list or watch as the real server's
    /// "too old resource version" and relists, so with half its lists and watches refused it still sees every
    /// object.
    #[tokio::test]
    async fn failures_by_rate_are_seeded_counted_and_survived_by_a_watcher() {
        use futures::StreamExt;
        use kube::runtime::{WatchStreamExt, watcher};

        let sim = kube_sim::KubeSim::start().await.expect("start");
        // Without kube-rs's retries: they would spend the injected failures before the test saw them.
        let c = client_without_retries(&sim).await;
        refused(
            &c,
            "/__sim/faults",
            &json!({"verb": "list", "status": 410, "rate": 1.5}),
            "rate must be between 0 and 1",
        )
        .await;
        // By rate, on the reads of one Secret: the same seed gives the same failures, request for request.
        let rule = json!({"verb": "get", "resource": "secrets", "status": 503, "rate": 0.5});
        assert_eq!(
            send_json(&c, "POST", "/__sim/faults", &rule).await.status,
            200
        );
        let mut runs = Vec::new();
        for _ in 0..2 {
            let seeded = send_json(&c, "POST", "/__sim/seed", &json!({"seed": 11})).await;
            assert_eq!(seeded.status, 200, "{}", seeded.text);
            let mut pattern = Vec::new();
            for _ in 0..20 {
                pattern.push(
                    get(&c, "/api/v1/namespaces/default/secrets/none")
                        .await
                        .status,
                );
            }
            runs.push(pattern);
        }
        assert_eq!(runs[0], runs[1], "the seed replays the failures");
        let failed = runs[0].iter().filter(|s| **s == 503).count();
        assert!(
            (3..=17).contains(&failed),
            "about half of 20 fail: {:?}",
            runs[0]
        );
        assert!(
            runs[0].iter().all(|s| [503, 404].contains(s)),
            "{:?}",
            runs[0]
        );
        for verb in ["list", "watch"] {
            let r = send_json(
                &c,
                "POST",
                "/__sim/faults",
                &json!({"verb": verb, "resource": "configmaps", "status": 410, "rate": 0.5}),
            )
            .await;
            assert_eq!(r.status, 200, "{}", r.text);
        }
        for i in 0..5 {
            let r = send_json(
                &c,
                "POST",
                CONFIGMAPS,
                &configmap(&format!("cm-{i}"), json!({})),
            )
            .await;
            assert_eq!(r.status, 201, "creates are not affected: {}", r.text);
        }
        let api: kube::Api<k8s_openapi::api::core::v1::ConfigMap> =
            kube::Api::namespaced(c.clone(), "default");
        let mut seen = std::collections::BTreeSet::new();
        let mut events = watcher(api, watcher::Config::default())
            .default_backoff()
            .applied_objects()
            .boxed();
        // The watcher reports each refused list or watch as an error item and carries on after its backoff.
        let mut refused = 0;
        tokio::time::timeout(std::time::Duration::from_secs(60), async {
            while seen.len() < 5 {
                match events.next().await {
                    Some(Ok(cm)) => {
                        seen.insert(cm.metadata.name.unwrap_or_default());
                    }
                    Some(Err(_)) => refused += 1,
                    None => panic!("the watcher stream ended"),
                }
            }
        })
        .await
        .expect("the watcher saw every ConfigMap despite the 410s");
        let counts = get(&c, "/__sim/faults").await;
        let injected: Value = serde_json::from_str(&counts.text).expect("JSON");
        assert!(
            injected["injected"]["410"].as_u64().is_some_and(|n| n >= 1),
            "{}",
            counts.text
        );
    }

    /// Connections dropped by rate, as a crashed API server or a load balancer's reset drops them: the request gets
    /// no answer at all (a transport error, not an HTTP status), other resources are answered on a new
    /// connection, the drops are counted, and clearing the faults ends them.
    #[tokio::test]
    async fn connections_dropped_by_rate_get_no_answer_and_are_counted() {
        let sim = kube_sim::KubeSim::start().await.expect("start");
        let c = client_without_retries(&sim).await;
        refused(
            &c,
            "/__sim/drop-connections",
            &json!({"verb": "get", "resource": "secrets", "rate": 2}),
            "rate must be between 0 and 1",
        )
        .await;
        let rule = json!({"verb": "get", "resource": "secrets", "rate": 1});
        let set = send_json(&c, "POST", "/__sim/drop-connections", &rule).await;
        assert_eq!(set.status, 200, "{}", set.text);

        let request = |path: &str| {
            http::Request::get(path)
                .body(kube::client::Body::empty())
                .expect("request")
        };
        for _ in 0..3 {
            let dropped = tokio::time::timeout(
                std::time::Duration::from_secs(10),
                c.send(request("/api/v1/namespaces/default/secrets/none")),
            )
            .await
            .expect("the client learns of the drop promptly");
            assert!(
                matches!(
                    dropped,
                    Err(kube::Error::HyperError(_) | kube::Error::Service(_))
                ),
                "no answer, a closed connection: {dropped:?}"
            );
        }
        assert_eq!(
            get(&c, "/api/v1/namespaces/default/configmaps")
                .await
                .status,
            200,
            "another resource is answered"
        );
        let counts = get(&c, "/__sim/faults").await;
        let counted: Value = serde_json::from_str(&counts.text).expect("JSON");
        assert_eq!(counted["connectionsDropped"], 3, "{}", counts.text);
        assert_eq!(
            send_json(&c, "DELETE", "/__sim/faults", &json!({}))
                .await
                .status,
            200
        );
        assert_eq!(
            get(&c, "/api/v1/namespaces/default/secrets/none")
                .await
                .status,
            404,
            "cleared: answered again"
        );
    }

    /// Watches cut short by rate, as a load balancer's idle timeout or an API server restart ends them: a watch of
    /// the matching resource ends long before its `timeoutSeconds`, other resources' watches do not, the cuts are
    /// counted, and kube-rs's watcher, watching again from where it was, misses nothing.
    #[tokio::test]
    async fn watches_cut_by_rate_end_early_and_a_watcher_misses_nothing() {
        use futures::{AsyncBufReadExt, StreamExt, TryStreamExt};
        use kube::runtime::{WatchStreamExt, watcher};

        let sim = kube_sim::KubeSim::start().await.expect("start");
        let c = client_without_retries(&sim).await;
        refused(
            &c,
            "/__sim/cut-watches",
            &json!({"resource": "configmaps", "rate": 1, "withinMillis": 0}),
            "withinMillis must be at least 1",
        )
        .await;
        let rule = json!({"resource": "configmaps", "rate": 1, "withinMillis": 300});
        let set = send_json(&c, "POST", "/__sim/cut-watches", &rule).await;
        assert_eq!(set.status, 200, "{}", set.text);

        // Asked for an hour, ended within the bound.
        let ends_within = |path: String, bound: std::time::Duration| {
            let c = c.clone();
            async move {
                let req = http::Request::get(path).body(Vec::new()).expect("req");
                let mut lines = c.request_stream(req).await.expect("watch").lines();
                tokio::time::timeout(bound, async {
                    while lines.try_next().await.ok().flatten().is_some() {}
                })
                .await
                .is_ok()
            }
        };
        assert!(
            ends_within(
                format!("{CONFIGMAPS}?watch=true&timeoutSeconds=3600"),
                std::time::Duration::from_secs(5)
            )
            .await,
            "a cut watch ends early"
        );
        assert!(
            !ends_within(
                "/api/v1/namespaces/default/secrets?watch=true&timeoutSeconds=3600".into(),
                std::time::Duration::from_secs(2)
            )
            .await,
            "a watch of another resource is not cut"
        );

        let api: kube::Api<k8s_openapi::api::core::v1::ConfigMap> =
            kube::Api::namespaced(c.clone(), "default");
        let mut events = watcher(api, watcher::Config::default())
            .default_backoff()
            .applied_objects()
            .boxed();
        let mut seen = std::collections::BTreeSet::new();
        // Created while the watcher runs, so it sees them through its (cut) watches, not only its first list.
        let creator = c.clone();
        let creates = async move {
            for i in 0..10 {
                let r = send_json(
                    &creator,
                    "POST",
                    CONFIGMAPS,
                    &configmap(&format!("cut-{i}"), json!({})),
                )
                .await;
                assert_eq!(r.status, 201, "{}", r.text);
                // Spread over several cut watches.
                tokio::time::sleep(std::time::Duration::from_millis(150)).await;
            }
        };
        let creates = tokio::spawn(creates);
        tokio::time::timeout(std::time::Duration::from_secs(60), async {
            while seen.len() < 10 {
                match events.next().await {
                    Some(Ok(cm)) => {
                        seen.insert(cm.metadata.name.unwrap_or_default());
                    }
                    Some(Err(e)) => panic!("a cut watch is not an error: {e}"),
                    None => panic!("the watcher stream ended"),
                }
            }
        })
        .await
        .expect("the watcher saw every ConfigMap across the cut watches");
        creates.await.expect("the creates");
        let counts = get(&c, "/__sim/faults").await;
        let counted: Value = serde_json::from_str(&counts.text).expect("JSON");
        assert!(
            counted["watchesCut"].as_u64().is_some_and(|n| n >= 2),
            "{}",
            counts.text
        );
        assert_eq!(
            send_json(&c, "DELETE", "/__sim/faults", &json!({}))
                .await
                .status,
            200
        );
        assert!(
            !ends_within(
                format!("{CONFIGMAPS}?watch=true&timeoutSeconds=3600"),
                std::time::Duration::from_secs(2)
            )
            .await,
            "cleared: watches run to their timeout again"
        );
    }
}

mod authorization {
    use super::*;

    async fn grant_configmap_reader(c: &kube::Client, user: &str) {
        let role = json!({"apiVersion": "rbac.authorization.k8s.io/v1", "kind": "Role", "metadata": {"name": "cm-reader"},
            "rules": [{"apiGroups": [""], "resources": ["configmaps"], "verbs": ["get", "list"]}]});
        let binding = json!({"apiVersion": "rbac.authorization.k8s.io/v1", "kind": "RoleBinding", "metadata": {"name": "cm-reader"},
            "roleRef": {"apiGroup": "rbac.authorization.k8s.io", "kind": "Role", "name": "cm-reader"},
            "subjects": [{"kind": "User", "apiGroup": "rbac.authorization.k8s.io", "name": user}]});
        assert_eq!(
            send_json(
                c,
                "POST",
                "/apis/rbac.authorization.k8s.io/v1/namespaces/default/roles",
                &role
            )
            .await
            .status,
            201
        );
        assert_eq!(
            send_json(
                c,
                "POST",
                "/apis/rbac.authorization.k8s.io/v1/namespaces/default/rolebindings",
                &binding
            )
            .await
            .status,
            201
        );
    }

    #[tokio::test]
    async fn a_user_without_rights_gets_the_real_403_body() {
        let sim = kube_sim::KubeSim::start().await.expect("start");
        let alice = sim
            .client_for(&sim.add_token_user("alice", &["dev"]))
            .await
            .expect("client");
        let r = get(&alice, CONFIGMAPS).await;
        assert_eq!((r.status, r.reason()), (403, "Forbidden"));
        assert_eq!(
            r.message(),
            "configmaps is forbidden: User \"alice\" cannot list resource \"configmaps\" in API group \"\" in the namespace \"default\""
        );
        assert_eq!(r.json["details"], json!({"kind": "configmaps"}));
        let r = get(
            &alice,
            "/apis/apiextensions.k8s.io/v1/customresourcedefinitions/x",
        )
        .await;
        assert_eq!(
            r.message(),
            "customresourcedefinitions.apiextensions.k8s.io \"x\" is forbidden: User \"alice\" cannot get resource \"customresourcedefinitions\" in API group \"apiextensions.k8s.io\" at the cluster scope"
        );
        assert_eq!(
            get(&alice, "/version").await.status,
            200,
            "discovery and version are public to authenticated users"
        );
    }

    #[tokio::test]
    async fn a_role_binding_grants_exactly_its_verbs_in_its_namespace() {
        let sim = kube_sim::KubeSim::start().await.expect("start");
        let admin = sim.client().await.expect("admin");
        grant_configmap_reader(&admin, "alice").await;
        let alice = sim
            .client_for(&sim.add_token_user("alice", &[]))
            .await
            .expect("client");
        assert_eq!(get(&alice, CONFIGMAPS).await.status, 200);
        assert_eq!(
            send_json(&alice, "POST", CONFIGMAPS, &configmap("x", json!({})))
                .await
                .status,
            403
        );
        assert_eq!(
            get(&alice, "/api/v1/namespaces/kube-system/configmaps")
                .await
                .status,
            403
        );
    }

    #[tokio::test]
    async fn a_new_binding_takes_effect_on_the_next_request() {
        let sim = kube_sim::KubeSim::start().await.expect("start");
        let admin = sim.client().await.expect("admin");
        let alice = sim
            .client_for(&sim.add_token_user("alice", &[]))
            .await
            .expect("client");
        assert_eq!(get(&alice, CONFIGMAPS).await.status, 403);
        grant_configmap_reader(&admin, "alice").await;
        assert_eq!(get(&alice, CONFIGMAPS).await.status, 200);
        raw(
            &admin,
            "DELETE",
            "/apis/rbac.authorization.k8s.io/v1/namespaces/default/rolebindings/cm-reader",
            None,
            Vec::new(),
        )
        .await;
        assert_eq!(
            get(&alice, CONFIGMAPS).await.status,
            403,
            "and a removed one too"
        );
    }

    #[tokio::test]
    async fn unknown_tokens_are_401_and_anonymous_is_refused_by_default() {
        let sim = kube_sim::KubeSim::start().await.expect("start");
        let mut nobody = sim.admin();
        nobody.credential = kube_sim::Credential::Token("not-a-token".into());
        let c = sim.client_for(&nobody).await.expect("client");
        let r = get(&c, CONFIGMAPS).await;
        assert_eq!((r.status, r.reason()), (401, "Unauthorized"));
        nobody.credential = kube_sim::Credential::None;
        let anon = sim.client_for(&nobody).await.expect("client");
        assert_eq!(get(&anon, CONFIGMAPS).await.status, 401);
        sim.set_anonymous(kube_sim::Anonymous::Unauthenticated);
        let r = get(&anon, CONFIGMAPS).await;
        assert_eq!(r.status, 403);
        assert!(
            r.message().contains("User \"system:anonymous\""),
            "{}",
            r.message()
        );
    }

    #[tokio::test]
    async fn access_reviews_answer_for_the_caller() {
        let sim = kube_sim::KubeSim::start().await.expect("start");
        let admin = sim.client().await.expect("admin");
        grant_configmap_reader(&admin, "alice").await;
        let alice = sim
            .client_for(&sim.add_token_user("alice", &["dev"]))
            .await
            .expect("client");
        let review = |verb: &str| {
            json!({"apiVersion": "authorization.k8s.io/v1", "kind": "SelfSubjectAccessReview",
            "spec": {"resourceAttributes": {"namespace": "default", "verb": verb, "resource": "configmaps"}}})
        };
        let r = send_json(
            &alice,
            "POST",
            "/apis/authorization.k8s.io/v1/selfsubjectaccessreviews",
            &review("list"),
        )
        .await;
        assert_eq!(
            (r.status, r.json["status"]["allowed"].clone()),
            (201, json!(true))
        );
        let r = send_json(
            &alice,
            "POST",
            "/apis/authorization.k8s.io/v1/selfsubjectaccessreviews",
            &review("delete"),
        )
        .await;
        assert_eq!(r.json["status"]["allowed"], false);
        let who = send_json(
            &alice,
            "POST",
            "/apis/authentication.k8s.io/v1/selfsubjectreviews",
            &json!({"apiVersion": "authentication.k8s.io/v1", "kind": "SelfSubjectReview"}),
        )
        .await;
        assert_eq!(who.json["status"]["userInfo"]["username"], "alice");
        assert_eq!(
            who.json["status"]["userInfo"]["groups"],
            json!(["dev", "system:authenticated"])
        );
    }

    #[tokio::test]
    async fn client_certificates_identify_users_and_groups() {
        let sim = kube_sim::KubeSim::start().await.expect("start");
        let bob = sim
            .add_cert_user("bob", &["system:masters"])
            .expect("cert user");
        let c = sim.client_for(&bob).await.expect("client");
        assert_eq!(
            get(&c, CONFIGMAPS).await.status,
            200,
            "system:masters via the certificate's O"
        );
        let who = send_json(
            &c,
            "POST",
            "/apis/authentication.k8s.io/v1/selfsubjectreviews",
            &json!({}),
        )
        .await;
        assert_eq!(who.json["status"]["userInfo"]["username"], "bob");
    }

    #[tokio::test]
    async fn the_fault_endpoints_are_for_administrators_only() {
        let sim = kube_sim::KubeSim::start().await.expect("start");
        let alice = sim
            .client_for(&sim.add_token_user("alice", &[]))
            .await
            .expect("client");
        let r = send_json(&alice, "POST", "/__sim/pause", &json!({})).await;
        assert_eq!(r.status, 403);
    }
}

mod state_and_binary {
    use super::*;

    #[tokio::test]
    async fn a_state_file_keeps_objects_resource_versions_and_the_ca_across_restarts() {
        let dir = tempfile::tempdir().expect("tempdir");
        let state = dir.path().join("state.json");
        let first = kube_sim::KubeSim::builder()
            .state_file(&state)
            .start()
            .await
            .expect("start");
        first.apply_yaml(WIDGET_CRD).await.expect("crd");
        first
            .apply_yaml(
                "apiVersion: v1\nkind: Secret\nmetadata: {name: keep}\nstringData: {a: b}\n",
            )
            .await
            .expect("secret");
        let ca = first.ca_pem().to_string();
        let rv = first.resource_version();
        first.stop().await;
        #[cfg(unix)]
        {
            use std::os::unix::fs::PermissionsExt;
            let mode = std::fs::metadata(&state)
                .expect("state written")
                .permissions()
                .mode()
                & 0o777;
            assert_eq!(mode, 0o600, "the state file holds Secrets and the CA key");
        }
        let second = kube_sim::KubeSim::builder()
            .state_file(&state)
            .start()
            .await
            .expect("restart");
        assert_eq!(
            second.ca_pem(),
            ca,
            "kubeconfigs written before the restart stay valid"
        );
        assert!(
            second.resource_version() >= rv,
            "revisions never go backwards"
        );
        let s = second
            .get("v1", "Secret", "default", "keep")
            .expect("secret survived");
        assert_eq!(s["data"]["a"], "Yg==");
        let c = second.client().await.expect("client");
        assert_eq!(
            get(&c, WIDGETS).await.status,
            200,
            "CRDs are served again after a restart"
        );
    }

    #[tokio::test]
    async fn a_corrupt_state_file_is_a_clear_error_and_is_not_overwritten() {
        let dir = tempfile::tempdir().expect("tempdir");
        let state = dir.path().join("state.json");
        std::fs::write(&state, b"{not json").expect("write");
        let err = kube_sim::KubeSim::builder()
            .state_file(&state)
            .start()
            .await
            .err()
            .expect("refused");
        assert!(format!("{err:#}").contains("state.json"), "{err:#}");
        assert_eq!(std::fs::read(&state).expect("still there"), b"{not json");
    }

    #[test]
    fn the_binary_serves_and_writes_a_kubeconfig_that_kubectl_uses() {
        use std::process::{Command, Stdio};
        let dir = tempfile::tempdir().expect("tempdir");
        let kc = dir.path().join("kc");
        let mut child = Command::new(env!("CARGO_BIN_EXE_kube-sim"))
            .args(["--listen", "127.0.0.1:0", "--kubeconfig-out"])
            .arg(&kc)
            .stdout(Stdio::piped())
            .stderr(Stdio::null())
            .spawn()
            .expect("kube-sim starts");
        let mut tries = 0;
        while !kc.exists() && tries < 200 {
            std::thread::sleep(std::time::Duration::from_millis(20));
            tries += 1;
        }
        let out = Command::new("kubectl")
            .arg("--kubeconfig")
            .arg(&kc)
            .arg("--cache-dir")
            .arg(dir.path().join("cache"))
            .args(["get", "namespace", "kube-system", "-o", "name"])
            .output()
            .expect("kubectl must be installed for this test");
        let _ = child.kill();
        let _ = child.wait();
        assert!(
            out.status.success(),
            "{}",
            String::from_utf8_lossy(&out.stderr)
        );
        assert_eq!(
            String::from_utf8_lossy(&out.stdout).trim(),
            "namespace/kube-system"
        );
    }
}

mod transport {
    use std::sync::Arc;

    /// kube-apiserver offers h2 and http/1.1 by ALPN; Go clients (kubectl, Helm) pick h2.
    #[tokio::test]
    async fn tls_negotiates_http2_and_http1_by_alpn() {
        let sim = kube_sim::KubeSim::start().await.expect("start");
        for (offer, want) in [
            (vec![b"h2".to_vec(), b"http/1.1".to_vec()], b"h2".as_slice()),
            (vec![b"http/1.1".to_vec()], b"http/1.1".as_slice()),
        ] {
            let mut roots = rustls::RootCertStore::empty();
            for c in kube_sim::tls::pem_certs(sim.ca_pem()).expect("ca") {
                roots.add(c).expect("root");
            }
            let mut cfg = rustls::ClientConfig::builder_with_provider(Arc::new(
                rustls::crypto::ring::default_provider(),
            ))
            .with_safe_default_protocol_versions()
            .expect("versions")
            .with_root_certificates(roots)
            .with_no_client_auth();
            cfg.alpn_protocols = offer;
            let tcp = tokio::net::TcpStream::connect(sim.addr())
                .await
                .expect("connect");
            let name = rustls::pki_types::ServerName::try_from("127.0.0.1").expect("name");
            let tls = tokio_rustls::TlsConnector::from(Arc::new(cfg))
                .connect(name, tcp)
                .await
                .expect("the serving certificate verifies against the CA");
            assert_eq!(tls.get_ref().1.alpn_protocol(), Some(want));
        }
    }

    #[tokio::test]
    async fn plain_http_serves_when_asked() {
        let sim = kube_sim::KubeSim::builder()
            .insecure_http(true)
            .start()
            .await
            .expect("start");
        assert!(sim.url().starts_with("http://"));
        let c = sim.client().await.expect("client");
        assert_eq!(
            super::common::get(&c, "/api/v1/namespaces").await.status,
            200
        );
    }
}

/// Behaviours pinned after a review against the real apiserver's code paths.
mod review_fixes {
    use super::*;

    #[tokio::test]
    async fn delete_honours_dry_run_in_the_body_as_kubectl_dry_run_server_sends_it() {
        let sim = kube_sim::KubeSim::start().await.expect("start");
        let c = sim.client().await.expect("client");
        send_json(&c, "POST", CONFIGMAPS, &configmap("a", json!({}))).await;
        let r = send_json(
            &c,
            "DELETE",
            &format!("{CONFIGMAPS}/a"),
            &json!({"dryRun": ["All"]}),
        )
        .await;
        assert_eq!(r.status, 200, "{}", r.text);
        assert!(
            sim.get("v1", "ConfigMap", "default", "a").is_some(),
            "nothing is deleted"
        );
        let bad = raw(
            &c,
            "DELETE",
            &format!("{CONFIGMAPS}/a?propagationPolicy=Background"),
            Some("application/json"),
            b"[]".to_vec(),
        )
        .await;
        assert_eq!(
            bad.status, 400,
            "a non-object DeleteOptions body is a decode error"
        );
    }

    #[tokio::test]
    async fn immediate_deletes_answer_with_a_status_except_where_the_store_returns_the_object() {
        let (_sim, c) = sim_with_widgets().await;
        send_json(&c, "POST", CONFIGMAPS, &configmap("a", json!({}))).await;
        let r = raw(&c, "DELETE", &format!("{CONFIGMAPS}/a"), None, Vec::new()).await;
        assert_eq!(
            (r.json["kind"].as_str(), r.json["status"].as_str()),
            (Some("Status"), Some("Success"))
        );
        assert_eq!(r.json["details"]["name"], "a");
        send_json(&c, "POST", WIDGETS, &widget("w", 1)).await;
        let r = raw(&c, "DELETE", &format!("{WIDGETS}/w"), None, Vec::new()).await;
        assert_eq!(
            r.json["kind"], "Widget",
            "custom resources return the deleted object"
        );
    }

    #[tokio::test]
    async fn continue_tokens_do_not_skip_namespaces_whose_names_share_a_prefix() {
        let sim = kube_sim::KubeSim::start().await.expect("start");
        let c = sim.client().await.expect("client");
        for ns in ["app", "app-x"] {
            send_json(
                &c,
                "POST",
                "/api/v1/namespaces",
                &json!({"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": ns}}),
            )
            .await;
            for n in ["a", "b"] {
                send_json(
                    &c,
                    "POST",
                    &format!("/api/v1/namespaces/{ns}/configmaps"),
                    &configmap(n, json!({})),
                )
                .await;
            }
        }
        let mut seen = Vec::new();
        let mut token = String::new();
        loop {
            let path = if token.is_empty() {
                "/api/v1/configmaps?limit=1".to_string()
            } else {
                format!("/api/v1/configmaps?limit=1&continue={token}")
            };
            let r = get(&c, &path).await;
            for i in r.json["items"].as_array().expect("items") {
                seen.push(format!(
                    "{}/{}",
                    i["metadata"]["namespace"].as_str().expect("ns"),
                    i["metadata"]["name"].as_str().expect("name")
                ));
            }
            match r.json["metadata"]["continue"].as_str() {
                Some(t) => token = t.to_string(),
                None => break,
            }
        }
        // Every namespace's kube-root-ca.crt is listed too (once each: no namespace is skipped or repeated).
        seen.retain(|k| !k.ends_with("/kube-root-ca.crt") || k.starts_with("app"));
        seen.sort();
        assert_eq!(
            seen,
            vec![
                "app-x/a",
                "app-x/b",
                "app-x/kube-root-ca.crt",
                "app/a",
                "app/b",
                "app/kube-root-ca.crt"
            ]
        );
    }

    /// kube-controller-manager's serviceaccounts controller and root-ca-cert-publisher give every namespace a
    /// `default` ServiceAccount and a `kube-root-ca.crt` ConfigMap holding the cluster CA.
    #[tokio::test]
    async fn every_namespace_gets_its_default_service_account_and_root_ca_config_map() {
        let sim = kube_sim::KubeSim::start().await.expect("start");
        let c = sim.client().await.expect("client");
        send_json(
            &c,
            "POST",
            "/api/v1/namespaces",
            &json!({"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": "fresh"}}),
        )
        .await;
        for ns in ["fresh", "default", "kube-system", "kube-public"] {
            let sa = get(
                &c,
                &format!("/api/v1/namespaces/{ns}/serviceaccounts/default"),
            )
            .await;
            assert_eq!(sa.status, 200, "{ns}: {}", sa.json);
            let ca = get(
                &c,
                &format!("/api/v1/namespaces/{ns}/configmaps/kube-root-ca.crt"),
            )
            .await;
            assert_eq!(ca.status, 200, "{ns}: {}", ca.json);
            assert_eq!(ca.json["data"]["ca.crt"], sim.ca_pem(), "{ns}");
        }
        // Deleted, they come back while the namespace lives, as the controllers put them back.
        let path = "/api/v1/namespaces/fresh/configmaps/kube-root-ca.crt";
        assert_eq!(raw(&c, "DELETE", path, None, Vec::new()).await.status, 200);
        assert_eq!(
            get(&c, path).await.status,
            200,
            "kube-root-ca.crt is re-created"
        );
        let sa = "/api/v1/namespaces/fresh/serviceaccounts/default";
        assert_eq!(raw(&c, "DELETE", sa, None, Vec::new()).await.status, 200);
        assert_eq!(
            get(&c, sa).await.status,
            200,
            "the default ServiceAccount is re-created"
        );
    }

    #[tokio::test]
    async fn only_the_finalize_subresource_changes_a_namespaces_spec_finalizers() {
        let sim = kube_sim::KubeSim::start().await.expect("start");
        let c = sim.client().await.expect("client");
        send_json(
            &c,
            "POST",
            "/api/v1/namespaces",
            &json!({"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": "keep"}}),
        )
        .await;
        let r = patch(
            &c,
            "/api/v1/namespaces/keep",
            "application/merge-patch+json",
            &json!({"spec": {"finalizers": []}}),
        )
        .await;
        assert_eq!(r.json["spec"]["finalizers"], json!(["kubernetes"]));
    }

    #[tokio::test]
    async fn resource_versions_newer_than_the_store_are_504_too_large() {
        let sim = kube_sim::KubeSim::start().await.expect("start");
        let c = client_without_retries(&sim).await;
        let r = get(
            &c,
            &format!("{CONFIGMAPS}?resourceVersion=99999999&resourceVersionMatch=NotOlderThan"),
        )
        .await;
        assert_eq!((r.status, r.reason()), (504, "Timeout"));
        assert!(
            r.message()
                .starts_with("Too large resource version: 99999999, current: "),
            "{}",
            r.message()
        );
        let w = get(
            &c,
            &format!("{CONFIGMAPS}?watch=true&resourceVersion=99999999"),
        )
        .await;
        assert_eq!(w.status, 504);
    }

    #[tokio::test]
    async fn foreground_deletion_spares_dependents_with_another_live_owner() {
        let sim = kube_sim::KubeSim::start().await.expect("start");
        let c = sim.client().await.expect("client");
        let a = send_json(&c, "POST", CONFIGMAPS, &configmap("owner-a", json!({})))
            .await
            .json;
        let b = send_json(&c, "POST", CONFIGMAPS, &configmap("owner-b", json!({})))
            .await
            .json;
        let mut dep = configmap("shared", json!({}));
        dep["metadata"]["ownerReferences"] = json!([
            {"apiVersion": "v1", "kind": "ConfigMap", "name": "owner-a", "uid": a["metadata"]["uid"], "blockOwnerDeletion": true},
            {"apiVersion": "v1", "kind": "ConfigMap", "name": "owner-b", "uid": b["metadata"]["uid"]}]);
        send_json(&c, "POST", CONFIGMAPS, &dep).await;
        send_json(
            &c,
            "DELETE",
            &format!("{CONFIGMAPS}/owner-a"),
            &json!({"propagationPolicy": "Foreground"}),
        )
        .await;
        eventually("owner-a gone", || {
            sim.get("v1", "ConfigMap", "default", "owner-a").is_none()
        })
        .await;
        let shared = sim
            .get("v1", "ConfigMap", "default", "shared")
            .expect("kept: owner-b still lives");
        assert_eq!(
            shared["metadata"]["ownerReferences"]
                .as_array()
                .expect("refs")
                .len(),
            1
        );
        assert_eq!(shared["metadata"]["ownerReferences"][0]["name"], "owner-b");
    }

    #[tokio::test]
    async fn apply_to_the_status_of_a_missing_object_is_404() {
        let (_sim, c) = sim_with_widgets().await;
        let r = patch(
            &c,
            &format!("{WIDGETS}/none/status?fieldManager=m"),
            "application/apply-patch+yaml",
            &widget("none", 1),
        )
        .await;
        assert_eq!(r.status, 404, "{}", r.text);
    }

    #[tokio::test]
    async fn impersonation_needs_the_impersonate_verb_on_core_group_users() {
        let sim = kube_sim::KubeSim::start().await.expect("start");
        let admin = sim.client().await.expect("admin");
        let role = json!({"apiVersion": "rbac.authorization.k8s.io/v1", "kind": "ClusterRole", "metadata": {"name": "impersonator"},
            "rules": [{"apiGroups": [""], "resources": ["users"], "verbs": ["impersonate"]}]});
        let binding = json!({"apiVersion": "rbac.authorization.k8s.io/v1", "kind": "ClusterRoleBinding", "metadata": {"name": "impersonator"},
            "roleRef": {"apiGroup": "rbac.authorization.k8s.io", "kind": "ClusterRole", "name": "impersonator"},
            "subjects": [{"kind": "User", "apiGroup": "rbac.authorization.k8s.io", "name": "alice"}]});
        send_json(
            &admin,
            "POST",
            "/apis/rbac.authorization.k8s.io/v1/clusterroles",
            &role,
        )
        .await;
        send_json(
            &admin,
            "POST",
            "/apis/rbac.authorization.k8s.io/v1/clusterrolebindings",
            &binding,
        )
        .await;
        let mut alice = sim.add_token_user("alice", &[]);
        let kc = kube::config::Kubeconfig::from_yaml(&sim.kubeconfig(&alice)).expect("kc");
        let mut cfg =
            kube::Config::from_custom_kubeconfig(kc, &kube::config::KubeConfigOptions::default())
                .await
                .expect("cfg");
        cfg.auth_info.impersonate = Some("bob".into());
        let as_bob = kube::Client::try_from(cfg).expect("client");
        let who = send_json(
            &as_bob,
            "POST",
            "/apis/authentication.k8s.io/v1/selfsubjectreviews",
            &json!({}),
        )
        .await;
        assert_eq!(
            who.json["status"]["userInfo"]["username"], "bob",
            "{}",
            who.text
        );
        alice.name = "unused".into();
        let carol = sim
            .client_for(&sim.add_token_user("carol", &[]))
            .await
            .expect("carol");
        let req = http::Request::post("/apis/authentication.k8s.io/v1/selfsubjectreviews")
            .header("impersonate-user", "bob")
            .header("content-type", "application/json")
            .body(kube::client::Body::from(b"{}".to_vec()))
            .expect("req");
        assert_eq!(
            carol.send(req).await.expect("send").status(),
            403,
            "carol may not impersonate"
        );
    }

    #[tokio::test]
    async fn a_watch_pinned_to_one_name_is_authorized_by_resource_names() {
        let sim = kube_sim::KubeSim::start().await.expect("start");
        let admin = sim.client().await.expect("admin");
        let role = json!({"apiVersion": "rbac.authorization.k8s.io/v1", "kind": "Role", "metadata": {"name": "one"},
            "rules": [{"apiGroups": [""], "resources": ["secrets"], "resourceNames": ["token"], "verbs": ["get", "list", "watch"]}]});
        let binding = json!({"apiVersion": "rbac.authorization.k8s.io/v1", "kind": "RoleBinding", "metadata": {"name": "one"},
            "roleRef": {"apiGroup": "rbac.authorization.k8s.io", "kind": "Role", "name": "one"},
            "subjects": [{"kind": "User", "apiGroup": "rbac.authorization.k8s.io", "name": "alice"}]});
        send_json(
            &admin,
            "POST",
            "/apis/rbac.authorization.k8s.io/v1/namespaces/default/roles",
            &role,
        )
        .await;
        send_json(
            &admin,
            "POST",
            "/apis/rbac.authorization.k8s.io/v1/namespaces/default/rolebindings",
            &binding,
        )
        .await;
        let alice = sim
            .client_for(&sim.add_token_user("alice", &[]))
            .await
            .expect("alice");
        assert_eq!(
            get(
                &alice,
                &format!("{SECRETS}?fieldSelector=metadata.name%3Dtoken")
            )
            .await
            .status,
            200
        );
        assert_eq!(
            get(&alice, SECRETS).await.status,
            403,
            "an unpinned list is not covered by resourceNames"
        );
    }

    #[tokio::test]
    async fn crds_in_protected_groups_need_the_approval_annotation() {
        let sim = kube_sim::KubeSim::start().await.expect("start");
        let c = sim.client().await.expect("client");
        let crd = json!({"apiVersion": "apiextensions.k8s.io/v1", "kind": "CustomResourceDefinition", "metadata": {"name": "things.x.k8s.io"},
            "spec": {"group": "x.k8s.io", "scope": "Namespaced", "names": {"plural": "things", "kind": "Thing"},
                "versions": [{"name": "v1", "served": true, "storage": true, "schema": {"openAPIV3Schema": {"type": "object"}}}]}});
        let r = send_json(
            &c,
            "POST",
            "/apis/apiextensions.k8s.io/v1/customresourcedefinitions",
            &crd,
        )
        .await;
        assert_eq!(r.status, 422);
        assert!(
            r.message()
                .contains("protected groups must have approval annotation"),
            "{}",
            r.message()
        );
    }

    #[tokio::test]
    async fn secret_data_over_one_mebibyte_is_422() {
        let sim = kube_sim::KubeSim::start().await.expect("start");
        let c = sim.client().await.expect("client");
        use base64::Engine as _;
        let big = base64::engine::general_purpose::STANDARD.encode(vec![b'x'; 1024 * 1024 + 1]);
        let r = send_json(&c, "POST", SECRETS, &json!({"apiVersion": "v1", "kind": "Secret", "metadata": {"name": "big"}, "data": {"k": big}})).await;
        assert_eq!(r.status, 422, "{}", r.message());
        assert!(
            r.message()
                .contains("data: Too long: must have at most 1048576 bytes"),
            "{}",
            r.message()
        );
    }

    #[tokio::test]
    async fn send_initial_events_false_starts_at_the_current_revision() {
        use futures::{AsyncBufReadExt, TryStreamExt};
        let sim = kube_sim::KubeSim::start().await.expect("start");
        let c = sim.client().await.expect("client");
        send_json(&c, "POST", CONFIGMAPS, &configmap("old", json!({}))).await;
        let req = http::Request::get(format!(
            "{CONFIGMAPS}?watch=true&sendInitialEvents=false&resourceVersionMatch=NotOlderThan"
        ))
        .body(Vec::new())
        .expect("req");
        let mut lines = c.request_stream(req).await.expect("watch").lines();
        send_json(&c, "POST", CONFIGMAPS, &configmap("new", json!({}))).await;
        let first = tokio::time::timeout(std::time::Duration::from_secs(5), lines.try_next())
            .await
            .expect("event")
            .expect("io")
            .expect("line");
        let ev: Value = serde_json::from_str(&first).expect("json");
        assert_eq!(
            (
                ev["type"].as_str(),
                ev["object"]["metadata"]["name"].as_str()
            ),
            (Some("ADDED"), Some("new")),
            "no initial state"
        );
        let bad = get(
            &c,
            &format!("{CONFIGMAPS}?watch=true&fieldSelector=spec.bogus%3Dx"),
        )
        .await;
        assert_eq!(bad.status, 400, "watches check field selectors like lists");
    }

    #[tokio::test]
    async fn without_a_status_subresource_status_changes_bump_the_generation() {
        let sim = kube_sim::KubeSim::start().await.expect("start");
        let crd = r#"
apiVersion: apiextensions.k8s.io/v1
kind: CustomResourceDefinition
metadata: {name: plains.example.com}
spec:
  group: example.com
  scope: Namespaced
  names: {plural: plains, kind: Plain}
  versions:
  - {name: v1, served: true, storage: true, schema: {openAPIV3Schema: {type: object, x-kubernetes-preserve-unknown-fields: true}}}
"#;
        sim.apply_yaml(crd).await.expect("crd");
        let c = sim.client().await.expect("client");
        let path = "/apis/example.com/v1/namespaces/default/plains";
        send_json(&c, "POST", path, &json!({"apiVersion": "example.com/v1", "kind": "Plain", "metadata": {"name": "p"}, "status": {"x": 1}})).await;
        let r = patch(
            &c,
            &format!("{path}/p"),
            "application/merge-patch+json",
            &json!({"status": {"x": 2}}),
        )
        .await;
        assert_eq!(r.json["metadata"]["generation"], 2);
    }

    #[tokio::test]
    async fn a_terminating_crd_refuses_new_objects() {
        let (sim, c) = sim_with_widgets().await;
        let mut held = widget("held", 1);
        held["metadata"]["finalizers"] = json!(["example.com/hold"]);
        send_json(&c, "POST", WIDGETS, &held).await;
        raw(
            &c,
            "DELETE",
            "/apis/apiextensions.k8s.io/v1/customresourcedefinitions/widgets.example.com",
            None,
            Vec::new(),
        )
        .await;
        let r = send_json(&c, "POST", WIDGETS, &widget("late", 1)).await;
        assert_eq!(r.status, 405, "{}", r.text);
        assert_eq!(
            r.message(),
            "create not allowed while custom resource definition is terminating"
        );
        patch(
            &c,
            &format!("{WIDGETS}/held"),
            "application/merge-patch+json",
            &json!({"metadata": {"finalizers": null}}),
        )
        .await;
        eventually("CRD gone", || {
            sim.get(
                "apiextensions.k8s.io/v1",
                "CustomResourceDefinition",
                "",
                "widgets.example.com",
            )
            .is_none()
        })
        .await;
    }
}

/// core/v1 and events.k8s.io/v1 Events are one store with two field mappings (kube-apiserver serves both from the
/// core `events` registry and converts), and events.k8s.io/v1 creates get the strict validation.
mod events {
    use super::reads::{names, watch_lines};
    use super::*;

    const CORE: &str = "/api/v1/namespaces/default/events";
    const NEW: &str = "/apis/events.k8s.io/v1/namespaces/default/events";

    fn new_style(name: &str) -> Value {
        json!({"apiVersion": "events.k8s.io/v1", "kind": "Event", "metadata": {"name": name, "namespace": "default"},
            "eventTime": "2026-11-26T10:00:00.000000Z", "reportingController": "omni.texashpc.com/operator",
            "reportingInstance": "operator-0", "action": "Reconcile", "reason": "Synced", "type": "Normal",
            "regarding": {"apiVersion": "omni.texashpc.com/v1alpha1", "kind": "OmniCluster", "namespace": "default", "name": "edge"},
            "note": "template synced"})
    }

    #[tokio::test]
    async fn an_event_written_through_either_api_is_read_through_both_with_their_field_names() {
        let sim = kube_sim::KubeSim::start().await.expect("start");
        let c = sim.client().await.expect("client");
        let r = send_json(&c, "POST", NEW, &new_style("a")).await;
        assert_eq!(r.status, 201, "{}", r.json);
        assert_eq!(r.json["note"], "template synced");

        let core = get(&c, &format!("{CORE}/a")).await;
        assert_eq!(core.status, 200, "{}", core.json);
        assert_eq!(core.json["apiVersion"], "v1");
        assert_eq!(core.json["involvedObject"]["name"], "edge");
        assert_eq!(core.json["message"], "template synced");
        assert_eq!(
            core.json["reportingComponent"],
            "omni.texashpc.com/operator"
        );
        assert!(core.json.get("regarding").is_none() && core.json.get("note").is_none());

        let old_style = json!({"apiVersion": "v1", "kind": "Event", "metadata": {"name": "b", "namespace": "default"},
            "involvedObject": {"kind": "Pod", "namespace": "default", "name": "p"}, "reason": "Pulled",
            "message": "pulled", "type": "Normal", "count": 2, "source": {"component": "kubelet"},
            "firstTimestamp": "2026-11-26T10:00:00Z", "lastTimestamp": "2026-11-26T10:00:05Z"});
        assert_eq!(send_json(&c, "POST", CORE, &old_style).await.status, 201);
        let listed = get(&c, NEW).await;
        let b = listed.json["items"]
            .as_array()
            .expect("items")
            .iter()
            .find(|e| e["metadata"]["name"] == "b")
            .cloned()
            .expect("the core Event is listed through events.k8s.io");
        assert_eq!(b["apiVersion"], "events.k8s.io/v1");
        assert_eq!(b["regarding"]["name"], "p");
        assert_eq!(b["note"], "pulled");
        assert_eq!(b["deprecatedCount"], 2);
        assert_eq!(b["deprecatedSource"]["component"], "kubelet");
        assert_eq!(b["deprecatedLastTimestamp"], "2026-11-26T10:00:05Z");
        assert_eq!(
            get(&c, CORE).await.json["items"].as_array().map(Vec::len),
            Some(2)
        );
    }

    #[tokio::test]
    async fn field_selectors_use_each_apis_names_and_a_watch_sees_the_other_apis_writes() {
        let sim = kube_sim::KubeSim::start().await.expect("start");
        let c = sim.client().await.expect("client");
        let rv = get(&c, CORE).await.json["metadata"]["resourceVersion"]
            .as_str()
            .expect("rv")
            .to_string();
        assert_eq!(
            send_json(&c, "POST", NEW, &new_style("a")).await.status,
            201
        );
        let by_new = get(&c, &format!("{NEW}?fieldSelector=regarding.name%3Dedge")).await;
        assert_eq!(names(&by_new), vec!["a"]);
        let none = get(&c, &format!("{NEW}?fieldSelector=regarding.name%3Dother")).await;
        assert!(names(&none).is_empty());
        let by_core = get(&c, &format!("{CORE}?fieldSelector=involvedObject.name%3Dedge,reportingComponent%3Domni.texashpc.com%2Foperator")).await;
        assert_eq!(names(&by_core), vec!["a"]);
        // Each API has its own field labels: the other's names are not supported.
        let wrong = get(
            &c,
            &format!("{NEW}?fieldSelector=involvedObject.name%3Dedge"),
        )
        .await;
        assert_eq!(wrong.status, 400);
        assert_eq!(
            wrong.message(),
            "field label not supported: involvedObject.name"
        );

        let ev = watch_lines(&c, &format!("{CORE}?watch=true&resourceVersion={rv}"), 1).await;
        assert_eq!(ev[0]["type"], "ADDED");
        assert_eq!(ev[0]["object"]["apiVersion"], "v1");
        assert_eq!(ev[0]["object"]["message"], "template synced");
    }

    #[tokio::test]
    async fn a_series_update_through_events_k8s_io_patches_the_one_stored_event() {
        let sim = kube_sim::KubeSim::start().await.expect("start");
        let c = sim.client().await.expect("client");
        assert_eq!(
            send_json(&c, "POST", NEW, &new_style("a")).await.status,
            201
        );
        // What kube-rs's and client-go's recorders send for a repeated Event.
        let r = patch(
            &c,
            &format!("{NEW}/a"),
            "application/merge-patch+json",
            &json!({"series": {"count": 2, "lastObservedTime": "2026-11-26T10:01:00.000000Z"}}),
        )
        .await;
        assert_eq!(r.status, 200, "{}", r.json);
        assert_eq!(r.json["series"]["count"], 2);
        assert_eq!(r.json["note"], "template synced");
        let core = get(&c, &format!("{CORE}/a")).await;
        assert_eq!(core.json["series"]["count"], 2);
        assert_eq!(core.json["message"], "template synced");
    }

    /// pkg/apis/core/validation/events.go: the legacy rules apply to every Event (named with core/v1 fields,
    /// except reportingController), the strict ones to Events created through events.k8s.io/v1.
    #[tokio::test]
    async fn an_invalid_events_k8s_io_event_is_422_naming_every_field() {
        let sim = kube_sim::KubeSim::start().await.expect("start");
        let c = sim.client().await.expect("client");
        let bad = json!({"apiVersion": "events.k8s.io/v1", "kind": "Event", "metadata": {"name": "x", "namespace": "default"},
            "eventTime": "2026-11-26T10:00:00.000000Z", "type": "Loud", "deprecatedCount": 3,
            "series": {"count": 1}, "regarding": {"kind": "Pod", "name": "p"}});
        let r = send_json(&c, "POST", NEW, &bad).await;
        assert_eq!((r.status, r.reason()), (422, "Invalid"), "{}", r.json);
        let fields: Vec<&str> = r.json["details"]["causes"]
            .as_array()
            .expect("causes")
            .iter()
            .filter_map(|c| c["field"].as_str())
            .collect();
        for field in [
            "reportingController",
            "reportingInstance",
            "action",
            "reason",
            "series.count",
            "series.lastObservedTime",
            "type",
            "deprecatedCount",
        ] {
            assert!(fields.contains(&field), "{field} in {fields:?}");
        }
        assert!(
            r.message()
                .contains("type: Invalid value: \"\": has invalid value: Loud"),
            "{}",
            r.message()
        );
        // Without eventTime: required through events.k8s.io, while core/v1 keeps accepting old-style Events.
        let mut no_time = new_style("y");
        no_time.as_object_mut().expect("object").remove("eventTime");
        let r = send_json(&c, "POST", NEW, &no_time).await;
        assert_eq!(r.status, 422, "{}", r.json);
        assert!(
            r.message().contains("eventTime: Required value"),
            "{}",
            r.message()
        );
        // Legacy rule for every Event: the involved object's namespace must be the Event's.
        let r = send_json(&c, "POST", CORE, &json!({"apiVersion": "v1", "kind": "Event", "metadata": {"name": "z", "namespace": "default"},
            "involvedObject": {"kind": "Pod", "namespace": "other", "name": "p"}, "reason": "R", "message": "m"})).await;
        assert_eq!(r.status, 422, "{}", r.json);
        assert!(
            r.message().contains(
                "involvedObject.namespace: Invalid value: \"other\": does not match event.namespace"
            ),
            "{}",
            r.message()
        );
    }
}
