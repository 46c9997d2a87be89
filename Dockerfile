# attestd's container image (docs/deployment.md, "Containers"): `docker build -t attestd .`
#
# NODE_IMAGE is the base of both stages: a Debian-based image with node, and npm for the build stage, in
# /usr/local/bin. The default is the official one; the container test (npm run test:image) builds on a stand-in made
# from Debian's packages and the npm registry, because no image registry is reachable there.
ARG NODE_IMAGE=node:24-bookworm-slim

FROM ${NODE_IMAGE} AS build
# Behind a TLS-inspecting proxy npm needs the proxy's CA: the path of a bundle holding it, present in the base or
# mounted into the build (`podman build -v`). A build argument, so it stays out of the image.
ARG NODE_EXTRA_CA_CERTS
WORKDIR /build
# The dependencies alone first, so that a change to the sources rebuilds from the compile step on. Their scripts
# wait: `prepare` is the build, which needs the sources, and no runtime dependency has an install script (none
# is native since node:sqlite replaced better-sqlite3).
COPY package.json package-lock.json ./
RUN npm ci --ignore-scripts --no-audit --no-fund
COPY tsconfig.json tsconfig.build.json ./
COPY scripts/build.js scripts/
COPY bin/ bin/
COPY src/ src/
COPY web/ web/
RUN npm run build && npm prune --omit=dev --no-audit --no-fund

FROM ${NODE_IMAGE}
# Nothing in the running service needs npm, npx, corepack or yarn: removed, they are no surface to attack and no
# finding in a scan of the image.
RUN rm -rf /usr/local/lib/node_modules /usr/local/bin/npm /usr/local/bin/npx /usr/local/bin/corepack \
      /usr/local/bin/yarn /usr/local/bin/yarnpkg /opt/yarn-* \
 && groupadd --system --gid 10001 attestd \
 && useradd --system --uid 10001 --gid attestd --home-dir /nonexistent --no-create-home --shell /usr/sbin/nologin attestd \
 && mkdir -m 0700 /data && chown attestd:attestd /data
WORKDIR /app
# Owned by root and read-only to the service: a compromised process cannot rewrite its own code.
COPY package.json LICENSE ./
COPY bin/ bin/
COPY --from=build /build/node_modules node_modules/
COPY --from=build /build/dist/src dist/src/
COPY --from=build /build/dist/web dist/web/
RUN ln -s /app/bin/attestd.js /usr/local/bin/attestd
# Every command (`serve`, and the operator commands run with `docker exec`) works on the volume; the service listens
# on every interface of the container whatever flags follow `serve` (the host decides what is published).
ENV ATTESTD_DATA_DIR=/data ATTESTD_HOST=0.0.0.0
VOLUME /data
EXPOSE 8443
# Numeric, so that a runtime enforcing "non-root" (Kubernetes' runAsNonRoot) can check it without /etc/passwd.
USER 10001:10001
# Liveness on the loopback with what the image has (node, no curl). The port and plain HTTP come from the
# environment, so give them as ATTESTD_PORT / ATTESTD_INSECURE_HTTP rather than as flags. The certificate is not
# verified: the check talks to its own process over loopback, and the certificate names the public host (or a dev
# CA in /data), not 127.0.0.1.
HEALTHCHECK --interval=10s --timeout=5s --start-period=20s --retries=3 CMD ["node", "-e", "\
const e = process.env, plain = e.ATTESTD_INSECURE_HTTP === 'true' || e.ATTESTD_INSECURE_HTTP === '1';\
require(plain ? 'node:http' : 'node:https').get({ host: '127.0.0.1', port: e.ATTESTD_PORT || 8443, path: '/healthz', rejectUnauthorized: false, timeout: 4000 },\
  (res) => process.exit(res.statusCode === 200 ? 0 : 1)).on('error', () => process.exit(1)).on('timeout', () => process.exit(1));"]
ENTRYPOINT ["attestd"]
CMD ["serve"]
