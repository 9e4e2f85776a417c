//! A real headless browser for the tests: Debian's Chromium (`scripts/setup.sh` installs it),
//! driven over the DevTools protocol by a minimal client (one page; a command and its answer,
//! the protocol's events skipped).

use std::path::{Path, PathBuf};
use std::process::Stdio;
use std::time::{Duration, Instant};

use base64::Engine;
use futures::{SinkExt, StreamExt};
use serde_json::{Value, json};
use tokio::net::TcpStream;
use tokio_tungstenite::tungstenite::Message;
use tokio_tungstenite::{MaybeTlsStream, WebSocketStream};

pub struct Browser {
    child: tokio::process::Child,
    /// The profile directory (`--user-data-dir`), removed with the browser.
    _profile: tempfile::TempDir,
    page: WebSocketStream<MaybeTlsStream<TcpStream>>,
    next_id: u64,
}

/// `sha256/base64` of a PEM private key's public key (its SubjectPublicKeyInfo): what
/// `--ignore-certificate-errors-spki-list` trusts, so the page's certificate (issued by the
/// dev CA, which the browser does not know) is accepted, and no other.
pub fn spki_digest(key_pem: &str) -> String {
    use rcgen::PublicKeyData;
    use sha2::Digest;
    let key = rcgen::KeyPair::from_pem(key_pem).expect("the server's key");
    let digest = sha2::Sha256::digest(key.subject_public_key_info());
    base64::engine::general_purpose::STANDARD.encode(digest)
}

/// Where the tests keep what a person would look at (screenshots): `<target>/test-artifacts/`.
pub fn artifacts(test: &str) -> PathBuf {
    let dir = Path::new(env!("CARGO_TARGET_TMPDIR"))
        .parent()
        .expect("the target directory")
        .join("test-artifacts")
        .join(test);
    std::fs::create_dir_all(&dir).expect("the artifacts directory");
    dir
}

impl Browser {
    /// Starts `chromium --headless` with a fresh profile, trusting the key whose digest is
    /// `spki` ([`spki_digest`]), with its log in `log`; the page is blank.
    pub async fn launch(spki: &str, log: &Path) -> Browser {
        let profile = tempfile::tempdir().expect("profile dir");
        let log = std::fs::File::create(log).expect("browser log");
        let child = tokio::process::Command::new("chromium")
            .args([
                "--headless",
                // As root (CI), Chromium runs only without its sandbox.
                "--no-sandbox",
                "--disable-gpu",
                "--disable-dev-shm-usage",
                "--no-first-run",
                "--no-default-browser-check",
                "--disable-extensions",
                "--window-size=1600,1000",
                "--remote-debugging-port=0",
            ])
            .arg(format!("--user-data-dir={}", profile.path().display()))
            .arg(format!("--ignore-certificate-errors-spki-list={spki}"))
            .arg("about:blank")
            .stdin(Stdio::null())
            .stdout(log.try_clone().expect("log"))
            .stderr(log)
            .kill_on_drop(true)
            .spawn()
            .expect("start chromium (scripts/setup.sh installs it)");
        // Chromium writes the port it chose, and its browser endpoint, into the profile.
        let port_file = profile.path().join("DevToolsActivePort");
        let deadline = Instant::now() + Duration::from_secs(30);
        let port = loop {
            if let Some(port) = std::fs::read_to_string(&port_file)
                .ok()
                .and_then(|s| s.lines().next().and_then(|l| l.trim().parse::<u16>().ok()))
            {
                break port;
            }
            assert!(
                Instant::now() < deadline,
                "chromium did not open its DevTools port"
            );
            tokio::time::sleep(Duration::from_millis(100)).await;
        };
        let targets: Vec<Value> = loop {
            let listed = reqwest::get(format!("http://127.0.0.1:{port}/json/list")).await;
            if let Ok(r) = listed
                && let Ok(targets) = r.json::<Vec<Value>>().await
                && targets.iter().any(|t| t["type"] == "page")
            {
                break targets;
            }
            assert!(Instant::now() < deadline, "chromium lists no page");
            tokio::time::sleep(Duration::from_millis(100)).await;
        };
        let url = targets
            .iter()
            .find(|t| t["type"] == "page")
            .and_then(|t| t["webSocketDebuggerUrl"].as_str())
            .expect("the page's DevTools endpoint")
            .to_owned();
        let (page, _) = tokio_tungstenite::connect_async(url.as_str())
            .await
            .expect("connect to the page");
        let mut browser = Browser {
            child,
            _profile: profile,
            page,
            next_id: 0,
        };
        browser.call("Page.enable", json!({})).await;
        browser
    }

