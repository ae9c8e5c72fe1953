//! Plugins as OCI artifacts, end to end against a real registry on loopback (Debian's `docker-registry`, the
//! CNCF distribution registry): the Wasm layout pushed, tags resolved to digests, cosign-compatible signatures
//! made and checked, unsigned and wrongly signed artifacts refused, and a pinned artifact served from the cache
//! with the registry gone (an air-gapped operator). The CLI is driven as a user drives it.

use std::collections::BTreeMap;
use std::process::Command;

use omni_operator::defaults;
use omni_operator::distribution::{
    self, Access, ArtifactCache, ArtifactRef, FetchError, Trust, TrustedKeys, metadata, oci,
    signature,
};

use crate::helm_fixtures::registry;

fn component() -> &'static [u8] {
    defaults::PLUGINS
        .iter()
        .find(|p| p.name == "omni-kubeconfig-export")
        .expect("the built-in")
        .wasm
}

fn plain() -> Access {
    Access {
        plain_http: true,
        ..Access::default()
    }
}

fn keys(name: &str, public: &str) -> Trust {
    Trust::Keys(TrustedKeys::from_pems([(name.to_string(), public.as_bytes())]).expect("key"))
}

async fn push(host: &str, repo_tag: &str) -> (oci_client::Reference, String) {
    let reference = format!("{host}/{repo_tag}").parse().expect("reference");
    let meta = metadata::read(component())
        .expect("metadata")
        .expect("present");
    let digest = oci::push(
        &reference,
        component(),
        metadata::interfaces(component()).expect("interfaces"),
        metadata::annotations(&meta),
        &plain(),
    )
    .await
    .expect("push");
    (reference, digest)
}

#[tokio::test]
async fn a_signed_plugin_is_pulled_by_digest_verified_and_then_served_from_the_cache_without_the_registry()
 {
    let registry = registry().await;
    let (private, public) = signature::generate_key_pair(b"pw").expect("keygen");
    let (reference, digest) = push(&registry.host, "plugins/kubeconfig-export:1.0.0").await;
    signature::sign(&reference, &digest, private.as_bytes(), b"pw", &plain())
        .await
        .expect("sign");

    // A tag resolves to the digest the push reported, and the pull is checked against it.
    let tagged: ArtifactRef = format!("oci://{}/plugins/kubeconfig-export:1.0.0", registry.host)
        .parse()
        .expect("ref");
    let cache_dir = tempfile::tempdir().expect("tempdir");
    let cache = ArtifactCache::new(cache_dir.path());
    let fetched = distribution::fetch(
        &tagged,
        None,
        &plain(),
        &keys("release", &public),
        Some(&cache),
    )
    .await
    .expect("fetch");
    assert_eq!(fetched.digest, digest);
    assert_eq!(fetched.component, component());
    assert_eq!(fetched.signed_by.as_deref(), Some("release"));
    assert!(!fetched.from_cache);
    assert_eq!(
        fetched.pinned,
        format!("oci://{}/plugins/kubeconfig-export@{digest}", registry.host)
    );
    let meta = fetched
        .metadata
        .expect("the SDK wrote the metadata section");
    assert_eq!(meta.name, "omni-kubeconfig-export");
    assert_eq!(meta.wit, "omni:operator@0.1.0");

    // The registry goes away: the pinned artifact still starts, from the cache, and is verified again there.
    drop(registry);
    let pinned: ArtifactRef = fetched.pinned.parse().expect("pinned ref");
    let offline = distribution::fetch(
        &pinned,
        None,
        &plain(),
        &keys("release", &public),
        Some(&cache),
    )
    .await
    .expect("served from the cache");
    assert!(offline.from_cache);
    assert_eq!(offline.component, component());
    assert_eq!(offline.signed_by.as_deref(), Some("release"));
    // ...but not to someone who trusts another key: the cached signatures do not verify, and the registry that
    // might hold newer ones is unreachable, so the answer is a refusal, never the cached bytes.
    let (_, stranger) = signature::generate_key_pair(b"x").expect("keygen");
    assert!(
        distribution::fetch(
            &pinned,
            None,
            &plain(),
            &keys("other", &stranger),
            Some(&cache)
        )
        .await
        .is_err()
    );
}

