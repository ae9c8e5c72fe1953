//! Authentication (bearer tokens, client certificates, anonymous) and authorization (superusers, then RBAC),
//! in the order kube-apiserver applies them.

use std::collections::HashMap;
use std::sync::{Arc, RwLock};

use crate::cluster::Cluster;
use crate::error::ApiError;
use crate::rbac::{Attributes, UserInfo};

pub const SUPERUSER_GROUP: &str = "system:masters";

/// What happens to requests that carry no credentials.
#[derive(Debug, Clone, PartialEq)]
pub enum Anonymous {
    /// 401, as a real server started with `--anonymous-auth=false`.
    Reject,
    /// `system:anonymous` in group `system:unauthenticated`, subject to RBAC (the real default).
    Unauthenticated,
    /// Treated as the given user. Plain-HTTP development mode uses this, because kubectl sends no token over http.
    As(UserInfo),
}

/// A bearer-token authenticator consulted after the static tokens, like kube-apiserver's webhook or OIDC token
/// authenticators. It lets a server accept tokens minted elsewhere (e.g. omni-sim's kubeconfig JWTs when the
/// server plays a workload cluster behind Omni's Kubernetes proxy).
///
/// `None` means "not a valid token": the request then gets the real 401. Closures
/// `Fn(&str) -> Option<UserInfo>` implement it.
pub trait TokenVerifier: Send + Sync {
    fn verify(&self, token: &str) -> Option<UserInfo>;
}

impl<F> TokenVerifier for F
where
    F: Fn(&str) -> Option<UserInfo> + Send + Sync,
{
    fn verify(&self, token: &str) -> Option<UserInfo> {
        self(token)
    }
}

pub struct Authenticator {
    tokens: RwLock<HashMap<String, UserInfo>>,
    /// Tokens valid until a time (service-account tokens from `serviceaccounts/{name}/token`).
    expiring: RwLock<HashMap<String, (UserInfo, std::time::SystemTime)>>,
    verifier: RwLock<Option<Arc<dyn TokenVerifier>>>,
    anonymous: RwLock<Anonymous>,
}

impl Authenticator {
    pub fn new(anonymous: Anonymous) -> Self {
        Authenticator {
            tokens: RwLock::new(HashMap::new()),
            expiring: RwLock::new(HashMap::new()),
            verifier: RwLock::new(None),
            anonymous: RwLock::new(anonymous),
        }
    }

    /// Installs (Some) or removes (None) the verifier asked about bearer tokens that are not static tokens.
    pub fn set_token_verifier(&self, verifier: Option<Arc<dyn TokenVerifier>>) {
        *self.verifier.write().unwrap_or_else(|p| p.into_inner()) = verifier;
    }

    pub fn add_token(&self, token: &str, user: UserInfo) {
        self.tokens
            .write()
            .unwrap_or_else(|p| p.into_inner())
            .insert(token.to_string(), user);
    }

    /// A token that authenticates as `user` until `expires`.
    pub fn add_expiring_token(&self, token: &str, user: UserInfo, expires: std::time::SystemTime) {
        self.expiring
            .write()
            .unwrap_or_else(|p| p.into_inner())
            .insert(token.to_string(), (user, expires));
    }

    pub fn set_anonymous(&self, a: Anonymous) {
        *self.anonymous.write().unwrap_or_else(|p| p.into_inner()) = a;
    }

    /// `authorization` is the raw header; `cert_identity` the verified client certificate's CN and O's.
    ///
    /// A request that carries an `Authorization` header is judged by it alone, whatever the anonymous mode: a
    /// real API server answers a bad token with 401 and never falls back to anonymous (or, here, to the
    /// plain-HTTP administrator of `Anonymous::As`).
    pub fn authenticate(
        &self,
        authorization: Option<&str>,
        cert_identity: Option<&(String, Vec<String>)>,
    ) -> Result<UserInfo, ApiError> {
        if let Some(h) = authorization {
            let token = h
                .strip_prefix("Bearer ")
                .or_else(|| h.strip_prefix("bearer "))
                .map(str::trim);
            let Some(token) = token else {
                return Err(ApiError::unauthorized());
            };
            return self
                .authenticate_token(token)
                .map(with_authenticated)
                .ok_or_else(ApiError::unauthorized);
        }
        if let Some((name, groups)) = cert_identity {
            return Ok(with_authenticated(UserInfo {
                name: name.clone(),
                groups: groups.clone(),
                ..Default::default()
            }));
        }
        match &*self.anonymous.read().unwrap_or_else(|p| p.into_inner()) {
            Anonymous::Reject => Err(ApiError::unauthorized()),
            Anonymous::Unauthenticated => Ok(UserInfo {
                name: "system:anonymous".into(),
                groups: vec!["system:unauthenticated".into()],
                ..Default::default()
            }),
            Anonymous::As(u) => Ok(with_authenticated(u.clone())),
        }
    }
}

impl Authenticator {
    /// Static tokens first, then the verifier.
    fn authenticate_token(&self, token: &str) -> Option<UserInfo> {
        if let Some(user) = self
            .tokens
            .read()
            .unwrap_or_else(|p| p.into_inner())
            .get(token)
        {
            return Some(user.clone());
        }
        if let Some((user, expires)) = self
            .expiring
            .read()
            .unwrap_or_else(|p| p.into_inner())
            .get(token)
        {
            return (std::time::SystemTime::now() < *expires).then(|| user.clone());
        }
        // Cloned out so the lock is not held while the verifier runs: a slow verifier must not block
        // `set_token_verifier`, and one that reaches back into this authenticator must not deadlock.
        let verifier = self
            .verifier
            .read()
            .unwrap_or_else(|p| p.into_inner())
            .clone();
        verifier.and_then(|v| v.verify(token))
    }
}

