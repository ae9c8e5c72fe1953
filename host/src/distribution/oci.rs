//! Plugins as OCI artifacts in the CNCF Wasm layout (what `wkg oci push` writes, and wasmCloud and Spin read): an
//! image manifest whose config has media type `application/vnd.wasm.config.v0+json` and whose one layer is the
//! component, `application/wasm`. Pulls are by digest only, and every byte is checked against it: the manifest
//! against the digest asked for, the layer against the manifest, the size against a ceiling before it is read.

use std::collections::BTreeMap;

use oci_client::client::{ClientConfig, Config, ImageLayer};
use oci_client::manifest::{OCI_IMAGE_MEDIA_TYPE, OciImageManifest, OciManifest};
use oci_client::{Client, Reference};
use serde::{Deserialize, Serialize};

use super::access::Access;
use super::reference::{is_sha256_digest, sha256_digest};
use super::registry::Session;

pub const CONFIG_MEDIA_TYPE: &str = "application/vnd.wasm.config.v0+json";
pub const LAYER_MEDIA_TYPE: &str = "application/wasm";
/// The `artifactType` tools put on Wasm component manifests.
pub const COMPONENT_ARTIFACT_TYPE: &str = "application/vnd.wasm.component.v1+wasm";
/// The largest component this operator pulls. The built-in plugins are under 1 MiB; non-Rust components run to a
/// few MiB. A bigger layer is refused before a byte of it is read.
pub const MAX_COMPONENT_BYTES: u64 = 64 << 20;
/// The largest manifest or config read.
const MAX_MANIFEST_BYTES: usize = 1 << 20;

/// An OCI client that reaches the registry as `access` says.
fn client(access: &Access) -> Client {
    Client::new(ClientConfig {
        protocol: access.client_protocol(),
        ..ClientConfig::default()
    })
}

/// What went wrong talking to a registry, or with what it sent.
#[derive(Debug, thiserror::Error)]
pub enum OciError {
    #[error("registry request for {reference} failed: {source}")]
    Registry {
        reference: String,
        #[source]
        source: oci_client::errors::OciDistributionError,
    },
    #[error("{reference} is not a Wasm component artifact: {reason}")]
    NotWasm { reference: String, reason: String },
    #[error("{reference}: the registry sent {what} with digest {actual}, not {expected}")]
    DigestMismatch {
        reference: String,
        what: &'static str,
        expected: String,
        actual: String,
    },
    #[error(
        "{reference}: the component is {size} bytes, above the {MAX_COMPONENT_BYTES}-byte ceiling"
    )]
    TooLarge { reference: String, size: u64 },
    /// A part could not be read: the registry did not answer, refused, or sent more than the part's ceiling.
    #[error("{reference}: {source}")]
    Fetch {
        reference: String,
        #[source]
        source: super::registry::ReadError,
    },
}

/// The config blob of the Wasm layout (CNCF TAG Runtime's "Wasm OCI Artifact layout").
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct WasmConfig {
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub created: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub author: Option<String>,
    pub architecture: String,
    pub os: String,
    #[serde(default)]
    pub layer_digests: Vec<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub component: Option<ComponentConfig>,
}

/// What a component imports and exports, by interface name, for registries and tools that show it.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, Default)]
pub struct ComponentConfig {
    #[serde(default)]
    pub imports: Vec<String>,
    #[serde(default)]
    pub exports: Vec<String>,
}

/// A component pulled and checked.
#[derive(Debug, Clone)]
pub struct Pulled {
    /// The manifest digest: what a pinned reference names and what signatures sign.
    pub digest: String,
    /// The manifest exactly as the registry sent it.
    pub manifest: Vec<u8>,
    pub component: Vec<u8>,
    pub annotations: BTreeMap<String, String>,
}

/// Pushes `component` to `reference` in the Wasm layout; returns the manifest digest. `annotations` go on the
/// manifest (OCI's `org.opencontainers.image.*` and this project's plugin metadata).
pub async fn push(
    reference: &Reference,
    component: &[u8],
    interfaces: ComponentConfig,
    annotations: BTreeMap<String, String>,
    access: &Access,
) -> Result<String, OciError> {
    let layer = ImageLayer::new(component.to_vec(), LAYER_MEDIA_TYPE.to_string(), None);
    let config = WasmConfig {
        created: annotations.get("org.opencontainers.image.created").cloned(),
        author: None,
        architecture: "wasm".into(),
        os: "wasip2".into(),
        layer_digests: vec![sha256_digest(component)],
        component: Some(interfaces),
    };
    let config = Config::new(
        serde_json::to_vec(&config).unwrap_or_default(),
        CONFIG_MEDIA_TYPE.to_string(),
        None,
    );
    let mut manifest = OciImageManifest::build(
        std::slice::from_ref(&layer),
        &config,
        Some(annotations).filter(|a| !a.is_empty()),
    );
    manifest.artifact_type = Some(COMPONENT_ARTIFACT_TYPE.into());
    let manifest_bytes = canonical(&OciManifest::Image(manifest.clone()));
    let client = client(access);
    client
        .push(
            reference,
            &[layer],
            config,
            &access.auth.registry_auth(),
            Some(manifest),
        )
        .await
        .map_err(|source| OciError::Registry {
            reference: reference.whole(),
            source,
        })?;
    // The digest to pin (and sign) is the one of the manifest this push sent; the tag is read back only to check
    // that it names it. A tag moved in between (someone else pushing) is an error, never something to sign.
    let sent = sha256_digest(&manifest_bytes);
    let tagged = resolve(reference, access).await?;
    if tagged != sent {
        return Err(OciError::DigestMismatch {
            reference: reference.whole(),
            what: "the tag just pushed, naming a manifest",
            expected: sent,
            actual: tagged,
        });
    }
    Ok(sent)
}

