# The operator's container image: the `omni-operator` binary (the built-in plugins are inside it) and libhelm_c,
# on a glibc base (libhelm_c is Helm's Go SDK built as a C library for glibc >= 2.34; musl will not do).
#
#   docker build -t omni-cluster-operator:dev .
#
# The Helm chart in charts/omni-cluster-operator runs `/usr/bin/omni-operator run` as user 65532 with a
# read-only root file system; everything it writes goes under /tmp/omni-operator (an emptyDir).

FROM rust:1.95-bookworm AS build
# libgit2 links the system OpenSSL; pip fetches the libhelm_c wheel (tools/fetch-helm-c checks its sha256).
RUN apt-get update \
    && apt-get install -y --no-install-recommends pkg-config libssl-dev python3-pip \
    && rm -rf /var/lib/apt/lists/*
WORKDIR /src
COPY . .
RUN rustup toolchain install "$(sed -n 's/^channel = "\(.*\)"/\1/p' rust-toolchain.toml)" --profile minimal \
    && rustup target add wasm32-wasip2
# The production set: without the development features (`dev` with both simulators, the native plugin path and
# the guest SDK it needs), so the image's binary has no `dev` command.
RUN cargo build --release --locked -p omni-operator --bin omni-operator --no-default-features
RUN HELM_C_DIR=/out/helm-c tools/fetch-helm-c

FROM debian:bookworm-slim
RUN apt-get update \
    && apt-get install -y --no-install-recommends ca-certificates libssl3 \
    && rm -rf /var/lib/apt/lists/*
COPY --from=build /src/target/release/omni-operator /usr/bin/omni-operator
COPY --from=build /out/helm-c/libhelm_c.so.0.2.2 /usr/lib/omni-operator/libhelm_c.so.0.2.2
ENV HELM_C_LIB=/usr/lib/omni-operator/libhelm_c.so.0.2.2
USER 65532:65532
ENTRYPOINT ["/usr/bin/omni-operator"]
CMD ["run"]
