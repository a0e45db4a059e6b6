//! `lro` as users install it without Rust: the npm packages
//! (`packaging/npm`: the `tower-lro` launcher and the `@tower-lro/linux-x64`
//! platform package, packed with `npm pack` around the binary cargo built
//! for these tests) and the PyPI wheel (`packaging/pypi`, built with
//! maturin), each installed into an empty directory or a fresh venv with no
//! Rust on `PATH`, then used as `mcp-remote` users use a proxy: the official
//! MCP Python SDK's stdio client starts `npx -y tower-lro proxy URL` (or the
//! wheel's `lro proxy URL`, `uvx tower-lro proxy URL`) against the Python SDK
//! server: a large result offloaded, `lro_extract` on its file giving the
//! true counts, small results byte-identical to the server's own.
//!
//! A test binary of its own: cargo runs test binaries one after another,
//! so maturin's build of the wheel (minutes, its own target directory,
//! `target/packaging`) never competes for the cores with the timed parts of
//! the other tests.

#[path = "../../../tests/common/mod.rs"]
mod common;

use std::collections::BTreeMap;
use std::ffi::OsString;
use std::path::{Path, PathBuf};
use std::process::{Command, Output};
use std::time::Duration;

use serde_json::{Value, json};

use common::procs::python_server;

/// The `lro` binary cargo built for these tests.
fn lro_bin() -> PathBuf {
    PathBuf::from(env!("CARGO_BIN_EXE_lro"))
}

/// The project root (packaging/ and the licenses are there).
fn root() -> PathBuf {
    common::repo_root()
}

/// `PATH` without the directories that hold `cargo` or `rustc`: what the
/// packages are installed and run with.
fn path_without_rust() -> OsString {
    let path = std::env::var_os("PATH").unwrap_or_default();
    let kept = std::env::split_paths(&path).filter(|dir| {
        !["cargo", "rustc", "rustup"]
            .iter()
            .any(|t| dir.join(t).exists())
    });
    std::env::join_paths(kept).expect("a PATH")
}

/// Checks that no `cargo`, `rustc` or `rustup` runs with
/// [`path_without_rust`].
fn assert_no_rust() {
    let mut sh = Command::new("sh");
    sh.args([
        "-c",
        "command -v cargo || command -v rustc || command -v rustup",
    ])
    .env("PATH", path_without_rust());
    let out = common::output_within_blocking(sh, Duration::from_secs(30), "command -v");
    assert!(
        !out.status.success(),
        "Rust is still on PATH: {}",
        String::from_utf8_lossy(&out.stdout)
    );
}

