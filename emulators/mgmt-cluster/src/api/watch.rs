//! Watch streams: newline-delimited `{"type": …, "object": …}` events, as `kube::runtime::watcher`
//! and `kubectl get -w`/`kubectl wait` consume them.
//!
//! Each watch is one small task forwarding matching store events into the response body; it
//! ends at `timeoutSeconds`, when the client goes away, or when it falls too far behind (then
//! it sends a 410 `Expired` ERROR event, which makes clients re-list, as the real server does).
//!
//! Event objects take the negotiated transformation (`watchEmbeddedEncoder`): as a `Table`,
//! only the first event carries `columnDefinitions`; bookmarks are transformed like any
//! object; an object that cannot be transformed is sent as it is.

use std::convert::Infallible;
use std::time::Duration;

use axum::body::{Body, Bytes};
use axum::response::Response;
use serde_json::{Value, json};
use tokio::sync::{broadcast, mpsc};
use tokio_stream::wrappers::ReceiverStream;

use super::negotiate::Convert;
use super::table::{self, TableOptions};
use crate::Emulator;
use crate::error::{ApiError, ApiResult};
use crate::kinds::{KINDS, ResourceId};
use crate::selectors::Selectors;
use crate::store::Event;

/// Watch parameters from the query string.
pub(super) struct Options {
    pub res: ResourceId,
    pub namespace: Option<String>,
    pub selectors: Selectors,
    pub resource_version: Option<String>,
    pub timeout_seconds: Option<u64>,
    pub bookmarks: bool,
    pub convert: Option<Convert>,
    pub table_options: TableOptions,
}

/// Without `timeoutSeconds` the real server picks 30–60 min.
const DEFAULT_TIMEOUT: Duration = Duration::from_secs(1800);

pub(super) fn respond(emu: &Emulator, opts: Options) -> ApiResult<Response> {
    let from = match opts.resource_version.as_deref() {
        None | Some("") | Some("0") => None,
        Some(rv) => Some(
            rv.parse::<u64>()
                .map_err(|_| ApiError::bad_request(format!("invalid resourceVersion {rv:?}")))?,
        ),
    };
    let (tx, rx) = mpsc::channel::<Result<Bytes, Infallible>>(256);
    match emu.shared().store.subscribe(opts.res, from) {
        Ok(sub) => {
            let bookmark_every = emu.shared().config.bookmark_interval;
            tokio::spawn(forward(opts, sub, tx, bookmark_every));
        }
        Err(err) => {
            // The real server answers 200 and sends the error as the first event.
            let line = line("ERROR", err.to_status());
            let _ = tx.try_send(Ok(line));
        }
    }
    Response::builder()
        .header(http::header::CONTENT_TYPE, "application/json")
        .body(Body::from_stream(ReceiverStream::new(rx)))
        .map_err(|e| ApiError::bad_request(e.to_string()))
}

fn line(type_: &str, object: Value) -> Bytes {
    let mut bytes =
        serde_json::to_vec(&json!({"type": type_, "object": object})).unwrap_or_default();
    bytes.push(b'\n');
    Bytes::from(bytes)
}

impl Options {
    fn wants(&self, ev: &Event) -> bool {
        ev.resource == self.res
            && self
                .namespace
                .as_deref()
                .is_none_or(|ns| ns == ev.namespace)
            && self.selectors.matches(&ev.object)
    }

    /// An event's line; `headers_sent` tracks whether a Table's columns went out already.
    fn render(&self, type_: &str, object: &Value, headers_sent: &mut bool) -> Bytes {
        let def = &KINDS[self.res];
        let object = match self.convert {
            None => object.clone(),
            Some(Convert::Table(v)) => {
                let opts = TableOptions {
                    no_headers: *headers_sent,
                    ..self.table_options
                };
                *headers_sent = true;
                let rv = object
                    .pointer("/metadata/resourceVersion")
                    .cloned()
                    .unwrap_or(json!(""));
                table::table(
                    def,
                    std::slice::from_ref(object),
                    v,
                    opts,
                    json!({"resourceVersion": rv}),
                )
            }
            Some(convert) => table::one(def, object.clone(), convert, &Default::default())
                .unwrap_or_else(|_| object.clone()),
        };
        line(type_, object)
    }
}

async fn forward(
    opts: Options,
    sub: crate::store::Subscription,
    tx: mpsc::Sender<Result<Bytes, Infallible>>,
    bookmark_every: Duration,
) {
    let def = &KINDS[opts.res];
    let mut receiver = sub.receiver;
    let mut position = sub.start_rv;
    let mut headers_sent = false;
    for ev in sub.backlog.iter().filter(|e| opts.wants(e)) {
        let line = opts.render(ev.type_.as_str(), &ev.object, &mut headers_sent);
        if tx.send(Ok(line)).await.is_err() {
            return;
        }
    }
    let timeout = opts
        .timeout_seconds
        .map_or(DEFAULT_TIMEOUT, Duration::from_secs);
    let deadline = tokio::time::sleep(timeout);
    tokio::pin!(deadline);
    let mut ticker =
        tokio::time::interval_at(tokio::time::Instant::now() + bookmark_every, bookmark_every);
    loop {
        tokio::select! {
            _ = &mut deadline => return,
            _ = tx.closed() => return,
            _ = ticker.tick(), if opts.bookmarks => {
                let bookmark = json!({"kind": def.kind, "apiVersion": def.api_version(),
                    "metadata": {"resourceVersion": position.to_string()}});
                let line = opts.render("BOOKMARK", &bookmark, &mut headers_sent);
                if tx.send(Ok(line)).await.is_err() {
                    return;
                }
            }
            received = receiver.recv() => match received {
                Ok(ev) => {
                    if ev.rv <= position {
                        continue;
                    }
                    position = ev.rv;
                    if opts.wants(&ev) {
                        let line = opts.render(ev.type_.as_str(), &ev.object, &mut headers_sent);
                        if tx.send(Ok(line)).await.is_err() {
                            return;
                        }
                    }
                }
                Err(broadcast::error::RecvError::Lagged(_)) => {
                    let err = ApiError::expired("watch fell behind; re-list required");
                    let _ = tx.send(Ok(line("ERROR", err.to_status()))).await;
                    return;
                }
                Err(broadcast::error::RecvError::Closed) => return,
            }
        }
    }
}
