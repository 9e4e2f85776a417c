# One image for every role: `hypersaga serve <role>`.
# Not built in CI: the development machines have no container engine (see deploy/README.md).
FROM rust:1.95-bookworm AS build
WORKDIR /src
COPY . .
RUN cargo build --release -p hypersaga

FROM debian:bookworm-slim
RUN apt-get update && apt-get install -y --no-install-recommends ca-certificates && rm -rf /var/lib/apt/lists/*
COPY --from=build /src/target/release/hypersaga /usr/local/bin/hypersaga
USER 65532:65532
ENTRYPOINT ["/usr/local/bin/hypersaga"]
