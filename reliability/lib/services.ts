import { execFile, execFileSync, spawn, type ChildProcess } from "node:child_process";
import { chownSync, existsSync, mkdtempSync, readdirSync, rmSync, appendFileSync } from "node:fs";
import { userInfo, tmpdir } from "node:os";
import path from "node:path";
import { promisify } from "node:util";
import pg from "pg";
import { freePort } from "../../test/helpers/serverProcess.ts";

/**
 * A PostgreSQL cluster and a Redis server of the campaign's own, on free loopback ports, so that stopping and
 * restarting them under load (part c) touches nothing anyone else uses. The shared servers on 5432 / 6379 are
 * never stopped by anything here.
 */

const run = promisify(execFile);

/** initdb/pg_ctl of the newest installed PostgreSQL, or a clear error: the campaign fails, never skips. */
function pgBinDir(): string {
  const root = "/usr/lib/postgresql";
  const versions = existsSync(root)
    ? readdirSync(root)
        .filter((v) => existsSync(path.join(root, v, "bin", "pg_ctl")))
        .sort((a, b) => Number(b) - Number(a))
    : [];
  if (versions.length > 0) return path.join(root, versions[0]!, "bin");
  for (const dir of (process.env.PATH ?? "").split(":")) if (dir && existsSync(path.join(dir, "initdb")) && existsSync(path.join(dir, "pg_ctl"))) return dir;
  throw new Error(
    "PostgreSQL server binaries (initdb, pg_ctl) not found in /usr/lib/postgresql/*/bin or on PATH. The reliability " +
      "campaign starts a private cluster it can stop and restart: install the server (apt-get install postgresql).",
  );
}

/** PostgreSQL refuses to run as root: as root, every server command runs as the `postgres` user. */
function asServerUser(cmd: string, args: string[]): [string, string[]] {
  return userInfo().uid === 0 ? ["runuser", ["-u", "postgres", "--", cmd, ...args]] : [cmd, args];
}

export class PrivatePostgres {
  private cleanup?: () => void;
  private constructor(
    readonly dir: string,
    readonly port: number,
    private readonly bin: string,
  ) {}

  /** admin URL (database `postgres`, user `postgres`, trust auth on the loopback only) */
  get url(): string {
    return `postgres://postgres@127.0.0.1:${this.port}/postgres`;
  }

  urlOf(database: string): string {
    return `postgres://postgres@127.0.0.1:${this.port}/${database}`;
  }

  static async start(): Promise<PrivatePostgres> {
    const bin = pgBinDir();
    const dir = mkdtempSync(path.join(tmpdir(), "attestd-rel-pg-"));
    if (userInfo().uid === 0) {
      const owner = await run("id", ["-u", "postgres"]).catch(() => {
        throw new Error("running as root, but there is no `postgres` user to run the private PostgreSQL cluster as");
      });
      const uid = Number(owner.stdout.trim());
      chownSync(dir, uid, uid);
    }
    const data = path.join(dir, "data");
    await run(...asServerUser(path.join(bin, "initdb"), ["-D", data, "-U", "postgres", "-A", "trust", "--no-sync", "-E", "UTF8"]), { cwd: dir });
    const port = await freePort();
    const cluster = new PrivatePostgres(dir, port, bin);
    cluster.cleanup = () => {
      try {
        execFileSync(...asServerUser(path.join(bin, "pg_ctl"), ["-D", data, "stop", "-m", "immediate"]), { stdio: "ignore", cwd: dir });
      } catch {
        // not running
      }
    };
    cleanups.add(cluster.cleanup);
    // the loopback only, no Unix socket outside the cluster's own directory; small, since it shares the machine
    appendFileSync(
      path.join(data, "postgresql.conf"),
      `\nlisten_addresses = '127.0.0.1'\nport = ${port}\nunix_socket_directories = '${dir}'\nshared_buffers = 32MB\nmax_connections = 60\n`,
    );
    await cluster.resume();
    return cluster;
  }

