//! The interactive sign-in: the authorization code flow with PKCE (S256),
//! the browser sent to the authorization server, and a listener on the
//! loopback interface that takes the redirect back.

use std::time::Duration;

use base64::Engine as _;
use sha2::Digest;
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::{TcpListener, TcpStream};
use url::Url;

use super::AuthError;

/// The most a callback request's head may take.
const MAX_HEAD_BYTES: usize = 16 << 10;
/// How long one connection to the callback may take to send its head.
const HEAD_TIMEOUT: Duration = Duration::from_secs(10);
/// How long the listener pauses after a failed accept.
const ACCEPT_PAUSE: Duration = Duration::from_millis(100);
/// How many ports after the derived one are tried when it is taken.
const PORT_WALK: u16 = 8;

/// A PKCE verifier and its S256 challenge (RFC 7636).
pub(crate) struct Pkce {
    /// The secret sent with the code.
    pub verifier: String,
    /// Its hash, sent with the authorization request.
    pub challenge: String,
}

/// `n` random bytes, base64url without padding.
pub(crate) fn random_text(n: usize) -> Result<String, AuthError> {
    let mut bytes = vec![0u8; n];
    getrandom::fill(&mut bytes).map_err(|e| AuthError::Store(format!("randomness: {e}")))?;
    Ok(base64::engine::general_purpose::URL_SAFE_NO_PAD.encode(bytes))
}

impl Pkce {
    /// A fresh verifier (32 random bytes: 43 characters).
    pub(crate) fn new() -> Result<Pkce, AuthError> {
        let verifier = random_text(32)?;
        let challenge = base64::engine::general_purpose::URL_SAFE_NO_PAD
            .encode(sha2::Sha256::digest(verifier.as_bytes()));
        Ok(Pkce {
            verifier,
            challenge,
        })
    }
}

/// The loopback listener the browser is redirected to.
pub(crate) struct Callback {
    listener: TcpListener,
    path: String,
    /// `http://HOST:PORT/PATH`, as registered with the server.
    pub redirect_uri: String,
}

/// The port derived from the server's key, stable per server (as
/// `mcp-remote` does: somewhere in 3335..=49150).
pub(crate) fn derived_port(key: &str) -> u16 {
    let offset = u16::from_str_radix(key.get(..4).unwrap_or("0"), 16).unwrap_or(0);
    3335 + offset % 45816
}

impl Callback {
    /// Listens on `127.0.0.1`: on `port` exactly when given (the redirect
    /// URI a client was registered with), else on `derived` or one of the
    /// next ports when it is taken.
    pub(crate) async fn bind(
        host: &str,
        port: Option<u16>,
        derived: u16,
        path: &str,
    ) -> Result<Callback, AuthError> {
        let candidates: Vec<u16> = match port {
            Some(p) => vec![p],
            None => (0..PORT_WALK)
                .filter_map(|i| derived.checked_add(i))
                .collect(),
        };
        for p in &candidates {
            if let Ok(listener) = TcpListener::bind(("127.0.0.1", *p)).await {
                return Ok(Callback {
                    listener,
                    path: path.to_owned(),
                    redirect_uri: format!("http://{host}:{p}{path}"),
                });
            }
        }
        Err(AuthError::Callback(format!(
            "no free callback port among {candidates:?}"
        )))
    }

    /// Waits for the redirect carrying `state`; returns its code and the
    /// browser's connection, answered once the code is exchanged. Requests
    /// for other paths or states are refused and waited past; each
    /// connection is read on its own, so a browser's idle preconnection
    /// holds nothing up.
    pub(crate) async fn code(&self, state: &str) -> Result<(String, TcpStream), AuthError> {
        let (heads, mut read) = tokio::sync::mpsc::channel(8);
        loop {
            tokio::select! {
                accepted = self.listener.accept() => match accepted {
                    Ok((stream, _)) => {
                        tokio::spawn(read_head(stream, heads.clone()));
                    }
                    // Out of descriptors, say: not a reason to spin.
                    Err(_) => tokio::time::sleep(ACCEPT_PAUSE).await,
                },
                Some((target, mut stream)) = read.recv() => {
                    if let Some(done) = self.judge(&target, &mut stream, state).await {
                        return done.map(|code| (code, stream));
                    }
                }
            }
        }
    }

    /// What one request to the listener means: the code, the refusal, or
    /// (`None`) nothing, after its answer.
    async fn judge(
        &self,
        target: &str,
        stream: &mut TcpStream,
        state: &str,
    ) -> Option<Result<String, AuthError>> {
        let (path, query) = target.split_once('?').unwrap_or((target, ""));
        if path != self.path {
            answer(stream, "404 Not Found", "Not found.").await;
            return None;
        }
        let param = |name: &str| {
            form_urlencoded::parse(query.as_bytes())
                .find(|(k, _)| k == name)
                .map(|(_, v)| v.into_owned())
        };
        if param("state").as_deref() != Some(state) {
            let text = "This sign-in is not the one awaited.";
            answer(stream, "400 Bad Request", text).await;
            return None;
        }
        if let Some(error) = param("error") {
            let why = match param("error_description") {
                Some(d) => format!("{error}: {d}"),
                None => error,
            };
            let text = "Sign-in refused. You can close this window.";
            answer(stream, "400 Bad Request", text).await;
            return Some(Err(AuthError::Denied(why)));
        }
        if let Some(code) = param("code") {
            return Some(Ok(code));
        }
        answer(stream, "400 Bad Request", "No authorization code.").await;
        None
    }
}

