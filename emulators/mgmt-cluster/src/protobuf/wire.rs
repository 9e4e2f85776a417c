//! The protobuf wire format, as far as reading Kubernetes objects needs it: a message is a
//! sequence of `(field number, wire type)` keys, each followed by a varint, a fixed 32/64-bit
//! value or a length-delimited byte string.

/// A malformed message; worded as gogo-protobuf's generated decoders word it.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum WireError {
    #[error("unexpected EOF")]
    UnexpectedEof,
    #[error("proto: integer overflow")]
    IntegerOverflow,
    #[error("proto: negative length found during unmarshaling")]
    NegativeLength,
    #[error("proto: illegal tag {tag} (wire type {wire_type})")]
    IllegalTag { tag: u64, wire_type: u8 },
    #[error("proto: illegal wireType {0}")]
    IllegalWireType(u8),
}

/// One field's value as it appears on the wire.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Wire<'a> {
    Varint(u64),
    Fixed64(u64),
    Bytes(&'a [u8]),
    Fixed32(u32),
}

impl Wire<'_> {
    /// The wire type number, for error messages.
    pub fn type_number(&self) -> u8 {
        match self {
            Self::Varint(_) => 0,
            Self::Fixed64(_) => 1,
            Self::Bytes(_) => 2,
            Self::Fixed32(_) => 5,
        }
    }
}

/// The fields of one message, in wire order.
pub struct Fields<'a> {
    buf: &'a [u8],
    failed: bool,
}

impl<'a> Fields<'a> {
    pub fn new(buf: &'a [u8]) -> Self {
        Self { buf, failed: false }
    }

    fn varint(&mut self) -> Result<u64, WireError> {
        let mut value: u64 = 0;
        for (i, byte) in self.buf.iter().enumerate() {
            if i >= 10 {
                return Err(WireError::IntegerOverflow);
            }
            value |= u64::from(byte & 0x7f) << (7 * i);
            if byte & 0x80 == 0 {
                self.buf = &self.buf[i + 1..];
                return Ok(value);
            }
        }
        Err(WireError::UnexpectedEof)
    }

    fn take(&mut self, n: usize) -> Result<&'a [u8], WireError> {
        if n > self.buf.len() {
            return Err(WireError::UnexpectedEof);
        }
        let (head, rest) = self.buf.split_at(n);
        self.buf = rest;
        Ok(head)
    }

    fn field(&mut self) -> Result<(u32, Wire<'a>), WireError> {
        let key = self.varint()?;
        let wire_type = (key & 7) as u8;
        let tag = key >> 3;
        if tag == 0 || tag > u64::from(u32::MAX >> 3) {
            return Err(WireError::IllegalTag { tag, wire_type });
        }
        let value = match wire_type {
            0 => Wire::Varint(self.varint()?),
            1 => {
                let b = self.take(8)?;
                let mut a = [0u8; 8];
                a.copy_from_slice(b);
                Wire::Fixed64(u64::from_le_bytes(a))
            }
            2 => {
                let len = self.varint()?;
                let len = i64::try_from(len).map_err(|_| WireError::NegativeLength)?;
                let len = usize::try_from(len).map_err(|_| WireError::UnexpectedEof)?;
                Wire::Bytes(self.take(len)?)
            }
            5 => {
                let b = self.take(4)?;
                let mut a = [0u8; 4];
                a.copy_from_slice(b);
                Wire::Fixed32(u32::from_le_bytes(a))
            }
            other => return Err(WireError::IllegalWireType(other)),
        };
        // `tag` fits in u32: checked above.
        Ok((tag as u32, value))
    }
}

impl<'a> Iterator for Fields<'a> {
    type Item = Result<(u32, Wire<'a>), WireError>;

    fn next(&mut self) -> Option<Self::Item> {
        if self.buf.is_empty() || self.failed {
            return None;
        }
        let item = self.field();
        self.failed = item.is_err();
        Some(item)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn reads_each_wire_type() {
        // 1: varint 300, 2: bytes "hi", 3: fixed32 1, 4: fixed64 2
        let buf = [
            0x08, 0xac, 0x02, 0x12, 0x02, b'h', b'i', 0x1d, 1, 0, 0, 0, 0x21, 2, 0, 0, 0, 0, 0, 0,
            0,
        ];
        let fields: Vec<_> = Fields::new(&buf).collect::<Result<_, _>>().unwrap();
        assert_eq!(
            fields,
            [
                (1, Wire::Varint(300)),
                (2, Wire::Bytes(b"hi")),
                (3, Wire::Fixed32(1)),
                (4, Wire::Fixed64(2)),
            ]
        );
    }

    #[test]
    fn truncation_is_an_error() {
        let buf = [0x12, 0x05, b'h'];
        let first = Fields::new(&buf).next().unwrap();
        assert_eq!(first, Err(WireError::UnexpectedEof));
        assert_eq!(
            Fields::new(&[0x00]).next().unwrap(),
            Err(WireError::IllegalTag {
                tag: 0,
                wire_type: 0
            })
        );
    }
}
