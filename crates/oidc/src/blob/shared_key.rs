//! Storage SharedKey authorization as an `azure_core` pipeline policy.
//!
//! `azure_storage_blob` 1.x only knows Entra tokens and SAS (Azure/azure-sdk-for-rust#2975),
//! but Azurite and ccoctl's flow both use the account key. This policy signs every try
//! (so `x-ms-date` is fresh on each) per "Authorize with Shared Key" (version 2009-09-19+):
//! the verb, the standard headers, the sorted `x-ms-*` headers and the canonicalized
//! resource `/{account}{path}` plus sorted query parameters, HMAC-SHA256 with the key.

use std::collections::BTreeMap;
use std::sync::Arc;

use async_trait::async_trait;
use azure_core::http::headers::HeaderName;
use azure_core::http::policies::{Policy, PolicyResult};
use azure_core::http::{Context, Request};
use base64::Engine as _;
use base64::engine::general_purpose::STANDARD;
use hmac::{Hmac, Mac};
use sha2::Sha256;
use time::OffsetDateTime;
use time::macros::format_description;

use crate::error::{Error, Result};

/// Signs requests with a storage account key.
#[derive(Clone)]
pub(crate) struct SharedKeyPolicy {
    account: String,
    key: Arc<Vec<u8>>,
}

impl std::fmt::Debug for SharedKeyPolicy {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("SharedKeyPolicy")
            .field("account", &self.account)
            .finish_non_exhaustive()
    }
}

impl SharedKeyPolicy {
    /// `account_key` is the base64 key ARM's `listKeys` (or Azurite's docs) give.
    pub(crate) fn new(account: &str, account_key: &str) -> Result<Self> {
        let key = STANDARD
            .decode(account_key.trim())
            .map_err(|_| Error::Config("storage account key is not base64".into()))?;
        Ok(Self {
            account: account.to_owned(),
            key: Arc::new(key),
        })
    }

    fn signature(&self, string_to_sign: &str) -> Result<String> {
        let mut mac = Hmac::<Sha256>::new_from_slice(&self.key)
            .map_err(|_| Error::Config("bad account key".into()))?;
        mac.update(string_to_sign.as_bytes());
        Ok(STANDARD.encode(mac.finalize().into_bytes()))
    }
}

/// Everything the signature covers, taken from the request as it will be sent.
pub(crate) fn string_to_sign(account: &str, request: &Request) -> String {
    let headers = request.headers();
    let get = |name: &'static str| {
        headers
            .get_optional_str(&HeaderName::from_static(name))
            .unwrap_or("")
            .to_owned()
    };
    // Since 2015-02-21 a zero length is signed as the empty string.
    let content_length = match get("content-length") {
        l if !l.is_empty() => l,
        _ => request
            .body()
            .len()
            .filter(|&n| n > 0)
            .map(|n| n.to_string())
            .unwrap_or_default(),
    };
    let content_length = if content_length == "0" {
        String::new()
    } else {
        content_length
    };

    let mut ms_headers: BTreeMap<String, String> = BTreeMap::new();
    for (name, value) in headers.iter() {
        let name = name.as_str().to_ascii_lowercase();
        if name.starts_with("x-ms-") {
            ms_headers.insert(name, value.as_str().trim().to_owned());
        }
    }
    let canonical_headers: String = ms_headers
        .iter()
        .map(|(k, v)| format!("{k}:{v}\n"))
        .collect();

    let url = request.url();
    let mut resource = format!("/{account}{}", url.path());
    let mut params: BTreeMap<String, Vec<String>> = BTreeMap::new();
    for (k, v) in url.query_pairs() {
        params
            .entry(k.to_ascii_lowercase())
            .or_default()
            .push(v.into_owned());
    }
    for (k, mut values) in params {
        values.sort();
        resource.push_str(&format!("\n{k}:{}", values.join(",")));
    }

    [
        request.method().as_str().to_owned(),
        get("content-encoding"),
        get("content-language"),
        content_length,
        get("content-md5"),
        get("content-type"),
        String::new(), // Date: we send x-ms-date instead.
        get("if-modified-since"),
        get("if-match"),
        get("if-none-match"),
        get("if-unmodified-since"),
        get("range"),
    ]
    .join("\n")
        + "\n"
        + &canonical_headers
        + &resource
}

#[async_trait]
impl Policy for SharedKeyPolicy {
    async fn send(
        &self,
        ctx: &Context,
        request: &mut Request,
        next: &[Arc<dyn Policy>],
    ) -> PolicyResult {
        let date = OffsetDateTime::now_utc()
            .format(format_description!(
                "[weekday repr:short], [day] [month repr:short] [year] [hour]:[minute]:[second] GMT"
            ))
            .map_err(|e| {
                azure_core::Error::with_message(azure_core::error::ErrorKind::Other, e.to_string())
            })?;
        request.insert_header("x-ms-date", date);
        let to_sign = string_to_sign(&self.account, request);
        let signature = self.signature(&to_sign).map_err(|e| {
            azure_core::Error::with_message(azure_core::error::ErrorKind::Credential, e.to_string())
        })?;
        request.insert_header(
            "authorization",
            format!("SharedKey {}:{signature}", self.account),
        );
        next[0].send(ctx, request, &next[1..]).await
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use azure_core::http::Method;

    #[test]
    fn canonical_form() {
        let url = "http://127.0.0.1:10000/devstoreaccount1/oidc?restype=container&comp=acl"
            .parse()
            .unwrap();
        let mut req = Request::new(url, Method::Put);
        req.insert_header("x-ms-version", "2025-01-05");
        req.insert_header("x-ms-date", "Mon, 01 Jan 2024 00:00:00 GMT");
        req.insert_header("x-ms-blob-public-access", "blob");
        let s = string_to_sign("devstoreaccount1", &req);
        assert_eq!(
            s,
            "PUT\n\n\n\n\n\n\n\n\n\n\n\n\
             x-ms-blob-public-access:blob\nx-ms-date:Mon, 01 Jan 2024 00:00:00 GMT\nx-ms-version:2025-01-05\n\
             /devstoreaccount1/devstoreaccount1/oidc\ncomp:acl\nrestype:container"
        );
    }
}
