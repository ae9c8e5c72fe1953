//! The form objects take in the controllers' watch caches: typed metadata, and every other top-level field
//! (`spec`, `status`, a Secret's `data`, ...) kept as its JSON text.
//!
//! Parsed JSON costs several times its text in memory: every map is a table of its own, every key and string
//! its own allocation. With parsed objects the caches held about 5.8 KiB per object in the clusters bench,
//! most of the host's memory at 10,000 clusters. A field is parsed when something reads it: a reconcile parses
//! its object once, a field index the one field it looks at. A plugin gets the same JSON either way.

use std::borrow::Cow;
use std::fmt;

use kube::Resource;
use kube::core::{ApiResource, DynamicResourceScope, ObjectMeta, TypeMeta};
use serde::de::{self, DeserializeSeed, Deserializer, MapAccess, SeqAccess, Visitor};
use serde::ser::Serializer;
use serde::{Deserialize, Serialize};
use serde_json::{Map, Value};

/// An object of any kind, as the watch caches keep it.
#[derive(Clone, Debug, Default)]
pub struct CachedObject {
    /// `apiVersion` and `kind`, when the object came with both (as kube's `DynamicObject` has them).
    pub types: Option<TypeMeta>,
    pub metadata: ObjectMeta,
    /// Every other top-level field, as JSON text, in the order received.
    fields: Box<[(Box<str>, Box<str>)]>,
}

impl CachedObject {
    /// The object a JSON value describes.
    pub fn from_value(value: Value) -> Result<Self, serde_json::Error> {
        serde_json::from_value(value)
    }

    /// The whole object as JSON, as the API server sent it (less `managedFields`, which the watches drop).
    pub fn to_json(&self) -> Result<Value, serde_json::Error> {
        let mut json = Map::new();
        if let Some(types) = &self.types {
            json.insert("apiVersion".into(), types.api_version.clone().into());
            json.insert("kind".into(), types.kind.clone().into());
        }
        json.insert("metadata".into(), serde_json::to_value(&self.metadata)?);
        for (key, text) in &self.fields {
            json.insert(key.to_string(), serde_json::from_str(text)?);
        }
        Ok(Value::Object(json))
    }

    /// A top-level field other than `apiVersion`, `kind` and `metadata`, parsed.
    pub fn field(&self, name: &str) -> Option<Value> {
        let (_, text) = self.fields.iter().find(|(key, _)| &**key == name)?;
        // The text was written by serde_json from a parsed value, so it parses (within the depth it was read).
        serde_json::from_str(text).ok()
    }

    /// The object's fields as far as a dotted path below them reads (`spec.clusterRef.name` reads `spec`): that
    /// one top-level field, parsed, in an object of its own, for the path helpers that walk from the top.
    pub fn data_for(&self, path: &str) -> Value {
        let top = path.split('.').next().unwrap_or(path);
        let mut data = Map::new();
        if let Some(value) = self.field(top) {
            data.insert(top.to_owned(), value);
        }
        Value::Object(data)
    }
}

impl Resource for CachedObject {
    type DynamicType = ApiResource;
    type Scope = DynamicResourceScope;

    fn group(dt: &ApiResource) -> Cow<'_, str> {
        dt.group.as_str().into()
    }

    fn version(dt: &ApiResource) -> Cow<'_, str> {
        dt.version.as_str().into()
    }

    fn kind(dt: &ApiResource) -> Cow<'_, str> {
        dt.kind.as_str().into()
    }

    fn api_version(dt: &ApiResource) -> Cow<'_, str> {
        dt.api_version.as_str().into()
    }

    fn plural(dt: &ApiResource) -> Cow<'_, str> {
        dt.plural.as_str().into()
    }

    fn meta(&self) -> &ObjectMeta {
        &self.metadata
    }

    fn meta_mut(&mut self) -> &mut ObjectMeta {
        &mut self.metadata
    }
}

impl Serialize for CachedObject {
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        // Only objects sent to the API server (a plugin's create) are serialised this way; reconciles and reads
        // go through `to_json`.
        self.to_json()
            .map_err(serde::ser::Error::custom)?
            .serialize(serializer)
    }
}

impl<'de> Deserialize<'de> for CachedObject {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        deserializer.deserialize_map(ObjectVisitor)
    }
}

struct ObjectVisitor;

impl<'de> Visitor<'de> for ObjectVisitor {
    type Value = CachedObject;

    fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("a Kubernetes object")
    }

    fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<CachedObject, A::Error> {
        let (mut api_version, mut kind, mut metadata) = (None, None, None);
        let mut fields: Vec<(Box<str>, Box<str>)> = Vec::new();
        while let Some(key) = map.next_key::<String>()? {
            match key.as_str() {
                "apiVersion" if api_version.is_none() => api_version = map.next_value()?,
                "kind" if kind.is_none() => kind = map.next_value()?,
                "metadata" if metadata.is_none() => metadata = map.next_value()?,
                _ => {
                    let mut text = Vec::new();
                    map.next_value_seed(Transcode(&mut text))?;
                    // Transcode writes JSON text only: whole strings, escaped by serde_json.
                    let text = String::from_utf8(text)
                        .map_err(de::Error::custom)?
                        .into_boxed_str();
                    match fields.iter_mut().find(|(k, _)| **k == *key) {
                        // A repeated key: the last one wins, as when parsing into a map.
                        Some(entry) => entry.1 = text,
                        None => fields.push((key.into_boxed_str(), text)),
                    }
                }
            }
        }
        let types = match (api_version, kind) {
            (Some(api_version), Some(kind)) => Some(TypeMeta { api_version, kind }),
            (api_version, kind) => {
                // One without the other is not a type; keep it as a plain field, as `DynamicObject` does.
                for (key, value) in [("apiVersion", api_version), ("kind", kind)] {
                    if let Some(value) = value {
                        let text = serde_json::to_string(&value).map_err(de::Error::custom)?;
                        fields.push((key.into(), text.into_boxed_str()));
                    }
                }
                None
            }
        };
        Ok(CachedObject {
            types,
            metadata: metadata.unwrap_or_default(),
            fields: fields.into_boxed_slice(),
        })
    }
}

/// Writes the JSON text of the value it is handed as the value is read, without building a tree of it. The text
/// cannot simply be captured: the deserializer may be serde's buffered content (a watch event whose `object`
/// comes before its `type`) or a parsed value, neither of which has it. Values are written as `serde_json::Value`
/// would hold them (a float that is not finite becomes `null`).
struct Transcode<'a>(&'a mut Vec<u8>);

impl<'de> DeserializeSeed<'de> for Transcode<'_> {
    type Value = ();

    fn deserialize<D: Deserializer<'de>>(self, deserializer: D) -> Result<(), D::Error> {
        deserializer.deserialize_any(self)
    }
}

impl Transcode<'_> {
    fn write<T: Serialize + ?Sized, E: de::Error>(self, value: &T) -> Result<(), E> {
        serde_json::to_writer(self.0, value).map_err(E::custom)
    }
}

