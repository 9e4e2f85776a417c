# syntax=docker/dockerfile:1
# One image for every role: `hypersaga serve <role>`. Two targets:
#   production (the default): `serve` and the client commands, built without the dev tools
#              (`--no-default-features`: no emulators, no `dev`, no `bench`);
#   dev:       the same with them, for compose.yaml (`hypersaga emulator serve-arm` …).
#   docker build -t hypersaga:0.1.0 .            docker build --target dev -t hypersaga:dev .
# Dependencies are compiled in a layer of their own (cargo-chef), rebuilt only when a
# Cargo.toml or Cargo.lock changes. Not built here: the development machines have no
# container engine (see deploy/README.md).

FROM rust:1.95-bookworm AS chef
RUN cargo install cargo-chef --locked --version 0.1.73
WORKDIR /src

# The recipe: every manifest and the lock file, nothing else.
FROM chef AS planner
COPY . .
RUN cargo chef prepare --recipe-path recipe.json

# Dependencies only, once per feature set.
FROM chef AS deps
COPY --from=planner /src/recipe.json recipe.json
RUN cargo chef cook --release --package hypersaga --no-default-features --recipe-path recipe.json

FROM chef AS deps-dev
COPY --from=planner /src/recipe.json recipe.json
RUN cargo chef cook --release --package hypersaga --recipe-path recipe.json

# The commit built, shown by hypersaga_build_info{revision}:
#   docker build --build-arg HYPERSAGA_REVISION=$(git rev-parse HEAD) …
FROM deps AS build
ARG HYPERSAGA_REVISION=unknown
COPY . .
RUN cargo build --locked --release --package hypersaga --no-default-features

FROM deps-dev AS build-dev
ARG HYPERSAGA_REVISION=unknown
COPY . .
RUN cargo build --locked --release --package hypersaga

FROM debian:bookworm-slim AS runtime
# A volume mounted at /var/lib/hypersaga starts owned by the user the roles run as (the
# compose stack's state).
RUN apt-get update \
 && apt-get install -y --no-install-recommends ca-certificates \
 && rm -rf /var/lib/apt/lists/* \
 && mkdir -p /var/lib/hypersaga \
 && chown 65532:65532 /var/lib/hypersaga
USER 65532:65532
ENTRYPOINT ["/usr/local/bin/hypersaga"]

FROM runtime AS dev
COPY --from=build-dev /src/target/release/hypersaga /usr/local/bin/hypersaga

FROM runtime AS production
COPY --from=build /src/target/release/hypersaga /usr/local/bin/hypersaga
