//! A plugin's metadata travels inside its component, in the custom section [`SECTION`], so it cannot drift from
//! the bytes it describes (Kubewarden's `io.kubewarden.metadata`, Zed's `zed:api-version`). The SDK's
//! `export_plugin!` writes it into the plugin's core module; this module finds it in the component (at any
//! nesting) and reads it. Its JSON:
//!
//! ```json
//! {"name": "site-rules", "version": "1.2.0", "wit": "omni:operator@0.1.0", "sdk": "0.1.0",
//!  "capabilities": "kube-read,kube-read:core/ConfigMap"}
//! ```
//!
//! `capabilities` are the grants the author requests, in the `--grant` grammar; the effective grants of a
//! binding never exceed them. A component without the section requests what its imports need.

use serde::{Deserialize, Serialize};
use wasmparser::{Parser, Payload};

use super::oci::ComponentConfig;

/// The custom section's name.
pub const SECTION: &str = "omni-operator:metadata";
/// Manifest annotations a push mirrors the metadata into, for registries and tools that do not open components.
pub const WIT_ANNOTATION: &str = "com.texashpc.omni-operator.wit";
pub const CAPABILITIES_ANNOTATION: &str = "com.texashpc.omni-operator.capabilities";
/// The largest section read: metadata is a few hundred bytes.
const MAX_SECTION_BYTES: usize = 64 << 10;

/// What the author says the plugin is and needs.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, Default)]
pub struct PluginMetadata {
    pub name: String,
    #[serde(default)]
    pub version: String,
    /// The contract package and version the plugin was built against (`omni:operator@0.1.0`).
    pub wit: String,
    #[serde(default)]
    pub sdk: String,
    /// Requested grants; `None`: what the component's imports need.
    #[serde(default, with = "comma_list", skip_serializing_if = "Option::is_none")]
    pub capabilities: Option<Vec<String>>,
}

#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum MetadataError {
    #[error("the bytes are not a WebAssembly component or module: {0}")]
    NotWasm(String),
    #[error("the {SECTION} section is not valid metadata: {0}")]
    Invalid(String),
    #[error("the component has {0} {SECTION} sections; a plugin has one")]
    Duplicate(usize),
}

/// The metadata of `component`, if it carries any.
pub fn read(component: &[u8]) -> Result<Option<PluginMetadata>, MetadataError> {
    let mut found = Vec::new();
    for payload in Parser::new(0).parse_all(component) {
        let payload = payload.map_err(|e| MetadataError::NotWasm(e.to_string()))?;
        if let Payload::CustomSection(section) = payload
            && section.name() == SECTION
        {
            found.push(section.data().to_vec());
        }
    }
    match found.as_slice() {
        [] => Ok(None),
        [data] => {
            if data.len() > MAX_SECTION_BYTES {
                return Err(MetadataError::Invalid(format!(
                    "it is {} bytes, above {MAX_SECTION_BYTES}",
                    data.len()
                )));
            }
            let metadata: PluginMetadata =
                serde_json::from_slice(data).map_err(|e| MetadataError::Invalid(e.to_string()))?;
            if metadata.name.trim().is_empty() {
                return Err(MetadataError::Invalid("name is empty".into()));
            }
            Ok(Some(metadata))
        }
        many => Err(MetadataError::Duplicate(many.len())),
    }
}

/// The component's top-level imports and exports by name (interfaces such as `omni:operator/helm@0.1.0`).
pub fn interfaces(component: &[u8]) -> Result<ComponentConfig, MetadataError> {
    let mut out = ComponentConfig::default();
    let mut depth = 0usize;
    for payload in Parser::new(0).parse_all(component) {
        match payload.map_err(|e| MetadataError::NotWasm(e.to_string()))? {
            Payload::Version { .. } => depth += 1,
            Payload::End(_) => depth = depth.saturating_sub(1),
            Payload::ComponentImportSection(reader) if depth == 1 => {
                for import in reader {
                    let import = import.map_err(|e| MetadataError::NotWasm(e.to_string()))?;
                    out.imports.push(import.name.name.to_string());
                }
            }
            Payload::ComponentExportSection(reader) if depth == 1 => {
                for export in reader {
                    let export = export.map_err(|e| MetadataError::NotWasm(e.to_string()))?;
                    out.exports.push(export.name.name.to_string());
                }
            }
            _ => {}
        }
    }
    Ok(out)
}