  private ctl(args: string[]) {
    return run(...asServerUser(path.join(this.bin, "pg_ctl"), ["-D", path.join(this.dir, "data"), ...args]), { cwd: this.dir });
  }

  /** Starts (again) and waits until it accepts connections. */
  async resume(): Promise<void> {
    await this.ctl(["start", "-w", "-t", "60", "-l", path.join(this.dir, "server.log")]);
  }

  /** A fast shutdown: sessions are ended, clients see their connections closed. */
  async stop(): Promise<void> {
    await this.ctl(["stop", "-w", "-m", "fast"]);
  }

  async destroy(): Promise<void> {
    await this.ctl(["stop", "-w", "-m", "immediate"]).catch(() => undefined);
    if (this.cleanup) cleanups.delete(this.cleanup);
    rmSync(this.dir, { recursive: true, force: true });
  }
}

/**
 * redis-server in the foreground as our child. An append-only file fsynced on every write, as a production Redis
 * holding nonces should be configured, so a stop and restart keeps issued nonces (the outage is of the service,
 * not a loss of its data).
 */
export class PrivateRedis {
  private proc?: ChildProcess;
  private constructor(
    readonly dir: string,
    readonly port: number,
  ) {}

  get url(): string {
    return `redis://127.0.0.1:${this.port}`;
  }

  static async start(): Promise<PrivateRedis> {
    const r = new PrivateRedis(mkdtempSync(path.join(tmpdir(), "attestd-rel-redis-")), await freePort());
    await r.resume();
    return r;
  }

  async resume(): Promise<void> {
    const args = ["--port", String(this.port), "--bind", "127.0.0.1", "--save", "", "--appendonly", "yes", "--appendfsync", "always", "--dir", this.dir];
    const proc = spawn("redis-server", args, { stdio: ["ignore", "pipe", "pipe"] });
    let out = "";
    proc.stdout!.on("data", (d) => (out += d));
    proc.stderr!.on("data", (d) => (out += d));
    const failed = new Promise<never>((_, reject) => {
      proc.once("error", (e) => reject(new Error(`redis-server could not start (${e.message}): install redis-server`)));
      proc.once("exit", (code) => reject(new Error(`redis-server exited ${code}: ${out}`)));
    });
    const ready = new Promise<void>((resolve) => {
      const check = () => /Ready to accept connections/.test(out) && resolve();
      proc.stdout!.on("data", check);
    });
    await Promise.race([ready, failed]);
    failed.catch(() => undefined);
    this.proc = proc;
    cleanups.add(this.kill);
  }

  private readonly kill = () => void this.proc?.kill("SIGKILL");

  /** SIGTERM: Redis writes its append-only file and exits; clients see the connection refused until resume(). */
  async stop(): Promise<void> {
    const p = this.proc;
    if (!p || p.exitCode !== null) return;
    const exited = new Promise((r) => p.once("exit", r));
    p.kill("SIGTERM");
    await exited;
    this.proc = undefined;
    cleanups.delete(this.kill);
  }

  async destroy(): Promise<void> {
    await this.stop();
    rmSync(this.dir, { recursive: true, force: true });
  }
}

/** Creates a database on the private cluster for one part's instances. */
export async function createDatabase(cluster: PrivatePostgres, name: string): Promise<string> {
  const c = new pg.Client({ connectionString: cluster.url });
  await c.connect();
  try {
    await c.query(`CREATE DATABASE ${name}`);
  } finally {
    await c.end();
  }
  return cluster.urlOf(name);
}

// a campaign interrupted mid-way (a failed assertion, Ctrl-C) must not leave a postmaster or a redis-server behind
const cleanups = new Set<() => void>();
process.on("exit", () => {
  for (const c of cleanups) c();
});
for (const sig of ["SIGINT", "SIGTERM"] as const) process.once(sig, () => process.exit(130));
