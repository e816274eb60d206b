# ringback in a container: the one binary, built with the command scripts/run builds it with
# (plus --locked: the committed Cargo.lock, nothing newer), run as a non-root user on Debian slim.
# The test suite does not build it (that needs an image registry); scripts/check-deploy checks it
# statically, and node-harness/test/metrics-scrape.test.js runs its HEALTHCHECK command against a
# real worker. Settings come from the environment: `docker run --env-file ringback.env` with
# deploy/ringback.env.example filled in. The default command is the worker; `serve` is the API:
#   docker run --env-file ringback.env ringback                  # worker, /metrics on 9464
#   docker run --env-file ringback.env -e RINGBACK_HEALTH_PORT=3000 ringback serve
# Inside a container, listen on 0.0.0.0 to be reachable: RINGBACK_METRICS_LISTEN=0.0.0.0:9464 for
# the worker; RINGBACK_LISTEN=0.0.0.0:3000 with RINGBACK_ALLOW_PUBLIC_BIND=true for serve, behind
# the TLS proxy.

# The toolchain the test suite runs (scripts/check-deploy compares it with `rustc --version`).
ARG RUST_VERSION=1.95

FROM rust:${RUST_VERSION}-slim-bookworm AS builder
WORKDIR /src
COPY . .
RUN cargo build --release --locked --bin ringback

FROM debian:bookworm-slim
# CA certificates: Twilio over TLS and rediss:// trust the system's roots. Nothing else is added.
RUN apt-get update \
 && apt-get install -y --no-install-recommends ca-certificates \
 && rm -rf /var/lib/apt/lists/* \
 && useradd --system --uid 10001 --user-group --no-create-home --home-dir /nonexistent \
      --shell /usr/sbin/nologin ringback
COPY --from=builder /src/target/release/ringback /usr/local/bin/ringback
USER 10001:10001
EXPOSE 9464 3000
# /healthz of the worker's metrics listener (or of serve, with RINGBACK_HEALTH_PORT=3000), over
# bash's /dev/tcp: the slim image has no curl.
HEALTHCHECK --interval=30s --timeout=5s --start-period=30s --retries=3 \
  CMD ["/bin/bash", "-c", "exec 3<>/dev/tcp/127.0.0.1/${RINGBACK_HEALTH_PORT:-9464} && printf 'GET /healthz HTTP/1.0\\r\\nHost: localhost\\r\\n\\r\\n' >&3 && head -n 1 <&3 | grep -q ' 200 '"]
ENTRYPOINT ["/usr/local/bin/ringback"]
CMD ["worker"]
