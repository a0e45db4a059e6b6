//! `--client-metadata-url`: `lro proxy` signs in at `oidc-provider` (the
//! world of [`oauth`](super::oauth), its client ID metadata document
//! support on) with the https URL of its client ID metadata document as
//! its client id, no registration: the provider fetches the document from
//! the test's own https server on loopback (a CA made here, given to node
//! as `NODE_EXTRA_CA_CERTS`), and the browser sign-in goes as usual.

use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};

use serde_json::json;
use tokio_rustls::rustls::pki_types::{CertificateDer, PrivateKeyDer};

use super::oauth::{session, sign_ins, stored, world_with};

/// Serves `document` at `https://127.0.0.1:PORT/lro-client.json` (each
/// fetch counted) with a certificate of a CA made here; the URL and the
/// CA's PEM.
async fn document_server(
    document: impl Fn(&str) -> serde_json::Value + Send + Sync + 'static,
    fetches: Arc<AtomicUsize>,
) -> (String, String) {
    let ca_key = rcgen::KeyPair::generate().unwrap();
    let mut ca_params = rcgen::CertificateParams::new(Vec::<String>::new()).unwrap();
    ca_params.is_ca = rcgen::IsCa::Ca(rcgen::BasicConstraints::Unconstrained);
    // Names of their own (node takes a leaf named as its issuer for a
    // self-signed certificate).
    ca_params
        .distinguished_name
        .push(rcgen::DnType::CommonName, "lro test CA");
    let ca_pem = ca_params.self_signed(&ca_key).unwrap().pem();
    let issuer = rcgen::Issuer::new(ca_params, ca_key);
    let key = rcgen::KeyPair::generate().unwrap();
    let mut leaf = rcgen::CertificateParams::new(vec!["127.0.0.1".to_owned()]).unwrap();
    leaf.distinguished_name
        .push(rcgen::DnType::CommonName, "127.0.0.1");
    let cert = leaf.signed_by(&key, &issuer).unwrap();
    let provider = Arc::new(tokio_rustls::rustls::crypto::ring::default_provider());
    let config = tokio_rustls::rustls::ServerConfig::builder_with_provider(provider)
        .with_safe_default_protocol_versions()
        .unwrap()
        .with_no_client_auth()
        .with_single_cert(
            vec![CertificateDer::from(cert.der().to_vec())],
            PrivateKeyDer::Pkcs8(key.serialize_der().into()),
        )
        .unwrap();
    let acceptor = tokio_rustls::TlsAcceptor::from(Arc::new(config));
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let url = format!("https://{}/lro-client.json", listener.local_addr().unwrap());
    let body = document(&url).to_string();
    tokio::spawn(async move {
        while let Ok((tcp, _)) = listener.accept().await {
            let acceptor = acceptor.clone();
            let body = body.clone();
            let fetches = fetches.clone();
            tokio::spawn(async move {
                let Ok(tls) = acceptor.accept(tcp).await else {
                    return;
                };
                let service = hyper::service::service_fn(move |request: hyper::Request<_>| {
                    let found = request.uri().path() == "/lro-client.json";
                    if found {
                        fetches.fetch_add(1, Ordering::SeqCst);
                    }
                    let body = body.clone();
                    async move {
                        let mut answer = hyper::Response::new(http_body_util::Full::new(
                            bytes::Bytes::from(if found { body } else { String::new() }),
                        ));
                        if found {
                            answer
                                .headers_mut()
                                .insert("content-type", "application/json".parse().unwrap());
                        } else {
                            *answer.status_mut() = hyper::StatusCode::NOT_FOUND;
                        }
                        Ok::<_, std::convert::Infallible>(answer)
                    }
                });
                let _ = hyper::server::conn::http1::Builder::new()
                    .serve_connection(hyper_util::rt::TokioIo::new(tls), service)
                    .await;
            });
        }
    });
    (url, ca_pem)
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_metadata_document_url_is_the_client_id_without_registration() {
    // The callback port the document names (free now; the proxy takes it).
    let port = std::net::TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap()
        .port();
    let redirect = format!("http://127.0.0.1:{port}/oauth/callback");
    let fetches = Arc::new(AtomicUsize::new(0));
    let (url, ca_pem) = document_server(
        move |url| {
            json!({
                "client_id": url,
                "client_name": "lro proxy (test)",
                "redirect_uris": [redirect],
                "grant_types": ["authorization_code", "refresh_token"],
                "response_types": ["code"],
                "token_endpoint_auth_method": "none",
                "application_type": "native",
            })
        },
        fetches.clone(),
    )
    .await;
    let ca_dir = tempfile::tempdir().unwrap();
    let ca = ca_dir.path().join("ca.pem");
    std::fs::write(&ca, ca_pem).unwrap();
    let Some(world) = world_with(3600, &[("NODE_EXTRA_CA_CERTS", ca.to_str().unwrap())]).await
    else {
        return;
    };
    let port = port.to_string();
    let flags = [port.as_str(), "--client-metadata-url", url.as_str()];
    let result = session(&world, &flags, &[]).await;
    assert!(result["content"].is_array(), "{result}");
    assert_eq!(sign_ins(&world).len(), 1, "{:?}", sign_ins(&world));
    assert!(
        fetches.load(Ordering::SeqCst) >= 1,
        "the provider fetched the document"
    );
    let (_, client) = stored(&world, "_client_info.json");
    assert_eq!(
        client["client_id"],
        url.as_str(),
        "no registration: {client}"
    );
    // The next start: the stored tokens, no second sign-in.
    session(&world, &flags, &[]).await;
    assert_eq!(sign_ins(&world).len(), 1);
}

#[test]
fn a_client_metadata_url_must_be_https_with_a_path() {
    for bad in [
        "http://example.com/c.json",
        "https://example.com/",
        "not a url",
    ] {
        let out = std::process::Command::new(env!("CARGO_BIN_EXE_lro"))
            .args([
                "proxy",
                "http://127.0.0.1:9/mcp",
                "--client-metadata-url",
                bad,
            ])
            .stdin(std::process::Stdio::null())
            .output()
            .unwrap();
        let err = String::from_utf8_lossy(&out.stderr);
        assert!(!out.status.success(), "{bad}");
        assert!(err.contains("--client-metadata-url"), "{bad}: {err}");
        assert_eq!(err.trim().lines().count(), 1, "{err}");
    }
}
