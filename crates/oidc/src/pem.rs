//! Minimal PEM: base64 body between `-----BEGIN x-----` / `-----END x-----`, 64-column lines.

use base64::Engine as _;
use base64::engine::general_purpose::STANDARD;

use crate::error::{Error, Result};

pub(crate) fn encode(label: &str, der: &[u8]) -> String {
    let b64 = STANDARD.encode(der);
    let mut out = format!("-----BEGIN {label}-----\n");
    for chunk in b64.as_bytes().chunks(64) {
        // Base64 output is ASCII, so every chunk is valid UTF-8.
        out.push_str(&String::from_utf8_lossy(chunk));
        out.push('\n');
    }
    out.push_str(&format!("-----END {label}-----\n"));
    out
}

/// The first PEM block in `text`: (label, DER).
pub(crate) fn decode(text: &str) -> Result<(String, Vec<u8>)> {
    let begin = text
        .find("-----BEGIN ")
        .ok_or_else(|| Error::Pem("no BEGIN line".into()))?;
    let rest = &text[begin + "-----BEGIN ".len()..];
    let label_end = rest
        .find("-----")
        .ok_or_else(|| Error::Pem("unterminated BEGIN line".into()))?;
    let label = rest[..label_end].to_owned();
    let body_start = label_end + "-----".len();
    let end_marker = format!("-----END {label}-----");
    let end = rest
        .find(&end_marker)
        .ok_or_else(|| Error::Pem(format!("no END line for {label}")))?;
    if end < body_start {
        return Err(Error::Pem("END before BEGIN".into()));
    }
    let b64: String = rest[body_start..end]
        .chars()
        .filter(|c| !c.is_ascii_whitespace())
        .collect();
    let der = STANDARD
        .decode(b64)
        .map_err(|e| Error::Pem(format!("bad base64: {e}")))?;
    Ok((label, der))
}

#[cfg(test)]
mod tests {
    #[test]
    fn round_trip() {
        let der: Vec<u8> = (0..=255u8).collect();
        let pem = super::encode("PUBLIC KEY", &der);
        assert!(pem.lines().all(|l| l.len() <= 64));
        assert_eq!(super::decode(&pem).unwrap(), ("PUBLIC KEY".to_owned(), der));
        assert!(super::decode("junk").is_err());
    }
}
