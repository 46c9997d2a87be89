import { execFile } from "node:child_process";
import { existsSync } from "node:fs";
import path from "node:path";
import { Redis } from "ioredis";
import pg from "pg";
import { REPO } from "./processes.ts";

/** The PostgreSQL and Redis the multi-instance and history sections use, and how they get databases there. */

export const PG_ADMIN_URL = process.env.ATTESTD_BENCH_PG ?? "postgres://postgres@127.0.0.1:5432/postgres";
export const REDIS_URL = process.env.ATTESTD_BENCH_REDIS ?? "redis://127.0.0.1:6379";

async function pgAnswers(url: string): Promise<string | undefined> {
  const c = new pg.Client({ connectionString: url, connectionTimeoutMillis: 3000 });
  try {
    await c.connect();
    await c.query("select 1");
    return undefined;
  } catch (e) {
    return (e as Error).message;
  } finally {
    await c.end().catch(() => {});
  }
}

async function redisAnswers(url: string): Promise<string | undefined> {
  const r = new Redis(url, { lazyConnect: true, maxRetriesPerRequest: 0, connectTimeout: 3000, retryStrategy: () => null });
  try {
    await r.connect();
    await r.ping();
    return undefined;
  } catch (e) {
    return (e as Error).message;
  } finally {
    r.disconnect();
  }
}

/** PostgreSQL and Redis answer, or else `.ci/services.sh` (when present) is run once to start them. */
export async function ensureServices(log: (l: string) => void): Promise<string | undefined> {
  const check = async () => {
    const [p, r] = await Promise.all([pgAnswers(PG_ADMIN_URL), redisAnswers(REDIS_URL)]);
    return p || r ? `PostgreSQL: ${p ?? "ok"}; Redis: ${r ?? "ok"}` : undefined;
  };
  const first = await check();
  if (!first) return undefined;
  const script = path.join(REPO, ".ci/services.sh");
  if (!existsSync(script)) return `${first} (and .ci/services.sh does not exist to start them)`;
  log("PostgreSQL/Redis not answering; running .ci/services.sh");
  await new Promise<void>((resolve) =>
    execFile("bash", [script], { cwd: REPO, timeout: 120_000 }, () => resolve()),
  );
  return check();
}

export async function adminQuery(sql: string): Promise<void> {
  const c = new pg.Client({ connectionString: PG_ADMIN_URL });
  await c.connect();
  try {
    await c.query(sql);
  } finally {
    await c.end();
  }
}

export function dbUrl(name: string): string {
  const u = new URL(PG_ADMIN_URL);
  u.pathname = `/${name}`;
  return u.toString();
}
