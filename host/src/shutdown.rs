//! How the process learns it should stop: Ctrl-C, or SIGTERM (what Kubernetes sends a pod it stops, and what
//! process managers send a `dev` they end). `run` and `dev` stop the same way on either.

/// Resolves on Ctrl-C or SIGTERM (what Kubernetes sends a pod it stops).
pub async fn terminated() {
    let term = async {
        match tokio::signal::unix::signal(tokio::signal::unix::SignalKind::terminate()) {
            Ok(mut s) => {
                s.recv().await;
            }
            Err(_) => std::future::pending::<()>().await,
        }
    };
    tokio::select! {
        _ = tokio::signal::ctrl_c() => {}
        _ = term => {}
    }
}
