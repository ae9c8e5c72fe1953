//! A schema-driven protobuf decoder (and encoder) for built-in objects: the wire layout of every message a served kind reaches
//! (`protobuf_schema.rs`, generated from the Go types of kubernetes/api) is walked field by field and turned into
//! the JSON Go's `encoding/json` would print for the decoded struct, so a protobuf body and the JSON body of the
//! same object store the same thing.
//!
//! What JSON shows follows the Go field: a pointer appears when it was sent (even when zero), an `omitempty`
//! scalar, slice or map only when not empty, and anything else always (a missing string as `""`, a struct as its
//! zero value, a `metav1.Time` as `null`), exactly the shape a JSON client serialising the same Go object sends.

use std::collections::HashMap;

use base64::Engine as _;
use serde_json::{Map, Value, json};

use super::builtin_types::{Presence, Ty, schema};
use Presence::{Always, OmitEmpty, Pointer};

#[cfg(test)]
use super::builtin_types::root;

/// Messages nest at most this deep (the real decoder's limit is 100; no built-in kind nests beyond ~15).
const MAX_DEPTH: usize = 64;

/// Decodes one message into its JSON object.
pub fn decode(message: &'static str, bytes: &[u8]) -> Result<Value, String> {
    // An empty element of a repeated struct field is two bytes on the wire but the whole zero-valued struct Go
    // prints once decoded: a body of empty elements would grow a tree hundreds of times its size (as it grows Go
    // structs on the real server). Each message's fields on the wire and each value produced are counted
    // against a budget of a sixth of the body's bytes beyond the first 40,000, which real objects stay far
    // within; a hostile body is refused before its tree is built.
    let budget = Budget(std::cell::Cell::new(
        (bytes.len() / 6).saturating_add(40_000),
    ));
    decode_at(message, bytes, 0, &budget, "")
}

/// How many more JSON values the decoding may produce.
struct Budget(std::cell::Cell<usize>);

impl Budget {
    fn spend(&self, n: usize, path: &str) -> Result<(), String> {
        let left = self.0.get();
        if n > left {
            return Err(format!(
                "{}: the object decodes to far more values than its size allows",
                if path.is_empty() { "the object" } else { path }
            ));
        }
        self.0.set(left - n);
        Ok(())
    }
}

enum Wire<'a> {
    Varint(u64),
    Fixed64,
    Bytes(&'a [u8]),
    Fixed32,
}

fn varint(bytes: &[u8], pos: &mut usize) -> Result<u64, String> {
    let mut out = 0u64;
    for shift in (0..64).step_by(7) {
        let b = *bytes.get(*pos).ok_or("a varint runs past the end")?;
        *pos += 1;
        out |= u64::from(b & 0x7f) << shift;
        if b & 0x80 == 0 {
            return Ok(out);
        }
    }
    Err("a varint is longer than 10 bytes".into())
}

/// How many fields a message carries on the wire, counted without allocating (a malformed tail ends the count;
/// [`fields`] reports it).
fn count_fields(bytes: &[u8]) -> usize {
    let mut pos = 0;
    let mut n = 0;
    while pos < bytes.len() {
        let Ok(key) = varint(bytes, &mut pos) else {
            break;
        };
        let skip = match key & 7 {
            0 => varint(bytes, &mut pos).map(|_| 0).ok(),
            1 => Some(8),
            2 => varint(bytes, &mut pos)
                .ok()
                .and_then(|l| usize::try_from(l).ok()),
            5 => Some(4),
            _ => None,
        };
        let Some(skip) = skip else {
            break;
        };
        pos = pos.saturating_add(skip);
        n += 1;
    }
    n
}

