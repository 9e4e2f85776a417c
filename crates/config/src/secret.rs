//! A string that never prints: `Debug` shows `***`; only `expose()` reveals it.

use serde::{Deserialize, Serialize};

#[derive(Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(transparent)]
pub struct Secret(String);

impl Secret {
    pub fn new(s: impl Into<String>) -> Self {
        Self(s.into())
    }

    pub fn expose(&self) -> &str {
        &self.0
    }
}

impl std::fmt::Debug for Secret {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("***")
    }
}

/// Replaces every secret value of `config` inside its JSON form.
pub(crate) fn redact(value: &mut serde_json::Value, config: &crate::Config) {
    let mut secrets: Vec<&str> = vec![
        config.blob.account_key.expose(),
        config.signing_keys.account_key.expose(),
    ];
    for t in &config.tenants {
        if let Some(secret) = &t.azure.client_secret {
            secrets.push(secret.expose());
        }
    }
    if let Some(p) = &config.kube.pull_secret {
        secrets.push(p.expose());
    }
    walk(value, &secrets);
}

fn walk(v: &mut serde_json::Value, secrets: &[&str]) {
    match v {
        serde_json::Value::String(s) if !s.is_empty() && secrets.contains(&s.as_str()) => {
            *s = "***".into()
        }
        serde_json::Value::Array(a) => a.iter_mut().for_each(|x| walk(x, secrets)),
        serde_json::Value::Object(o) => o.values_mut().for_each(|x| walk(x, secrets)),
        _ => {}
    }
}