#[tokio::test]
async fn unsigned_and_wrongly_signed_artifacts_are_refused_with_a_reason() {
    let registry = registry().await;
    let (_, public) = signature::generate_key_pair(b"pw").expect("keygen");
    let (other_private, _) = signature::generate_key_pair(b"pw2").expect("keygen");
    let (reference, digest) = push(&registry.host, "plugins/unsigned:1").await;
    let pinned: ArtifactRef = format!("oci://{}/plugins/unsigned@{digest}", registry.host)
        .parse()
        .expect("ref");

    let err = distribution::fetch(&pinned, None, &plain(), &keys("release", &public), None)
        .await
        .expect_err("an unsigned artifact");
    assert_eq!(err.reason(), "Unsigned", "{err}");

    signature::sign(
        &reference,
        &digest,
        other_private.as_bytes(),
        b"pw2",
        &plain(),
    )
    .await
    .expect("sign with a key nobody trusts");
    let err = distribution::fetch(&pinned, None, &plain(), &keys("release", &public), None)
        .await
        .expect_err("signed by the wrong key");
    assert_eq!(err.reason(), "UntrustedSignature", "{err}");
    assert!(err.to_string().contains(&digest), "{err}");
    assert!(err.to_string().contains("release"), "{err}");

    // With verification explicitly disabled the same bytes are accepted, and nothing claims they were signed.
    let fetched = distribution::fetch(&pinned, None, &plain(), &Trust::Disabled, None)
        .await
        .expect("unsigned accepted when disabled");
    assert_eq!(fetched.signed_by, None);
}

#[tokio::test]
async fn a_signature_of_another_artifact_does_not_carry_over() {
    // An attacker who can push to the repository copies a valid signature manifest (for digest A) to the
    // signature tag of digest B. The payload names A, so B stays untrusted.
    let registry = registry().await;
    let (private, public) = signature::generate_key_pair(b"pw").expect("keygen");
    let (reference, digest_a) = push(&registry.host, "plugins/p:good").await;
    signature::sign(&reference, &digest_a, private.as_bytes(), b"pw", &plain())
        .await
        .expect("sign A");
    let evil: Vec<u8> = {
        let mut bytes = component().to_vec();
        // Still a valid component: a custom section appended.
        bytes.extend_from_slice(&[0, 5, 4, b'e', b'v', b'i', b'l']);
        bytes
    };
    let evil_ref: oci_client::Reference = format!("{}/plugins/p:evil", registry.host)
        .parse()
        .expect("ref");
    let digest_b = oci::push(
        &evil_ref,
        &evil,
        Default::default(),
        BTreeMap::new(),
        &plain(),
    )
    .await
    .expect("push B");
    let client = oci_client::Client::new(oci_client::client::ClientConfig {
        protocol: oci_client::client::ClientProtocol::Http,
        ..Default::default()
    });
    let auth = oci_client::secrets::RegistryAuth::Anonymous;
    let sig_a: oci_client::Reference = format!(
        "{}/plugins/p:{}.sig",
        registry.host,
        digest_a.replace(':', "-")
    )
    .parse()
    .expect("ref");
    let sig_b: oci_client::Reference = format!(
        "{}/plugins/p:{}.sig",
        registry.host,
        digest_b.replace(':', "-")
    )
    .parse()
    .expect("ref");
    let (manifest, _) = client
        .pull_manifest(&sig_a, &auth)
        .await
        .expect("A's signature manifest");
    client
        .push_manifest(&sig_b, &manifest)
        .await
        .expect("copied to B's signature tag");

    let pinned: ArtifactRef = format!("oci://{}/plugins/p@{digest_b}", registry.host)
        .parse()
        .expect("ref");
    let err = distribution::fetch(&pinned, None, &plain(), &keys("release", &public), None)
        .await
        .expect_err("B is not signed");
    assert!(
        matches!(err, FetchError::Signature(_)),
        "refused for its signature, not something else: {err}"
    );
}

#[tokio::test]
async fn an_artifact_in_another_layout_is_refused_before_it_is_compiled() {
    let registry = registry().await;
    let reference: oci_client::Reference = format!("{}/plugins/image:1", registry.host)
        .parse()
        .expect("ref");
    let client = oci_client::Client::new(oci_client::client::ClientConfig {
        protocol: oci_client::client::ClientProtocol::Http,
        ..Default::default()
    });
    // An ordinary container image (tar layer, image config): not a Wasm artifact.
    let layer = oci_client::client::ImageLayer::oci_v1(b"not a component".to_vec(), None);
    let config = oci_client::client::Config::oci_v1(b"{}".to_vec(), None);
    client
        .push(
            &reference,
            &[layer],
            config,
            &oci_client::secrets::RegistryAuth::Anonymous,
            None,
        )
        .await
        .expect("push an image");
    let tagged: ArtifactRef = format!("oci://{}/plugins/image:1", registry.host)
        .parse()
        .expect("ref");
    let err = distribution::fetch(&tagged, None, &plain(), &Trust::Disabled, None)
        .await
        .expect_err("not a Wasm artifact");
    assert_eq!(err.reason(), "InvalidArtifact", "{err}");
    assert!(
        err.to_string()
            .contains("application/vnd.wasm.config.v0+json"),
        "{err}"
    );
}

