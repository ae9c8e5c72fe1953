//! Flux's `chart.spec.valuesFiles`: values files packaged in the chart (`values-production.yaml`), read by the host
//! from the chart's archive (a repository's, or an OCI registry's chart layer) and merged in order, later over
//! earlier, before the object's `valuesFrom` and inline values. Flux builds a chart whose `values.yaml` is
//! replaced by them; here they are merged over it by Helm as any values are, so a key only `values.yaml` sets
//! stays (list `values.yaml` first to make the order explicit).

use std::io::Read as _;

use serde_json::Value;

use super::chart_digest;
use super::protocol::ChartAuth;

/// The largest chart archive read, and the most its files may inflate to.
const MAX_ARCHIVE: usize = 16 << 20;
const MAX_INFLATED: u64 = 64 << 20;
/// Helm's chart layer in an OCI registry.
const CHART_LAYER: &str = "application/vnd.cncf.helm.chart.content.v1.tar+gzip";

/// The archive of chart `name` at `version` from repository `url`, at the URL its index lists.
pub async fn repository_archive(
    url: &str,
    name: &str,
    version: &str,
    auth: Option<&ChartAuth>,
) -> Result<Vec<u8>, String> {
    let index = chart_digest::index(url, auth).await?;
    let bare = |v: &str| v.trim_start_matches('v').to_string();
    let entry = index["entries"][name]
        .as_array()
        .and_then(|e| {
            e.iter()
                .find(|e| e["version"].as_str().map(bare) == Some(bare(version)))
        })
        .ok_or_else(|| format!("the repository's index lists no {name} {version}"))?;
    let listed = entry["urls"][0]
        .as_str()
        .ok_or_else(|| format!("the repository's index lists no URL for {name} {version}"))?;
    let archive = if listed.contains("://") {
        listed.to_string()
    } else {
        format!(
            "{}/{}",
            url.trim_end_matches('/'),
            listed.trim_start_matches('/')
        )
    };
    chart_digest::get(&archive, auth, MAX_ARCHIVE).await
}

/// The chart layer of OCI chart `reference` at `version`.
pub async fn oci_archive(
    reference: &str,
    version: &str,
    plain_http: bool,
    auth: Option<&ChartAuth>,
) -> Result<Vec<u8>, String> {
    let (parsed, _) = chart_digest::oci_manifest(reference, version, plain_http, auth).await?;
    let (client, registry_auth) = chart_digest::oci_client(plain_http, auth);
    let image = client
        .pull(&parsed, &registry_auth, vec![CHART_LAYER])
        .await
        .map_err(|e| format!("pulling {}: {e}", parsed.whole()))?;
    let layer = image
        .layers
        .into_iter()
        .next()
        .ok_or_else(|| format!("{} has no chart layer", parsed.whole()))?;
    if layer.data.len() > MAX_ARCHIVE {
        return Err(format!(
            "{}'s chart is larger than {MAX_ARCHIVE} bytes",
            parsed.whole()
        ));
    }
    Ok(layer.data.to_vec())
}

/// The values of `names` in chart archive `archive` (paths relative to the chart's directory), merged in order;
/// a missing file is an error unless `ignore_missing`.
pub fn merged(archive: &[u8], names: &[String], ignore_missing: bool) -> Result<Value, String> {
    let files = files(archive)?;
    let mut out = serde_json::Map::new();
    for name in names {
        let wanted = name.trim_start_matches("./");
        let Some(text) = files.iter().find(|(n, _)| n == wanted).map(|(_, t)| t) else {
            if ignore_missing {
                continue;
            }
            return Err(format!("valuesFiles: the chart has no file {name:?}"));
        };
        let parsed: Value = yaml_serde::from_str(text)
            .map_err(|e| format!("valuesFiles: {name:?} is not YAML: {e}"))?;
        match parsed {
            Value::Object(m) => super::merge_values(&mut out, m),
            Value::Null => {}
            _ => return Err(format!("valuesFiles: {name:?} is not a map of values")),
        }
    }
    Ok(Value::Object(out))
}

