#!/usr/bin/env node
// Packs the npm packages of the `lro` command with `npm pack`:
//
//   node packaging/npm/pack.mjs --out DIR [--binary PLATFORM=PATH]...
//
// Always the launcher, `tower-lro` (bin/lro.js; every platform below in its
// optionalDependencies); and, for each --binary, the platform package
// `@tower-lro/PLATFORM` holding that binary as bin/lro (bin/lro.exe on
// Windows), with `os`, `cpu` and `libc` set so that npm installs only the
// one for the user's machine. Versions come from Cargo.toml. A binary for
// the platform this runs on is run once: its `--version` must name the same
// version and the feature `object-store`. Prints one JSON object:
// {"version", "launcher": tarball, "platforms": {PLATFORM: tarball}}.
import { execFileSync } from "node:child_process";
import fs from "node:fs";
import os from "node:os";
import path from "node:path";
import { fileURLToPath } from "node:url";

const here = path.dirname(fileURLToPath(import.meta.url));
const root = path.resolve(here, "../..");

/** Every platform the launcher knows, with its Rust target (see release.yml). */
export const PLATFORMS = {
  "linux-x64": { os: "linux", cpu: "x64", libc: "glibc", target: "x86_64-unknown-linux-gnu" },
  "linux-x64-musl": { os: "linux", cpu: "x64", libc: "musl", target: "x86_64-unknown-linux-musl" },
  "linux-arm64": { os: "linux", cpu: "arm64", libc: "glibc", target: "aarch64-unknown-linux-gnu" },
  "darwin-x64": { os: "darwin", cpu: "x64", target: "x86_64-apple-darwin" },
  "darwin-arm64": { os: "darwin", cpu: "arm64", target: "aarch64-apple-darwin" },
  "win32-x64": { os: "win32", cpu: "x64", target: "x86_64-pc-windows-msvc" },
};

const REQUIRED_FEATURES = ["object-store"];

function die(message) {
  process.stderr.write(`pack.mjs: ${message}\n`);
  process.exit(1);
}

function cargoVersion() {
  const toml = fs.readFileSync(path.join(root, "lro", "Cargo.toml"), "utf8");
  const pkg = toml.split(/^\[/m).find((s) => s.startsWith("package]"));
  const m = pkg && pkg.match(/^version\s*=\s*"([^"]+)"/m);
  if (!m) die("no [package] version in lro/Cargo.toml");
  return m[1];
}

function parseArgs(argv) {
  const opts = { out: null, binaries: {} };
  for (let i = 0; i < argv.length; i++) {
    const arg = argv[i];
    if (arg === "--out") opts.out = argv[++i];
    else if (arg === "--binary") {
      const [key, ...rest] = (argv[++i] || "").split("=");
      if (!PLATFORMS[key] || rest.length === 0) {
        die(`--binary takes PLATFORM=PATH, PLATFORM one of ${Object.keys(PLATFORMS).join(", ")}`);
      }
      opts.binaries[key] = path.resolve(rest.join("="));
    } else die(`unknown argument ${arg}`);
  }
  if (!opts.out) die("--out DIR is required");
  return opts;
}

function hostKey() {
  let key = `${process.platform}-${process.arch}`;
  const report = process.platform === "linux" && process.report.getReport();
  if (report && !report.header.glibcVersionRuntime) key += "-musl";
  return key;
}

/** `binary --version` names `version` and the required features. */
function checkVersion(binary, version) {
  const printed = execFileSync(binary, ["--version"], { encoding: "utf8" }).trim();
  const features = (printed.match(/\(features: ([^)]*)\)/) || [])[1] || "";
  const have = features.split(",").map((f) => f.trim());
  const missing = REQUIRED_FEATURES.filter((f) => !have.includes(f));
  if (!printed.startsWith(`lro ${version} `) || missing.length > 0) {
    die(`${binary} --version printed "${printed}": want lro ${version} with ${REQUIRED_FEATURES.join(", ")}`);
  }
}

function npmPack(dir, out) {
  const printed = execFileSync("npm", ["pack", "--json", "--pack-destination", out], {
    cwd: dir,
    encoding: "utf8",
    stdio: ["ignore", "pipe", "inherit"],
  });
  return path.join(out, JSON.parse(printed)[0].filename);
}

function copyLicenses(dir) {
  for (const name of ["LICENSE-MIT", "LICENSE-APACHE"]) {
    fs.copyFileSync(path.join(root, name), path.join(dir, name));
  }
}

function packLauncher(stage, out, version) {
  const dir = path.join(stage, "tower-lro");
  fs.cpSync(path.join(here, "tower-lro"), dir, { recursive: true });
  const manifest = JSON.parse(fs.readFileSync(path.join(dir, "package.json"), "utf8"));
  manifest.version = version;
  manifest.optionalDependencies = Object.fromEntries(
    Object.keys(PLATFORMS).map((key) => [`@tower-lro/${key}`, version]),
  );
  manifest.files.push("LICENSE-MIT", "LICENSE-APACHE");
  fs.writeFileSync(path.join(dir, "package.json"), `${JSON.stringify(manifest, null, 2)}\n`);
  copyLicenses(dir);
  return npmPack(dir, out);
}

function packPlatform(stage, out, version, key, binary) {
  const p = PLATFORMS[key];
  if (key === hostKey()) checkVersion(binary, version);
  const dir = path.join(stage, key);
  const exe = p.os === "win32" ? "lro.exe" : "lro";
  fs.mkdirSync(path.join(dir, "bin"), { recursive: true });
  fs.copyFileSync(binary, path.join(dir, "bin", exe));
  fs.chmodSync(path.join(dir, "bin", exe), 0o755);
  const manifest = {
    name: `@tower-lro/${key}`,
    version,
    description: `The lro binary (${p.target}) of the tower-lro npm package`,
    license: "MIT OR Apache-2.0",
    repository: { type: "git", url: "git+https://github.com/tower-lro/tower-lro.git" },
    os: [p.os],
    cpu: [p.cpu],
    ...(p.libc ? { libc: [p.libc] } : {}),
    files: [`bin/${exe}`, "LICENSE-MIT", "LICENSE-APACHE"],
    preferUnplugged: true,
  };
  fs.writeFileSync(path.join(dir, "package.json"), `${JSON.stringify(manifest, null, 2)}\n`);
  copyLicenses(dir);
  return npmPack(dir, out);
}

function main() {
  const opts = parseArgs(process.argv.slice(2));
  const version = cargoVersion();
  const out = path.resolve(opts.out);
  fs.mkdirSync(out, { recursive: true });
  const stage = fs.mkdtempSync(path.join(os.tmpdir(), "tower-lro-pack-"));
  try {
    const launcher = packLauncher(stage, out, version);
    const platforms = {};
    for (const [key, binary] of Object.entries(opts.binaries)) {
      platforms[key] = packPlatform(stage, out, version, key, binary);
    }
    process.stdout.write(`${JSON.stringify({ version, launcher, platforms })}\n`);
  } finally {
    fs.rmSync(stage, { recursive: true, force: true });
  }
}

main();