#[tokio::test]
async fn a_file_source_is_verified_by_its_blob_signature() {
    let dir = tempfile::tempdir().expect("tempdir");
    let (private, public) = signature::generate_key_pair(b"pw").expect("keygen");
    let path = dir.path().join("kubeconfig-export.wasm");
    std::fs::write(&path, component()).expect("write");
    let file: ArtifactRef = format!("file://{}", path.display()).parse().expect("ref");

    let err = distribution::fetch(&file, None, &plain(), &keys("k", &public), None)
        .await
        .expect_err("no .sig yet");
    assert_eq!(err.reason(), "Unsigned", "{err}");

    let sig = signature::sign_blob(component(), private.as_bytes(), b"pw").expect("sign");
    std::fs::write(dir.path().join("kubeconfig-export.wasm.sig"), &sig).expect("write sig");
    let fetched = distribution::fetch(&file, None, &plain(), &keys("k", &public), None)
        .await
        .expect("signed file");
    assert_eq!(fetched.signed_by.as_deref(), Some("k"));
    assert_eq!(
        fetched.digest,
        distribution::reference::sha256_digest(component())
    );

    // One byte changed after signing: refused.
    let mut changed = component().to_vec();
    changed.extend_from_slice(&[0, 2, 1, b'x']);
    std::fs::write(&path, changed).expect("write");
    let err = distribution::fetch(&file, None, &plain(), &keys("k", &public), None)
        .await
        .expect_err("changed bytes");
    assert_eq!(err.reason(), "UntrustedSignature", "{err}");
}

/// The CLI as an author uses it: keygen, push signed, verify, pull into a cache; a wrong key fails with a message.
#[tokio::test]
async fn the_cli_pushes_signs_verifies_and_pulls() {
    let registry = registry().await;
    let dir = tempfile::tempdir().expect("tempdir");
    let wasm = dir.path().join("plugin.wasm");
    std::fs::write(&wasm, component()).expect("write");
    let cli = |args: &[&str]| {
        let out = Command::new(env!("CARGO_BIN_EXE_omni-operator"))
            .args(args)
            .env("COSIGN_PASSWORD", "correct horse")
            .current_dir(dir.path())
            .output()
            .expect("run the CLI");
        (
            out.status.success(),
            String::from_utf8_lossy(&out.stdout).into_owned(),
            String::from_utf8_lossy(&out.stderr).into_owned(),
        )
    };
    let (ok, _, err) = cli(&["plugin", "keygen", "--output-prefix", "release"]);
    assert!(ok, "{err}");
    let key_mode = std::os::unix::fs::PermissionsExt::mode(
        &std::fs::metadata(dir.path().join("release.key"))
            .expect("key")
            .permissions(),
    );
    assert_eq!(
        key_mode & 0o077,
        0,
        "the private key is readable by its owner only"
    );
    let (ok, _, err) = cli(&["plugin", "keygen", "--output-prefix", "other"]);
    assert!(ok, "{err}");

    let tag = format!("oci://{}/plugins/cli:0.1.0", registry.host);
    let (ok, pinned, err) = cli(&[
        "plugin",
        "push",
        "plugin.wasm",
        &tag,
        "--sign-key",
        "release.key",
        "--plain-http",
    ]);
    assert!(ok, "{err}");
    let pinned = pinned.trim().to_string();
    assert!(pinned.contains("@sha256:"), "{pinned}");

    let (ok, out, err) = cli(&[
        "plugin",
        "verify",
        &pinned,
        "--key",
        "release.pub",
        "--plain-http",
    ]);
    assert!(ok, "{err}");
    let report: serde_json::Value = serde_json::from_str(&out).expect("json");
    assert_eq!(report["signedBy"], "release.pub");
    assert_eq!(report["metadata"]["name"], "omni-kubeconfig-export");

    let (ok, _, err) = cli(&[
        "plugin",
        "verify",
        &pinned,
        "--key",
        "other.pub",
        "--plain-http",
    ]);
    assert!(!ok);
    assert!(err.contains("none made by a trusted key"), "{err}");

    let (ok, out, err) = cli(&[
        "plugin",
        "pull",
        &tag,
        "--key",
        "release.pub",
        "--plain-http",
        "--cache",
        "cache",
        "-o",
        "pulled.wasm",
    ]);
    assert!(ok, "{err}");
    assert_eq!(
        std::fs::read(dir.path().join("pulled.wasm")).expect("pulled"),
        component()
    );
    let report: serde_json::Value = serde_json::from_str(&out).expect("json");
    let hex = report["digest"]
        .as_str()
        .expect("digest")
        .trim_start_matches("sha256:")
        .to_string();
    assert!(
        dir.path()
            .join("cache/sha256")
            .join(hex)
            .join("component.wasm")
            .is_file()
    );

    // Air-gapped: a signed file next to its .sig.
    let (ok, _, err) = cli(&[
        "plugin",
        "sign",
        &format!("file://{}", wasm.display()),
        "--key",
        "release.key",
    ]);
    assert!(ok, "{err}");
    let (ok, _, err) = cli(&[
        "plugin",
        "verify",
        &format!("file://{}", wasm.display()),
        "--key",
        "release.pub",
    ]);
    assert!(ok, "{err}");
}

