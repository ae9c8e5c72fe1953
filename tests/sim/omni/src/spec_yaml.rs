//! `yaml_spec` as Omni fills it. Every resource Omni's COSI server returns goes through `protobuf.FromResource`,
//! which sets `yaml_spec` to `yaml.Marshal(spec)` (gopkg.in/yaml.v3) of the typed spec: the protoc-gen-go struct,
//! whose exported fields go-yaml writes under their Go names lower-cased (`kubernetesversion`), in declaration
//! order, zero values included. So:
//! * a message field that is not set is `null`, a set one a nested mapping (an empty one `{}`);
//! * enums are their numbers (generated enum types have no YAML or text marshaller);
//! * `bytes` are sequences of numbers, repeated fields sequences (`[]` when empty), maps mappings sorted by key;
//! * a `oneof` is one field named after it: `null`, or a mapping holding the set member;
//! * ConfigPatch and KubernetesManifestGroup specs have their own `MarshalYAML`: the content decompressed into
//!   `data`, and `compresseddata` empty.
//!
//! The field lists come from omni-wire's descriptors, so a type renders exactly when its message there has all of
//! upstream's fields. The types clients write (the cluster template's) do; status types are trimmed to what the
//! operator reads. Types without a message here (Links, MachineStatuses) render as `{}`.

use std::collections::HashMap;

use omni_go::yaml::{self, Node};
use omni_wire::compression::Dictionary;
use prost_reflect::{
    DescriptorPool, DynamicMessage, FieldDescriptor, Kind, MapKey, MessageDescriptor,
    ReflectMessage, Value,
};

use crate::types::*;

/// The spec message of each resource type the simulator knows.
const SPEC_MESSAGES: [(&str, &str); 15] = [
    (CLUSTERS, "specs.ClusterSpec"),
    (MACHINE_SETS, "specs.MachineSetSpec"),
    (MACHINE_SET_NODES, "specs.MachineSetNodeSpec"),
    (CONFIG_PATCHES, "specs.ConfigPatchSpec"),
    (
        KUBERNETES_MANIFEST_GROUPS,
        "specs.KubernetesManifestGroupSpec",
    ),
    (KUBERNETES_HEALTH_CHECKS, "specs.KubernetesHealthCheckSpec"),
    (
        EXTENSIONS_CONFIGURATIONS,
        "specs.ExtensionsConfigurationSpec",
    ),
    (KERNEL_ARGS, "specs.KernelArgsSpec"),
    (CLUSTER_STATUSES, "specs.ClusterStatusSpec"),
    (MACHINE_SET_STATUSES, "specs.MachineSetStatusSpec"),
    (
        KUBERNETES_UPGRADE_STATUSES,
        "specs.KubernetesUpgradeStatusSpec",
    ),
    (TALOS_UPGRADE_STATUSES, "specs.TalosUpgradeStatusSpec"),
    (LOAD_BALANCER_STATUSES, "specs.LoadBalancerStatusSpec"),
    (CLUSTER_MACHINE_STATUSES, "specs.ClusterMachineStatusSpec"),
    (CLUSTER_UUIDS, "specs.ClusterUUID"),
];

/// Renders specs; built once per simulator from omni-wire's descriptors.
pub(crate) struct SpecYaml {
    messages: HashMap<&'static str, MessageDescriptor>,
}

impl SpecYaml {
    pub fn new() -> Result<SpecYaml, String> {
        let pool = DescriptorPool::decode(omni_wire::FILE_DESCRIPTOR_SET)
            .map_err(|e| format!("omni-wire's descriptors do not load: {e}"))?;
        let mut messages = HashMap::new();
        for (ty, name) in SPEC_MESSAGES {
            let message = pool
                .get_message_by_name(name)
                .ok_or_else(|| format!("omni-wire has no message {name} (the spec of {ty})"))?;
            messages.insert(ty, message);
        }
        Ok(SpecYaml { messages })
    }