/// Reads one connection's request target (within [`HEAD_TIMEOUT`]) and
/// hands it on with the connection.
async fn read_head(mut stream: TcpStream, heads: tokio::sync::mpsc::Sender<(String, TcpStream)>) {
    if let Ok(Ok(target)) = tokio::time::timeout(HEAD_TIMEOUT, request_target(&mut stream)).await {
        let _ = heads.send((target, stream)).await;
    }
}

/// The target of a request's first line (`GET /path?query HTTP/1.1`).
async fn request_target(stream: &mut TcpStream) -> std::io::Result<String> {
    let mut head = Vec::with_capacity(1024);
    let mut chunk = [0u8; 1024];
    while !head.windows(4).any(|w| w == b"\r\n\r\n") && head.len() < MAX_HEAD_BYTES {
        let n = stream.read(&mut chunk).await?;
        if n == 0 {
            break;
        }
        head.extend_from_slice(&chunk[..n]);
    }
    let line = head.split(|b| *b == b'\n').next().unwrap_or_default();
    let line = String::from_utf8_lossy(line);
    let mut words = line.split_whitespace();
    match (words.next(), words.next()) {
        (Some("GET"), Some(target)) => Ok(target.to_owned()),
        _ => Err(std::io::Error::other("not a GET")),
    }
}

/// A small page to the browser; the connection is closed after it.
pub(crate) async fn answer(stream: &mut TcpStream, status: &str, text: &str) {
    let body = format!("<!doctype html><meta charset=utf-8><title>lro proxy</title><p>{text}</p>");
    let head = format!(
        "HTTP/1.1 {status}\r\nContent-Type: text/html; charset=utf-8\r\nContent-Length: {}\r\nCache-Control: no-store\r\nConnection: close\r\n\r\n",
        body.len()
    );
    let _ = stream.write_all(format!("{head}{body}").as_bytes()).await;
    let _ = stream.shutdown().await;
}

/// Sends the browser on to `url` (`--auth-success-url`).
pub(crate) async fn redirect(stream: &mut TcpStream, url: &str) {
    let head = format!(
        "HTTP/1.1 302 Found\r\nLocation: {url}\r\nContent-Length: 0\r\nCache-Control: no-store\r\nConnection: close\r\n\r\n"
    );
    let _ = stream.write_all(head.as_bytes()).await;
    let _ = stream.shutdown().await;
}

/// Shows `url` to the user: always printed on stderr, and opened with
/// `$BROWSER URL` (a command and its arguments), else the system's opener.
pub(crate) fn open_browser(url: &Url) {
    eprintln!("lro proxy: sign in to the MCP server by opening this URL in a browser:\n{url}");
    let browser = std::env::var("BROWSER")
        .ok()
        .filter(|b| !b.trim().is_empty());
    let words: Vec<String> = match &browser {
        Some(b) => b.split_whitespace().map(str::to_owned).collect(),
        None if cfg!(target_os = "macos") => vec!["open".into()],
        None => vec!["xdg-open".into()],
    };
    let Some((program, args)) = words.split_first() else {
        return;
    };
    let spawned = tokio::process::Command::new(program)
        .args(args)
        .arg(url.as_str())
        .stdin(std::process::Stdio::null())
        // Stdout is the agent's: nothing else may write there.
        .stdout(std::process::Stdio::null())
        .kill_on_drop(false)
        .spawn();
    match spawned {
        Ok(mut child) => {
            tokio::spawn(async move {
                let _ = child.wait().await;
            });
        }
        Err(_) => {
            tracing::warn!(target: "tower_lro", "no browser could be opened ({program}); open the URL above yourself")
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_challenge_is_the_s256_of_the_verifier() {
        let p = Pkce::new().unwrap();
        assert_eq!(p.verifier.len(), 43);
        let again = base64::engine::general_purpose::URL_SAFE_NO_PAD
            .encode(sha2::Sha256::digest(p.verifier.as_bytes()));
        assert_eq!(p.challenge, again);
        assert_ne!(Pkce::new().unwrap().verifier, p.verifier);
    }

    #[test]
    fn derived_ports_stay_in_range() {
        assert_eq!(derived_port("0000abcd"), 3335);
        assert_eq!(derived_port("ffff"), 3335 + 65535 % 45816);
        assert!((3335..=49150).contains(&derived_port("b2c1")));
    }

    #[tokio::test]
    async fn the_callback_takes_the_code_of_its_state_only() {
        let cb = Callback::bind("127.0.0.1", None, 40000, "/oauth/callback")
            .await
            .unwrap();
        let port: u16 = cb
            .redirect_uri
            .rsplit(':')
            .next()
            .unwrap()
            .split('/')
            .next()
            .unwrap()
            .parse()
            .unwrap();
        let get = |target: &'static str| async move {
            let mut s = TcpStream::connect(("127.0.0.1", port)).await.unwrap();
            s.write_all(format!("GET {target} HTTP/1.1\r\nHost: x\r\n\r\n").as_bytes())
                .await
                .unwrap();
            let mut out = String::new();
            let _ = s.read_to_string(&mut out).await;
            out
        };
        let waiting = tokio::spawn(async move { cb.code("s1").await.map(|(c, _)| c) });
        // A browser's idle preconnection holds nothing up.
        let _idle = TcpStream::connect(("127.0.0.1", port)).await.unwrap();
        assert!(
            get("/other?code=x&state=s1")
                .await
                .starts_with("HTTP/1.1 404")
        );
        assert!(
            get("/oauth/callback?code=x&state=s2")
                .await
                .starts_with("HTTP/1.1 400")
        );
        let s = TcpStream::connect(("127.0.0.1", port)).await.unwrap();
        let mut s = s;
        s.write_all(b"GET /oauth/callback?code=c%2B1&state=s1 HTTP/1.1\r\n\r\n")
            .await
            .unwrap();
        assert_eq!(waiting.await.unwrap().unwrap(), "c+1");
    }
}
