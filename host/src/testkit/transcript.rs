//! Recorded host interactions (kwctl's `--record-host-capabilities-interactions` is the model): a plugin's
//! Kubernetes reads answered by a live cluster and written down, then answered from the transcript in later
//! runs, with no cluster. A read the transcript does not hold is answered `unavailable` and reported as a miss,
//! so a plugin that starts reading something new fails its test instead of silently passing.

use std::sync::{Arc, Mutex, PoisonError};

use serde::{Deserialize, Serialize};
use serde_json::Value;

use crate::contract::{
    BoxFuture, FieldSelector, GetRequest, HostError, KindScope, KubeReader, ListRequest,
};

/// One read and its answer.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(
    tag = "call",
    rename_all = "kebab-case",
    rename_all_fields = "camelCase"
)]
pub enum Interaction {
    KindScope {
        api_version: String,
        kind: String,
        answer: Answer<ScopeAnswer>,
    },
    Get {
        api_version: String,
        kind: String,
        namespace: Option<String>,
        name: String,
        answer: Answer<Option<Value>>,
    },
    List {
        api_version: String,
        kind: String,
        namespace: Option<String>,
        label_selector: Option<String>,
        field_selector: Option<String>,
        answer: Answer<Vec<Value>>,
    },
}

/// A served kind, as recorded.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct ScopeAnswer {
    pub group: String,
    pub kind: String,
    pub namespaced: bool,
}

/// An answer: a value, or a host error by its WIT case name.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum Answer<T> {
    Ok(T),
    Error { case: String, message: String },
}

impl<T> Answer<T> {
    fn of(result: &Result<T, HostError>) -> Self
    where
        T: Clone,
    {
        match result {
            Ok(v) => Answer::Ok(v.clone()),
            Err(e) => Answer::Error {
                case: e.case().to_string(),
                message: e.message().to_string(),
            },
        }
    }

    fn into_result(self) -> Result<T, HostError> {
        match self {
            Answer::Ok(v) => Ok(v),
            Answer::Error { case, message } => Err(HostError::from_case(&case, message)),
        }
    }
}

fn selector(s: &Option<FieldSelector>) -> Option<String> {
    s.as_ref().map(ToString::to_string)
}

/// Answers from `inner` and writes every interaction down.
pub struct Recorder {
    inner: Arc<dyn KubeReader>,
    log: Mutex<Vec<Interaction>>,
}

impl Recorder {
    pub fn new(inner: Arc<dyn KubeReader>) -> Self {
        Recorder {
            inner,
            log: Mutex::default(),
        }
    }

    pub fn transcript(&self) -> Vec<Interaction> {
        self.log
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .clone()
    }

    fn push(&self, i: Interaction) {
        self.log
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .push(i);
    }
}

impl KubeReader for Recorder {
    fn kind_scope<'a>(
        &'a self,
        api_version: &'a str,
        kind: &'a str,
    ) -> BoxFuture<'a, Result<KindScope, HostError>> {
        Box::pin(async move {
            let result = self.inner.kind_scope(api_version, kind).await;
            let answer = result.as_ref().map(|s| ScopeAnswer {
                group: s.group.clone(),
                kind: s.kind.clone(),
                namespaced: s.namespaced,
            });
            self.push(Interaction::KindScope {
                api_version: api_version.into(),
                kind: kind.into(),
                answer: Answer::of(&answer.map_err(Clone::clone)),
            });
            result
        })
    }

    fn get(&self, request: GetRequest) -> BoxFuture<'_, Result<Option<Value>, HostError>> {
        Box::pin(async move {
            let result = self.inner.get(request.clone()).await;
            self.push(Interaction::Get {
                api_version: request.api_version,
                kind: request.kind,
                namespace: request.namespace,
                name: request.name,
                answer: Answer::of(&result),
            });
            result
        })
    }

    fn list(&self, request: ListRequest) -> BoxFuture<'_, Result<Vec<Value>, HostError>> {
        Box::pin(async move {
            let result = self.inner.list(request.clone()).await;
            self.push(Interaction::List {
                api_version: request.api_version,
                kind: request.kind,
                namespace: request.namespace,
                label_selector: request.label_selector,
                field_selector: selector(&request.field_selector),
                answer: Answer::of(&result),
            });
            result
        })
    }
}

/// Answers from a transcript; reads it does not hold are `unavailable` and counted as misses.
pub struct Replayer {
    transcript: Vec<Interaction>,
    misses: Mutex<Vec<String>>,
}

impl Replayer {
    pub fn new(transcript: Vec<Interaction>) -> Self {
        Replayer {
            transcript,
            misses: Mutex::default(),
        }
    }

    /// The reads the transcript did not hold, described.
    pub fn misses(&self) -> Vec<String> {
        self.misses
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .clone()
    }

    fn miss<T>(&self, what: String) -> Result<T, HostError> {
        self.misses
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .push(what.clone());
        Err(HostError::Unavailable(format!(
            "not in the recorded transcript: {what}"
        )))
    }
}

impl KubeReader for Replayer {
    fn kind_scope<'a>(
        &'a self,
        api_version: &'a str,
        kind: &'a str,
    ) -> BoxFuture<'a, Result<KindScope, HostError>> {
        Box::pin(async move {
            let found = self.transcript.iter().find_map(|i| match i {
                Interaction::KindScope {
                    api_version: a,
                    kind: k,
                    answer,
                } if a == api_version && k == kind => Some(answer.clone()),
                _ => None,
            });
            match found {
                Some(answer) => answer.into_result().map(|s| KindScope {
                    group: s.group,
                    kind: s.kind,
                    namespaced: s.namespaced,
                }),
                None => self.miss(format!("kind {api_version} {kind}")),
            }
        })
    }

    fn get(&self, request: GetRequest) -> BoxFuture<'_, Result<Option<Value>, HostError>> {
        Box::pin(async move {
            let found = self.transcript.iter().find_map(|i| match i {
                Interaction::Get {
                    api_version,
                    kind,
                    namespace,
                    name,
                    answer,
                } if *api_version == request.api_version
                    && *kind == request.kind
                    && *namespace == request.namespace
                    && *name == request.name =>
                {
                    Some(answer.clone())
                }
                _ => None,
            });
            match found {
                Some(answer) => answer.into_result(),
                None => self.miss(format!(
                    "get {} {} {}/{}",
                    request.api_version,
                    request.kind,
                    request.namespace.unwrap_or_default(),
                    request.name
                )),
            }
        })
    }

    fn list(&self, request: ListRequest) -> BoxFuture<'_, Result<Vec<Value>, HostError>> {
        Box::pin(async move {
            let fields = selector(&request.field_selector);
            let found = self.transcript.iter().find_map(|i| match i {
                Interaction::List {
                    api_version,
                    kind,
                    namespace,
                    label_selector,
                    field_selector,
                    answer,
                } if *api_version == request.api_version
                    && *kind == request.kind
                    && *namespace == request.namespace
                    && *label_selector == request.label_selector
                    && *field_selector == fields =>
                {
                    Some(answer.clone())
                }
                _ => None,
            });
            match found {
                Some(answer) => answer.into_result(),
                None => self.miss(format!(
                    "list {} {} in {}",
                    request.api_version,
                    request.kind,
                    request
                        .namespace
                        .unwrap_or_else(|| "every namespace".into())
                )),
            }
        })
    }
}