/// `cmd` run to its end within `secs` with `PATH` from
/// [`path_without_rust`]; fails the test with its output unless it
/// succeeds.
fn run_ok(mut cmd: Command, secs: u64, what: &str) -> Output {
    cmd.env("PATH", path_without_rust());
    let out = common::output_within_blocking(cmd, Duration::from_secs(secs), what);
    assert!(
        out.status.success(),
        "{what}: {}\nstdout: {:.3000}\nstderr: {:.3000}",
        out.status,
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
    out
}

/// `lro --version` as the packages must print it: the crate's version and
/// the feature `object-store`.
fn expected_version() -> String {
    format!("lro {} (features: object-store)", env!("CARGO_PKG_VERSION"))
}

/// Per-category counts of py_server.py's `make_records(count)`.
fn expected_categories(count: usize) -> BTreeMap<String, u64> {
    const CATEGORIES: [&str; 5] = ["alpha", "beta", "gamma", "delta", "epsilon"];
    let mut m = BTreeMap::new();
    for i in 0..count {
        *m.entry(CATEGORIES[(i * i) % 5].to_owned()).or_insert(0) += 1;
    }
    m
}

/// Runs `package_client.py` with `server` (a stdio MCP server command, or
/// one gateway URL) in `cwd`, against the Python server at `url`, and
/// checks what it reports.
fn check_proxy(interop: &Path, server: &[String], cwd: &Path, url: &str, what: &str) {
    let mut cmd = Command::new(interop.join(".venv/bin/python"));
    cmd.arg(interop.join("package_client.py"))
        .arg(json!(server).to_string())
        .arg(cwd)
        .arg(url);
    let out = run_ok(cmd, 180, what);
    let report: Value = serde_json::from_slice(&out.stdout).unwrap_or_else(|e| {
        panic!(
            "{what}: no report ({e}): {:.2000}",
            String::from_utf8_lossy(&out.stdout)
        )
    });
    let tools = report["tools"].as_array().expect("tools");
    for tool in ["greet", "records_text", "lro_extract", "lro_list"] {
        assert!(
            tools.iter().any(|t| t == tool),
            "{what}: {tool} listed: {tools:?}"
        );
    }
    assert_eq!(
        report["small"], report["direct_small"],
        "{what}: small results pass byte-identical"
    );
    assert!(
        report["small"]
            .as_array()
            .is_some_and(|s| s.iter().all(|r| r.get("ok").is_some())),
        "{what}: {}",
        report["small"]
    );
    let d = &report["descriptor"];
    assert_eq!(d["offloaded"], true, "{what}: {:.2000}", report["large"]);
    assert_eq!(d["summary"]["count"], 2000, "{what}: {d}");
    let file = d["file_path"].as_str().expect("a file path");
    // A gateway in a container writes inside it.
    let in_container = server.len() == 1;
    assert!(
        in_container || Path::new(file).is_file(),
        "{what}: {file} written"
    );
    let extract = &report["extract"]["ok"];
    let text = extract["content"][0]["text"].as_str().unwrap_or_default();
    let counts: Vec<Value> = serde_json::from_str(text.trim())
        .unwrap_or_else(|e| panic!("{what}: lro_extract answered {extract} ({e})"));
    let got: BTreeMap<String, u64> = counts
        .iter()
        .map(|c| {
            (
                c["category"].as_str().unwrap().to_owned(),
                c["count"].as_u64().unwrap(),
            )
        })
        .collect();
    assert_eq!(
        got,
        expected_categories(2000),
        "{what}: lro_extract's counts"
    );
}

/// The MCP client configurations in README.md (each a JSON block after a
/// `<!-- client: NAME -->` line): the client's name and the server's
/// command line (`command`, then `args`).
fn readme_client_configs() -> Vec<(String, Vec<String>)> {
    let readme = std::fs::read_to_string(root().join("README.md")).expect("README.md");
    let mut configs = Vec::new();
    for part in readme.split("<!-- client: ").skip(1) {
        let (name, rest) = part.split_once(" -->").expect("a marker's end");
        let block = rest
            .split_once("```json\n")
            .and_then(|(_, b)| b.split_once("```"))
            .map(|(json, _)| json)
            .unwrap_or_else(|| panic!("{name}: no JSON block after the marker"));
        let config: Value = serde_json::from_str(block)
            .unwrap_or_else(|e| panic!("{name}: the README's JSON does not parse ({e}): {block}"));
        let servers = config
            .get("mcpServers")
            .or_else(|| config.get("servers"))
            .and_then(Value::as_object)
            .unwrap_or_else(|| panic!("{name}: no mcpServers or servers: {config}"));
        let server = servers.values().next().expect("one server");
        let mut argv = vec![server["command"].as_str().expect("command").to_owned()];
        for arg in server["args"].as_array().expect("args") {
            argv.push(arg.as_str().expect("a string argument").to_owned());
        }
        configs.push((name.to_owned(), argv));
    }
    configs
}

/// The interop tooling and the Python SDK server with its URL (`None`:
/// skipped, see `common::require`).
fn python_setup() -> Option<(PathBuf, common::procs::Proc, String)> {
    let interop = common::interop_setup()?;
    let (server, port) = python_server(&[])?;
    Some((interop, server, format!("http://127.0.0.1:{port}/mcp")))
}

/// The binary cargo built for these tests, stripped of its debug
/// information (as the release profile's packages are small), in `dir`.
fn stripped_lro(dir: &Path) -> PathBuf {
    let copy = dir.join("lro");
    std::fs::copy(lro_bin(), &copy).expect("copy lro");
    if common::require_tool("strip") {
        let mut strip = Command::new("strip");
        strip.arg(&copy);
        run_ok(strip, 120, "strip lro");
    }
    copy
}

/// npm: the launcher and the linux-x64 package, packed, installed from the
/// tarballs into an empty directory and run by `npx` as an MCP client's
/// configuration runs `mcp-remote`; the launcher alone (npm skips a
/// platform package it cannot find) and on a platform without a package
/// says so in one line, naming the `cargo install` fallback.
#[test]
fn npx_tower_lro_proxy_works_as_mcp_remote_does() {
    if !(common::require_tool("node") && common::require_tool("npm")) {
        return;
    }
    if !(cfg!(target_os = "linux") && cfg!(target_arch = "x86_64")) {
        return; // The one platform package built here.
    }
    let Some((interop, _server, url)) = python_setup() else {
        return;
    };
    let tmp = tempfile::tempdir().unwrap();
    assert_no_rust();
    let binary = stripped_lro(tmp.path());
    let out_dir = tmp.path().join("tarballs");
    let mut pack = Command::new("node");
    pack.arg(root().join("packaging/npm/pack.mjs"))
        .arg("--out")
        .arg(&out_dir)
        .arg("--binary")
        .arg(format!("linux-x64={}", binary.display()));
    let packed: Value =
        serde_json::from_slice(&run_ok(pack, 300, "pack.mjs").stdout).expect("JSON");
    assert_eq!(packed["version"], env!("CARGO_PKG_VERSION"));
    let launcher = packed["launcher"].as_str().unwrap();
    let platform = packed["platforms"]["linux-x64"].as_str().unwrap();
    let cache = tmp.path().join("npm-cache");
    let install = |dir: &Path, tarballs: &[&str]| {
        std::fs::create_dir_all(dir).unwrap();
        let mut npm = Command::new("npm");
        npm.current_dir(dir)
            .args([
                "install",
                "--no-audit",
                "--no-fund",
                "--loglevel=error",
                "--cache",
            ])
            .arg(&cache)
            .args(tarballs);
        run_ok(npm, 300, "npm install of the tarballs");
    };
    let npx = |dir: &Path, args: &[&str]| {
        let mut cmd = Command::new("npx");
        cmd.current_dir(dir)
            .args(["-y", "--cache"])
            .arg(&cache)
            .args(args);
        cmd.env("PATH", path_without_rust());
        common::output_within_blocking(cmd, Duration::from_secs(120), "npx")
    };

    let app = tmp.path().join("app");
    install(&app, &[launcher, platform]);
    for name in ["tower-lro", "lro"] {
        let out = npx(&app, &[name, "--version"]);
        assert!(out.status.success(), "npx {name} --version: {out:?}");
        assert_eq!(
            String::from_utf8_lossy(&out.stdout).trim(),
            expected_version()
        );
    }
    let files = tmp.path().join("files");
    // The README's lines for Claude Desktop, Cursor and VS Code, as those
    // clients run them: the command and its arguments, over stdio.
    let configs = readme_client_configs();
    assert_eq!(configs.len(), 3, "{configs:?}");
    for (client, mut argv) in configs {
        assert_eq!(
            argv[..4],
            ["npx", "-y", "tower-lro", "proxy"],
            "{client}: {argv:?}"
        );
        for arg in &mut argv {
            if arg == "https://example.com/mcp" {
                arg.clone_from(&url);
            }
        }
        argv.extend(["--output-dir".into(), files.display().to_string()]);
        check_proxy(
            &interop,
            &argv,
            &app,
            &url,
            &format!("README's {client} line"),
        );
    }
    let server: Vec<String> = ["npx", "-y", "--cache"]
        .iter()
        .map(|s| s.to_string())
        .chain([
            cache.display().to_string(),
            "tower-lro".into(),
            "proxy".into(),
            url.clone(),
        ])
        .chain(["--output-dir".into(), files.display().to_string()])
        .collect();
    check_proxy(&interop, &server, &app, &url, "npx -y tower-lro proxy");

    // The launcher alone: npm found no @tower-lro/linux-x64 to install.
    let bare = tmp.path().join("bare");
    install(&bare, &[launcher]);
    let out = npx(&bare, &["tower-lro", "proxy", &url]);
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(1), "{stderr}");
    assert_eq!(stderr.lines().count(), 1, "one line: {stderr}");
    assert!(
        stderr.contains("@tower-lro/linux-x64") && stderr.contains("cargo install tower-lro"),
        "{stderr}"
    );
    // A platform no package is built for.
    let preload = tmp.path().join("freebsd.cjs");
    std::fs::write(
        &preload,
        r#"Object.defineProperty(process, "platform", { value: "freebsd" });"#,
    )
    .unwrap();
    let mut node = Command::new("node");
    node.arg("-r")
        .arg(&preload)
        .arg(app.join("node_modules/tower-lro/bin/lro.js"))
        .arg("--version");
    let out = common::output_within_blocking(node, Duration::from_secs(60), "launcher on freebsd");
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(1), "{stderr}");
    assert_eq!(
        stderr.trim(),
        "lro: no prebuilt lro for freebsd-x64; install from source instead: \
         cargo install tower-lro-cli"
    );
}

