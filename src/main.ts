import cluster from "node:cluster";
import { readFileSync } from "node:fs";
import { runPrimary, workerRuntimeOptions } from "./cluster.ts";
import type { Config } from "./config.ts";
import { createLogger, createRuntime, type Runtime } from "./server.ts";
import { checkServerChain } from "./tls/checkServerChain.ts";
import { ensureDevTls } from "./tls/devTls.ts";

/** Thrown for start-up refusals: printed as one line, no stack. */
export class StartupError extends Error {}

async function resolveTls(config: Config): Promise<{ cert: string; key: string } | undefined> {
  if (config.insecureHttp) return undefined;
  if (config.tlsCert && config.tlsKey) {
    const read = (f: string, what: string) => {
      try {
        return readFileSync(f, "utf8");
      } catch (e) {
        throw new StartupError(`${what} ${f}: ${(e as NodeJS.ErrnoException).code ?? (e as Error).message}`);
      }
    };
    const cert = read(config.tlsCert, "--tls-cert");
    const key = read(config.tlsKey, "--tls-key");
    const problem = checkServerChain(cert, key);
    if (problem) throw new StartupError(`refusing to start: ${problem}`);
    return { cert, key };
  }
  const dev = await ensureDevTls(config.dataDir);
  process.stderr.write(`attestd: dev TLS ${dev.created ? "created" : "in use"}; trust it with: curl --cacert ${dev.caFile}\n`);
  return { cert: readFileSync(dev.certFile, "utf8"), key: readFileSync(dev.keyFile, "utf8") };
}

/**
 * `attestd serve`: config → runtime → listen; SIGTERM/SIGINT close gracefully (in-flight requests finish, the
 * activity log is flushed, stores closed). Returns the runtime for callers that manage it themselves.
 */
export async function serve(config: Config, installSignalHandlers = true): Promise<Runtime> {
  const log = createLogger(config.logLevel);
  const https = await resolveTls(config);
  // --workers N: this process becomes the cluster primary (src/cluster.ts) and never returns; its workers come
  // back through here and serve, with the primary's shared rate-limit buckets
  if (config.workers > 1 && cluster.isPrimary) return runPrimary(config, log);
  const runtime = await createRuntime(config, { logger: log, ...(https ? { https } : {}), ...(await workerRuntimeOptions(config, log)) });
  const address = await runtime.app.listen({ host: config.host, port: config.port });
  log.info({ address, tls: https ? "on" : "off", store: config.store }, "attestd listening");
  if (installSignalHandlers) {
    const stop = (signal: string) => {
      log.info({ signal }, "shutting down");
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
