//! Writing protobuf messages (proto3: fields at their default value are left out), for the
//! one protobuf document the emulator produces — OpenAPI v2, which client-go only reads in
//! gnostic's protobuf form.

/// A message being written.
#[derive(Debug, Default)]
pub struct Writer {
    buf: Vec<u8>,
}

impl Writer {
    pub fn into_bytes(self) -> Vec<u8> {
        self.buf
    }

    fn varint(&mut self, mut v: u64) {
        loop {
            let byte = (v & 0x7f) as u8;
            v >>= 7;
            if v == 0 {
                self.buf.push(byte);
                return;
            }
            self.buf.push(byte | 0x80);
        }
    }

    fn key(&mut self, field: u32, wire_type: u8) {
        self.varint(u64::from(field) << 3 | u64::from(wire_type));
    }

    fn bytes(&mut self, field: u32, b: &[u8]) {
        self.key(field, 2);
        self.varint(b.len() as u64);
        self.buf.extend_from_slice(b);
    }

    pub fn string(&mut self, field: u32, s: &str) {
        if !s.is_empty() {
            self.bytes(field, s.as_bytes());
        }
    }

    /// A `repeated string`: every element, empty ones included.
    pub fn strings<'a>(&mut self, field: u32, items: impl IntoIterator<Item = &'a str>) {
        for s in items {
            self.bytes(field, s.as_bytes());
        }
    }

    pub fn bool(&mut self, field: u32, b: bool) {
        if b {
            self.key(field, 0);
            self.varint(1);
        }
    }

    pub fn int64(&mut self, field: u32, n: i64) {
        if n != 0 {
            self.key(field, 0);
            // Two's complement, as protobuf encodes negative int64.
            self.varint(n as u64);
        }
    }

    pub fn double(&mut self, field: u32, d: f64) {
        if d != 0.0 {
            self.key(field, 1);
            self.buf.extend_from_slice(&d.to_le_bytes());
        }
    }

    /// An embedded message, written by `f`; present even when empty.
    pub fn message(&mut self, field: u32, f: impl FnOnce(&mut Writer)) {
        let mut inner = Writer::default();
        f(&mut inner);
        self.bytes(field, &inner.buf);
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::protobuf::wire::{Fields, Wire};

    #[test]
    fn round_trips_through_the_reader() {
        let mut w = Writer::default();
        w.string(1, "a");
        w.string(2, "");
        w.int64(3, 300);
        w.double(4, 1.5);
        w.message(5, |m| m.bool(1, true));
        let bytes = w.into_bytes();
        let fields: Vec<_> = Fields::new(&bytes).collect::<Result<_, _>>().unwrap();
        assert_eq!(fields[0], (1, Wire::Bytes(b"a")));
        assert_eq!(fields[1], (3, Wire::Varint(300)));
        assert_eq!(fields[2], (4, Wire::Fixed64(1.5f64.to_bits())));
        assert_eq!(fields[3], (5, Wire::Bytes(&[0x08, 0x01])));
    }
}