/// Every field on the wire, by tag, in order.
fn fields(bytes: &[u8]) -> Result<HashMap<u32, Vec<Wire<'_>>>, String> {
    let mut out: HashMap<u32, Vec<Wire<'_>>> = HashMap::new();
    let mut pos = 0;
    while pos < bytes.len() {
        let key = varint(bytes, &mut pos)?;
        let tag = u32::try_from(key >> 3).map_err(|_| "a field tag is out of range")?;
        let take = |pos: &mut usize, n: usize| -> Result<&[u8], String> {
            let end = pos.checked_add(n).filter(|e| *e <= bytes.len());
            let end = end.ok_or("a field runs past the end")?;
            let s = &bytes[*pos..end];
            *pos = end;
            Ok(s)
        };
        let value = match key & 7 {
            0 => Wire::Varint(varint(bytes, &mut pos)?),
            // No built-in field is fixed-width; such fields are skipped like unknown ones.
            1 => {
                take(&mut pos, 8)?;
                Wire::Fixed64
            }
            2 => {
                let n = usize::try_from(varint(bytes, &mut pos)?)
                    .map_err(|_| "a length is out of range")?;
                Wire::Bytes(take(&mut pos, n)?)
            }
            5 => {
                take(&mut pos, 4)?;
                Wire::Fixed32
            }
            w => return Err(format!("field {tag} has the unsupported wire type {w}")),
        };
        out.entry(tag).or_default().push(value);
    }
    Ok(out)
}

fn decode_at(
    message: &'static str,
    bytes: &[u8],
    depth: usize,
    budget: &Budget,
    path: &str,
) -> Result<Value, String> {
    // The object itself is named by its message in errors, anything inside it by its field path.
    let here = if path.is_empty() { message } else { path };
    if depth > MAX_DEPTH {
        return Err(format!("{here}: messages nest too deeply"));
    }
    let schema = schema(message).ok_or_else(|| format!("{here}: no schema for {message}"))?;
    budget.spend(count_fields(bytes), here)?;
    let wire = fields(bytes).map_err(|e| format!("{here}: {e}"))?;
    let mut out = Map::new();
    for field in schema {
        // Errors name the field path as validation messages do: `metadata.managedFields[0].fieldsV1`; the
        // fields of an embedded struct are named as the parent's.
        let at = if field.json.is_empty() {
            path.to_string()
        } else if path.is_empty() {
            field.json.to_string()
        } else {
            format!("{path}.{}", field.json)
        };
        let values = wire.get(&field.tag).map(Vec::as_slice).unwrap_or_default();
        let json = if field.map {
            if values.is_empty() {
                (field.presence == Always).then_some(Value::Null)
            } else {
                let mut m = Map::new();
                for v in values {
                    let Wire::Bytes(entry) = v else {
                        return Err(format!("{at}: a map entry is not length-delimited"));
                    };
                    let e = fields(entry).map_err(|e| format!("{at}: {e}"))?;
                    let key = match e.get(&1).and_then(|k| k.last()) {
                        Some(k) => scalar(Ty::Str, k, depth, budget, &at)?,
                        None => json!(""),
                    };
                    let key = key.as_str().unwrap_or_default().to_string();
                    let entry_at = format!("{at}[{key}]");
                    let value = match e.get(&2).and_then(|v| v.last()) {
                        Some(v) => scalar(field.ty, v, depth, budget, &entry_at)?,
                        None => zero(field.ty, depth, budget, &entry_at)?,
                    };
                    m.insert(key, value);
                }
                Some(Value::Object(m))
            }
        } else if field.repeated {
            let mut items = Vec::new();
            for v in values {
                let item_at = format!("{at}[{}]", items.len());
                match (field.ty, v) {
                    // Packed numbers: one length-delimited run of varints.
                    (Ty::I32 | Ty::I64 | Ty::Bool, Wire::Bytes(run)) => {
                        let mut pos = 0;
                        while pos < run.len() {
                            let n = varint(run, &mut pos).map_err(|e| format!("{at}: {e}"))?;
                            items.push(scalar(field.ty, &Wire::Varint(n), depth, budget, &at)?);
                        }
                    }
                    _ => items.push(scalar(field.ty, v, depth, budget, &item_at)?),
                }
            }
            match (items.is_empty(), field.presence) {
                (true, Always) => Some(Value::Null),
                (true, _) => None,
                (false, _) => Some(Value::Array(items)),
            }
        } else {
            match (values.last(), field.presence) {
                (Some(v), Pointer) => Some(scalar(field.ty, v, depth, budget, &at)?),
                (Some(v), _) => {
                    let value = scalar(field.ty, v, depth, budget, &at)?;
                    (field.presence == Always || !is_empty_scalar(field.ty, &value))
                        .then_some(value)
                }
                (None, Pointer) => None,
                (None, OmitEmpty) if is_scalar(field.ty) => None,
                (None, _) => Some(zero(field.ty, depth, budget, &at)?),
            }
        };
        let spent = match &json {
            Some(Value::Array(items)) => items.len() + 1,
            Some(Value::Object(entries)) if field.map => entries.len() + 1,
            Some(_) => 1,
            None => 0,
        };
        budget.spend(spent, &at)?;
        match json {
            // An embedded struct without a JSON name: its fields are the parent's (Go promotes them).
            Some(Value::Object(inner)) if field.json.is_empty() => out.extend(inner),
            Some(v) => {
                out.insert(field.json.to_string(), v);
            }
            None => {}
        }
    }
    Ok(Value::Object(out))
}

