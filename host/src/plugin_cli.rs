//! The plugin author's commands:
//! * `plugin new` creates a plugin crate from the template (`host/templates/plugin`);
//! * `plugin test` runs a component against fixtures with recorded interactions and snapshots;
//! * `plugin push|pull|sign|verify|keygen` distribute plugins as signed OCI artifacts (or signed files for
//!   air-gapped clusters), with the operator's own code, so what the CLI accepts is what the operator accepts.
//!
//! Key passwords come from `COSIGN_PASSWORD`, as with cosign; registry passwords from
//! `OMNI_OPERATOR_REGISTRY_PASSWORD`, never from a flag that would show in `ps`.

use std::path::{Path, PathBuf};

use anyhow::{Context, bail};
use clap::{Args, Subcommand};
use omni_operator::distribution::{
    self, Access, ArtifactCache, ArtifactRef, Credentials, Trust, TrustedKeys, metadata, oci,
    signature,
};
use omni_operator::testkit::{self, Mode, Outcome};
use serde_json::json;

#[derive(Subcommand)]
pub enum AuthorCommand {
    /// Create a plugin crate: Cargo.toml, src/lib.rs with native unit tests, a fixture, and a README saying how
    /// to build, test, push and bind it.
    New {
        /// The plugin's name (lowercase letters, digits and '-'); also the crate's directory.
        name: String,
        /// The kind it reconciles: its API group.
        #[arg(long, default_value = "example.com")]
        group: String,
        #[arg(long, default_value = "Widget")]
        kind: String,
        /// The SDK crate (plugins/sdk of the operator's source); default: the tree this binary was built from.
        #[arg(long)]
        sdk: Option<PathBuf>,
        /// Where to create it (default: ./NAME).
        #[arg(long)]
        path: Option<PathBuf>,
    },
    /// Run a component against fixtures (DIR/NAME.object.json), replaying recorded reads and comparing outputs
    /// with snapshots; exits non-zero when a case fails.
    Test {
        /// The component (`.wasm`).
        wasm: PathBuf,
        #[arg(long)]
        fixtures: PathBuf,
        /// A grant for the run (repeatable), as --grant of `plugin inspect`.
        #[arg(long = "grant", value_name = "CAPABILITY")]
        grants: Vec<String>,
        /// Record the reads from the cluster this kubeconfig names, and write transcripts and snapshots.
        #[arg(long, requires = "kubeconfig")]
        record: bool,
        #[arg(long)]
        kubeconfig: Option<PathBuf>,
        /// Accept the current outputs as the snapshots.
        #[arg(long)]
        update: bool,
    },
    /// Push a component to an OCI registry in the Wasm artifact layout; prints the reference pinned by digest.
    Push {
        /// The component (`.wasm`).
        wasm: PathBuf,
        /// Where to push: oci://REGISTRY/REPOSITORY:TAG.
        reference: String,
        /// Sign the pushed digest with this private key (cosign's format; password in COSIGN_PASSWORD).
        #[arg(long)]
        sign_key: Option<PathBuf>,
        #[command(flatten)]
        registry: RegistryArgs,
    },
    /// Pull a component, verify it, and write it out or into an artifact cache (for air-gapped operators).
    Pull {
        /// oci://REGISTRY/REPOSITORY@sha256:… (or :TAG, resolved once) or file:///PATH.wasm.
        reference: String,
        #[command(flatten)]
        trust: TrustArgs,
        /// Write the component here.
        #[arg(long, short)]
        output: Option<PathBuf>,
        /// Store it in this artifact cache (the operator's --plugin-cache), with its signatures.
        #[arg(long)]
        cache: Option<PathBuf>,
        #[command(flatten)]
        registry: RegistryArgs,
    },
    /// Sign an artifact as `cosign sign --key` does (a file as `cosign sign-blob`: writes FILE.sig).
    Sign {
        reference: String,
        /// The private key (cosign's encrypted format with COSIGN_PASSWORD, or an unencrypted PKCS#8 PEM).
        #[arg(long)]
        key: PathBuf,
        #[command(flatten)]
        registry: RegistryArgs,
    },
    /// Check an artifact's signature against public keys; prints the digest and the key that signed it.
    Verify {
        reference: String,
        #[command(flatten)]
        trust: TrustArgs,
        #[command(flatten)]
        registry: RegistryArgs,
    },
    /// Make a signing key pair as `cosign generate-key-pair` does: PREFIX.key (encrypted with COSIGN_PASSWORD)
    /// and PREFIX.pub.
    Keygen {
        #[arg(long, default_value = "cosign")]
        output_prefix: PathBuf,
    },
}

