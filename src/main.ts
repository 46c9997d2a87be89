import cluster from "node:cluster";
import { readFileSync } from "node:fs";
import path from "node:path";
import { runPrimary, workerRuntimeOptions } from "./cluster.ts";
import type { FastifyBaseLogger } from "fastify";
import { loadConfig, publicBaseUrl, type Config } from "./config.ts";
import { createLogger, logDestination, logsArePretty, type LogFormat } from "./logging.ts";
import { fileProblem, OperatorError, pathMessage } from "./errors/operatorError.ts";
import { createRuntime, type Runtime, type RuntimeOptions } from "./server.ts";
import { secretsKeyFileOf } from "./secrets/keyFile.ts";
import { ensurePrivateDir, looseModes, PRIVATE_DIR_MODE, PRIVATE_FILE_MODE } from "./secrets/privateFiles.ts";
import { sqliteFile } from "./store/openStores.ts";
import { checkServerChain } from "./tls/checkServerChain.ts";
import { ensureDevTls } from "./tls/devTls.ts";
import { tlsPolicy, type HttpsOptions } from "./tls/tlsPolicy.ts";

/** Thrown for start-up refusals: printed as one line, no stack. */
export class StartupError extends OperatorError {}

interface ServerTls {
  cert: string;
  key: string;
  /** the dev CA a client must trust and the dev key; undefined when the operator brought a certificate */
  devCaFile?: string;
  devKeyFile?: string;
}

async function resolveTls(config: Config, log: FastifyBaseLogger): Promise<ServerTls | undefined> {
  if (config.insecureHttp) return undefined;
  if (config.tlsCert && config.tlsKey) {
    const read = (f: string, what: string) => {
      try {
        return readFileSync(f, "utf8");
      } catch (e) {
        throw new StartupError(pathMessage(`${what} FILE`, f, fileProblem(e), what === "--tls-cert" ? "a PEM chain: the leaf, then its intermediates" : "the leaf's private key, PEM"));
      }
    };
    const cert = read(config.tlsCert, "--tls-cert");
    const key = read(config.tlsKey, "--tls-key");
    const problem = checkServerChain(cert, key);
    if (problem) throw new StartupError(`refusing to start: ${problem}`);
    return { cert, key };
  }
  const dev = await ensureDevTls(config.dataDir);
  log.info({ caFile: dev.caFile }, dev.created ? "dev TLS created" : "dev TLS in use");
  return { cert: readFileSync(dev.certFile, "utf8"), key: readFileSync(dev.keyFile, "utf8"), devCaFile: dev.caFile, devKeyFile: dev.keyFile };
}

/**
 * What in the data directory (and the secrets key, wherever it is) must be the service user's alone. attestd makes
 * them so; these are checked at start because an operator may have made them, or loosened them, before.
 */
function privatePaths(config: Config, tls: ServerTls | undefined): { path: string; max: number }[] {
  const paths = [
    { path: path.resolve(config.dataDir), max: PRIVATE_DIR_MODE },
    { path: secretsKeyFileOf(config), max: PRIVATE_FILE_MODE },
  ];
  if (config.store === "sqlite") {
    const db = sqliteFile(config.dataDir);
    paths.push(...[db, `${db}-wal`, `${db}-shm`].map((p) => ({ path: p, max: PRIVATE_FILE_MODE })));
  }
  if (tls?.devKeyFile) {
    paths.push({ path: path.dirname(tls.devKeyFile), max: PRIVATE_DIR_MODE }, { path: tls.devKeyFile, max: PRIVATE_FILE_MODE });
  }
  return paths;
}

/**
 * The listening address as people should type it: a loopback address as `localhost`, the name the dev certificate,
 * the portal's passkeys (WebAuthn takes no IP address), the README and the docs all use, so a newcomer meets one
 * host name. Any other address is shown as it is.
 */
export function addressForPeople(address: string): string {
  const url = new URL(address);
  if (!["127.0.0.1", "[::1]"].includes(url.hostname)) return address;
  url.hostname = "localhost";
  return url.origin;
}

/**
 * What a person who just ran `npm start` needs next: where the service is, which CA to trust, where the portal is
 * and how to make its first operator account, and what to run. The commands are the README's walk-through's, so
 * the two never disagree.
 */
