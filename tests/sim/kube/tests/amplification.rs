//! Bounded work per request: bodies built to make a server allocate far more than they weigh (JSON patch copies
//! that double the object, huge values added, merged and applied, deep nesting) must leave kube-sim's memory within
//! a small multiple of the body size, as kube-apiserver's limits keep it (3 MiB bodies, 10,000 JSON patch
//! operations, 3 MiB of accumulated `copy` growth, depth limits in its decoders).
//!
//! The server runs in this test process, which runs nothing else: one test, so the peak resident size
//! (`VmHWM`, reset through `/proc/self/clear_refs` before each shape) measures what the request cost.

mod common;

use common::*;
use serde_json::{Value, json};

const MIB: u64 = 1024 * 1024;

/// A custom resource that keeps whatever its spec holds: ConfigMaps and Secrets refuse data over 1 MiB, and
/// these shapes need objects that large to be stored.
const BLOB_CRD: &str = r#"
apiVersion: apiextensions.k8s.io/v1
kind: CustomResourceDefinition
metadata: {name: blobs.example.com}
spec:
  group: example.com
  scope: Namespaced
  names: {plural: blobs, singular: blob, kind: Blob}
  versions:
  - name: v1
    served: true
    storage: true
    schema:
      openAPIV3Schema:
        type: object
        properties:
          spec: {type: object, x-kubernetes-preserve-unknown-fields: true}
"#;
const BLOBS: &str = "/apis/example.com/v1/namespaces/default/blobs";

/// The process's resident size now and at its peak since the last reset, in bytes.
fn rss() -> (u64, u64) {
    let status = std::fs::read_to_string("/proc/self/status").expect("/proc/self/status");
    let field = |name: &str| {
        status
            .lines()
            .find_map(|l| l.strip_prefix(name))
            .and_then(|v| v.trim().strip_suffix("kB"))
            .and_then(|v| v.trim().parse::<u64>().ok())
            .map(|kib| kib * 1024)
            .unwrap_or_else(|| panic!("{name} in /proc/self/status"))
    };
    (field("VmRSS:"), field("VmHWM:"))
}

/// Makes the peak resident size start again from the current one (Linux: `5` to clear_refs).
fn reset_peak() {
    std::fs::write("/proc/self/clear_refs", "5")
        .expect("resetting VmHWM through /proc/self/clear_refs");
}

/// Sends `body` and returns the answer and how far the peak resident size rose above the size before it.
async fn measured(
    client: &kube::Client,
    method: &str,
    path: &str,
    content_type: &str,
    body: Vec<u8>,
) -> (Reply, u64) {
    reset_peak();
    let (before, _) = rss();
    let started = std::time::Instant::now();
    let reply = raw(client, method, path, Some(content_type), body).await;
    let (_, peak) = rss();
    println!("  answered in {} ms", started.elapsed().as_millis());
    (reply, peak.saturating_sub(before))
}

fn report(shape: &str, body_len: usize, reply: &Reply, growth: u64) {
    println!(
        "{shape}: body {:.2} MiB -> {} {}, peak RSS +{:.1} MiB",
        body_len as f64 / MIB as f64,
        reply.status,
        reply.reason(),
        growth as f64 / MIB as f64
    );
}

/// What "a small multiple of the body" allows: 8 × the body, plus 24 MiB for the runtime, the TLS stack and the
/// allocator's own slack. Without the limits the copy shape alone reached tens of GiB.
fn bound(body_len: usize) -> u64 {
    8 * body_len as u64 + 24 * MIB
}