/// PyPI: the wheel maturin builds from `packaging/pypi` (the same `lro`,
/// compiled by maturin's own cargo run into `target/packaging`, not the
/// tests' target directory), installed into a fresh venv, and run by `uvx`
/// and `pipx run` from the wheel, all with no Rust on `PATH`.
#[test]
fn the_wheel_runs_as_lro_uvx_and_pipx() {
    let Some((interop, _server, url)) = python_setup() else {
        return;
    };
    let venv_bin = interop.join(".venv/bin");
    for tool in ["maturin", "uvx", "pipx"] {
        if !common::require(
            tool,
            venv_bin.join(tool).is_file(),
            "tests/interop/requirements.txt installs it",
        ) {
            return;
        }
    }
    let tmp = tempfile::tempdir().unwrap();
    let wheels = tmp.path().join("wheels");
    let mut maturin = Command::new(venv_bin.join("maturin"));
    maturin
        .current_dir(root().join("packaging/pypi"))
        .args(["build", "--profile", "dev", "--out"])
        .arg(&wheels)
        .env("CARGO_TARGET_DIR", root().join("target/packaging"))
        // No debug information: a quicker build and a smaller wheel.
        .env("CARGO_PROFILE_DEV_DEBUG", "0");
    let out = common::output_within_blocking(maturin, Duration::from_secs(1800), "maturin build");
    assert!(
        out.status.success(),
        "maturin build: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    let wheel = std::fs::read_dir(&wheels)
        .unwrap()
        .map(|e| e.unwrap().path())
        .find(|p| p.extension().is_some_and(|e| e == "whl"))
        .expect("a wheel");
    let name = wheel.file_name().unwrap().to_string_lossy().into_owned();
    let version = env!("CARGO_PKG_VERSION");
    assert!(
        name.starts_with(&format!("tower_lro-{version}-py3-none-"))
            && name.contains("linux")
            && name.ends_with("_x86_64.whl"),
        "{name}"
    );

    // A fresh venv, the wheel alone (no index).
    assert_no_rust();
    let venv = tmp.path().join("venv");
    let mut mk = Command::new("python3");
    mk.args(["-m", "venv"]).arg(&venv);
    run_ok(mk, 120, "python3 -m venv");
    let mut pip = Command::new(venv.join("bin/pip"));
    pip.args(["install", "-q", "--no-index", "--disable-pip-version-check"])
        .arg(&wheel);
    run_ok(pip, 300, "pip install of the wheel");
    for exe in ["lro", "tower-lro"] {
        let mut cmd = Command::new(venv.join("bin").join(exe));
        cmd.arg("--version");
        let out = run_ok(cmd, 60, exe);
        assert_eq!(
            String::from_utf8_lossy(&out.stdout).trim(),
            expected_version()
        );
    }
    let files = tmp.path().join("files");
    let lro = venv.join("bin/lro").display().to_string();
    let server = [
        lro,
        "proxy".into(),
        url.clone(),
        "--output-dir".into(),
        files.display().to_string(),
    ];
    check_proxy(&interop, &server, tmp.path(), &url, "the wheel's lro proxy");

    // uvx and pipx run, from the wheel's directory (offline).
    let uv_cache = tmp.path().join("uv-cache").display().to_string();
    let uvx = [
        venv_bin.join("uvx").display().to_string(),
        "--offline".into(),
        "--cache-dir".into(),
        uv_cache,
        "--find-links".into(),
        wheels.display().to_string(),
        "tower-lro".into(),
        "proxy".into(),
        url.clone(),
        "--output-dir".into(),
        files.display().to_string(),
    ];
    check_proxy(&interop, &uvx, tmp.path(), &url, "uvx tower-lro proxy");
    let mut pipx = Command::new(venv_bin.join("pipx"));
    pipx.args(["run", "--spec"])
        .arg(&wheel)
        .args(["tower-lro", "--version"])
        .env("PIPX_HOME", tmp.path().join("pipx"))
        .env("PIPX_BIN_DIR", tmp.path().join("pipx-bin"))
        .env("PIP_NO_INDEX", "1");
    let out = run_ok(pipx, 300, "pipx run tower-lro");
    assert_eq!(
        String::from_utf8_lossy(&out.stdout).trim(),
        expected_version()
    );
}

/// `buildah` with its own storage under `dir` (the vfs driver: no overlay
/// mounts needed) and `args`.
fn buildah(dir: &Path, args: &[&str]) -> Command {
    let mut cmd = Command::new("buildah");
    cmd.arg("--root")
        .arg(dir.join("storage"))
        .arg("--runroot")
        .arg(dir.join("run"))
        .args(["--storage-driver", "vfs"])
        .args(args);
    cmd
}

/// The processes descending from `pid` (from /proc's parent links).
fn descendants(pid: u32) -> Vec<u32> {
    let mut parents = Vec::new();
    for entry in std::fs::read_dir("/proc").into_iter().flatten().flatten() {
        let Ok(child) = entry.file_name().to_string_lossy().parse::<u32>() else {
            continue;
        };
        let Ok(stat) = std::fs::read_to_string(entry.path().join("stat")) else {
            continue;
        };
        // `pid (comm) state ppid ...`: comm may hold spaces, so after ')'.
        let ppid = stat
            .rsplit_once(')')
            .and_then(|(_, rest)| rest.split_whitespace().nth(1)?.parse::<u32>().ok());
        if let Some(ppid) = ppid {
            parents.push((child, ppid));
        }
    }
    let mut found = vec![pid];
    for _ in 0..16 {
        let before = found.len();
        for (child, ppid) in &parents {
            if found.contains(ppid) && !found.contains(child) {
                found.push(*child);
            }
        }
        if found.len() == before {
            break;
        }
    }
    found.retain(|p| *p != pid);
    found
}

/// A process killed (SIGTERM, then SIGKILL) on drop: the gateway that
/// `buildah run` started, which killing buildah alone would leave running.
struct KillOnDrop(Vec<u32>);

impl Drop for KillOnDrop {
    fn drop(&mut self) {
        for signal in ["-TERM", "-KILL"] {
            for pid in &self.0 {
                let _ = Command::new("kill")
                    .arg(signal)
                    .arg(pid.to_string())
                    .output();
            }
            // A real process stopping: given a moment on the wall clock.
            std::thread::sleep(Duration::from_millis(300));
        }
    }
}

/// The container image (`packaging/container`: rootfs.sh, then the
/// Containerfile, FROM scratch) built with buildah from Debian's packages,
/// no base image pulled; the gateway started from it (`buildah run`),
/// running as the non-root user 65532, in front of the Python SDK server,
/// used by the Python SDK client over HTTP.
#[test]
fn the_container_image_runs_the_gateway() {
    if !common::require_tool("buildah") {
        return;
    }
    let Some((interop, _server, url)) = python_setup() else {
        return;
    };
    let tmp = tempfile::tempdir().unwrap();
    let binary = stripped_lro(tmp.path());
    let context = tmp.path().join("context");
    let mut rootfs = Command::new(root().join("packaging/container/rootfs.sh"));
    rootfs.arg(&binary).arg(&context);
    run_ok(rootfs, 120, "rootfs.sh");
    let containerfile = root().join("packaging/container/Containerfile");
    let tag = "localhost/tower-lro:test";
    let mut bud = buildah(
        tmp.path(),
        &["bud", "--isolation", "chroot", "-t", tag, "-f"],
    );
    bud.arg(&containerfile).arg(&context);
    run_ok(bud, 300, "buildah bud");
    let inspect = run_ok(
        buildah(tmp.path(), &["inspect", "--type", "image", tag]),
        60,
        "inspect",
    );
    let image: Value = serde_json::from_slice(&inspect.stdout).expect("JSON");
    let config = &image["OCIv1"]["config"];
    assert_eq!(config["User"], "65532:65532", "{config}");
    assert_eq!(
        config["Entrypoint"],
        json!(["/usr/local/bin/lro"]),
        "{config}"
    );
    let from = run_ok(buildah(tmp.path(), &["from", tag]), 60, "buildah from");
    let container = String::from_utf8_lossy(&from.stdout).trim().to_owned();

    let mut version = buildah(
        tmp.path(),
        &["run", "--isolation", "chroot", &container, "--"],
    );
    version.args(["/usr/local/bin/lro", "--version"]);
    let out = run_ok(version, 60, "lro --version in the image");
    assert_eq!(
        String::from_utf8_lossy(&out.stdout).trim(),
        expected_version()
    );

    let mut run = buildah(
        tmp.path(),
        &["run", "--isolation", "chroot", &container, "--"],
    );
    run.args([
        "/usr/local/bin/lro",
        "gateway",
        "--listen",
        "127.0.0.1:0",
        "--upstream",
        &url,
    ]);
    let (buildah_run, rest) = common::procs::spawn_ready(
        "the gateway in the image",
        run,
        "lro gateway listening on ",
        Duration::from_secs(60),
    );
    let gateway = KillOnDrop(descendants(buildah_run.pid()));
    let uids: Vec<String> = gateway
        .0
        .iter()
        .filter(|pid| {
            std::fs::read_to_string(format!("/proc/{pid}/comm")).is_ok_and(|c| c.trim() == "lro")
        })
        .filter_map(|pid| std::fs::read_to_string(format!("/proc/{pid}/status")).ok())
        .filter_map(|status| {
            status
                .lines()
                .find(|l| l.starts_with("Uid:"))
                .map(|l| l.split_whitespace().nth(1).unwrap_or_default().to_owned())
        })
        .collect();
    assert_eq!(uids, ["65532"], "the gateway runs as the non-root user");
    check_proxy(
        &interop,
        &[rest.trim().to_owned()],
        tmp.path(),
        &url,
        "the image's gateway",
    );
    drop(gateway);
    drop(buildah_run);
}