export function startupBanner(o: {
  address: string;
  caFile?: string | undefined;
  tenants: number;
  portal: string;
  operators: number;
  /** /docs is served (not --api-docs false): the reference to browse and try; else the document alone */
  apiDocs?: boolean;
}): string {
  const trust = o.caFile ? `--cacert ${o.caFile} ` : "";
  const address = addressForPeople(o.address);
  // the CLI builds the invitation link from its own settings: name the portal when it is not the CLI's default
  const where = o.portal === publicBaseUrl(loadConfig({}, {})) ? "" : ` --public-url ${o.portal}`;
  const lines = [
    "",
    `  attestd is serving ${address}`,
    ...(o.caFile ? [`  Its dev CA (trust it):  ${o.caFile}`] : []),
    `  Check it:               curl ${trust}${address}/healthz`,
    `  The portal:             ${o.portal}/portal/`,
  ];
  if (o.operators === 0) {
    lines.push(
      "  Its first operator account (prints a one-time sign-in link):",
      `                          npm run --silent attestd -- user invite --operator --email you@example.com${where}`,
    );
  }
  if (o.tenants === 0) {
    lines.push(
      "  Next, in another terminal: a tenant and its API key",
      "                          npm run --silent attestd -- tenant create acme",
      "                          npm run --silent attestd -- key create --tenant acme",
    );
  }
  lines.push(
    "  Then:                   README.md, \"The walk-throughs\" (demo CAs, nonce, simulated device, verdict)",
    `  API reference:          ${address}${o.apiDocs === false ? "/openapi.json" : "/docs"}      Stop: Ctrl-C`,
    "",
  );
  return lines.join("\n") + "\n";
}

/**
 * `attestd serve`: config → runtime → listen; SIGTERM/SIGINT close gracefully (in-flight requests finish, the
 * activity log is flushed, stores closed). Returns the runtime for callers that manage it themselves;
 * `runtimeOptions` are createRuntime's, for test entry points that serve exactly as the CLI does.
 */
export async function serve(config: Config, installSignalHandlers = true, runtimeOptions: RuntimeOptions = {}): Promise<Runtime> {
  const format = config.logFormat as LogFormat;
  const log = createLogger({ level: config.logLevel, format });
  ensurePrivateDir(config.dataDir);
  const tls = await resolveTls(config, log);
  let https: HttpsOptions | undefined;
  if (tls) {
    const policy = tlsPolicy(config);
    if (typeof policy === "string") throw new StartupError(`refusing to start: ${policy}`);
    https = { cert: tls.cert, key: tls.key, ...policy };
  }
  // --workers N: this process becomes the cluster primary (src/cluster.ts) and never returns; its workers come
  // back through here and serve, with the primary's shared rate-limit buckets
  if (config.workers > 1 && cluster.isPrimary) return runPrimary(config, log);
  const runtime = await createRuntime(config, {
    ...runtimeOptions,
    logger: log,
    ...(https ? { https } : {}),
    ...(tls?.devCaFile ? { caFile: tls.devCaFile } : {}),
    ...(await workerRuntimeOptions(config, log)),
  });
  // one service, one set of warnings (not one per cluster worker)
  if (!cluster.isWorker || cluster.worker?.id === 1) {
    for (const loose of looseModes(privatePaths(config, tls))) {
      log.warn(loose, `${loose.path} has mode ${loose.mode}: other users may read it; chmod ${loose.expected.slice(1)} it`);
    }
  }
  const address = await runtime.app.listen({ host: config.host, port: config.port });
  log.info({ address, tls: https ? "on" : "off", ...(https ? { tlsMinVersion: https.minVersion } : {}), store: config.store, ...(tls?.devCaFile ? { caFile: tls.devCaFile } : {}) }, "attestd listening");
  // one banner per service, not per cluster worker; a collector reading JSON has the same facts in the line above
  if (logsArePretty(format) && (!cluster.isWorker || cluster.worker?.id === 1)) {
    const tenants = (await runtime.stores.durable.listTenants()).length;
    const operators = (await runtime.portal.accounts.list({ operators: true })).length;
    // the port actually bound (--port 0 picks one)
    const portal = publicBaseUrl({ ...config, port: Number(new URL(address).port) || config.port });
    logDestination(1).write(startupBanner({ address, caFile: tls?.devCaFile, tenants, portal, operators, apiDocs: config.apiDocs }));
  }
  if (installSignalHandlers) {
    const stop = (signal: string) => {
      log.info({ signal, graceMs: config.shutdownGraceMs }, "shutting down");
      // whatever holds the close up (a request that never ends, a store that never answers), the process ends
      // within the grace period, before the orchestrator's SIGKILL, with a line saying so
      setTimeout(() => {
        log.error({ graceMs: config.shutdownGraceMs }, "shutdown did not finish within the grace period; exiting");
        process.exit(1);
      }, config.shutdownGraceMs).unref();
      runtime.close().then(
        () => process.exit(0),
        (err: unknown) => {
          log.error({ err }, "shutdown failed");
          process.exit(1);
        },
      );
    };
    process.once("SIGTERM", () => stop("SIGTERM"));
    process.once("SIGINT", () => stop("SIGINT"));
  }
  return runtime;
}
