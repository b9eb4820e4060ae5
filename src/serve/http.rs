//! The HTTP side of `--serve` (hyper, HTTP/1.1). This module is the one place rlmon
//! listens on a socket, and only when `--serve` is given.
use std::convert::Infallible;
use std::net::SocketAddr;
use std::sync::Arc;

use bytes::Bytes;
use http_body_util::Full;
use hyper::body::Incoming;
use hyper::{Method, Request, Response, StatusCode};
use hyper_util::rt::TokioIo;
use tokio::net::TcpListener;
use tokio::sync::watch;
use tokio_util::sync::CancellationToken;

use super::{exposition, feed, Published};

/// A bound `--serve` address, not yet answering.
pub struct Server {
    listener: TcpListener,
}

impl Server {
    /// Binds `addr` (`127.0.0.1:9464`, `[::1]:0`, `node3:9464`).
    pub async fn bind(addr: &str) -> std::io::Result<Server> {
        Ok(Server { listener: TcpListener::bind(addr).await? })
    }

    pub fn local_addr(&self) -> std::io::Result<SocketAddr> {
        self.listener.local_addr()
    }

    /// Answers requests from the latest snapshot until `cancel` fires.
    pub fn spawn(self, snapshots: watch::Receiver<Arc<Published>>, cancel: CancellationToken) -> tokio::task::JoinHandle<()> {
        tokio::spawn(async move {
            loop {
                let stream = tokio::select! {
                    accepted = self.listener.accept() => match accepted {
                        Ok((stream, _)) => stream,
                        // A refused connection (out of descriptors) is that client's problem.
                        Err(e) => { tracing::warn!("--serve: accept failed: {e}"); tokio::time::sleep(std::time::Duration::from_millis(100)).await; continue }
                    },
                    _ = cancel.cancelled() => return,
                };
                let snapshots = snapshots.clone();
                let cancel = cancel.clone();
                tokio::spawn(async move {
                    let service = hyper::service::service_fn(move |req: Request<Incoming>| {
                        let snapshot = snapshots.borrow().clone();
                        async move { Ok::<_, Infallible>(respond(&req, &snapshot)) }
                    });
                    let connection = hyper::server::conn::http1::Builder::new().serve_connection(TokioIo::new(stream), service);
                    tokio::select! {
                        _ = connection => {}
                        _ = cancel.cancelled() => {}
                    }
                });
            }
        })
    }
}

/// The answer to one request, from one snapshot.
fn respond<B>(req: &Request<B>, snapshot: &Published) -> Response<Full<Bytes>> {
    let reply = |status: StatusCode, content_type: &str, body: String| {
        Response::builder().status(status).header("content-type", content_type).body(Full::new(Bytes::from(body))).unwrap_or_default()
    };
    if req.method() != Method::GET && req.method() != Method::HEAD {
        return reply(StatusCode::METHOD_NOT_ALLOWED, "text/plain", "only GET\n".into());
    }
    match req.uri().path() {
        "/metrics" => reply(StatusCode::OK, exposition::CONTENT_TYPE, snapshot.metrics.clone()),
        "/api/points" => {
            let page = feed::page(&snapshot.points, snapshot.next_seq, feed::since(req.uri().query()));
            let body = serde_json::to_string(&page).unwrap_or_else(|e| format!("{{\"error\":\"{e}\"}}"));
            reply(StatusCode::OK, "application/json", body)
        }
        "/api/runs" => {
            let runs = feed::Runs { next: snapshot.next_seq, runs: snapshot.runs.clone() };
            let body = serde_json::to_string(&runs).unwrap_or_else(|e| format!("{{\"error\":\"{e}\"}}"));
            reply(StatusCode::OK, "application/json", body)
        }
        "/" => reply(StatusCode::OK, "text/plain", "rlmon: /metrics (Prometheus text format), /api/points?since=N and /api/runs (JSON)\n".into()),
        _ => reply(StatusCode::NOT_FOUND, "text/plain", "not found: try /metrics, /api/points?since=0 or /api/runs\n".into()),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn get(uri: &str, snapshot: &Published) -> (StatusCode, String) {
        let res = respond(&Request::get(uri).body(()).unwrap(), snapshot);
        let status = res.status();
        let body = futures_body(res);
        (status, body)
    }

    fn futures_body(res: Response<Full<Bytes>>) -> String {
        use http_body_util::BodyExt;
        let rt = tokio::runtime::Builder::new_current_thread().build().unwrap();
        let bytes = rt.block_on(res.into_body().collect()).unwrap().to_bytes();
        String::from_utf8(bytes.to_vec()).unwrap()
    }

    #[test]
    fn routes_answer_from_the_snapshot() {
        let runs = vec![feed::RunSummary { name: "a".into(), state: "running".into(), step: 3, error: None, job: None, rank: None }];
        let snapshot = Published { metrics: "rlmon_step{run=\"a\"} 3\n".into(), points: vec![], next_seq: 5, runs };
        assert_eq!(get("/metrics", &snapshot), (StatusCode::OK, snapshot.metrics.clone()));
        assert_eq!(get("/api/points?since=2", &snapshot), (StatusCode::OK, r#"{"next":5,"points":[]}"#.into()));
        assert_eq!(get("/api/runs", &snapshot), (StatusCode::OK, r#"{"next":5,"runs":[{"name":"a","state":"running","step":3}]}"#.into()));
        assert_eq!(get("/nope", &snapshot).0, StatusCode::NOT_FOUND);
    }
}
