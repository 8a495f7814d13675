# hypha-serve-exporter container image.
# Build: bash scripts/build-image.sh (builds the debian:trixie-slim base from a Debian mirror, then this file
# with `podman build --format docker`; docker build works the same where a registry is reachable).
# Run:   podman run --init -p 9731:9731 -v hse-state:/var/lib/hypha-serve-exporter \
#          -v ./config.yml:/etc/hypha-serve-exporter/config.yml:ro \
#          -v ./hypha-token:/run/secrets/hypha-token:ro hypha-serve-exporter
# Secrets are files referenced from the config (bearer_token_file), never build args or env in the image.

# ---- build: compile TypeScript, pack the npm package, install its runtime dependencies only ----
# On the build machine's platform: the output is JavaScript and the runtime dependencies have no native
# code, so a linux/arm64 image (release workflow) needs no emulated npm or tsc, only its runtime stage.
FROM --platform=$BUILDPLATFORM debian:trixie-slim AS build
RUN apt-get update \
 && DEBIAN_FRONTEND=noninteractive apt-get install -y --no-install-recommends nodejs npm ca-certificates \
 && rm -rf /var/lib/apt/lists/*
WORKDIR /src
COPY package.json package-lock.json ./
# Behind a TLS-intercepting proxy, build-image.sh passes the host's CA bundle as a build secret: it is
# mounted for this step only and never stored in a layer.
RUN --mount=type=secret,id=build_ca \
    if [ -f /run/secrets/build_ca ]; then export NODE_EXTRA_CA_CERTS=/run/secrets/build_ca; fi \
 && npm ci --no-audit --no-fund --ignore-scripts --loglevel=error
COPY tsconfig.json ./
COPY deploy/tsconfig.build.json deploy/
COPY src src
# The rule model, for `hypha-serve-exporter rules` (a variant of the pack from the user's mixin config).
COPY mixin mixin
RUN npx tsc -p deploy/tsconfig.build.json
COPY README.md CHANGELOG.md LICENSE ./
COPY rules rules
COPY dashboards/json dashboards/json
COPY docs/config.schema.json docs/
COPY deploy/systemd deploy/systemd
# The image ships exactly the npm package (package.json "files"), so both install ways run the same bits.
RUN --mount=type=secret,id=build_ca \
    if [ -f /run/secrets/build_ca ]; then export NODE_EXTRA_CA_CERTS=/run/secrets/build_ca; fi \
 && npm pack --ignore-scripts --pack-destination /tmp --loglevel=error \
 && mkdir -p /opt/hypha-serve-exporter \
 && tar -xzf /tmp/hypha-serve-exporter-*.tgz -C /opt/hypha-serve-exporter --strip-components=1 \
 && cp package-lock.json /opt/hypha-serve-exporter/ \
 && cd /opt/hypha-serve-exporter \
 && npm ci --omit=dev --no-audit --no-fund --ignore-scripts --loglevel=error \
 && rm package-lock.json \
 && chmod 0755 dist/src/main.js

# ---- runtime: Debian's nodejs, no compiler, no npm, no shell ----
FROM debian:trixie-slim
ARG REVISION=unknown
RUN apt-get update \
 && DEBIAN_FRONTEND=noninteractive apt-get install -y --no-install-recommends nodejs ca-certificates \
 && rm -rf /var/lib/apt/lists/* /usr/share/doc/* /usr/share/man/* \
 && groupadd --gid 10001 exporter \
 && useradd --uid 10001 --gid 10001 --home-dir /nonexistent --no-create-home --shell /usr/sbin/nologin exporter \
 && mkdir -p /etc/hypha-serve-exporter /var/lib/hypha-serve-exporter \
 && chown 10001:10001 /var/lib/hypha-serve-exporter \
 && chmod 0700 /var/lib/hypha-serve-exporter
COPY --from=build /opt/hypha-serve-exporter /opt/hypha-serve-exporter
COPY deploy/container/config.yml /etc/hypha-serve-exporter/config.yml
# Nothing runs a shell at run time (exec-form entrypoint and healthcheck); removing it leaves an attacker
# who gets code execution with one tool fewer. Last build step: nothing after it needs /bin/sh.
RUN ["/bin/rm", "-f", "/bin/sh", "/bin/bash", "/bin/dash", "/usr/bin/sh", "/usr/bin/bash", "/usr/bin/dash", "/bin/rbash", "/usr/bin/rbash"]
ENV NODE_ENV=production \
    HYPHA_SERVE_EXPORTER_REVISION=${REVISION}
USER 10001:10001
# --storage.path (CMD): witnesses of stale proxies and registration history survive a restart or an upgrade
# when this is a named volume (`-v hse-state:/var/lib/hypha-serve-exporter`). podman and docker give a
# fresh named volume the owner and mode of this directory (10001, 0700), so the non-root user can write it.
# Without -v, the engine creates an anonymous volume per container: it survives `stop`/`start`, not `rm`.
VOLUME ["/var/lib/hypha-serve-exporter"]
EXPOSE 9731
# Exec form with node: works without a shell. HEALTHCHECK_URL overrides the probe (another port, TLS).
HEALTHCHECK --interval=30s --timeout=5s --start-period=20s --retries=3 \
  CMD ["/usr/bin/node", "-e", "const u=process.env.HEALTHCHECK_URL||'http://127.0.0.1:9731/-/healthy';require(u.startsWith('https')?'https':'http').get(u,{rejectUnauthorized:false},r=>process.exit(r.statusCode===200?0:1)).on('error',()=>process.exit(1)).setTimeout(4000,()=>process.exit(1))"]
# The bin itself, as `npm install -g` installs it (npm pack does not keep its mode: chmod above). Its
# interpreter line (src/cli/memory-settings.ts) has env(1) set MALLOC_MMAP_THRESHOLD_ and exec node with
# --max-semi-space-size=1 --optimize-for-size: one process, ~90 instead of ~140 MB at 1,000 apps (BENCHMARKS.md).
ENTRYPOINT ["/opt/hypha-serve-exporter/dist/src/main.js"]
CMD ["--config.file=/etc/hypha-serve-exporter/config.yml", "--storage.path=/var/lib/hypha-serve-exporter"]
LABEL org.opencontainers.image.title="hypha-serve-exporter" \
      org.opencontainers.image.description="Prometheus exporter for Ray Serve apps and their Hypha service registrations" \
      org.opencontainers.image.licenses="MIT" \
      org.opencontainers.image.revision="${REVISION}"
