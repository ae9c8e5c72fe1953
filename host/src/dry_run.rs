//! Kubernetes clients for a plan (`omni-operator plan`): every write goes out as a server-side dry run
//! (`dryRun=All`, what `kubectl apply --dry-run=server` sends), so the API server and its admission webhooks judge
//! it and nothing is stored, and each write is recorded. Reads are untouched: a plan reads the live state.

use std::sync::{Arc, Mutex};

use http::{Method, Request, Uri};
use kube::client::{Body, ClientBuilder};

/// One write a plan sent as a dry run.
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize)]
pub struct KubeWrite {
    /// Which cluster: `management`, or the kubeconfig Secret a workload cluster was reached through.
    pub cluster: String,
    pub method: String,
    /// The request path, without the query.
    pub path: String,
}

/// The writes of one plan, from every cluster it reached.
#[derive(Debug, Default)]
pub struct KubeWrites {
    writes: Mutex<Vec<KubeWrite>>,
}

impl KubeWrites {
    fn lock(&self) -> std::sync::MutexGuard<'_, Vec<KubeWrite>> {
        self.writes.lock().unwrap_or_else(|p| p.into_inner())
    }

    /// Every write so far, in order.
    pub fn all(&self) -> Vec<KubeWrite> {
        self.lock().clone()
    }

    /// The writes after the first `n`.
    pub fn since(&self, n: usize) -> Vec<KubeWrite> {
        self.lock().iter().skip(n).cloned().collect()
    }

    pub fn len(&self) -> usize {
        self.lock().len()
    }

    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// A client for `config` whose writes are dry runs recorded here under `cluster`.
    pub fn client(
        self: &Arc<Self>,
        config: kube::Config,
        cluster: &str,
    ) -> Result<kube::Client, kube::Error> {
        let (log, cluster) = (self.clone(), cluster.to_string());
        let layer = tower::util::MapRequestLayer::new(move |request: Request<Body>| {
            log.dry_run(&cluster, request)
        });
        Ok(ClientBuilder::try_from(config)?.with_layer(&layer).build())
    }

    /// `request` as a dry run when it writes, recorded; reads pass as they are.
    fn dry_run(&self, cluster: &str, mut request: Request<Body>) -> Request<Body> {
        if matches!(
            *request.method(),
            Method::GET | Method::HEAD | Method::OPTIONS
        ) {
            return request;
        }
        let uri = request.uri().clone();
        let path = uri.path().to_string();
        let query = match uri.query() {
            // One dry-run parameter is enough; a second would be the same.
            Some(q) if q.split('&').any(|p| p.starts_with("dryRun=")) => q.to_string(),
            Some(q) if !q.is_empty() => format!("{q}&dryRun=All"),
            _ => "dryRun=All".to_string(),
        };
        let mut parts = uri.into_parts();
        parts.path_and_query = format!("{path}?{query}").parse().ok();
        if let Ok(uri) = Uri::from_parts(parts) {
            *request.uri_mut() = uri;
        }
        self.lock().push(KubeWrite {
            cluster: cluster.to_string(),
            method: request.method().to_string(),
            path,
        });
        request
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn request(method: Method, uri: &str) -> Request<Body> {
        Request::builder()
            .method(method)
            .uri(uri)
            .body(Body::empty())
            .expect("request")
    }

    #[test]
    fn writes_become_recorded_dry_runs_and_reads_pass() {
        let log = KubeWrites::default();
        let read = log.dry_run(
            "management",
            request(Method::GET, "/api/v1/namespaces/a/secrets/s"),
        );
        assert_eq!(read.uri(), "/api/v1/namespaces/a/secrets/s");
        let patch = log.dry_run(
            "management",
            request(
                Method::PATCH,
                "/api/v1/namespaces/a/secrets/s?fieldManager=omni",
            ),
        );
        assert_eq!(
            patch.uri(),
            "/api/v1/namespaces/a/secrets/s?fieldManager=omni&dryRun=All"
        );
        let delete = log.dry_run(
            "edge",
            request(Method::DELETE, "/api/v1/namespaces/a/secrets/s"),
        );
        assert_eq!(delete.uri(), "/api/v1/namespaces/a/secrets/s?dryRun=All");
        let again = log.dry_run(
            "edge",
            request(Method::POST, "/api/v1/namespaces?dryRun=All"),
        );
        assert_eq!(again.uri(), "/api/v1/namespaces?dryRun=All");
        let methods: Vec<(String, String)> = log
            .all()
            .into_iter()
            .map(|w| (w.cluster, w.method))
            .collect();
        assert_eq!(
            methods,
            [
                ("management".to_string(), "PATCH".to_string()),
                ("edge".into(), "DELETE".into()),
                ("edge".into(), "POST".into())
            ]
        );
    }
}
