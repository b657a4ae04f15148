# syntax=docker/dockerfile:1
# fraud-detector and fraud-loadgen, linux/amd64.
#
#   docker build -t fraud-detector:0.1.0 .
#   docker buildx build --platform linux/amd64 -t REGISTRY/fraud-detector:0.1.0 --push .
#   scripts/image     # without a Docker engine: buildah on a Debian base made by mmdebstrap,
#                     # then a smoke test of the image (docs/development.md, "The container image")
#
# Debian 13 (trixie) in every stage: its librdkafka 2.8, RocksDB 9.10 and prometheus-cpp
# packages, and the security support Debian 12 no longer has (docs/development.md, "Which
# Debian"). The build stage installs its dependencies with scripts/setup --build-only, the
# repository's single list of Debian packages, without the test tools. The test stage
# (--target test) builds the tests against the build stage's own objects; scripts/image runs
# them in it.

ARG DEBIAN_IMAGE=debian:trixie-slim

FROM ${DEBIAN_IMAGE} AS build
SHELL ["/bin/bash", "-o", "pipefail", "-c"]
WORKDIR /src
# Dependencies first: this layer is rebuilt only when scripts/setup changes. The slim image
# leaves out /usr/share/man, and openjdk's post-install script (the JRE is there for the test
# broker, when the full setup runs) fails without /usr/share/man/man1.
COPY scripts/setup scripts/setup
RUN mkdir -p /usr/share/man/man1 && bash scripts/setup --build-only && rm -rf /var/lib/apt/lists/*
# Only what the Release build compiles: a change to the tests or docs rebuilds nothing here.
COPY CMakeLists.txt ./
COPY cmake/ cmake/
COPY detectors/ detectors/
COPY state/ state/
COPY api/ api/
COPY service/ service/
COPY loadgen/ loadgen/
# The compiler cache lives in a cache mount, outside the image's layers: a rebuild after a
# source change recompiles only what changed.
RUN --mount=type=cache,target=/root/.cache/ccache,id=fraud-detector-ccache \
    cmake -S . -B build -G Ninja -DCMAKE_BUILD_TYPE=Release -DFRAUD_BUILD_TESTS=OFF \
        -DCMAKE_C_COMPILER_LAUNCHER=ccache -DCMAKE_CXX_COMPILER_LAUNCHER=ccache \
    && cmake --build build \
    && mkdir -p /out/bin \
    && strip --strip-unneeded -o /out/bin/fraud-detector build/service/fraud-detector \
    && strip --strip-unneeded -o /out/bin/fraud-loadgen build/loadgen/fraud-loadgen

# The tests, built in the same tree: the libraries' objects are the ones the runtime ships
# (only the test binaries compile and link), with the test stage's few extra packages.
# Not part of the runtime image: scripts/image builds it with --target test and runs the
# unit, component and integration labels in it.
FROM build AS test
# What to build: scripts/image names the targets of the labels it runs.
ARG TEST_TARGETS="unit_tests component_tests tests/integration/all"
RUN bash scripts/setup --image-tests && rm -rf /var/lib/apt/lists/*
COPY tests/ tests/
COPY docs/ docs/
COPY scripts/ scripts/
RUN --mount=type=cache,target=/root/.cache/ccache,id=fraud-detector-ccache \
    cmake -S . -B build -DFRAUD_BUILD_TESTS=ON \
    && cmake --build build --target ${TEST_TARGETS}

# Runtime: debian:trixie-slim rather than distroless. The binaries link librdkafka, RocksDB
# (with snappy, lz4, zstd, bzip2, zlib, gflags), simdjson, spdlog, fmt and prometheus-cpp:
# distroless
# has none of them, so their whole closure would have to be copied in by hand, with no package
# metadata left for vulnerability scanners and no apt security updates. Here apt resolves the
# closure and dpkg records it; the pod still runs non-root on a read-only root filesystem with
# every capability dropped.
FROM ${DEBIAN_IMAGE}
SHELL ["/bin/bash", "-o", "pipefail", "-c"]
ARG VERSION=0.1.0
LABEL org.opencontainers.image.title="fraud-detector" \
      org.opencontainers.image.description="Card fraud detection over Kafka: fraud-detector and fraud-loadgen" \
      org.opencontainers.image.version="${VERSION}"
# apt-get clean: debian:trixie-slim drops downloaded packages by itself (docker-clean), a
# base made otherwise may not (86 MB more).
# Versions are not pinned: trixie's archive keeps only the current security release of each
# package, so a pin would break the build at the next Debian point release.
# hadolint ignore=DL3008
RUN apt-get update \
    && apt-get install -y --no-install-recommends \
        ca-certificates librdkafka1 librocksdb9.10 libssl3t64 libsimdjson25 libspdlog1.15 \
        libfmt10 libprometheus-cpp-core1.0 \
    && apt-get clean \
    && rm -rf /var/lib/apt/lists/*
COPY --from=build /out/bin/ /usr/local/bin/
# Fail the build, not the pod, when a shared library is missing.
RUN ldconfig \
    && ! ldd /usr/local/bin/fraud-detector /usr/local/bin/fraud-loadgen | grep 'not found' \
    && groupadd --system --gid 10001 fraud \
    && useradd --system --uid 10001 --gid fraud --no-create-home --home-dir /var/lib/fraud-detector \
        --shell /usr/sbin/nologin fraud \
    && install -d -o fraud -g fraud -m 0750 /var/lib/fraud-detector
USER 10001:10001
WORKDIR /var/lib/fraud-detector
ENV FRAUD_STATE_DIR=/var/lib/fraud-detector
# The one writable path: the root filesystem can be read-only (Kubernetes mounts a volume here).
VOLUME ["/var/lib/fraud-detector"]
EXPOSE 8080
# No HEALTHCHECK: Kubernetes probes /healthz and /readyz (the chart's startup, readiness and
# liveness probes); the OCI image format has no place for one either.
ENTRYPOINT ["/usr/local/bin/fraud-detector"]
CMD ["run"]
