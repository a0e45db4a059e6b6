//! The fleet against a second storage server from the package registries:
//! Azurite (npm, Microsoft's Azure Storage emulator, which checks Shared
//! Key signatures), as `tests/command/fleet.rs` runs it against moto. Two
//! `lro gateway` replicas share one container: a result over one 8 MiB
//! part offloaded by one is paged (ranged reads) and counted through the
//! other with the same token only, read from a shell with `lro extract
//! --store`, and a missing container is refused at start in one line.

use crate::common;

use std::net::{SocketAddr, TcpListener};
use std::path::Path;
use std::process::{Child, Command, Stdio};

use common::mcp::{Mode, mcp_service, serve_mcp};
use common::procs::{Proc, wait_for_port};
use serde_json::{Value, json};

use crate::fleet::{call, count_via, text_of};
use crate::gateway::lro_bin;

/// The emulator's well-known account.
const ACCOUNT: &str = "devstoreaccount1";
/// Its well-known key (public, in Microsoft's docs).
const KEY: &str =
    "Eby8vdM02xNOcqFlqUwJPLlmEtlCDXJ1OUzFT50uSRZ6IFsuFq2UVErCz4I6tq/K1SZFPTOtr/KBHBeksoGMGw==";
const CONTAINER: &str = "lro-fleet";

/// `azurite-blob` on a free loopback port, killed on drop.
struct Azurite {
    child: Child,
    port: u16,
    _data: tempfile::TempDir,
}

impl Drop for Azurite {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// Starts Azurite from the interop packages and makes the container
/// (with the official Python client, `azure-storage-blob`).
fn azurite(interop: &Path) -> Azurite {
    let port = TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap()
        .port();
    let data = tempfile::tempdir().unwrap();
    let child = Command::new(interop.join("node_modules/.bin/azurite-blob"))
        .args(["--blobHost", "127.0.0.1", "--blobPort", &port.to_string()])
        .arg("--location")
        .arg(data.path())
        .args(["--skipApiVersionCheck", "--silent"])
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()
        .expect("azurite-blob (tests/interop/setup.sh installs it)");
    let azurite = Azurite {
        child,
        port,
        _data: data,
    };
    wait_for_port(SocketAddr::from(([127, 0, 0, 1], port)));
    let connection = format!(
        "DefaultEndpointsProtocol=http;AccountName={ACCOUNT};AccountKey={KEY};\
         BlobEndpoint=http://127.0.0.1:{port}/{ACCOUNT};"
    );
    let made = Command::new(interop.join(".venv/bin/python"))
        .args([
            "-c",
            "import sys; from azure.storage.blob import BlobServiceClient as C; \
             C.from_connection_string(sys.argv[1]).create_container(sys.argv[2])",
            &connection,
            CONTAINER,
        ])
        .output()
        .unwrap();
    assert!(
        made.status.success(),
        "container: {}",
        String::from_utf8_lossy(&made.stderr)
    );
    azurite
}

/// `lro` with the Azure variables pointing at the emulator.
fn lro(port: u16) -> Command {
    let mut cmd = Command::new(lro_bin());
    cmd.env("AZURE_STORAGE_USE_EMULATOR", "true")
        .env(
            "AZURITE_BLOB_STORAGE_URL",
            format!("http://127.0.0.1:{port}"),
        )
        .env("RUST_LOG", "info");
    cmd
}

fn replica(port: u16, args: &[&str]) -> (Proc, SocketAddr) {
    let mut cmd = lro(port);
    cmd.args(["gateway", "--listen", "127.0.0.1:0"]).args(args);
    crate::gateway::start_gateway(cmd)
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn replicas_share_files_through_azurite() {
    let Some(interop) = common::interop_setup() else {
        return;
    };
    let az = azurite(&interop);
    let dir = tempfile::tempdir().unwrap();
    let key = dir.path().join("binding.key");
    std::fs::write(&key, format!("{}\n", "3c".repeat(32))).unwrap();
    let upstream = serve_mcp(mcp_service(Mode::StatelessJson), None).await;
    let upstream = format!("http://{upstream}/mcp");
    let store = format!("az://{CONTAINER}/fleet");
    let args = [
        "--upstream",
        upstream.as_str(),
        "--store",
        store.as_str(),
        "--binding-key-file",
        key.to_str().unwrap(),
    ];
    let (_a, a) = replica(az.port, &args);
    let (_b, b) = replica(az.port, &args);
    let (a, b) = (format!("http://{a}/mcp"), format!("http://{b}/mcp"));

    // Over one 8 MiB part: a multipart upload (Azure's block list).
    let v = call(
        &a,
        "erin",
        1,
        "recall_memories",
        json!({"query": "big", "count": 12000}),
    )
    .await
    .unwrap();
    let d: Value = serde_json::from_str(&text_of(&v).0).expect("a descriptor");
    let file = d["file_path"].as_str().unwrap();
    assert!(file.starts_with("lro://files/"), "{file}");
    let page = json!({"file_path": file, "recipe": 1, "limit": 5});
    let v = call(&b, "erin", 2, "lro_extract", page.clone())
        .await
        .unwrap();
    let (text, err) = text_of(&v);
    assert!(!err && text.lines().count() == 5, "{text}");
    assert_eq!(count_via(&b, "erin", file).await, Ok(12000));
    let (refused, err) = text_of(&call(&b, "mallory", 3, "lro_extract", page).await.unwrap());
    assert!(err && refused.starts_with("no offloaded file"), "{refused}");

    // From a shell, as the guidance says.
    let guidance = d["guidance"].as_str().unwrap();
    assert!(
        guidance.contains(&format!("lro extract --store {store} {file}")),
        "{guidance}"
    );
    let out = lro(az.port)
        .args(["extract", "--store", &store, file, "--recipe", "1"])
        .args(["--limit", "3"])
        .output()
        .unwrap();
    assert!(
        out.status.success() && String::from_utf8_lossy(&out.stdout).lines().count() == 3,
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );

    // A container that does not exist: refused at start, one line.
    let out = lro(az.port)
        .args([
            "gateway",
            "--listen",
            "127.0.0.1:0",
            "--upstream",
            &upstream,
        ])
        .args(["--store", "az://no-such-container/fleet"])
        .stdout(Stdio::null())
        .output()
        .unwrap();
    let err = String::from_utf8_lossy(&out.stderr);
    let last = err.lines().last().unwrap_or_default();
    assert!(!out.status.success(), "{err}");
    assert!(
        last.contains("az://no-such-container/fleet") && !last.contains('<'),
        "{err}"
    );
}
