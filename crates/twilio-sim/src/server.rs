//! Serving the simulator over TCP. Plain `axum::serve` cannot drop a connection without an
//! answer, which the `create_then_drop` fault needs, so each connection is served by hyper
//! directly: a response marked [`DropConnection`] becomes a service error, and hyper closes the
//! connection without writing anything.

use std::sync::Arc;

use hyper::body::Incoming;
use hyper_util::rt::TokioIo;
use tokio::net::TcpListener;
use tokio_util::sync::CancellationToken;
use tower::ServiceExt;

use super::{DropConnection, Simulator, app};

#[derive(Debug, thiserror::Error)]
#[error("connection dropped on purpose (create_then_drop)")]
struct Dropped;

/// Serve until `cancel`; open connections finish their current request.
pub async fn serve(
    listener: TcpListener,
    sim: Arc<Simulator>,
    cancel: CancellationToken,
) -> std::io::Result<()> {
    let router = app(sim);
    loop {
        let (stream, _) = tokio::select! {
            _ = cancel.cancelled() => return Ok(()),
            accepted = listener.accept() => accepted?,
        };
        let _ = stream.set_nodelay(true);
        let router = router.clone();
        tokio::spawn(async move {
            let service = hyper::service::service_fn(move |req: hyper::Request<Incoming>| {
                let router = router.clone();
                async move {
                    let resp = match router.oneshot(req.map(axum::body::Body::new)).await {
                        Ok(r) => r,
                        Err(e) => match e {},
                    };
                    if resp.extensions().get::<DropConnection>().is_some() {
                        return Err(Dropped);
                    }
                    Ok::<_, Dropped>(resp)
                }
            });
            let _ = hyper::server::conn::http1::Builder::new()
                .keep_alive(true)
                .serve_connection(TokioIo::new(stream), service)
                .await;
        });
    }
}