/// The digest `reference` names now (a tag's current manifest, or the digest it pins).
pub async fn resolve(reference: &Reference, access: &Access) -> Result<String, OciError> {
    let digest = client(access)
        .fetch_manifest_digest(reference, &access.auth.registry_auth())
        .await
        .map_err(|source| OciError::Registry {
            reference: reference.whole(),
            source,
        })?;
    if !is_sha256_digest(&digest) {
        return Err(OciError::NotWasm {
            reference: reference.whole(),
            reason: format!("the registry answered digest {digest:?}, not a sha256 digest"),
        });
    }
    Ok(digest)
}

/// Pulls the component `reference` pins by `digest` and checks the layout, the digests and the size.
pub async fn pull(
    reference: &Reference,
    digest: &str,
    access: &Access,
) -> Result<Pulled, OciError> {
    let whole = reference.whole();
    let fetch_error = |source| OciError::Fetch {
        reference: whole.clone(),
        source,
    };
    let mut session = Session::new(reference, access).map_err(fetch_error)?;
    let raw = session
        .manifest(digest, &[OCI_IMAGE_MEDIA_TYPE], MAX_MANIFEST_BYTES)
        .await
        .map_err(fetch_error)?;
    let actual = sha256_digest(&raw);
    if actual != digest {
        return Err(OciError::DigestMismatch {
            reference: whole,
            what: "a manifest",
            expected: digest.to_string(),
            actual,
        });
    }
    let manifest: OciImageManifest = serde_json::from_slice(&raw).map_err(|e| {
        not_wasm(
            &whole,
            &format!("the manifest is not an OCI image manifest: {e}"),
        )
    })?;
    if manifest.config.media_type != CONFIG_MEDIA_TYPE {
        return Err(not_wasm(
            &whole,
            &format!(
                "its config has media type {:?}, not {CONFIG_MEDIA_TYPE:?}",
                manifest.config.media_type
            ),
        ));
    }
    let [layer] = manifest.layers.as_slice() else {
        return Err(not_wasm(
            &whole,
            &format!(
                "it has {} layers; the Wasm layout has exactly one",
                manifest.layers.len()
            ),
        ));
    };
    if layer.media_type != LAYER_MEDIA_TYPE {
        return Err(not_wasm(
            &whole,
            &format!(
                "its layer has media type {:?}, not {LAYER_MEDIA_TYPE:?}",
                layer.media_type
            ),
        ));
    }
    let size = u64::try_from(layer.size).unwrap_or(u64::MAX);
    if size > MAX_COMPONENT_BYTES {
        return Err(OciError::TooLarge {
            reference: whole,
            size,
        });
    }
    // The descriptor's size is the registry's word; the bytes are counted as they come, up to it.
    let ceiling = usize::try_from(size.min(MAX_COMPONENT_BYTES)).unwrap_or(usize::MAX);
    let component = session
        .blob(&layer.digest, ceiling)
        .await
        .map_err(fetch_error)?;
    let actual = sha256_digest(&component);
    if actual != layer.digest {
        return Err(OciError::DigestMismatch {
            reference: whole,
            what: "a component layer",
            expected: layer.digest.clone(),
            actual,
        });
    }
    Ok(Pulled {
        digest: digest.to_string(),
        manifest: raw.to_vec(),
        component,
        annotations: manifest.annotations.unwrap_or_default(),
    })
}

/// A manifest exactly as the OCI client sends it: canonical JSON (sorted keys, no whitespace).
fn canonical(manifest: &OciManifest) -> Vec<u8> {
    use serde::Serialize as _;
    let mut body = Vec::new();
    let mut serializer =
        serde_json::Serializer::with_formatter(&mut body, olpc_cjson::CanonicalFormatter::new());
    // Serialising plain data into a Vec cannot fail; an empty body would only fail the digest check below.
    let _ = manifest.serialize(&mut serializer);
    body
}

fn not_wasm(reference: &str, reason: &str) -> OciError {
    OciError::NotWasm {
        reference: reference.to_string(),
        reason: reason.to_string(),
    }
}