#[derive(Args)]
pub struct RegistryArgs {
    /// Reach the registry over plain HTTP (a registry on a trusted network only).
    #[arg(long)]
    plain_http: bool,
    /// Registry user name; the password is read from OMNI_OPERATOR_REGISTRY_PASSWORD.
    #[arg(long)]
    username: Option<String>,
}

#[derive(Args)]
pub struct TrustArgs {
    /// A public key whose signature is accepted (repeatable).
    #[arg(long = "key")]
    keys: Vec<PathBuf>,
    /// Accept the artifact without a signature.
    #[arg(long, conflicts_with = "keys")]
    insecure_skip_verify: bool,
}

impl RegistryArgs {
    fn access(&self) -> anyhow::Result<Access> {
        let auth = match &self.username {
            None => Credentials::Anonymous,
            Some(username) => Credentials::Basic {
                username: username.clone(),
                password: std::env::var("OMNI_OPERATOR_REGISTRY_PASSWORD").context(
                    "--username needs the password in the environment variable OMNI_OPERATOR_REGISTRY_PASSWORD",
                )?,
            },
        };
        Ok(Access {
            auth,
            plain_http: self.plain_http,
        })
    }
}

impl TrustArgs {
    fn trust(&self) -> anyhow::Result<Trust> {
        if self.insecure_skip_verify {
            return Ok(Trust::Disabled);
        }
        if self.keys.is_empty() {
            bail!(
                "name a public key with --key (or accept unsigned code with --insecure-skip-verify)"
            );
        }
        let pems = self
            .keys
            .iter()
            .map(|p| {
                std::fs::read(p)
                    .map(|pem| (p.display().to_string(), pem))
                    .with_context(|| format!("reading --key {}", p.display()))
            })
            .collect::<anyhow::Result<Vec<_>>>()?;
        Ok(Trust::Keys(TrustedKeys::from_pems(
            pems.iter().map(|(n, p)| (n.clone(), p.as_slice())),
        )?))
    }
}

fn key_password() -> Vec<u8> {
    std::env::var("COSIGN_PASSWORD")
        .unwrap_or_default()
        .into_bytes()
}

fn oci_reference(text: &str) -> anyhow::Result<oci_client::Reference> {
    match text.parse::<ArtifactRef>()? {
        ArtifactRef::Oci(r) => Ok(r),
        other => bail!("{other} is not an OCI reference: write oci://REGISTRY/REPOSITORY:TAG"),
    }
}

