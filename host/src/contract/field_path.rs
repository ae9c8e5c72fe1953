//! Paths into an object that plugins declare (the Secrets an object names, the fields that relate objects): dotted
//! keys, where a segment `items[]` stands for every element of the list `items` and `items[kind=Secret]` for the
//! elements whose `kind` is `Secret` (`spec.valuesFrom[kind=Secret].name`).

use serde_json::Value;

/// Whether `path` goes through a list (and so may name several values).
pub fn through_list(path: &str) -> bool {
    path.contains('[')
}

/// The strings at `path`. A malformed segment, or a value that is not what the path says, matches nothing.
pub fn texts_at<'a>(object: &'a Value, path: &str) -> Vec<&'a str> {
    let mut current = vec![object];
    for part in path.split('.') {
        let Some((field, filter)) = part.split_once('[') else {
            current = current.into_iter().filter_map(|v| v.get(part)).collect();
            continue;
        };
        let Some(filter) = filter.strip_suffix(']') else {
            return Vec::new();
        };
        let wanted = match filter.split_once('=') {
            Some((key, value)) => Some((key, value)),
            None if filter.is_empty() => None,
            None => return Vec::new(),
        };
        current = current
            .into_iter()
            .filter_map(|v| v.get(field).and_then(Value::as_array))
            .flatten()
            .filter(|item| {
                wanted.is_none_or(|(k, want)| item.get(k).and_then(Value::as_str) == Some(want))
            })
            .collect();
    }
    current.into_iter().filter_map(Value::as_str).collect()
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn a_path_through_a_list_reads_the_elements_its_filter_selects() {
        let object = json!({"spec": {"valuesFrom": [
            {"kind": "Secret", "name": "db"},
            {"kind": "ConfigMap", "name": "settings"},
            {"kind": "Secret"},
            "not an object"
        ], "ref": {"name": "k"}}});
        assert_eq!(
            texts_at(&object, "spec.valuesFrom[kind=Secret].name"),
            ["db"]
        );
        assert_eq!(
            texts_at(&object, "spec.valuesFrom[].name"),
            ["db", "settings"]
        );
        assert_eq!(texts_at(&object, "spec.ref.name"), ["k"]);
        for malformed in [
            "spec.valuesFrom[kind=Secret.name",
            "spec.valuesFrom[kind].name",
            "spec.ref[].name",
        ] {
            assert!(texts_at(&object, malformed).is_empty(), "{malformed}");
        }
        assert!(through_list("spec.valuesFrom[].name") && !through_list("spec.ref.name"));
    }
}