impl<'de> Visitor<'de> for Transcode<'_> {
    type Value = ();

    fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("any JSON value")
    }

    fn visit_bool<E: de::Error>(self, v: bool) -> Result<(), E> {
        self.write(&v)
    }

    fn visit_i64<E: de::Error>(self, v: i64) -> Result<(), E> {
        self.write(&v)
    }

    fn visit_u64<E: de::Error>(self, v: u64) -> Result<(), E> {
        self.write(&v)
    }

    fn visit_f64<E: de::Error>(self, v: f64) -> Result<(), E> {
        self.write(&v)
    }

    fn visit_str<E: de::Error>(self, v: &str) -> Result<(), E> {
        self.write(v)
    }

    fn visit_unit<E: de::Error>(self) -> Result<(), E> {
        self.0.extend_from_slice(b"null");
        Ok(())
    }

    fn visit_none<E: de::Error>(self) -> Result<(), E> {
        self.visit_unit()
    }

    fn visit_some<D: Deserializer<'de>>(self, deserializer: D) -> Result<(), D::Error> {
        deserializer.deserialize_any(self)
    }

    fn visit_seq<A: SeqAccess<'de>>(self, mut seq: A) -> Result<(), A::Error> {
        let out = self.0;
        out.push(b'[');
        let mut first = true;
        loop {
            // The comma goes in before the element is known to exist, and comes out again if it does not.
            let mark = out.len();
            if !first {
                out.push(b',');
            }
            if seq.next_element_seed(Transcode(out))?.is_none() {
                out.truncate(mark);
                break;
            }
            first = false;
        }
        out.push(b']');
        Ok(())
    }

    fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<(), A::Error> {
        let out = self.0;
        out.push(b'{');
        let mut first = true;
        while let Some(key) = map.next_key::<String>()? {
            if !first {
                out.push(b',');
            }
            first = false;
            Transcode(&mut *out).write(&key)?;
            out.push(b':');
            map.next_value_seed(Transcode(out))?;
        }
        out.push(b'}');
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use kube::api::DynamicObject;
    use serde_json::json;

    use super::*;

    fn sample() -> Value {
        json!({
            "apiVersion": "omni.texashpc.com/v1alpha1",
            "kind": "OmniCluster",
            "metadata": {"name": "a", "namespace": "ns", "uid": "u1", "labels": {"x": "y"}},
            "spec": {"clusterName": "a", "template": {"inline": [1, 2.5, "three", null, true]}},
            "status": {"conditions": [{"type": "Synced", "status": "True"}]},
            "zeta": 7,
        })
    }

    #[test]
    fn round_trips_to_the_same_json_in_the_same_order() {
        let o = CachedObject::from_value(sample()).expect("parse");
        let back = o.to_json().expect("encode");
        assert_eq!(back, sample());
        assert_eq!(
            o.metadata.labels.as_ref().map(|l| l["x"].as_str()),
            Some("y")
        );
    }

    #[test]
    fn reads_as_a_dynamic_object_does() {
        let o = CachedObject::from_value(sample()).expect("parse");
        let d: DynamicObject = serde_json::from_value(sample()).expect("dynamic");
        assert_eq!(
            o.to_json().expect("encode"),
            serde_json::to_value(&d).expect("encode")
        );
        assert_eq!(Some(d.data["spec"].clone()), o.field("spec"));
        assert_eq!(o.types, d.types);
    }

    #[test]
    fn fields_are_read_one_at_a_time() {
        let o = CachedObject::from_value(sample()).expect("parse");
        assert_eq!(o.field("zeta"), Some(json!(7)));
        assert_eq!(o.field("metadata"), None, "metadata is typed, not a field");
        assert_eq!(o.field("missing"), None);
        assert_eq!(
            o.data_for("status.conditions"),
            json!({"status": {"conditions": [{"type": "Synced", "status": "True"}]}})
        );
        assert_eq!(o.data_for("nothing.here"), json!({}));
    }

    #[test]
    fn a_lone_kind_or_api_version_is_kept_as_a_field() {
        let o =
            CachedObject::from_value(json!({"kind": "K", "metadata": {"name": "a"}, "spec": {}}))
                .expect("parse");
        assert_eq!(o.types, None);
        assert_eq!(o.field("kind"), Some(json!("K")));
        assert_eq!(o.to_json().expect("encode")["kind"], json!("K"));
    }

    #[test]
    fn decodes_from_text_from_values_and_from_a_watch_event() {
        let text = sample().to_string();
        let from_text: CachedObject = serde_json::from_str(&text).expect("text");
        assert_eq!(from_text.to_json().expect("encode"), sample());
        // A watch event's object arrives through serde's buffered content when "object" precedes "type".
        let event = format!(r#"{{"object":{text},"type":"ADDED"}}"#);
        let parsed: kube::core::WatchEvent<CachedObject> =
            serde_json::from_str(&event).expect("event");
        match parsed {
            kube::core::WatchEvent::Added(o) => {
                assert_eq!(o.to_json().expect("encode"), sample())
            }
            other => panic!("unexpected event {other:?}"),
        }
    }

    #[test]
    fn every_kind_of_value_is_kept_as_it_was() {
        let awkward = json!({
            "numbers": [0, -1, i64::MIN, u64::MAX, 2.5, -0.125, 1e300, 12345678901234567890u64],
            "strings": ["", "quote \" backslash \\ slash /", "tab\tnewline\n\u{1}", "ünïcødé ✓ 😀"],
            "empty": {"list": [], "map": {}, "nested": [[], [{}], [[[]]]]},
            "flags": [true, false, null],
            "quote\"d key": {"": "empty key"},
        });
        let object = json!({"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "a"}, "data": awkward});
        let text = object.to_string();
        // From text, from a parsed value, and through serde's buffered content.
        let from_text: CachedObject = serde_json::from_str(&text).expect("text");
        let from_value = CachedObject::from_value(object.clone()).expect("value");
        let event = format!(r#"{{"object":{text},"type":"MODIFIED"}}"#);
        let kube::core::WatchEvent::Modified(buffered) =
            serde_json::from_str::<kube::core::WatchEvent<CachedObject>>(&event).expect("event")
        else {
            panic!("not a MODIFIED event");
        };
        for o in [from_text, from_value, buffered] {
            assert_eq!(o.field("data"), Some(awkward.clone()));
            assert_eq!(o.to_json().expect("encode"), object);
        }
    }

    #[test]
    fn bad_input_is_an_error_not_a_panic() {
        for bad in [
            json!([]),
            json!("x"),
            json!({"metadata": "not a map"}),
            json!({"metadata": {"name": 5}}),
        ] {
            assert!(CachedObject::from_value(bad.clone()).is_err(), "{bad}");
        }
    }
}
