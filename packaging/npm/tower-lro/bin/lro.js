#!/usr/bin/env node
// The `lro` launcher: runs the binary of the package for this platform
// (`@tower-lro/<platform>`, installed by npm through optionalDependencies)
// with the same arguments and stdio, and exits as it does.
"use strict";

const { spawn } = require("node:child_process");
const path = require("node:path");

const FALLBACK = "cargo install tower-lro-cli";

/** "linux-x64", "linux-x64-musl", "darwin-arm64", "win32-x64", ... */
function platformKey() {
  let key = `${process.platform}-${process.arch}`;
  if (process.platform === "linux" && isMusl()) key += "-musl";
  return key;
}

/** Whether this Node runs on musl libc (Alpine): no glibc version in its report. */
function isMusl() {
  try {
    const report = process.report && process.report.getReport();
    return Boolean(report && report.header && !report.header.glibcVersionRuntime);
  } catch {
    return false;
  }
}

/** One line on stderr, then exit 1: never a stack trace. */
function fail(message) {
  process.stderr.write(`lro: ${message}\n`);
  process.exit(1);
}

function binaryPath() {
  const key = platformKey();
  const pkg = `@tower-lro/${key}`;
  let dir;
  try {
    dir = path.dirname(require.resolve(`${pkg}/package.json`));
  } catch {
    const known = Object.keys(require("../package.json").optionalDependencies || {});
    const why = known.includes(pkg)
      ? `the package ${pkg} is not installed (npm skipped it, or installed with --no-optional)`
      : `no prebuilt lro for ${key}`;
    fail(`${why}; install from source instead: ${FALLBACK}`);
  }
  return path.join(dir, "bin", process.platform === "win32" ? "lro.exe" : "lro");
}

function main() {
  const binary = binaryPath();
  const child = spawn(binary, process.argv.slice(2), { stdio: "inherit", windowsHide: true });
  const forward = ["SIGINT", "SIGTERM", "SIGHUP"].map((signal) => {
    const handler = () => child.kill(signal);
    process.on(signal, handler);
    return [signal, handler];
  });
  child.on("error", (err) => fail(`cannot run ${binary}: ${err.message}; install from source instead: ${FALLBACK}`));
  child.on("exit", (code, signal) => {
    for (const [s, handler] of forward) process.removeListener(s, handler);
    if (signal) {
      process.kill(process.pid, signal);
    } else {
      process.exit(code === null ? 1 : code);
    }
  });
}

main();
