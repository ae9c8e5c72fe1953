//! Test client: a real tonic client over a real channel, signing every call with omni-wire's `sign`.
#![allow(dead_code)]

use std::sync::Arc;
use std::time::Duration;

use omni_sim::OmniSim;
use omni_wire::ServiceAccountKey;
use omni_wire::cosi::state_client::StateClient;
use omni_wire::cosi::{self, Event, LabelQuery, LabelTerm, Resource, WatchRequest, WatchResponse};
use omni_wire::management::management_service_client::ManagementServiceClient;
use tonic::service::interceptor::InterceptedService;
use tonic::transport::{Certificate, Channel, ClientTlsConfig, Endpoint};
use tonic::{Request, Status, Streaming};

pub type Mutator = Arc<dyn Fn(&mut Vec<(String, String)>) + Send + Sync>;

/// Signs each call: timestamp = system time + `skew` seconds; `mutate` may tamper afterwards.
#[derive(Clone)]
pub struct Signer {
    pub key: Option<Arc<ServiceAccountKey>>,
    pub skew: i64,
    pub mutate: Option<Mutator>,
    pub extra: Vec<(String, String)>,
}

impl Signer {
    pub fn new(key: &str) -> Self {
        Signer {
            key: Some(Arc::new(ServiceAccountKey::parse(key).expect("key parses"))),
            skew: 0,
            mutate: None,
            extra: vec![],
        }
    }
    pub fn unsigned() -> Self {
        Signer {
            key: None,
            skew: 0,
            mutate: None,
            extra: vec![],
        }
    }
    pub fn skew(mut self, s: i64) -> Self {
        self.skew = s;
        self
    }
    pub fn mutate(
        mut self,
        f: impl Fn(&mut Vec<(String, String)>) + Send + Sync + 'static,
    ) -> Self {
        self.mutate = Some(Arc::new(f));
        self
    }
    pub fn header(mut self, k: &str, v: &str) -> Self {
        self.extra.push((k.into(), v.into()));
        self
    }
}

const SIGNED: [&str; 3] = [
    omni_wire::signature::TIMESTAMP,
    omni_wire::signature::PAYLOAD,
    omni_wire::signature::SIGNATURE,
];

impl tonic::service::Interceptor for Signer {
    fn call(&mut self, mut req: Request<()>) -> Result<Request<()>, Status> {
        for (k, v) in &self.extra {
            req.metadata_mut().append(
                tonic::metadata::MetadataKey::from_bytes(k.as_bytes()).expect("key"),
                v.parse().expect("value"),
            );
        }
        let Some(key) = &self.key else { return Ok(req) };
        let method = req
            .extensions()
            .get::<tonic::GrpcMethod>()
            .map(|m| format!("/{}/{}", m.service(), m.method()))
            .expect("method");
        let mut md: Vec<(String, String)> = req
            .metadata()
            .iter()
            .filter_map(|kv| match kv {
                tonic::metadata::KeyAndValueRef::Ascii(k, v) => Some((
                    k.as_str().to_string(),
                    v.to_str().expect("ascii").to_string(),
                )),
                _ => None,
            })
            .collect();
        let now = std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .expect("time")
            .as_secs() as i64;
        omni_wire::signature::sign(key, &method, &mut md, now + self.skew).expect("signs");
        if let Some(m) = &self.mutate {
            m(&mut md);
        }
        let map = req.metadata_mut();
        let keys: Vec<String> = map
            .keys()
            .filter_map(|k| match k {
                tonic::metadata::KeyRef::Ascii(k) => Some(k.as_str().to_string()),
                _ => None,
            })
            .collect();
        for k in keys {
            map.remove(k.as_str());
        }
        for (k, v) in md {
            map.append(
                tonic::metadata::MetadataKey::from_bytes(k.as_bytes()).expect("key"),
                v.parse().expect("value"),
            );
        }
        let _ = SIGNED;
        Ok(req)
    }
}

pub type State = StateClient<InterceptedService<Channel, Signer>>;
pub type Management = ManagementServiceClient<InterceptedService<Channel, Signer>>;

pub async fn channel(sim: &OmniSim) -> Channel {
    match sim.ca_pem() {
        None => Endpoint::from_shared(sim.endpoint().replacen("grpc://", "http://", 1))
            .expect("endpoint")
            .connect()
            .await
            .expect("connects"),
        Some(ca) => Endpoint::from_shared(sim.endpoint())
            .expect("endpoint")
            .tls_config(
                ClientTlsConfig::new()
                    .ca_certificate(Certificate::from_pem(ca))
                    .domain_name("localhost"),
            )
            .expect("tls")
            .connect()
            .await
            .expect("connects over TLS"),
    }
}

pub fn state(ch: Channel, signer: Signer) -> State {
    StateClient::with_interceptor(ch, signer).max_decoding_message_size(64 << 20)
}

pub fn management(ch: Channel, signer: Signer) -> Management {
    ManagementServiceClient::with_interceptor(ch, signer)
}

/// A started sim with an Operator key and a client.
pub async fn setup() -> (OmniSim, State, String) {
    let sim = OmniSim::start().await.expect("starts");
    let key = sim.mint_key("operator", omni_sim::Role::Operator);
    let c = state(channel(&sim).await, Signer::new(&key));
    (sim, c, key)
}

