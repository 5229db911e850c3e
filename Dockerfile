# offloader: multi-stage build. confluent-kafka-go links its bundled librdkafka,
# built against glibc, so the build and runtime stages use the same Debian release.
# The build stage runs the Makefile's `build` target.

FROM golang:1.26-bookworm AS build
WORKDIR /src
COPY go.mod go.sum ./
RUN go mod download
COPY . .
ARG VERSION=dev
ARG COMMIT=unknown
# The Makefile's build target, so that the image and bin/offloader are
# built with the same flags; the daemon's module alone (GOWORK=off: go.work
# also joins the integration suite's module).
RUN GOWORK=off make build VERSION="${VERSION}" COMMIT="${COMMIT}" \
 && mkdir -p /out && mv bin/offloader /out/offloader

FROM debian:bookworm-slim
ARG VERSION=dev
ARG COMMIT=unknown
LABEL org.opencontainers.image.title="offloader" \
      org.opencontainers.image.description="Keeps oversize values out of Kafka topics, exactly once" \
      org.opencontainers.image.version="${VERSION}" \
      org.opencontainers.image.revision="${COMMIT}"
RUN apt-get update \
 && apt-get install -y --no-install-recommends ca-certificates \
 && rm -rf /var/lib/apt/lists/* \
 && useradd --system --uid 10001 --home-dir /var/lib/offloader --create-home offloader
COPY --from=build /out/offloader /usr/local/bin/offloader
USER 10001:10001
WORKDIR /var/lib/offloader
# Mount the pipeline file here (read-only) and pass secrets as environment variables.
VOLUME ["/etc/offloader"]
# Inside a container the metrics and health listener must answer from outside
# it: the default command serves it on all interfaces (--listen overrides the
# file's observability.listen; an environment override would refuse a file of
# several pipelines).
EXPOSE 9464
# /healthz fails once the run loop failed or stalled (the image has no curl).
HEALTHCHECK --interval=30s --timeout=5s --start-period=60s --retries=3 \
  CMD ["/usr/local/bin/offloader", "status", "--healthz", "--url", "http://127.0.0.1:9464", "--timeout", "4s"]
ENTRYPOINT ["/usr/local/bin/offloader"]
CMD ["run", "-F", "/etc/offloader/pipelines.yaml", "--listen", "0.0.0.0:9464"]