pub async fn run(
    command: AuthorCommand,
    runtime: impl FnOnce() -> anyhow::Result<omni_operator::runtime::Runtime>,
) -> anyhow::Result<bool> {
    match command {
        AuthorCommand::New {
            name,
            group,
            kind,
            sdk,
            path,
        } => new_plugin(&name, &group, &kind, sdk, path)?,
        AuthorCommand::Test {
            wasm,
            fixtures,
            grants,
            record,
            kubeconfig,
            update,
        } => {
            let runtime = runtime()?;
            let grants = omni_operator::capabilities::Grants::parse(&grants)?;
            let name = wasm
                .file_stem()
                .map(|s| s.to_string_lossy().into_owned())
                .unwrap_or_else(|| "plugin".into());
            let spec = omni_operator::runtime::PluginSpec::from_file(name, &wasm)
                .with_context(|| format!("reading {}", wasm.display()))?
                .grants(grants);
            let plugin = runtime.load(spec).await?;
            let mode = match (record, kubeconfig) {
                (true, Some(path)) => {
                    let yaml = std::fs::read_to_string(&path)
                        .with_context(|| format!("reading {}", path.display()))?;
                    let client = omni_operator::operator::client(&yaml).await?;
                    Mode::Record(std::sync::Arc::new(
                        omni_operator::controllers::reader::ApiReader::new(client),
                    ))
                }
                _ => Mode::Replay { update },
            };
            let results = testkit::run(&plugin, &fixtures, &mode).await?;
            let mut failed = 0;
            for r in &results {
                match &r.outcome {
                    Outcome::Passed => println!("ok      {}", r.name),
                    Outcome::Written => println!("written {}", r.name),
                    Outcome::Failed(why) => {
                        failed += 1;
                        println!("FAILED  {}: {why}", r.name);
                    }
                }
            }
            println!("{} passed, {failed} failed", results.len() - failed);
            return Ok(failed == 0);
        }
        AuthorCommand::Push {
            wasm,
            reference,
            sign_key,
            registry,
        } => {
            let reference = oci_reference(&reference)?;
            let access = registry.access()?;
            let component =
                std::fs::read(&wasm).with_context(|| format!("reading {}", wasm.display()))?;
            let meta = metadata::read(&component)
                .with_context(|| format!("{} is not a plugin component", wasm.display()))?;
            let interfaces = metadata::interfaces(&component)?;
            let annotations = meta.as_ref().map(metadata::annotations).unwrap_or_default();
            let digest =
                oci::push(&reference, &component, interfaces, annotations, &access).await?;
            if let Some(key) = sign_key {
                let pem =
                    std::fs::read(&key).with_context(|| format!("reading {}", key.display()))?;
                signature::sign(&reference, &digest, &pem, &key_password(), &access).await?;
            }
            println!(
                "oci://{}/{}@{digest}",
                reference.registry(),
                reference.repository()
            );
        }
        AuthorCommand::Pull {
            reference,
            trust,
            output,
            cache,
            registry,
        } => {
            let parsed: ArtifactRef = reference.parse()?;
            let cache = cache.map(ArtifactCache::new);
            let fetched = distribution::fetch(
                &parsed,
                None,
                &registry.access()?,
                &trust.trust()?,
                cache.as_ref(),
            )
            .await?;
            if let Some(out) = output {
                std::fs::write(&out, &fetched.component)
                    .with_context(|| format!("writing {}", out.display()))?;
            }
            print_fetched(&fetched)?;
        }
        AuthorCommand::Verify {
            reference,
            trust,
            registry,
        } => {
            let fetched = distribution::fetch(
                &reference.parse()?,
                None,
                &registry.access()?,
                &trust.trust()?,
                None,
            )
            .await?;
            print_fetched(&fetched)?;
        }
        AuthorCommand::Sign {
            reference,
            key,
            registry,
        } => {
            let pem = std::fs::read(&key).with_context(|| format!("reading {}", key.display()))?;
            match reference.parse::<ArtifactRef>()? {
                ArtifactRef::File(path) => {
                    let bytes = std::fs::read(&path)
                        .with_context(|| format!("reading {}", path.display()))?;
                    let sig = signature::sign_blob(&bytes, &pem, &key_password())?;
                    let out = PathBuf::from(format!("{}.sig", path.display()));
                    std::fs::write(&out, &sig)
                        .with_context(|| format!("writing {}", out.display()))?;
                    println!("{}", out.display());
                }
                ArtifactRef::Oci(r) => {
                    let access = registry.access()?;
                    let digest = match r.digest() {
                        Some(d) => d.to_string(),
                        None => oci::resolve(&r, &access).await?,
                    };
                    signature::sign(&r, &digest, &pem, &key_password(), &access).await?;
                    println!("oci://{}/{}@{digest}", r.registry(), r.repository());
                }
                ArtifactRef::BuiltIn(n) => {
                    bail!("builtin:{n} is part of the operator; it is not signed")
                }
            }
        }
        AuthorCommand::Keygen { output_prefix } => keygen(&output_prefix)?,
    }
    Ok(true)
}

/// The template's files, with `{{placeholders}}`.
const TEMPLATE: &[(&str, &str)] = &[
    (
        "Cargo.toml",
        include_str!("../templates/plugin/Cargo.toml.txt"),
    ),
    ("src/lib.rs", include_str!("../templates/plugin/lib.rs.txt")),
    (
        "README.md",
        include_str!("../templates/plugin/README.md.txt"),
    ),
    (
        "fixtures/example.object.json",
        include_str!("../templates/plugin/fixture.object.json.txt"),
    ),
    // What discovery says of the kind the example writes, as `--record` would have recorded it.
    (
        "fixtures/example.interactions.json",
        include_str!("../templates/plugin/fixture.interactions.json.txt"),
    ),
];

