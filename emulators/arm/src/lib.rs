//! An ARM + Entra emulator speaking the real protocols over HTTPS.
#![forbid(unsafe_code)]
