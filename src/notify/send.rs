//! Delivery: one task per target takes notices from a bounded queue, gathers them
//! (`throttle`), shapes them (`message`) and sends them, each attempt with a
//! timeout and failed attempts retried with back-off. Plain HTTP, HTTPS (rustls
//! with the Mozilla roots of `webpki-roots`), or a command.
use std::sync::{Arc, OnceLock};
use std::time::{Duration, Instant};

use bytes::Bytes;
use http_body_util::Full;
use hyper_util::rt::TokioIo;
use tokio::io::{AsyncRead, AsyncWrite, AsyncWriteExt};
use tokio::sync::mpsc;
use tokio_rustls::rustls;

use super::message::{self, Origin, Payload};
use super::target::{Destination, Target, WebUrl};
use super::throttle::Throttle;
use super::Notice;

/// How long one attempt (connect, send, answer) may take.
pub const ATTEMPT_TIMEOUT: Duration = Duration::from_secs(5);
/// Attempts per message; the waits between them double from [`FIRST_BACKOFF`].
pub const ATTEMPTS: u32 = 3;
pub const FIRST_BACKOFF: Duration = Duration::from_secs(1);
/// A notify command gets this long before it is killed.
pub const COMMAND_TIMEOUT: Duration = Duration::from_secs(30);

/// What a target's task reports back: a failure (said once per target).
#[derive(Debug, Clone, PartialEq)]
pub struct Failure {
    pub target: String,
    pub error: String,
}

/// Sends what arrives on `rx` to `target` until the queue closes; then sends what
/// is still pending, at once.
pub async fn deliver(target: Target, mut rx: mpsc::Receiver<Notice>, failures: mpsc::UnboundedSender<Failure>, session: String, host: String) {
    let clock = Instant::now();
    let now = || clock.elapsed().as_secs_f64();
    let mut throttle = Throttle::new(target.group.as_secs_f64(), target.cooldown.as_secs_f64());
    let mut told = false;
    loop {
        let due = throttle.due_s();
        let wake = async {
            match due {
                Some(d) => tokio::time::sleep_until((clock + Duration::from_secs_f64(d.max(0.0))).into()).await,
                None => std::future::pending().await,
            }
        };
        tokio::select! {
            notice = rx.recv() => match notice {
                Some(n) => { throttle.offer(n, now()); }
                None => break,
            },
            _ = wake => {
                if let Some(group) = throttle.take(now()) {
                    send(&target, &group, &session, &host, &failures, &mut told).await;
                }
            }
        }
    }
    let rest = throttle.flush(now());
    if !rest.is_empty() {
        send(&target, &rest, &session, &host, &failures, &mut told).await;
    }
}

/// One message, tried up to [`ATTEMPTS`] times. The first failed attempt is
/// reported (once per target: `told`), and each in the log at debug level.
async fn send(target: &Target, notices: &[Notice], session: &str, host: &str, failures: &mpsc::UnboundedSender<Failure>, told: &mut bool) {
    let origin = Origin { session: session.to_owned(), host: host.to_owned(), time: crate::record::naming::utc_rfc3339(std::time::SystemTime::now()) };
    let mut backoff = FIRST_BACKOFF;
    for attempt in 1..=ATTEMPTS {
        let result = match &target.dest {
            Destination::Url(url) => post(url, &message::render(target.format, notices, &origin)).await,
            Destination::Command(argv) => run_command(argv, notices, &origin).await,
        };
        let error = match result {
            Ok(()) => {
                tracing::debug!(to = %target.describe(), notices = notices.len(), "notification sent");
                return;
            }
            Err(e) => e,
        };
        tracing::debug!(to = %target.describe(), attempt, %error, "notification failed");
        if !*told {
            *told = true;
            tracing::warn!(to = %target.describe(), %error, "notification failed; later failures of this target are not shown");
            let _ = failures.send(Failure { target: target.describe(), error: error.clone() });
        }
        if matches!(error_kind(&error), Retry::No) || attempt == ATTEMPTS {
            return;
        }
        tokio::time::sleep(backoff).await;
        backoff *= 2;
    }
}

enum Retry {
    Yes,
    No,
}

/// A refusal (HTTP 4xx other than 408 and 429: a wrong URL, a bad token) is not
/// retried; timeouts, connection errors and 5xx are.
fn error_kind(error: &str) -> Retry {
    match error.strip_prefix("HTTP ").and_then(|s| s.get(..3)).and_then(|c| c.parse::<u16>().ok()) {
        Some(code) if (400..500).contains(&code) && code != 408 && code != 429 => Retry::No,
        _ => Retry::Yes,
    }
}

