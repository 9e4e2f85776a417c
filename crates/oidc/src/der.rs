//! Just enough DER reading to move between the key encodings aws-lc-rs speaks and the ones
//! ccoctl/HyperShift use: unwrap PKCS#8 to PKCS#1 (`RSA PRIVATE KEY`). Reading only, bounds
//! checked, no allocation beyond the result.

use crate::error::{Error, Result};

const SEQUENCE: u8 = 0x30;
const INTEGER: u8 = 0x02;
const OCTET_STRING: u8 = 0x04;

/// Reads one TLV at the start of `input`: (tag, contents, rest).
fn read_tlv(input: &[u8]) -> Result<(u8, &[u8], &[u8])> {
    let bad = || Error::Key("malformed DER".into());
    let (&tag, rest) = input.split_first().ok_or_else(bad)?;
    let (&first, mut rest) = rest.split_first().ok_or_else(bad)?;
    let len = if first < 0x80 {
        usize::from(first)
    } else {
        let n = usize::from(first & 0x7f);
        if n == 0 || n > 4 || rest.len() < n {
            return Err(bad());
        }
        let mut len = 0usize;
        for &b in &rest[..n] {
            len = (len << 8) | usize::from(b);
        }
        rest = &rest[n..];
        len
    };
    if rest.len() < len {
        return Err(bad());
    }
    Ok((tag, &rest[..len], &rest[len..]))
}

fn expect(input: &[u8], tag: u8) -> Result<(&[u8], &[u8])> {
    let (t, body, rest) = read_tlv(input)?;
    if t != tag {
        return Err(Error::Key(format!(
            "DER: expected tag {tag:#04x}, found {t:#04x}"
        )));
    }
    Ok((body, rest))
}

/// PKCS#8 `PrivateKeyInfo { version, algorithm, privateKey OCTET STRING }` → the inner
/// PKCS#1 `RSAPrivateKey` DER.
pub(crate) fn pkcs8_to_pkcs1(pkcs8: &[u8]) -> Result<Vec<u8>> {
    let (info, _) = expect(pkcs8, SEQUENCE)?;
    let (_version, rest) = expect(info, INTEGER)?;
    let (_algorithm, rest) = expect(rest, SEQUENCE)?;
    let (private_key, _) = expect(rest, OCTET_STRING)?;
    // Sanity: the payload must itself be a SEQUENCE (RSAPrivateKey).
    expect(private_key, SEQUENCE)?;
    Ok(private_key.to_vec())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn rejects_truncated() {
        assert!(read_tlv(&[0x30, 0x05, 0x00]).is_err());
        assert!(read_tlv(&[0x30, 0x82, 0x01]).is_err());
        assert!(pkcs8_to_pkcs1(&[0x02, 0x01, 0x00]).is_err());
    }

    #[test]
    fn long_lengths() {
        let mut v = vec![0x04, 0x82, 0x01, 0x00];
        v.extend(std::iter::repeat_n(7u8, 256));
        let (tag, body, rest) = read_tlv(&v).unwrap();
        assert_eq!((tag, body.len(), rest.len()), (0x04, 256, 0));
    }
}
