//! `tower-lro`: the `lro` command under the packages' name, so that the
//! package runners that start the executable named like the package work
//! (`uvx tower-lro proxy URL`, `pipx run tower-lro proxy URL`; npm's launcher
//! has both names). It runs the `lro` beside it with the same arguments.

use std::ffi::OsString;
use std::path::PathBuf;
use std::process::{Command, ExitCode};

fn main() -> ExitCode {
    let lro = match beside_me() {
        Ok(path) => path,
        Err(e) => {
            eprintln!("tower-lro: cannot find the lro command beside this one: {e}");
            return ExitCode::FAILURE;
        }
    };
    let args: Vec<OsString> = std::env::args_os().skip(1).collect();
    run(&lro, &args)
}

/// `lro` (`lro.exe` on Windows) in this executable's directory.
fn beside_me() -> std::io::Result<PathBuf> {
    let me = std::env::current_exe()?;
    Ok(me.with_file_name(format!("lro{}", std::env::consts::EXE_SUFFIX)))
}

/// Replaces this process with `lro` (Unix): its exit code and signals are
/// the caller's, stdio is untouched (the stdio proxy needs nothing between).
#[cfg(unix)]
fn run(lro: &std::path::Path, args: &[OsString]) -> ExitCode {
    use std::os::unix::process::CommandExt;
    let err = Command::new(lro).args(args).exec();
    eprintln!("tower-lro: cannot run {}: {err}", lro.display());
    ExitCode::FAILURE
}

/// Runs `lro` and exits with its code (no `exec` on this platform).
#[cfg(not(unix))]
fn run(lro: &std::path::Path, args: &[OsString]) -> ExitCode {
    match Command::new(lro).args(args).status() {
        Ok(status) => ExitCode::from(status.code().unwrap_or(1).clamp(0, 255) as u8),
        Err(err) => {
            eprintln!("tower-lro: cannot run {}: {err}", lro.display());
            ExitCode::FAILURE
        }
    }
}
