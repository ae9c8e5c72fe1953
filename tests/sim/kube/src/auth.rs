//! Authentication (bearer tokens, client certificates, anonymous) and authorization (superusers, then RBAC),
//! in the order kube-apiserver applies them.

use std::collections::HashMap;
use std::sync::RwLock;

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

pub struct Authenticator {
    tokens: RwLock<HashMap<String, UserInfo>>,
    anonymous: RwLock<Anonymous>,
}

impl Authenticator {
    pub fn new(anonymous: Anonymous) -> Self {
        Authenticator { tokens: RwLock::new(HashMap::new()), anonymous: RwLock::new(anonymous) }
    }

    pub fn add_token(&self, token: &str, user: UserInfo) {
        self.tokens.write().unwrap_or_else(|p| p.into_inner()).insert(token.to_string(), user);
    }

    pub fn set_anonymous(&self, a: Anonymous) {
        *self.anonymous.write().unwrap_or_else(|p| p.into_inner()) = a;
    }

    /// `authorization` is the raw header; `cert_identity` the verified client certificate's CN and O's.
    pub fn authenticate(&self, authorization: Option<&str>, cert_identity: Option<&(String, Vec<String>)>) -> Result<UserInfo, ApiError> {
        if let Some(h) = authorization {
            let token = h.strip_prefix("Bearer ").or_else(|| h.strip_prefix("bearer ")).map(str::trim);
            let Some(token) = token else { return Err(ApiError::unauthorized()) };
            let tokens = self.tokens.read().unwrap_or_else(|p| p.into_inner());
            let Some(user) = tokens.get(token) else { return Err(ApiError::unauthorized()) };
            return Ok(with_authenticated(user.clone()));
        }
        if let Some((name, groups)) = cert_identity {
            return Ok(with_authenticated(UserInfo { name: name.clone(), groups: groups.clone(), ..Default::default() }));
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
    let mut err = ApiError::forbidden(crate::rbac::forbidden_message_with_reason(user, attrs, &reason));
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
        a.add_token("t1", UserInfo { name: "alice".into(), groups: vec!["dev".into()], ..Default::default() });
        let u = a.authenticate(Some("Bearer t1"), None).expect("token");
        assert_eq!(u.name, "alice");
        assert_eq!(u.groups, vec!["dev", "system:authenticated"]);
        assert_eq!(a.authenticate(Some("Bearer nope"), None).expect_err("bad token").code, 401);
        let c = a.authenticate(None, Some(&("bob".into(), vec!["ops".into()]))).expect("cert");
        assert_eq!(c.name, "bob");
        let anon = a.authenticate(None, None).expect("anonymous");
        assert_eq!(anon.name, "system:anonymous");
        a.set_anonymous(Anonymous::Reject);
        assert_eq!(a.authenticate(None, None).expect_err("rejected").code, 401);
    }
}
