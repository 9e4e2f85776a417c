//! A management-cluster emulator: a Kubernetes API subset plus a simulated HyperShift operator.
#![forbid(unsafe_code)]
