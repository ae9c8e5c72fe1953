//! `kube-read` for a plan: the live cluster, with the manifests' objects (as the API server would store them) in
//! place of what they replace, and the objects the plan removes gone.

use std::collections::BTreeSet;
use std::sync::Arc;

use serde_json::Value;

use super::{Id, group_of, id_of};
use crate::capabilities::{BoxFuture, GetRequest, HostError, KindScope, KubeReader, ListRequest};
use crate::controllers::reader::ApiReader;

pub(super) struct PlanReader {
    live: Arc<ApiReader>,
    /// The manifests' objects, as the dry runs answered them.
    desired: Vec<Value>,
    removed: BTreeSet<Id>,
}

impl PlanReader {
    pub(super) fn new(live: Arc<ApiReader>, desired: Vec<Value>, removed: BTreeSet<Id>) -> Self {
        PlanReader {
            live,
            desired,
            removed,
        }
    }

    /// Whether `object` is of `api_version`'s group and `kind` (versions differ only in how they are served).
    fn of_kind(object: &Value, api_version: &str, kind: &str) -> bool {
        object["kind"].as_str() == Some(kind)
            && group_of(object["apiVersion"].as_str().unwrap_or_default()) == group_of(api_version)
    }

    fn replaced(&self, object: &Value) -> bool {
        let id = id_of(object, "");
        self.removed.contains(&id)
            || self.desired.iter().any(|d| {
                id_of(d, "") == id
                    && group_of(d["apiVersion"].as_str().unwrap_or_default())
                        == group_of(object["apiVersion"].as_str().unwrap_or_default())
            })
    }
}

/// Whether `labels` meet a label selector in the API's syntax: `k=v`, `k==v`, `k!=v`, `k`, `!k`, `k in (a,b)`,
/// `k notin (a,b)`, terms separated by commas. A selector it cannot read selects nothing.
fn labels_match(selector: &str, labels: &Value) -> bool {
    let mut terms = Vec::new();
    let mut depth = 0;
    let mut start = 0;
    for (i, c) in selector.char_indices() {
        match c {
            '(' => depth += 1,
            ')' => depth -= 1,
            ',' if depth == 0 => {
                terms.push(&selector[start..i]);
                start = i + 1;
            }
            _ => {}
        }
    }
    terms.push(&selector[start..]);
    terms
        .into_iter()
        .map(str::trim)
        .filter(|t| !t.is_empty())
        .all(|term| {
            let value = |key: &str| labels[key.trim()].as_str().map(String::from);
            let set = |rest: &str| -> Option<Vec<String>> {
                let inner = rest.trim().strip_prefix('(')?.strip_suffix(')')?;
                Some(inner.split(',').map(|v| v.trim().to_string()).collect())
            };
            if let Some((key, rest)) = term.split_once(" notin ") {
                return set(rest).is_some_and(|s| value(key).is_none_or(|v| !s.contains(&v)));
            }
            if let Some((key, rest)) = term.split_once(" in ") {
                return set(rest).is_some_and(|s| value(key).is_some_and(|v| s.contains(&v)));
            }
            if let Some((key, v)) = term.split_once("!=") {
                return value(key).as_deref() != Some(v.trim());
            }
            if let Some((key, v)) = term.split_once("==").or_else(|| term.split_once('=')) {
                return value(key).as_deref() == Some(v.trim());
            }
            match term.strip_prefix('!') {
                Some(key) => value(key).is_none(),
                None => value(term).is_some(),
            }
        })
}

impl KubeReader for PlanReader {
    fn kind_scope<'a>(
        &'a self,
        api_version: &'a str,
        kind: &'a str,
    ) -> BoxFuture<'a, Result<KindScope, HostError>> {
        self.live.kind_scope(api_version, kind)
    }

    fn get(&self, request: GetRequest) -> BoxFuture<'_, Result<Option<Value>, HostError>> {
        Box::pin(async move {
            let namespace = request.namespace.clone().unwrap_or_default();
            if let Some(found) = self.desired.iter().find(|d| {
                Self::of_kind(d, &request.api_version, &request.kind)
                    && d["metadata"]["name"].as_str() == Some(request.name.as_str())
                    && d["metadata"]["namespace"].as_str().unwrap_or_default() == namespace
            }) {
                return Ok(Some(found.clone()));
            }
            let id = (request.kind.clone(), namespace, request.name.clone());
            if self.removed.contains(&id) {
                return Ok(None);
            }
            self.live.get(request).await
        })
    }

    fn list(&self, request: ListRequest) -> BoxFuture<'_, Result<Vec<Value>, HostError>> {
        Box::pin(async move {
            let mut items: Vec<Value> = self
                .live
                .list(request.clone())
                .await?
                .into_iter()
                .filter(|o| !self.replaced(o))
                .collect();
            items.extend(
                self.desired
                    .iter()
                    .filter(|d| Self::of_kind(d, &request.api_version, &request.kind))
                    .filter(|d| {
                        request.namespace.as_deref().is_none_or(|ns| {
                            d["metadata"]["namespace"].as_str().unwrap_or_default() == ns
                        })
                    })
                    .filter(|d| {
                        request
                            .label_selector
                            .as_deref()
                            .is_none_or(|s| labels_match(s, &d["metadata"]["labels"]))
                    })
                    .filter(|d| request.field_selector.as_ref().is_none_or(|f| f.matches(d)))
                    .cloned(),
            );
            // Within one kind, (kind, namespace, name) orders as the API server lists: by namespace, then name.
            items.sort_by_key(|o| id_of(o, ""));
            Ok(items)
        })
    }
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::labels_match;

    #[test]
    fn label_selectors_read_as_the_api_server_reads_them() {
        let labels = json!({"app": "web", "tier": "front"});
        assert!(labels_match("app=web", &labels));
        assert!(labels_match("app==web,tier", &labels));
        assert!(!labels_match("app!=web", &labels));
        assert!(labels_match("!missing", &labels));
        assert!(labels_match("tier in (front, back)", &labels));
        assert!(!labels_match("tier notin (front,back)", &labels));
        assert!(labels_match("env notin (prod)", &labels));
        assert!(!labels_match("app in web", &labels));
    }
}