fn new_plugin(
    name: &str,
    group: &str,
    kind: &str,
    sdk: Option<PathBuf>,
    path: Option<PathBuf>,
) -> anyhow::Result<()> {
    let valid = !name.is_empty()
        && name.len() <= 63
        && name.starts_with(|c: char| c.is_ascii_lowercase())
        && name
            .bytes()
            .all(|b| b.is_ascii_lowercase() || b.is_ascii_digit() || b == b'-');
    if !valid {
        bail!(
            "plugin name {name:?}: use lowercase letters, digits and '-', starting with a letter"
        );
    }
    if !kind.starts_with(|c: char| c.is_ascii_uppercase())
        || !kind.bytes().all(|b| b.is_ascii_alphanumeric())
    {
        bail!("--kind {kind:?}: a kind is CamelCase letters and digits, e.g. Widget");
    }
    if group.is_empty() || !group.contains('.') || group == "core" {
        bail!("--group {group:?}: use a DNS name you own, e.g. example.com (never a core group)");
    }
    let sdk = match sdk {
        Some(p) => p,
        None => PathBuf::from(concat!(env!("CARGO_MANIFEST_DIR"), "/../plugins/sdk")),
    };
    let sdk = std::fs::canonicalize(&sdk).with_context(|| {
        format!(
            "the SDK crate is not at {}; name it with --sdk PATH/TO/plugins/sdk",
            sdk.display()
        )
    })?;
    let dir = path.unwrap_or_else(|| PathBuf::from(name));
    if dir.exists() {
        bail!("{} exists; not overwriting it", dir.display());
    }
    let lib = name.replace('-', "_");
    for (file, text) in TEMPLATE {
        let text = text
            .replace("{{name}}", name)
            .replace("{{crate}}", name)
            .replace("{{lib}}", &lib)
            .replace("{{group}}", group)
            .replace("{{kind}}", kind)
            .replace("{{sdk}}", &sdk.display().to_string());
        let target = dir.join(file);
        if let Some(parent) = target.parent() {
            std::fs::create_dir_all(parent)
                .with_context(|| format!("creating {}", parent.display()))?;
        }
        std::fs::write(&target, text).with_context(|| format!("writing {}", target.display()))?;
    }
    println!("{}", dir.display());
    Ok(())
}

fn print_fetched(fetched: &distribution::Fetched) -> anyhow::Result<()> {
    println!(
        "{}",
        serde_json::to_string_pretty(&json!({
            "pinned": fetched.pinned,
            "digest": fetched.digest,
            "signedBy": fetched.signed_by,
            "metadata": fetched.metadata,
            "fromCache": fetched.from_cache,
        }))?
    );
    Ok(())
}

fn keygen(prefix: &Path) -> anyhow::Result<()> {
    let password = key_password();
    let (private, public) = signature::generate_key_pair(&password)?;
    let key = prefix.with_extension("key");
    let public_path = prefix.with_extension("pub");
    for path in [&key, &public_path] {
        if path.exists() {
            bail!("{} exists; not overwriting a key", path.display());
        }
    }
    write_private(&key, private.as_bytes())?;
    std::fs::write(&public_path, public)
        .with_context(|| format!("writing {}", public_path.display()))?;
    println!("{}\n{}", key.display(), public_path.display());
    Ok(())
}

/// A private key file readable by its owner only, from its creation on.
fn write_private(path: &Path, bytes: &[u8]) -> anyhow::Result<()> {
    use std::io::Write as _;
    use std::os::unix::fs::OpenOptionsExt as _;
    let mut file = std::fs::OpenOptions::new()
        .write(true)
        .create_new(true)
        .mode(0o600)
        .open(path)
        .with_context(|| format!("creating {}", path.display()))?;
    file.write_all(bytes)
        .with_context(|| format!("writing {}", path.display()))
}