    /// Sends one command and returns its result (a protocol error fails the test).
    pub async fn call(&mut self, method: &str, params: Value) -> Value {
        let v = self.answer(method, params).await;
        assert!(v.get("error").is_none(), "{method} failed: {v}");
        v["result"].clone()
    }

    /// Sends one command and returns the whole answer: its `result` or its `error`.
    async fn answer(&mut self, method: &str, params: Value) -> Value {
        self.next_id += 1;
        let id = self.next_id;
        let command = json!({ "id": id, "method": method, "params": params }).to_string();
        self.page
            .send(Message::text(command))
            .await
            .expect("send to chromium");
        let reply = async {
            loop {
                let msg = self
                    .page
                    .next()
                    .await
                    .expect("chromium closed the connection")
                    .expect("read from chromium");
                let Message::Text(text) = msg else { continue };
                let v: Value = serde_json::from_str(text.as_str()).expect("DevTools JSON");
                if v["id"] == id {
                    return v;
                }
            }
        };
        tokio::time::timeout(Duration::from_secs(30), reply)
            .await
            .unwrap_or_else(|_| panic!("chromium did not answer {method}"))
    }

    pub async fn navigate(&mut self, url: &str) {
        let r = self.call("Page.navigate", json!({ "url": url })).await;
        assert!(r.get("errorText").is_none(), "cannot open {url}: {r}");
    }

    /// The value of a JavaScript expression in the page (promises awaited).
    pub async fn eval(&mut self, expression: &str) -> Value {
        let r = self
            .call(
                "Runtime.evaluate",
                json!({ "expression": expression, "returnByValue": true, "awaitPromise": true }),
            )
            .await;
        assert!(
            r.get("exceptionDetails").is_none(),
            "{expression} threw: {r}"
        );
        r["result"]["value"].clone()
    }

    /// Waits until `expression` is truthy (polling), returning its value. While a page loads
    /// there may be no document to ask, or one going away: that is not yet truthy.
    pub async fn wait_for(&mut self, what: &str, expression: &str, budget: Duration) -> Value {
        let deadline = Instant::now() + budget;
        loop {
            let r = self
                .answer(
                    "Runtime.evaluate",
                    json!({ "expression": expression, "returnByValue": true, "awaitPromise": true }),
                )
                .await;
            let v = match r["result"].get("exceptionDetails") {
                None => r["result"]["result"]["value"].clone(),
                Some(_) => Value::Null,
            };
            let truthy =
                !matches!(&v, Value::Null | Value::Bool(false)) && v != json!(0) && v != json!("");
            if truthy {
                return v;
            }
            if Instant::now() >= deadline {
                let body = self
                    .eval("document.body ? document.body.innerText : ''")
                    .await;
                panic!("timed out waiting for {what}; the page shows:\n{body}");
            }
            tokio::time::sleep(Duration::from_millis(100)).await;
        }
    }

    /// Clicks the middle of the first element `selector` matches, as a mouse would.
    pub async fn click(&mut self, selector: &str) {
        let sel = serde_json::to_string(selector).expect("selector");
        let at = self
            .eval(&format!(
                "(() => {{ const e = document.querySelector({sel}); if (!e) return null; \
                 e.scrollIntoView({{block: 'center'}}); const r = e.getBoundingClientRect(); \
                 return [r.left + r.width / 2, r.top + r.height / 2]; }})()"
            ))
            .await;
        let (x, y) = match at.as_array().map(Vec::as_slice) {
            Some([x, y]) => (x.clone(), y.clone()),
            _ => panic!("nothing to click at {selector}"),
        };
        for kind in ["mousePressed", "mouseReleased"] {
            self.call(
                "Input.dispatchMouseEvent",
                json!({ "type": kind, "x": x, "y": y, "button": "left", "clickCount": 1 }),
            )
            .await;
        }
    }

    /// Saves a PNG of the page as it is now to `path`.
    pub async fn screenshot(&mut self, path: &Path) {
        let r = self
            .call(
                "Page.captureScreenshot",
                json!({ "format": "png", "captureBeyondViewport": true }),
            )
            .await;
        let png = base64::engine::general_purpose::STANDARD
            .decode(r["data"].as_str().expect("image data"))
            .expect("base64");
        std::fs::write(path, png).expect("write the screenshot");
    }
}

impl Drop for Browser {
    fn drop(&mut self) {
        let _ = self.child.start_kill();
    }
}
