import { randomBytes } from "node:crypto";
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import path from "node:path";
import { createVendorFixture, type VendorFixture } from "../../bench/lib/vendorFixture.ts";
import { startInstance, type Instance } from "../../test/helpers/serverProcess.ts";
import { tenantWithKeys } from "../../test/scale/harness.ts";
import { createDatabase, PrivatePostgres, PrivateRedis } from "./services.ts";

/**
 * attestd as the campaign runs it: real `attestd serve` processes over plain HTTP on 127.0.0.1 (the processes
 * are test/helpers/serverProcess.ts's), vendor blobs from bench/lib/vendorFixture.ts's dev CA that appraise
 * Yes, and the limiter and nonce cap out of the way so only faults refuse a request.
 */

const UNLIMITED = ["--rps", "1000000000", "--burst", "1000000000", "--max-outstanding-nonces", "100000000"];

export class Deployment {
  /** the live instances; a killed one is undefined until restarted */
  readonly instances: (Instance | undefined)[];
  private constructor(
    readonly label: string,
    readonly dir: string,
    readonly fx: VendorFixture,
    private readonly serveArgs: (i: number) => string[],
    readonly apiKey: string,
    count: number,
  ) {
    this.instances = new Array(count).fill(undefined);
  }

  /** One process on an embedded SQLite store, the default deployment. */
  static async sqlite(): Promise<Deployment> {
    const dir = mkdtempSync(path.join(tmpdir(), "attestd-rel-sqlite-"));
    const fx = await createVendorFixture(dir, 8);
    const store = ["--data-dir", path.join(dir, "data")];
    const [key] = await tenantWithKeys(store, "reliability", [{ rps: 1e9, burst: 1e9 }]);
    const d = new Deployment("sqlite", dir, fx, () => [...store, ...trustArgs(fx), ...UNLIMITED, "--log-level", "warn"], key!, 1);
    await d.start(0);
    return d;
  }

  /**
   * Two processes on one database of the campaign's private PostgreSQL and its private Redis, sharing the secrets
   * key as docs/deployment.md has an operator do.
   */
  static async cluster(pg: PrivatePostgres, redis: PrivateRedis): Promise<Deployment> {
    const dir = mkdtempSync(path.join(tmpdir(), "attestd-rel-cluster-"));
    const fx = await createVendorFixture(dir, 8);
    const dbUrl = await createDatabase(pg, `attestd_rel_${randomBytes(4).toString("hex")}`);
    const store = ["--store", "postgres", "--database-url", dbUrl, "--redis-url", redis.url];
    const keyFile = path.join(dir, "secrets.key");
    writeFileSync(keyFile, randomBytes(32).toString("base64") + "\n", { mode: 0o600 });
    const serveArgs = (i: number) => [
      ...store,
      "--data-dir", path.join(dir, `data${i}`),
      "--secrets-key-file", keyFile,
      ...trustArgs(fx),
      ...UNLIMITED,
      "--log-level", "warn",
    ];
    // the first start migrates the empty database; the CLI then finds the tables
    const first = await startInstance(serveArgs(0));
    const [key] = await tenantWithKeys([...store, "--data-dir", path.join(dir, "data0"), "--secrets-key-file", keyFile], "reliability", [{ rps: 1e9, burst: 1e9 }]);
    const d = new Deployment("postgres+redis, 2 instances", dir, fx, serveArgs, key!, 2);
    d.instances[0] = first;
    await d.start(1);
    return d;
  }

  async start(i: number): Promise<Instance> {
    const inst = await startInstance(this.serveArgs(i), { timeoutMs: 60_000 });
    this.instances[i] = inst;
    return inst;
  }

  /** SIGKILL, as the OOM killer or a power cut would: no graceful stop. */
  async kill(i: number): Promise<void> {
    const inst = this.instances[i];
    if (!inst) return;
    this.instances[i] = undefined;
    inst.kill("SIGKILL");
    await inst.exited;
  }

  bases(): string[] {
    return this.instances.filter((x): x is Instance => x !== undefined).map((x) => x.base);
  }

  /** The resident set of instance i now, in MiB (from /proc: the server's own number, not the client's view). */
  rssMb(i = 0): number {
    const pid = this.instances[i]?.proc.pid;
    const m = pid ? /VmRSS:\s+(\d+) kB/.exec(readFileSync(`/proc/${pid}/status`, "utf8")) : null;
    return m ? Math.round((Number(m[1]) / 1024) * 10) / 10 : 0;
  }

  async close(): Promise<void> {
    await Promise.all(
      this.instances.map(async (inst) => {
        if (!inst || inst.proc.exitCode !== null || inst.proc.signalCode !== null) return;
        inst.kill("SIGTERM");
        await inst.exited;
      }),
    );
    rmSync(this.dir, { recursive: true, force: true });
  }
}

function trustArgs(fx: VendorFixture): string[] {
  return ["--vendor-roots", fx.rootsFile, "--reference-values", fx.referenceValuesFile];
}