    /// The `yaml_spec` of a stored spec. Stored specs passed validation, so a spec that does not decode (or
    /// content that does not decompress) cannot happen; it renders as `{}` rather than failing the call.
    pub fn render(&self, ty: &str, proto_spec: &[u8], dictionary: Option<&Dictionary>) -> String {
        let Some(descriptor) = self.messages.get(ty) else {
            return "{}\n".into();
        };
        let Ok(mut message) = DynamicMessage::decode(descriptor.clone(), proto_spec) else {
            return "{}\n".into();
        };
        if ty == CONFIG_PATCHES || ty == KUBERNETES_MANIFEST_GROUPS {
            uncompress(&mut message, dictionary);
        }
        yaml::to_string(&[message_node(&message)], 4)
    }
}

/// What the two specs' `MarshalYAML` do: `data` holds the plain content, `compressed_data` nothing.
fn uncompress(message: &mut DynamicMessage, dictionary: Option<&Dictionary>) {
    let compressed = match message.get_field_by_name("compressed_data").as_deref() {
        Some(Value::Bytes(b)) if !b.is_empty() => b.clone(),
        _ => return,
    };
    let plain = dictionary
        .and_then(|d| d.decompress(&compressed).ok())
        .and_then(|p| String::from_utf8(p).ok());
    if let Some(plain) = plain {
        message.set_field_by_name("data", Value::String(plain));
        message.clear_field_by_name("compressed_data");
    }
}

/// A message as go-yaml writes its generated struct: fields in declaration order, a oneof at its first member.
fn message_node(message: &DynamicMessage) -> Node {
    let mut entries = Vec::new();
    let mut oneofs_done = Vec::new();
    for field in message.descriptor().fields() {
        match field.containing_oneof().filter(|o| !o.is_synthetic()) {
            Some(oneof) => {
                if oneofs_done.contains(&oneof.name().to_string()) {
                    continue;
                }
                oneofs_done.push(oneof.name().to_string());
                let set = oneof.fields().find(|f| message.has_field(f));
                let value = match set {
                    Some(member) => Node::Map(vec![(
                        go_key(member.name()),
                        value_node(&member, &message.get_field(&member)),
                    )]),
                    None => Node::Null,
                };
                entries.push((go_key(oneof.name()), value));
            }
            None => {
                // Message fields are pointers in Go, as are proto3 `optional` scalars: unset is nil.
                let nil =
                    field.supports_presence() && !field.is_list() && !message.has_field(&field);
                let value = if nil {
                    Node::Null
                } else {
                    value_node(&field, &message.get_field(&field))
                };
                entries.push((go_key(field.name()), value));
            }
        }
    }
    Node::Map(entries)
}

fn value_node(field: &FieldDescriptor, value: &Value) -> Node {
    match value {
        Value::List(items) => Node::Seq(items.iter().map(|v| scalar_node(field, v)).collect()),
        Value::Map(map) => {
            let mut entries: Vec<(String, Node)> = map
                .iter()
                .map(|(k, v)| (map_key_text(k), map_value_node(field, v)))
                .collect();
            entries.sort_by(|a, b| yaml::natural_cmp(&a.0, &b.0));
            Node::Map(entries)
        }
        other => scalar_node(field, other),
    }
}

fn map_value_node(field: &FieldDescriptor, value: &Value) -> Node {
    match field.kind() {
        Kind::Message(entry) => scalar_node(&entry.map_entry_value_field(), value),
        _ => Node::Null,
    }
}

fn map_key_text(key: &MapKey) -> String {
    match key {
        MapKey::Bool(b) => b.to_string(),
        MapKey::I32(n) => n.to_string(),
        MapKey::I64(n) => n.to_string(),
        MapKey::U32(n) => n.to_string(),
        MapKey::U64(n) => n.to_string(),
        MapKey::String(s) => s.clone(),
    }
}