/// The TLS settings every HTTPS target shares: the Mozilla root certificates.
fn tls_config() -> Arc<rustls::ClientConfig> {
    static CONFIG: OnceLock<Arc<rustls::ClientConfig>> = OnceLock::new();
    CONFIG
        .get_or_init(|| {
            let mut roots = rustls::RootCertStore::empty();
            roots.extend(webpki_roots::TLS_SERVER_ROOTS.iter().cloned());
            let provider = Arc::new(rustls::crypto::ring::default_provider());
            let config = rustls::ClientConfig::builder_with_provider(provider)
                .with_safe_default_protocol_versions()
                .expect("ring supports the default TLS versions")
                .with_root_certificates(roots)
                .with_no_client_auth();
            Arc::new(config)
        })
        .clone()
}

/// POSTs `payload` to `url`; a 2xx answer is success.
pub async fn post(url: &WebUrl, payload: &Payload) -> Result<(), String> {
    let attempt = async {
        let tcp = tokio::net::TcpStream::connect((url.host.as_str(), url.port)).await.map_err(|e| format!("cannot connect: {e}"))?;
        if url.tls {
            let name = rustls::pki_types::ServerName::try_from(url.host.clone()).map_err(|e| format!("bad host name: {e}"))?;
            let tls = tokio_rustls::TlsConnector::from(tls_config()).connect(name, tcp).await.map_err(|e| format!("TLS: {e}"))?;
            request(tls, url, payload).await
        } else {
            request(tcp, url, payload).await
        }
    };
    tokio::time::timeout(ATTEMPT_TIMEOUT, attempt).await.map_err(|_| format!("no answer within {} s", ATTEMPT_TIMEOUT.as_secs()))?
}

async fn request<S: AsyncRead + AsyncWrite + Unpin + Send + 'static>(io: S, url: &WebUrl, payload: &Payload) -> Result<(), String> {
    let (mut sender, connection) = hyper::client::conn::http1::handshake(TokioIo::new(io)).await.map_err(|e| e.to_string())?;
    tokio::spawn(connection);
    let mut builder = hyper::Request::post(url.path.as_str())
        .header(hyper::header::HOST, url.authority.as_str())
        .header(hyper::header::CONTENT_TYPE, payload.content_type)
        .header(hyper::header::USER_AGENT, concat!("rlmon/", env!("CARGO_PKG_VERSION")));
    for (k, v) in &payload.headers {
        builder = builder.header(*k, v.as_str());
    }
    let request = builder.body(Full::new(Bytes::from(payload.body.clone()))).map_err(|e| e.to_string())?;
    let response = sender.send_request(request).await.map_err(|e| e.to_string())?;
    let status = response.status();
    if status.is_success() {
        Ok(())
    } else {
        Err(format!("HTTP {status}"))
    }
}

/// Runs a notify command: the worst notice in `RLMON_*` variables, every notice
/// as rlmon's JSON on stdin; exit status 0 is success.
async fn run_command(argv: &[String], notices: &[Notice], origin: &Origin) -> Result<(), String> {
    let program = argv.first().ok_or("empty command")?;
    let mut child = tokio::process::Command::new(program)
        .args(&argv[1..])
        .envs(message::env(notices, origin))
        .stdin(std::process::Stdio::piped())
        .stdout(std::process::Stdio::null())
        .stderr(std::process::Stdio::null())
        .kill_on_drop(true)
        .spawn()
        .map_err(|e| format!("cannot start `{program}`: {e}"))?;
    let body = message::render(super::Format::Json, notices, origin).body;
    if let Some(mut stdin) = child.stdin.take() {
        // A command that does not read its input is fine.
        let _ = stdin.write_all(&body).await;
    }
    match tokio::time::timeout(COMMAND_TIMEOUT, child.wait()).await {
        Ok(Ok(status)) if status.success() => Ok(()),
        Ok(Ok(status)) => Err(format!("`{program}` {status}")),
        Ok(Err(e)) => Err(format!("cannot wait for `{program}`: {e}")),
        Err(_) => Err(format!("`{program}` did not finish within {} s", COMMAND_TIMEOUT.as_secs())),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn refusals_are_not_retried_and_outages_are() {
        assert!(matches!(error_kind("HTTP 404 Not Found"), Retry::No));
        assert!(matches!(error_kind("HTTP 403 Forbidden"), Retry::No));
        assert!(matches!(error_kind("HTTP 429 Too Many Requests"), Retry::Yes));
        assert!(matches!(error_kind("HTTP 500 Internal Server Error"), Retry::Yes));
        assert!(matches!(error_kind("no answer within 5 s"), Retry::Yes));
    }
}