/// A registry that lies, on loopback: it answers every GET with `200` and an endless body (no length), or with a
/// `Content-Length` far above what a part may be. It counts the bytes it managed to send.
struct LyingRegistry {
    host: String,
    sent: std::sync::Arc<std::sync::atomic::AtomicU64>,
}

impl LyingRegistry {
    async fn start(announce_length: bool) -> LyingRegistry {
        use std::sync::atomic::Ordering;
        use tokio::io::{AsyncReadExt, AsyncWriteExt};
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0")
            .await
            .expect("bind");
        let host = listener.local_addr().expect("addr").to_string();
        let sent = std::sync::Arc::new(std::sync::atomic::AtomicU64::new(0));
        let counter = sent.clone();
        tokio::spawn(async move {
            while let Ok((mut socket, _)) = listener.accept().await {
                let counter = counter.clone();
                tokio::spawn(async move {
                    let mut request = [0u8; 4096];
                    let _ = socket.read(&mut request).await;
                    let head = if announce_length {
                        "HTTP/1.1 200 OK\r\nContent-Type: application/vnd.oci.image.manifest.v1+json\r\nContent-Length: 1099511627776\r\n\r\n"
                    } else {
                        "HTTP/1.1 200 OK\r\nContent-Type: application/vnd.oci.image.manifest.v1+json\r\nConnection: close\r\n\r\n"
                    };
                    if socket.write_all(head.as_bytes()).await.is_err() {
                        return;
                    }
                    let chunk = vec![b'{'; 64 << 10];
                    // Bounded by the client hanging up, and by this test's own ceiling (4 GiB).
                    for _ in 0..(1 << 16) {
                        if socket.write_all(&chunk).await.is_err() {
                            return;
                        }
                        counter.fetch_add(chunk.len() as u64, Ordering::Relaxed);
                    }
                });
            }
        });
        LyingRegistry { host, sent }
    }
}

/// A registry that answers a manifest (or a signature manifest) with an endless body, or announces a terabyte:
/// the pull stops at the part's ceiling instead of buffering what the registry sends.
#[tokio::test]
async fn a_registry_that_sends_endless_or_oversized_bodies_is_cut_off_at_the_ceiling() {
    use std::sync::atomic::Ordering;
    let digest = format!("sha256:{}", "a".repeat(64));
    for announce_length in [false, true] {
        let lying = LyingRegistry::start(announce_length).await;
        let reference: oci_client::Reference = format!("{}/plugins/lie:1.0.0", lying.host)
            .parse()
            .expect("reference");
        let err = oci::pull(&reference, &digest, &plain())
            .await
            .expect_err("a lying registry's manifest is refused");
        assert!(
            err.to_string().contains("is larger than 1048576 bytes"),
            "{err}"
        );
        let refused = FetchError::from(err);
        assert_eq!(refused.reason(), "InvalidArtifact");
        let err = signature::fetch(&reference, &digest, &plain())
            .await
            .expect_err("a lying registry's signature manifest is refused");
        assert!(err.to_string().contains("is larger than"), "{err}");
        // What the registry got out before the client hung up is bounded by the ceiling plus what sockets buffer.
        let sent = lying.sent.load(Ordering::Relaxed);
        assert!(
            sent < 64 << 20,
            "the registry sent {sent} bytes before being cut off"
        );
    }
}
