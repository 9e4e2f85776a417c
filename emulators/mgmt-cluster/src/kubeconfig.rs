//! Kubeconfig for clients of the emulator.

use base64::Engine;

/// Name of the cluster, user and context in the generated kubeconfig.
pub const CONTEXT: &str = "hypersaga-mgmt";

/// A kubeconfig pointing at `server_url`, trusting `ca_pem` and authenticating with `token`.
/// Works with `kube::Config::from_custom_kubeconfig` and with `kubectl --kubeconfig`.
pub fn kubeconfig_yaml(server_url: &str, ca_pem: &str, token: &str) -> String {
    let ca = base64::engine::general_purpose::STANDARD.encode(ca_pem);
    // Values are quoted as YAML strings so tokens and URLs never change type.
    let q = |s: &str| serde_json::Value::String(s.to_owned()).to_string();
    format!(
        "apiVersion: v1\nkind: Config\nclusters:\n- name: {CONTEXT}\n  cluster:\n    server: {server}\n    certificate-authority-data: {ca}\nusers:\n- name: {CONTEXT}\n  user:\n    token: {token}\ncontexts:\n- name: {CONTEXT}\n  context:\n    cluster: {CONTEXT}\n    user: {CONTEXT}\n    namespace: default\ncurrent-context: {CONTEXT}\npreferences: {{}}\n",
        server = q(server_url),
        ca = q(&ca),
        token = q(token),
    )
}