/// Types `omitempty` can drop (structs are never empty to encoding/json).
fn is_scalar(ty: Ty) -> bool {
    matches!(ty, Ty::Str | Ty::I32 | Ty::I64 | Ty::Bool | Ty::Bytes)
}

fn is_empty_scalar(ty: Ty, v: &Value) -> bool {
    is_scalar(ty)
        && match v {
            Value::String(s) => s.is_empty(),
            Value::Number(n) => n.as_f64() == Some(0.0),
            Value::Bool(b) => !b,
            Value::Null => true,
            _ => false,
        }
}

/// A Go zero value as JSON prints it.
fn zero(ty: Ty, depth: usize, budget: &Budget, path: &str) -> Result<Value, String> {
    Ok(match ty {
        Ty::Str => json!(""),
        Ty::I32 | Ty::I64 => json!(0),
        Ty::Bool => json!(false),
        Ty::Bytes | Ty::Time | Ty::MicroTime | Ty::Raw => Value::Null,
        Ty::Quantity => json!("0"),
        Ty::IntOrString => json!(0),
        Ty::Msg(m) => decode_at(m, &[], depth + 1, budget, path)?,
    })
}

fn scalar(
    ty: Ty,
    v: &Wire<'_>,
    depth: usize,
    budget: &Budget,
    path: &str,
) -> Result<Value, String> {
    let wrong = || format!("{path}: the wire type does not fit {ty:?}");
    Ok(match (ty, v) {
        (Ty::Str, Wire::Bytes(b)) => {
            json!(std::str::from_utf8(b).map_err(|_| format!("{path}: invalid UTF-8"))?)
        }
        // int32 travels as a sign-extended varint.
        (Ty::I32, Wire::Varint(n)) => json!(*n as i64 as i32),
        (Ty::I64, Wire::Varint(n)) => json!(*n as i64),
        (Ty::Bool, Wire::Varint(n)) => json!(*n != 0),
        (Ty::Bytes, Wire::Bytes(b)) => json!(base64::engine::general_purpose::STANDARD.encode(b)),
        (Ty::Msg(m), Wire::Bytes(b)) => decode_at(m, b, depth + 1, budget, path)?,
        // A zero time travels as an empty message (apimachinery's Time.Size is 0 for it) and prints as null.
        (Ty::Time | Ty::MicroTime, Wire::Bytes([])) => Value::Null,
        (Ty::Time | Ty::MicroTime, Wire::Bytes(b)) => {
            let f = fields(b).map_err(|e| format!("{path}: {e}"))?;
            let int = |tag: u32| match f.get(&tag).and_then(|v| v.last()) {
                Some(Wire::Varint(n)) => *n as i64,
                _ => 0,
            };
            // Go's time.Unix carries nanoseconds outside [0, 1e9) into the seconds; Time keeps whole seconds,
            // MicroTime microseconds.
            let (seconds, nanos) = (int(1), int(2));
            let seconds = seconds
                .checked_add(nanos.div_euclid(1_000_000_000))
                .ok_or_else(|| format!("{path}: the time is out of range"))?;
            let nanos = if matches!(ty, Ty::Time) {
                0
            } else {
                (nanos.rem_euclid(1_000_000_000) / 1000 * 1000) as i32
            };
            let t = jiff::Timestamp::new(seconds, nanos).map_err(|e| format!("{path}: {e}"))?;
            if matches!(ty, Ty::Time) {
                json!(t.strftime("%Y-%m-%dT%H:%M:%SZ").to_string())
            } else {
                json!(t.strftime("%Y-%m-%dT%H:%M:%S.%6fZ").to_string())
            }
        }
        (Ty::Quantity, Wire::Bytes(b)) => {
            let f = fields(b).map_err(|e| format!("{path}: {e}"))?;
            match f.get(&1).and_then(|v| v.last()) {
                Some(s) => scalar(Ty::Str, s, depth, budget, path)?,
                None => json!("0"),
            }
        }
        (Ty::IntOrString, Wire::Bytes(b)) => {
            let f = fields(b).map_err(|e| format!("{path}: {e}"))?;
            let is_string = matches!(f.get(&1).and_then(|v| v.last()), Some(Wire::Varint(1)));
            if is_string {
                match f.get(&3).and_then(|v| v.last()) {
                    Some(s) => scalar(Ty::Str, s, depth, budget, path)?,
                    None => json!(""),
                }
            } else {
                match f.get(&2).and_then(|v| v.last()) {
                    Some(n) => scalar(Ty::I32, n, depth, budget, path)?,
                    None => json!(0),
                }
            }
        }
        (Ty::Raw, Wire::Bytes(b)) => {
            let f = fields(b).map_err(|e| format!("{path}: {e}"))?;
            match f.get(&1).and_then(|v| v.last()) {
                Some(Wire::Bytes(raw)) if !raw.is_empty() => serde_json::from_slice(raw)
                    .map_err(|e| format!("{path}: the embedded object is not JSON: {e}"))?,
                _ => Value::Null,
            }
        }
        _ => return Err(wrong()),
    })
}