/// Manifest annotations for a push: OCI's title and version, and the contract and requested grants.
pub fn annotations(metadata: &PluginMetadata) -> std::collections::BTreeMap<String, String> {
    let mut out = std::collections::BTreeMap::new();
    out.insert(
        "org.opencontainers.image.title".into(),
        metadata.name.clone(),
    );
    if !metadata.version.is_empty() {
        out.insert(
            "org.opencontainers.image.version".into(),
            metadata.version.clone(),
        );
    }
    out.insert(WIT_ANNOTATION.into(), metadata.wit.clone());
    if let Some(capabilities) = &metadata.capabilities {
        out.insert(CAPABILITIES_ANNOTATION.into(), capabilities.join(","));
    }
    out
}

/// The requested grants as one comma-separated string, so the SDK can write the section with `concat!`.
mod comma_list {
    use serde::{Deserialize, Deserializer, Serializer};

    #[allow(clippy::ref_option)] // serde's `with` hands the field by reference
    pub fn serialize<S: Serializer>(list: &Option<Vec<String>>, s: S) -> Result<S::Ok, S::Error> {
        match list {
            Some(list) => s.serialize_str(&list.join(",")),
            None => s.serialize_none(),
        }
    }

    pub fn deserialize<'de, D: Deserializer<'de>>(d: D) -> Result<Option<Vec<String>>, D::Error> {
        let text = Option::<String>::deserialize(d)?;
        Ok(text.map(|text| {
            text.split(',')
                .map(str::trim)
                .filter(|s| !s.is_empty())
                .map(String::from)
                .collect()
        }))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn module_with(sections: &[&[u8]]) -> Vec<u8> {
        let mut wasm = b"\0asm\x01\0\0\0".to_vec();
        for data in sections {
            let mut body = vec![SECTION.len() as u8];
            body.extend_from_slice(SECTION.as_bytes());
            body.extend_from_slice(data);
            wasm.push(0);
            // LEB128 of the length (the tests' sections are under 16 KiB).
            let mut len = body.len();
            loop {
                let byte = (len & 0x7f) as u8;
                len >>= 7;
                if len == 0 {
                    wasm.push(byte);
                    break;
                }
                wasm.push(byte | 0x80);
            }
            wasm.extend_from_slice(&body);
        }
        wasm
    }

    #[test]
    fn metadata_is_read_from_its_section() {
        let wasm = module_with(&[br#"{"name":"site-rules","version":"1.2.0","wit":"omni:operator@0.1.0","capabilities":"kube-read, helm"}"#]);
        let m = read(&wasm).unwrap().unwrap();
        assert_eq!(m.name, "site-rules");
        assert_eq!(
            m.capabilities,
            Some(vec!["kube-read".to_string(), "helm".to_string()])
        );
        let no_request = module_with(&[br#"{"name":"x","wit":"omni:operator@0.1.0"}"#]);
        assert_eq!(read(&no_request).unwrap().unwrap().capabilities, None);
        assert_eq!(read(&module_with(&[])).unwrap(), None);
    }

    #[test]
    fn bad_or_repeated_sections_are_errors_not_guesses() {
        assert!(matches!(
            read(&module_with(&[b"{"])),
            Err(MetadataError::Invalid(_))
        ));
        assert!(matches!(
            read(&module_with(&[br#"{"name":"","wit":"x"}"#])),
            Err(MetadataError::Invalid(_))
        ));
        let one: &[u8] = br#"{"name":"a","wit":"x"}"#;
        assert!(matches!(
            read(&module_with(&[one, one])),
            Err(MetadataError::Duplicate(2))
        ));
        assert!(matches!(read(b"not wasm"), Err(MetadataError::NotWasm(_))));
    }
}
