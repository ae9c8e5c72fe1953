//! The `omni-sim` binary prints an endpoint and a working Operator key.

mod common;

use std::io::{BufRead, BufReader};
use std::process::{Command, Stdio};

use common::*;
use omni_wire::cosi::state_client::StateClient;
use tonic::transport::Endpoint;

#[tokio::test]
async fn the_binary_prints_an_endpoint_and_an_operator_key_that_work() {
    let mut child = Command::new(env!("CARGO_BIN_EXE_omni-sim"))
        .args(["--listen", "127.0.0.1:0"])
        .stdout(Stdio::piped())
        .stderr(Stdio::null())
        .spawn()
        .expect("spawns");
    let stdout = child.stdout.take().expect("stdout");
    let lines: Vec<String> = tokio::task::spawn_blocking(move || {
        BufReader::new(stdout)
            .lines()
            .take(3)
            .map(|l| l.expect("line"))
            .collect()
    })
    .await
    .expect("reads");
    let endpoint = lines[0]
        .strip_prefix("OMNI_ENDPOINT=")
        .expect("endpoint line")
        .to_string();
    let key = lines[1]
        .strip_prefix("OMNI_SERVICE_ACCOUNT_KEY=")
        .expect("key line")
        .to_string();
    assert!(
        lines[2].contains("kubectl") && lines[2].contains("create secret"),
        "{lines:?}"
    );
    let parsed = omni_wire::ServiceAccountKey::parse(&key).expect("key parses");
    assert_eq!(parsed.name, "omni-operator");
    assert!(endpoint.starts_with("grpc://127.0.0.1:"));
    let ch = Endpoint::from_shared(endpoint.replacen("grpc://", "http://", 1))
        .expect("endpoint")
        .connect()
        .await
        .expect("connects");
    let mut c: State = StateClient::with_interceptor(ch, Signer::new(&key));
    let r = create(
        &mut c,
        res(
            "Clusters.omni.sidero.dev",
            "c1",
            &[],
            cluster_spec("1.10.3", "1.33.1"),
        ),
    )
    .await;
    child.kill().expect("kill");
    let _ = child.wait();
    r.expect("the Operator key can write");
}