/// Encodes a JSON object as the message `message`, the inverse of [`decode`]: what a JSON answer holds, in the
/// wire form a protobuf-only client reads. Values the schema does not know are left out; a value of the wrong
/// JSON type is an error naming its field.
pub fn encode(message: &'static str, value: &Value) -> Result<Vec<u8>, String> {
    let mut out = Vec::new();
    encode_at(message, value, 0, "", &mut out)?;
    Ok(out)
}

fn put_varint(out: &mut Vec<u8>, mut n: u64) {
    loop {
        let b = (n & 0x7f) as u8;
        n >>= 7;
        if n == 0 {
            out.push(b);
            return;
        }
        out.push(b | 0x80);
    }
}

fn put_key(out: &mut Vec<u8>, tag: u32, wire: u8) {
    put_varint(out, u64::from(tag) << 3 | u64::from(wire));
}

fn put_bytes(out: &mut Vec<u8>, tag: u32, bytes: &[u8]) {
    put_key(out, tag, 2);
    put_varint(out, bytes.len() as u64);
    out.extend_from_slice(bytes);
}

fn encode_at(
    message: &'static str,
    value: &Value,
    depth: usize,
    path: &str,
    out: &mut Vec<u8>,
) -> Result<(), String> {
    let here = if path.is_empty() { message } else { path };
    if depth > MAX_DEPTH {
        return Err(format!("{here}: messages nest too deeply"));
    }
    let schema = schema(message).ok_or_else(|| format!("{here}: no schema for {message}"))?;
    let Some(object) = value.as_object() else {
        return Err(format!("{here}: expected an object"));
    };
    for field in schema {
        if field.json.is_empty() {
            // An embedded struct: its fields sit in this object.
            if let Ty::Msg(inner) = field.ty {
                let mut body = Vec::new();
                encode_at(inner, value, depth + 1, path, &mut body)?;
                put_bytes(out, field.tag, &body);
            }
            continue;
        }
        let at = if path.is_empty() {
            field.json.to_string()
        } else {
            format!("{path}.{}", field.json)
        };
        let Some(v) = object.get(field.json).filter(|v| !v.is_null()) else {
            continue;
        };
        if field.map {
            let Some(entries) = v.as_object() else {
                return Err(format!("{at}: expected an object"));
            };
            // Go's protobuf encoder writes map entries in key order.
            let mut keys: Vec<&String> = entries.keys().collect();
            keys.sort();
            for k in keys {
                let mut entry = Vec::new();
                put_bytes(&mut entry, 1, k.as_bytes());
                encode_value(
                    field.ty,
                    2,
                    &entries[k],
                    depth,
                    &format!("{at}[{k}]"),
                    &mut entry,
                )?;
                put_bytes(out, field.tag, &entry);
            }
        } else if field.repeated {
            let Some(items) = v.as_array() else {
                return Err(format!("{at}: expected an array"));
            };
            for (i, item) in items.iter().enumerate() {
                encode_value(field.ty, field.tag, item, depth, &format!("{at}[{i}]"), out)?;
            }
        } else {
            encode_value(field.ty, field.tag, v, depth, &at, out)?;
        }
    }
    Ok(())
}