#[tokio::test(flavor = "current_thread")]
async fn amplifying_requests_stay_within_a_small_multiple_of_their_size() {
    let sim = kube_sim::KubeSim::start().await.expect("start");
    let client = client_without_retries(&sim).await;
    let seed = configmap("seed", json!({"v": "x".repeat(1024)}));
    assert_eq!(
        send_json(&client, "POST", CONFIGMAPS, &seed).await.status,
        201
    );
    let seed_path = format!("{CONFIGMAPS}/seed");
    sim.apply_yaml(BLOB_CRD)
        .await
        .expect("the Blob CRD applies");
    let blob = json!({"apiVersion": "example.com/v1", "kind": "Blob", "metadata": {"name": "b"}, "spec": {"v": "x"}});
    let created = create_when_served(&client, BLOBS, &blob).await;
    assert_eq!(created, 201, "the Blob CRD is served");
    let blob_path = format!("{BLOBS}/b");
    // Warm the paths once so first-use allocations (TLS sessions, lazily built tables) are not counted.
    let _ = get(&client, &seed_path).await;
    let _ = get(&client, &blob_path).await;

    // 1. JSON patch `copy`: each round copies the data map aside and back into itself twice, doubling the object
    //    (30 rounds: 2^30 times the seed). The real server stops at 3 MiB of copied bytes with the generic 422
    //    every JSON patch failure gets.
    let mut ops = Vec::new();
    for _ in 0..30 {
        ops.push(json!({"op": "copy", "from": "/data", "path": "/metadata/annotations"}));
        ops.push(json!({"op": "copy", "from": "/metadata/annotations", "path": "/data/g1"}));
        ops.push(json!({"op": "copy", "from": "/metadata/annotations", "path": "/data/g2"}));
    }
    let body = serde_json::to_vec(&Value::Array(ops)).expect("json");
    let len = body.len();
    let (reply, growth) = measured(
        &client,
        "PATCH",
        &seed_path,
        "application/json-patch+json",
        body,
    )
    .await;
    report("json-patch copy doubling", len, &reply, growth);
    assert_eq!(reply.status, 422, "{}", reply.text);
    assert_eq!(
        reply.message(),
        "the server rejected our request due to an error in our request"
    );
    assert!(
        growth <= bound(len),
        "copy shape grew RSS by {growth} bytes for a {len}-byte body"
    );

    // 2. JSON patch `add` of huge values: growth is what the body carries.
    let big = "y".repeat((MIB + MIB / 2) as usize);
    let body = serde_json::to_vec(&json!([
        {"op": "add", "path": "/spec/a", "value": big},
        {"op": "add", "path": "/spec/b", "value": big[..MIB as usize / 2]},
    ]))
    .expect("json");
    let len = body.len();
    let (reply, growth) = measured(
        &client,
        "PATCH",
        &blob_path,
        "application/json-patch+json",
        body,
    )
    .await;
    report("json-patch add of huge values", len, &reply, growth);
    assert_eq!(reply.status, 200, "{}", reply.text);
    assert!(
        growth <= bound(len),
        "add shape grew RSS by {growth} bytes for a {len}-byte body"
    );

    // 3. Merge patch of a huge value.
    let body =
        serde_json::to_vec(&json!({"spec": {"a": "z".repeat((2 * MIB) as usize)}})).expect("json");
    let len = body.len();
    let (reply, growth) = measured(
        &client,
        "PATCH",
        &blob_path,
        "application/merge-patch+json",
        body,
    )
    .await;
    report("merge patch of a huge value", len, &reply, growth);
    assert_eq!(reply.status, 200, "{}", reply.text);
    assert!(
        growth <= bound(len),
        "merge shape grew RSS by {growth} bytes for a {len}-byte body"
    );

    // 4. Server-side apply of a huge value, by a new field manager (managed fields are computed for it).
    let applied = json!({"apiVersion": "example.com/v1", "kind": "Blob", "metadata": {"name": "applied", "namespace": "default"},
        "spec": {"d": "w".repeat((2 * MIB) as usize)}});
    let body = serde_json::to_vec(&applied).expect("json");
    let len = body.len();
    let (reply, growth) = measured(
        &client,
        "PATCH",
        &format!("{BLOBS}/applied?fieldManager=amplifier"),
        "application/apply-patch+yaml",
        body,
    )
    .await;
    report("server-side apply of a huge value", len, &reply, growth);
    assert!(matches!(reply.status, 200 | 201), "{}", reply.text);
    assert!(
        growth <= bound(len),
        "apply shape grew RSS by {growth} bytes for a {len}-byte body"
    );

    // 5. A protobuf StatefulSet of 1.4 million empty volume claim templates: two bytes each on the wire, each a
    //    zero-valued PersistentVolumeClaim (with its metadata, spec and status) once decoded. The real server
    //    builds them all as Go structs; kube-sim stops at its decode budget with a 400.
    let mut spec = Vec::new();
    for _ in 0..1_400_000 {
        spec.extend_from_slice(&[0x22, 0x00]); // field 4 (volumeClaimTemplates), length 0
    }
    let raw = [vec![0x12], varint(spec.len() as u64), spec].concat();
    let type_meta = [
        vec![0x0a, 7],
        b"apps/v1".to_vec(),
        vec![0x12, 11],
        b"StatefulSet".to_vec(),
    ]
    .concat();
    let envelope = [
        vec![0x0a, type_meta.len() as u8],
        type_meta,
        vec![0x12],
        varint(raw.len() as u64),
        raw,
    ]
    .concat();
    let body = [b"k8s\x00".to_vec(), envelope].concat();
    let len = body.len();
    let (reply, growth) = measured(
        &client,
        "POST",
        "/apis/apps/v1/namespaces/default/statefulsets",
        "application/vnd.kubernetes.protobuf",
        body,
    )
    .await;
    report("protobuf of empty repeated structs", len, &reply, growth);
    assert_eq!(reply.status, 400, "{}", reply.text);
    assert!(
        reply
            .message()
            .contains("far more values than its size allows"),
        "{}",
        reply.text
    );
    assert!(
        growth <= bound(len),
        "protobuf shape grew RSS by {growth} bytes for a {len}-byte body"
    );

    // 5. Deep nesting, in each body kind: refused by the depth limits, cheaply.
    let depth = 100_000;
    let nested = format!("{}{}", "[".repeat(depth), "]".repeat(depth));
    let apply_path = format!("{blob_path}?fieldManager=amplifier");
    for (path, content_type, body) in [
        (
            &blob_path,
            "application/merge-patch+json",
            format!("{{\"spec\":{{\"e\":{nested}}}}}"),
        ),
        (
            &blob_path,
            "application/json-patch+json",
            format!("[{{\"op\":\"add\",\"path\":\"/spec/e\",\"value\":{nested}}}]"),
        ),
        (
            &apply_path,
            "application/apply-patch+yaml",
            format!(
                "{{\"apiVersion\":\"example.com/v1\",\"kind\":\"Blob\",\"metadata\":{{\"name\":\"b\"}},\"spec\":{{\"e\":{nested}}}}}"
            ),
        ),
        (
            &apply_path,
            "application/apply-patch+yaml",
            format!(
                "apiVersion: example.com/v1\nkind: Blob\nmetadata:\n  name: b\nspec:\n  e: {nested}\n"
            ),
        ),
        (
            &seed_path,
            "application/strategic-merge-patch+json",
            format!("{{\"data\":{{\"e\":{nested}}}}}"),
        ),
    ] {
        let len = body.len();
        let (reply, growth) =
            measured(&client, "PATCH", path, content_type, body.into_bytes()).await;
        report(
            &format!("{content_type} nested {depth} deep"),
            len,
            &reply,
            growth,
        );
        assert!(
            (400..500).contains(&reply.status),
            "{content_type}: a {depth}-deep body is refused: {} {}",
            reply.status,
            reply.text
        );
        assert!(
            growth <= bound(len),
            "{content_type} nesting grew RSS by {growth} bytes"
        );
    }
    sim.stop().await;
}

fn varint(mut n: u64) -> Vec<u8> {
    let mut out = Vec::new();
    loop {
        let b = (n & 0x7f) as u8;
        n >>= 7;
        if n == 0 {
            out.push(b);
            return out;
        }
        out.push(b | 0x80);
    }
}
