//! Runs each service as its own child process and restarts it when it dies — as a process
//! manager would in production — logging every exit. Child pids are kept in `pids.json` so
//! operators (and the crash tests) can find them.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::process::Stdio;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use nix::sys::signal::{Signal, kill};
use nix::unistd::Pid;
use tokio::process::Command;
use tokio_util::sync::CancellationToken;

use crate::endpoints::write_private;

/// One supervised process: `hypersaga serve <role> …`.
pub struct ChildSpec {
    pub name: String,
    pub args: Vec<String>,
}

pub struct Supervisor {
    state_dir: PathBuf,
    pids: Arc<Mutex<BTreeMap<String, u32>>>,
    tasks: Vec<tokio::task::JoinHandle<()>>,
    shutdown: CancellationToken,
}

impl Supervisor {
    pub fn new(state_dir: &Path) -> Self {
        Self {
            state_dir: state_dir.to_owned(),
            pids: Arc::default(),
            tasks: Vec::new(),
            shutdown: CancellationToken::new(),
        }
    }

    pub fn spawn(&mut self, spec: ChildSpec) -> anyhow::Result<()> {
        let exe = std::env::current_exe()?;
        let log = self
            .state_dir
            .join("logs")
            .join(format!("{}.log", spec.name));
        std::fs::create_dir_all(self.state_dir.join("logs"))?;
        let (pids, dir, shutdown) = (
            self.pids.clone(),
            self.state_dir.clone(),
            self.shutdown.clone(),
        );
        self.tasks.push(tokio::spawn(async move {
            let mut restarts = 0u32;
            loop {
                let out = match std::fs::OpenOptions::new().create(true).append(true).open(&log) {
                    Ok(f) => f,
                    Err(e) => {
                        crate::errln!("[dev] cannot open {}: {e}", log.display());
                        return;
                    }
                };
                let err = match out.try_clone() {
                    Ok(f) => f,
                    Err(_) => return,
                };
                let child = Command::new(&exe)
                    .args(&spec.args)
                    .args(["--supervisor-pid", &std::process::id().to_string()])
                    .stdin(Stdio::null())
                    .stdout(out)
                    .stderr(err)
                    .kill_on_drop(true)
                    .spawn();
                let mut child = match child {
                    Ok(c) => c,
                    Err(e) => {
                        crate::errln!("[dev] cannot start {}: {e}", spec.name);
                        return;
                    }
                };
                let pid = child.id().unwrap_or_default();
                record(&pids, &dir, &spec.name, Some(pid));
                tokio::select! {
                    status = child.wait() => {
                        if shutdown.is_cancelled() {
                            return;
                        }
                        restarts += 1;
                        let why = status.map(|s| s.to_string()).unwrap_or_else(|e| e.to_string());
                        crate::errln!("[dev] {} (pid {pid}) exited: {why}; restarting (restart #{restarts}, log {})", spec.name, log.display());
                        tokio::time::sleep(Duration::from_millis(500)).await;
                    }
                    _ = shutdown.cancelled() => {
                        stop(&mut child, pid).await;
                        record(&pids, &dir, &spec.name, None);
                        return;
                    }
                }
            }
        }));
        Ok(())
    }

    /// SIGTERM to every child, then SIGKILL to any still running after the grace period.
    pub async fn stop_all(self) {
        self.shutdown.cancel();
        for t in self.tasks {
            let _ = t.await;
        }
    }
}

async fn stop(child: &mut tokio::process::Child, pid: u32) {
    if let Ok(p) = i32::try_from(pid) {
        let _ = kill(Pid::from_raw(p), Signal::SIGTERM);
    }
    if tokio::time::timeout(Duration::from_secs(10), child.wait())
        .await
        .is_err()
    {
        let _ = child.kill().await;
    }
}

fn record(pids: &Mutex<BTreeMap<String, u32>>, dir: &Path, name: &str, pid: Option<u32>) {
    let Ok(mut map) = pids.lock() else { return };
    match pid {
        Some(p) => map.insert(name.to_owned(), p),
        None => map.remove(name),
    };
    // Written under the lock: a file written from an older map must not land last.
    if let Ok(bytes) = serde_json::to_vec_pretty(&*map) {
        let _ = write_private(&dir.join("pids.json"), &bytes);
    }
}