fn with_authenticated(mut u: UserInfo) -> UserInfo {
    if !u.groups.iter().any(|g| g == "system:authenticated") {
        u.groups.push("system:authenticated".into());
    }
    u
}

pub fn is_superuser(u: &UserInfo) -> bool {
    u.groups.iter().any(|g| g == SUPERUSER_GROUP)
}

/// Allowed, or the real 403.
pub fn authorize(cluster: &Cluster, user: &UserInfo, attrs: &Attributes) -> Result<(), ApiError> {
    if is_superuser(user) {
        return Ok(());
    }
    let (allowed, reason) = cluster.rbac().authorize(user, attrs);
    if allowed {
        return Ok(());
    }
    let mut err = ApiError::forbidden(crate::rbac::forbidden_message_with_reason(
        user, attrs, &reason,
    ));
    if attrs.resource_request {
        let mut d = serde_json::json!({"kind": attrs.resource});
        if !attrs.name.is_empty() {
            d["name"] = serde_json::json!(attrs.name);
        }
        if !attrs.api_group.is_empty() {
            d["group"] = serde_json::json!(attrs.api_group);
        }
        err = err.with_details(d);
    }
    Err(err)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn tokens_certificates_and_anonymous_resolve_like_the_real_authenticator_chain() {
        let a = Authenticator::new(Anonymous::Unauthenticated);
        a.add_token(
            "t1",
            UserInfo {
                name: "alice".into(),
                groups: vec!["dev".into()],
                ..Default::default()
            },
        );
        let u = a.authenticate(Some("Bearer t1"), None).expect("token");
        assert_eq!(u.name, "alice");
        assert_eq!(u.groups, vec!["dev", "system:authenticated"]);
        assert_eq!(
            a.authenticate(Some("Bearer nope"), None)
                .expect_err("bad token")
                .code,
            401
        );
        let c = a
            .authenticate(None, Some(&("bob".into(), vec!["ops".into()])))
            .expect("cert");
        assert_eq!(c.name, "bob");
        let anon = a.authenticate(None, None).expect("anonymous");
        assert_eq!(anon.name, "system:anonymous");
        a.set_anonymous(Anonymous::Reject);
        assert_eq!(a.authenticate(None, None).expect_err("rejected").code, 401);
    }

    fn jwt_like_verifier(calls: Arc<std::sync::atomic::AtomicUsize>) -> Arc<dyn TokenVerifier> {
        Arc::new(move |token: &str| {
            calls.fetch_add(1, std::sync::atomic::Ordering::SeqCst);
            token.strip_prefix("jwt-for-").map(|name| UserInfo {
                name: name.into(),
                groups: vec!["omni".into()],
                ..Default::default()
            })
        })
    }

    #[test]
    fn static_tokens_win_then_the_verifier_decides_and_its_users_join_system_authenticated() {
        let a = Authenticator::new(Anonymous::Reject);
        let calls = Arc::new(std::sync::atomic::AtomicUsize::new(0));
        a.add_token(
            "jwt-for-shadowed",
            UserInfo {
                name: "static".into(),
                ..Default::default()
            },
        );
        assert_eq!(
            a.authenticate(Some("Bearer jwt-for-op"), None)
                .expect_err("no verifier yet")
                .code,
            401
        );

        a.set_token_verifier(Some(jwt_like_verifier(calls.clone())));
        let u = a
            .authenticate(Some("Bearer jwt-for-op"), None)
            .expect("verified token");
        assert_eq!(u.name, "op");
        assert_eq!(u.groups, vec!["omni", "system:authenticated"]);
        assert_eq!(calls.load(std::sync::atomic::Ordering::SeqCst), 1);

        // A static token is answered without asking the verifier.
        assert_eq!(
            a.authenticate(Some("Bearer jwt-for-shadowed"), None)
                .expect("static")
                .name,
            "static"
        );
        assert_eq!(calls.load(std::sync::atomic::Ordering::SeqCst), 1);

        let e = a
            .authenticate(Some("Bearer forged"), None)
            .expect_err("rejected by both");
        assert_eq!((e.code, e.reason), (401, "Unauthorized"));

        a.set_token_verifier(None);
        assert_eq!(
            a.authenticate(Some("Bearer jwt-for-op"), None)
                .expect_err("verifier removed")
                .code,
            401
        );
    }

    #[test]
    fn plain_http_admin_fallback_applies_only_to_requests_without_an_authorization_header() {
        // `Anonymous::As` is what plain-HTTP mode uses by default.
        let admin = UserInfo {
            name: "admin".into(),
            groups: vec![SUPERUSER_GROUP.into()],
            ..Default::default()
        };
        let a = Authenticator::new(Anonymous::As(admin));
        a.set_token_verifier(Some(jwt_like_verifier(Arc::new(
            std::sync::atomic::AtomicUsize::new(0),
        ))));
        assert_eq!(a.authenticate(None, None).expect("no header").name, "admin");
        let u = a
            .authenticate(Some("Bearer jwt-for-op"), None)
            .expect("the token's user, not the fallback");
        assert_eq!(u.name, "op");
        assert!(!is_superuser(&u));
        assert_eq!(
            a.authenticate(Some("Bearer expired-or-forged"), None)
                .expect_err("bad token")
                .code,
            401
        );
    }
}