/// One value as field `tag`.
fn encode_value(
    ty: Ty,
    tag: u32,
    v: &Value,
    depth: usize,
    path: &str,
    out: &mut Vec<u8>,
) -> Result<(), String> {
    let wrong = |want: &str| format!("{path}: expected {want}");
    match ty {
        Ty::Str => put_bytes(
            out,
            tag,
            v.as_str().ok_or_else(|| wrong("a string"))?.as_bytes(),
        ),
        Ty::I32 | Ty::I64 => {
            let n = v.as_i64().ok_or_else(|| wrong("an integer"))?;
            put_key(out, tag, 0);
            // Negative numbers travel sign-extended to ten bytes, int32 as int64.
            put_varint(out, n as u64);
        }
        Ty::Bool => {
            put_key(out, tag, 0);
            put_varint(
                out,
                u64::from(v.as_bool().ok_or_else(|| wrong("a boolean"))?),
            );
        }
        Ty::Bytes => {
            let text = v.as_str().ok_or_else(|| wrong("a base64 string"))?;
            let bytes = base64::engine::general_purpose::STANDARD
                .decode(text)
                .map_err(|_| wrong("base64"))?;
            put_bytes(out, tag, &bytes);
        }
        Ty::Msg(m) => {
            let mut body = Vec::new();
            encode_at(m, v, depth + 1, path, &mut body)?;
            put_bytes(out, tag, &body);
        }
        Ty::Time | Ty::MicroTime => {
            let t: jiff::Timestamp = v
                .as_str()
                .and_then(|s| s.parse().ok())
                .ok_or_else(|| wrong("an RFC 3339 time"))?;
            let mut body = Vec::new();
            put_key(&mut body, 1, 0);
            put_varint(&mut body, t.as_second() as u64);
            if matches!(ty, Ty::MicroTime) && t.subsec_nanosecond() != 0 {
                put_key(&mut body, 2, 0);
                put_varint(&mut body, t.subsec_nanosecond() as u64);
            }
            put_bytes(out, tag, &body);
        }
        Ty::Quantity => {
            let text = match v {
                Value::String(s) => s.clone(),
                Value::Number(n) => n.to_string(),
                _ => return Err(wrong("a quantity")),
            };
            let mut body = Vec::new();
            put_bytes(&mut body, 1, text.as_bytes());
            put_bytes(out, tag, &body);
        }
        Ty::IntOrString => {
            let mut body = Vec::new();
            match v {
                Value::Number(n) => {
                    let n = n.as_i64().ok_or_else(|| wrong("an integer or a string"))?;
                    put_key(&mut body, 1, 0);
                    put_varint(&mut body, 0);
                    put_key(&mut body, 2, 0);
                    put_varint(&mut body, n as u64);
                }
                Value::String(s) => {
                    put_key(&mut body, 1, 0);
                    put_varint(&mut body, 1);
                    put_bytes(&mut body, 3, s.as_bytes());
                }
                _ => return Err(wrong("an integer or a string")),
            }
            put_bytes(out, tag, &body);
        }
        Ty::Raw => {
            let mut body = Vec::new();
            put_bytes(&mut body, 1, v.to_string().as_bytes());
            put_bytes(out, tag, &body);
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn key(tag: u32, wire: u8) -> Vec<u8> {
        encode_varint(u64::from(tag << 3 | u32::from(wire)))
    }

    fn encode_varint(mut n: u64) -> Vec<u8> {
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

    fn bytes(tag: u32, b: &[u8]) -> Vec<u8> {
        let mut out = key(tag, 2);
        out.extend(encode_varint(b.len() as u64));
        out.extend_from_slice(b);
        out
    }

    fn int(tag: u32, n: i64) -> Vec<u8> {
        let mut out = key(tag, 0);
        out.extend(encode_varint(n as u64));
        out
    }

    #[test]
    fn a_deployment_decodes_to_the_json_go_prints() {
        let labels = [bytes(1, b"app"), bytes(2, b"web")].concat();
        let meta = [bytes(1, b"web"), bytes(11, &labels)].concat();
        let container = [bytes(1, b"web"), bytes(2, b"nginx")].concat();
        let pod_spec = bytes(2, &container);
        // The template's zero creationTimestamp travels as an empty message.
        let template_meta = [bytes(8, &[]), bytes(11, &labels)].concat();
        let template = [bytes(1, &template_meta), bytes(2, &pod_spec)].concat();
        let selector = bytes(1, &labels);
        let spec = [int(1, 3), bytes(2, &selector), bytes(3, &template)].concat();
        let body = [bytes(1, &meta), bytes(2, &spec)].concat();
        let d = decode(root("apps/v1", "Deployment").unwrap(), &body).unwrap();
        assert_eq!(
            d["metadata"],
            json!({"name": "web", "creationTimestamp": null, "labels": {"app": "web"}})
        );
        assert_eq!(d["spec"]["replicas"], 3);
        assert_eq!(
            d["spec"]["selector"],
            json!({"matchLabels": {"app": "web"}})
        );
        assert_eq!(
            d["spec"]["strategy"],
            json!({}),
            "a struct is never omitted"
        );
        assert_eq!(d["status"], json!({}));
        assert_eq!(
            d["spec"]["template"]["metadata"],
            json!({"creationTimestamp": null, "labels": {"app": "web"}})
        );
        let c = &d["spec"]["template"]["spec"]["containers"][0];
        assert_eq!(c["name"], "web");
        assert_eq!(c["image"], "nginx");
        assert_eq!(c["resources"], json!({}));
        assert!(
            c.get("ports").is_none(),
            "an empty omitempty slice is left out"
        );
        assert!(d["spec"].get("paused").is_none());
    }

    #[test]
    fn special_types_print_as_their_json_forms() {
        let port_str = [int(1, 1), bytes(3, b"http")].concat();
        let quantity = bytes(1, b"500m");
        let entry = [bytes(1, b"cpu"), bytes(2, &quantity)].concat();
        let requirements = bytes(2, &entry);
        let c = decode(
            "core/v1.Container",
            &[bytes(1, b"c"), bytes(8, &requirements)].concat(),
        )
        .unwrap();
        assert_eq!(c["resources"]["requests"], json!({"cpu": "500m"}));
        let svc_port = [int(3, 80), bytes(4, &port_str)].concat();
        let p = decode("core/v1.ServicePort", &svc_port).unwrap();
        assert_eq!(p["targetPort"], "http");
        assert_eq!(p["port"], 80);
        let negative = decode("core/v1.ServicePort", &int(3, -1)).unwrap();
        assert_eq!(negative["port"], -1, "sign-extended int32");
        assert_eq!(root("v1", "Pod"), Some("core/v1.Pod"));
        assert_eq!(
            root("networking.k8s.io/v1", "Ingress"),
            Some("networking/v1.Ingress")
        );
        assert_eq!(root("v1", "Nope"), None);
    }

    #[test]
    fn encoding_is_the_inverse_of_decoding() {
        let d = json!({
            "metadata": {"name": "web", "namespace": "default", "creationTimestamp": "2026-01-01T00:00:00Z",
                "labels": {"b": "2", "a": "1"}, "generation": 3,
                "managedFields": [{"manager": "kubectl", "operation": "Update", "time": "2026-01-01T00:00:01Z",
                    "fieldsType": "FieldsV1", "fieldsV1": {"f:spec": {}}}]},
            "spec": {"replicas": 0, "selector": {"matchLabels": {"app": "web"}},
                "template": {"metadata": {"creationTimestamp": null, "labels": {"app": "web"}},
                    "spec": {"containers": [{"name": "web", "image": "nginx", "resources": {"limits": {"cpu": "500m"}},
                        "ports": [{"containerPort": 80, "protocol": "TCP"}],
                        "readinessProbe": {"httpGet": {"port": "http", "path": "/"}}}],
                        "volumes": [{"name": "c", "configMap": {"name": "settings", "defaultMode": 420}}]}},
                "strategy": {"type": "RollingUpdate", "rollingUpdate": {"maxSurge": "25%", "maxUnavailable": 1}}},
            "status": {"observedGeneration": -1,
                "conditions": [{"type": "Available", "status": "True", "lastUpdateTime": "2026-01-01T00:00:02Z",
                    "lastTransitionTime": "2026-01-01T00:00:02Z"}]}
        });
        let root = root("apps/v1", "Deployment").unwrap();
        let round = decode(root, &encode(root, &d).unwrap()).unwrap();
        // Every value survives (the decoder adds the zero values Go prints, which the original left out).
        fn contains(have: &Value, want: &Value) -> bool {
            match (have, want) {
                (Value::Object(h), Value::Object(w)) => w
                    .iter()
                    .all(|(k, v)| h.get(k).is_some_and(|hv| contains(hv, v))),
                (Value::Array(h), Value::Array(w)) => {
                    h.len() == w.len() && h.iter().zip(w).all(|(a, b)| contains(a, b))
                }
                (h, w) => h == w,
            }
        }
        assert!(contains(&round, &d), "{round:#}");
        assert_eq!(
            round["spec"]["replicas"], 0,
            "a pointer set to zero survives"
        );
        assert_eq!(round["status"]["observedGeneration"], -1);
        let bad = encode(root, &json!({"spec": {"replicas": "three"}})).unwrap_err();
        assert!(bad.contains("spec.replicas"), "{bad}");
    }

    #[test]
    fn delete_options_decode_as_client_go_sends_them() {
        let preconditions = bytes(1, b"u-1");
        let body = [
            bytes(2, &preconditions),
            bytes(4, b"Foreground"),
            bytes(5, b"All"),
        ]
        .concat();
        let root = root("v1", "DeleteOptions").unwrap();
        let d = decode(root, &body).unwrap();
        assert_eq!(
            d,
            json!({"preconditions": {"uid": "u-1"}, "propagationPolicy": "Foreground", "dryRun": ["All"]})
        );
    }

    #[test]
    fn embedded_structs_promote_their_fields_into_the_parent() {
        let secret_source = bytes(6, &bytes(1, b"creds"));
        let volume = [bytes(1, b"data"), bytes(2, &secret_source)].concat();
        let v = decode("core/v1.Volume", &volume).unwrap();
        assert_eq!(
            v,
            json!({"name": "data", "secret": {"secretName": "creds"}})
        );
        let key_ref = [bytes(1, &bytes(1, b"settings")), bytes(2, b"level")].concat();
        let r = decode("core/v1.ConfigMapKeySelector", &key_ref).unwrap();
        assert_eq!(r, json!({"name": "settings", "key": "level"}));
    }

    #[test]
    fn truncated_or_hostile_bodies_are_errors_not_panics() {
        let root = root("apps/v1", "Deployment").unwrap();
        assert!(decode(root, &[0x0a, 0x05, 0x01]).is_err());
        assert!(decode(root, &[0xff; 11]).is_err());
        // A string field carrying invalid UTF-8 names the field.
        let bad = decode(root, &bytes(1, &bytes(1, &[0xff, 0xfe]))).unwrap_err();
        assert!(bad.contains("metadata.name"), "{bad}");
        assert!(
            decode(root, &[0x0b]).is_err(),
            "wire type 3 (groups) is refused"
        );
    }
}