/// One value of a field's type (a repeated field's element, or a singular value).
fn scalar_node(field: &FieldDescriptor, value: &Value) -> Node {
    match value {
        Value::Bool(b) => Node::Bool(*b),
        Value::I32(n) | Value::EnumNumber(n) => Node::Number(n.to_string()),
        Value::I64(n) => Node::Number(n.to_string()),
        Value::U32(n) => Node::Number(n.to_string()),
        Value::U64(n) => Node::Number(n.to_string()),
        Value::F32(f) => Node::Number(go_float(f64::from(*f), 32)),
        Value::F64(f) => Node::Number(go_float(*f, 64)),
        Value::String(s) => Node::Str(s.clone()),
        // A Go []byte is a slice of uint8: go-yaml writes it as a sequence of numbers.
        Value::Bytes(b) => Node::Seq(b.iter().map(|x| Node::Number(x.to_string())).collect()),
        Value::Message(m) => message_node(m),
        Value::List(_) | Value::Map(_) => value_node(field, value),
    }
}

/// The key go-yaml uses for a generated struct field: protoc-gen-go's `GoCamelCase` of the proto field name
/// (which has no dots), lower-cased. An underscore before a lower-case letter goes away (the letter is
/// upper-cased, then lower-cased again), a leading one becomes `X` (so `x`), and any other stays.
fn go_key(proto_name: &str) -> String {
    let b = proto_name.as_bytes();
    let mut out = String::with_capacity(b.len());
    for (i, &c) in b.iter().enumerate() {
        match c {
            b'_' if i == 0 => out.push('x'),
            b'_' if b.get(i + 1).is_some_and(u8::is_ascii_lowercase) => {}
            _ => out.push(char::from(c.to_ascii_lowercase())),
        }
    }
    out
}

/// Go's `strconv.FormatFloat(f, 'g', -1, bits)` as go-yaml writes floats: the shortest digits, with an exponent
/// (`1e+06`, `1e-05`) when it is below -4 or at least 6 (Go's rule for the shortest precision), and `.inf`/`.nan`
/// spelled the YAML way.
fn go_float(f: f64, bits: u32) -> String {
    if f.is_nan() {
        return ".nan".into();
    }
    if f.is_infinite() {
        return if f > 0.0 { ".inf" } else { "-.inf" }.into();
    }
    // Rust's `{:e}` gives the same shortest round-trip digits Go's -1 precision does.
    let sci = if bits == 32 {
        format!("{:e}", f as f32)
    } else {
        format!("{f:e}")
    };
    let Some((mantissa, exp)) = sci.split_once('e') else {
        return sci;
    };
    let Ok(exp) = exp.parse::<i32>() else {
        return sci;
    };
    if !(-4..6).contains(&exp) {
        let sign = if exp < 0 { '-' } else { '+' };
        return format!("{mantissa}e{sign}{:02}", exp.abs());
    }
    if bits == 32 {
        format!("{}", f as f32)
    } else {
        format!("{f}")
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn go_keys_are_protoc_gen_go_names_lower_cased() {
        assert_eq!(go_key("kubernetes_version"), "kubernetesversion");
        assert_eq!(go_key("kubernetesAPIReady"), "kubernetesapiready");
        assert_eq!(
            go_key("use_embedded_discovery_service"),
            "useembeddeddiscoveryservice"
        );
        assert_eq!(go_key("_hidden"), "xhidden");
        assert_eq!(go_key("field_1"), "field_1");
    }

    #[test]
    fn floats_are_go_shortest_g_format() {
        assert_eq!(go_float(1.5, 64), "1.5");
        assert_eq!(go_float(100000.0, 64), "100000");
        assert_eq!(go_float(123456.0, 64), "123456");
        assert_eq!(go_float(1e6, 64), "1e+06");
        assert_eq!(go_float(1234567.0, 64), "1.234567e+06");
        assert_eq!(go_float(1e21, 64), "1e+21");
        assert_eq!(go_float(0.00001, 64), "1e-05");
        assert_eq!(go_float(0.0001, 64), "0.0001");
        assert_eq!(go_float(f64::INFINITY, 64), ".inf");
        assert_eq!(go_float(0.1, 32), "0.1");
    }
}