pub fn res(ty: &str, id: &str, labels: &[(&str, &str)], spec: Vec<u8>) -> Resource {
    let mut r = omni_sim::store::new_resource("default", ty, id, spec);
    if let Some(m) = r.metadata.as_mut() {
        for (k, v) in labels {
            m.labels.insert(k.to_string(), v.to_string());
        }
    }
    r
}

pub fn md(r: &Resource) -> &cosi::Metadata {
    r.metadata.as_ref().expect("metadata")
}

pub async fn create(c: &mut State, r: Resource) -> Result<Resource, Status> {
    c.create(cosi::CreateRequest {
        resource: Some(r),
        options: Some(cosi::CreateOptions::default()),
    })
    .await
    .map(|x| x.into_inner().resource.expect("resource"))
}

pub async fn update(c: &mut State, r: Resource) -> Result<Resource, Status> {
    c.update(cosi::UpdateRequest {
        new_resource: Some(r),
        options: Some(cosi::UpdateOptions {
            owner: String::new(),
            expected_phase: Some("running".into()),
        }),
    })
    .await
    .map(|x| x.into_inner().resource.expect("resource"))
}

pub async fn get(c: &mut State, ty: &str, id: &str) -> Result<Resource, Status> {
    c.get(cosi::GetRequest {
        namespace: "default".into(),
        r#type: ty.into(),
        id: id.into(),
        options: Some(cosi::GetOptions {}),
    })
    .await
    .map(|x| x.into_inner().resource.expect("resource"))
}

pub async fn list(
    c: &mut State,
    ty: &str,
    queries: Vec<LabelQuery>,
    id_regexp: Option<&str>,
) -> Result<Vec<Resource>, Status> {
    let mut s = c
        .list(cosi::ListRequest {
            namespace: "default".into(),
            r#type: ty.into(),
            options: Some(cosi::ListOptions {
                label_query: queries,
                id_query: id_regexp.map(|r| cosi::IdQuery { regexp: r.into() }),
            }),
        })
        .await?
        .into_inner();
    let mut out = vec![];
    while let Some(m) = s.message().await? {
        out.push(m.resource.expect("resource"));
    }
    Ok(out)
}

pub async fn teardown(c: &mut State, ty: &str, id: &str) -> Result<bool, Status> {
    c.teardown(cosi::TeardownRequest {
        namespace: "default".into(),
        r#type: ty.into(),
        id: id.into(),
        options: Some(cosi::TeardownOptions::default()),
    })
    .await
    .map(|x| x.into_inner().destroy_ready)
}

pub async fn destroy(c: &mut State, ty: &str, id: &str) -> Result<(), Status> {
    c.destroy(cosi::DestroyRequest {
        namespace: "default".into(),
        r#type: ty.into(),
        id: id.into(),
        options: Some(cosi::DestroyOptions::default()),
    })
    .await
    .map(|_| ())
}

pub fn eq(key: &str, value: &str) -> LabelQuery {
    term(key, cosi::label_term::Operation::Equal, &[value], false)
}

pub fn term(
    key: &str,
    op: cosi::label_term::Operation,
    values: &[&str],
    invert: bool,
) -> LabelQuery {
    LabelQuery {
        terms: vec![LabelTerm {
            key: key.into(),
            op: op as i32,
            value: values.iter().map(|s| s.to_string()).collect(),
            invert,
        }],
    }
}

pub fn kind_watch(ty: &str, bootstrap: bool, queries: Vec<LabelQuery>) -> WatchRequest {
    WatchRequest {
        namespace: "default".into(),
        r#type: ty.into(),
        id: None,
        options: Some(cosi::WatchOptions {
            bootstrap_contents: bootstrap,
            label_query: queries,
            ..Default::default()
        }),
        api_version: 1,
    }
}

pub async fn watch(c: &mut State, req: WatchRequest) -> Result<Streaming<WatchResponse>, Status> {
    let mut s = c.watch(req).await?.into_inner();
    // The first message is the empty "watch is ready" response.
    let first = tokio::time::timeout(Duration::from_secs(5), s.message())
        .await
        .expect("first response in time")?
        .expect("first response");
    assert!(
        first.event.is_empty(),
        "first watch response is empty: {first:?}"
    );
    Ok(s)
}

pub async fn next(s: &mut Streaming<WatchResponse>) -> Result<Event, Status> {
    let m = tokio::time::timeout(Duration::from_secs(5), s.message())
        .await
        .expect("a watch event in time")?
        .expect("stream open");
    assert_eq!(m.event.len(), 1, "one event per response");
    Ok(m.event.into_iter().next().expect("event"))
}

pub fn kind(e: &Event) -> cosi::EventType {
    cosi::EventType::try_from(e.event_type).expect("event type")
}

pub fn id(e: &Event) -> String {
    md(e.resource.as_ref().expect("resource")).id.clone()
}

pub fn cluster_spec(talos: &str, k8s: &str) -> Vec<u8> {
    use prost::Message as _;
    omni_wire::specs::ClusterSpec {
        kubernetes_version: k8s.into(),
        talos_version: talos.into(),
        features: Some(Default::default()),
        backup_configuration: None,
    }
    .encode_to_vec()
}