/// The regular files of a `.tgz` chart archive as (path inside the chart's directory, text): Helm packages a
/// chart as `<name>/<path>`. Reads ustar and PAX long names; inflates at most [`MAX_INFLATED`] bytes.
fn files(archive: &[u8]) -> Result<Vec<(String, String)>, String> {
    let mut tar = Vec::new();
    flate2::read::GzDecoder::new(archive)
        .take(MAX_INFLATED)
        .read_to_end(&mut tar)
        .map_err(|e| format!("the chart archive does not inflate: {e}"))?;
    let mut out = Vec::new();
    let mut at = 0usize;
    let mut long_name: Option<String> = None;
    while at + 512 <= tar.len() {
        let header = &tar[at..at + 512];
        if header.iter().all(|b| *b == 0) {
            break;
        }
        let field = |from: usize, to: usize| {
            let raw = &header[from..to];
            let end = raw.iter().position(|b| *b == 0).unwrap_or(raw.len());
            String::from_utf8_lossy(&raw[..end]).to_string()
        };
        let size = usize::from_str_radix(field(124, 136).trim(), 8)
            .map_err(|_| "the chart archive has a damaged header".to_string())?;
        let start = at + 512;
        let end = start
            .checked_add(size)
            .filter(|e| *e <= tar.len())
            .ok_or_else(|| "the chart archive is cut short".to_string())?;
        let body = &tar[start..end];
        let name = match (&field(345, 500), field(0, 100)) {
            (prefix, name) if !prefix.is_empty() => format!("{prefix}/{name}"),
            (_, name) => name,
        };
        match header[156] {
            // A PAX header: its `path` names the next entry.
            b'x' => {
                long_name = String::from_utf8_lossy(body)
                    .lines()
                    .find_map(|l| l.split_once(" path=").map(|(_, p)| p.to_string()));
            }
            b'0' | 0 => {
                let name = long_name.take().unwrap_or(name);
                let inside = name.split_once('/').map_or(name.as_str(), |(_, rest)| rest);
                out.push((
                    inside.to_string(),
                    String::from_utf8_lossy(body).to_string(),
                ));
            }
            _ => long_name = None,
        }
        at = start + size.div_ceil(512) * 512;
    }
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A `.tgz` of `files` under `demo/`, as Helm packages a chart.
    fn archive(files: &[(&str, &str)]) -> Vec<u8> {
        let mut tar = Vec::new();
        for (name, text) in files {
            let mut header = [0u8; 512];
            let path = format!("demo/{name}");
            header[..path.len()].copy_from_slice(path.as_bytes());
            header[100..107].copy_from_slice(b"0000644");
            let size = format!("{:011o}", text.len());
            header[124..135].copy_from_slice(size.as_bytes());
            header[156] = b'0';
            header[257..262].copy_from_slice(b"ustar");
            tar.extend_from_slice(&header);
            tar.extend_from_slice(text.as_bytes());
            tar.resize(tar.len().div_ceil(512) * 512, 0);
        }
        tar.extend_from_slice(&[0u8; 1024]);
        let mut gz = flate2::write::GzEncoder::new(Vec::new(), flate2::Compression::default());
        std::io::Write::write_all(&mut gz, &tar).unwrap();
        gz.finish().unwrap()
    }

    #[test]
    fn values_files_merge_in_order_and_a_missing_one_is_named() {
        let a = archive(&[
            ("values.yaml", "replicaCount: 1\nimage: {tag: a}\n"),
            (
                "values-prod.yaml",
                "replicaCount: 3\nimage: {pullPolicy: Always}\n",
            ),
        ]);
        let names = |n: &[&str]| n.iter().map(|s| s.to_string()).collect::<Vec<_>>();
        assert_eq!(
            merged(&a, &names(&["values.yaml", "values-prod.yaml"]), false).unwrap(),
            serde_json::json!({"replicaCount": 3, "image": {"tag": "a", "pullPolicy": "Always"}})
        );
        let missing = merged(&a, &names(&["values-dev.yaml"]), false).unwrap_err();
        assert!(missing.contains("values-dev.yaml"), "{missing}");
        assert_eq!(
            merged(&a, &names(&["values-dev.yaml"]), true).unwrap(),
            serde_json::json!({})
        );
        assert!(merged(b"not gzip", &names(&["values.yaml"]), false).is_err());
    }
}
