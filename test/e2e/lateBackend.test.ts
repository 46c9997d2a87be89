import assert from "node:assert/strict";
import { randomBytes } from "node:crypto";
import { mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import path from "node:path";
import { after, before, describe, it } from "node:test";
import { attestdCliRun, startServer } from "../helpers/serverProcess.ts";
import { createTestDatabase, createTestRedisPrefix, type TestDatabase, type TestRedisPrefix } from "../store/backends.ts";
import { TcpProxy } from "../store/tcpProxy.ts";

/**
 * docs/deployment.md, "When a backend is unreachable": a first connection that times out is tried again with more
 * time, and each new attempt is announced, by a command on stderr and by `serve` in its log. Each backend here sits
 * behind a forwarder that swallows the first connection and forwards from the second on, as a network still
 * coming up beside a just-started container did in CI.
 */
describe("a backend that answers late at start: tried again, and said so", () => {
  let db: TestDatabase;
  let redis: TestRedisPrefix;
  let dir: string;
  let flags: string[];
  before(async () => {
    [db, redis] = await Promise.all([createTestDatabase("late"), createTestRedisPrefix("late")]);
    dir = mkdtempSync(path.join(tmpdir(), "attestd-late-"));
    const keyFile = path.join(dir, "secrets.key");
    writeFileSync(keyFile, randomBytes(32).toString("base64") + "\n", { mode: 0o600 });
    flags = ["--data-dir", dir, "--secrets-key-file", keyFile];
  });
  after(async () => {
    await db?.drop();
    await redis?.clean();
    rmSync(dir, { recursive: true, force: true });
  });

  /** A forwarder to `target` that swallows the first connection and forwards from the second on. */
  async function answersSecondAttempt(target: string): Promise<TcpProxy> {
    const proxy = await TcpProxy.start(target);
    proxy.hangUntilConnection(2);
    return proxy;
  }

  it("a command: one line on stderr per new attempt, then the command's own answer", async () => {
    // PostgreSQL's first attempt has 3 s
    const proxy = await answersSecondAttempt(db.url);
    try {
      const r = await attestdCliRun(["tenant", "create", "acme", "--store", "postgres", "--database-url", proxy.url(db.url), ...flags]);
      assert.equal(r.status, 0, r.stderr);
      assert.match(r.stderr, new RegExp(`^attestd: postgres at 127\\.0\\.0\\.1:${proxy.port} did not answer in 3(\\.\\d)? s; trying again \\(attempt 2 of 3\\)\\n`));
      assert.equal(r.stderr.match(/trying again/g)?.length, 1);
      const list = await attestdCliRun(["tenant", "list", "--store", "postgres", "--database-url", db.url, ...flags]);
      assert.match(list.stdout, /acme/, "the command did its work");
    } finally {
      await proxy.close();
    }
  });

  it("serve: a warn log line per new attempt, then it serves", async () => {
    const proxy = await answersSecondAttempt(redis.url);
    const redisUrl = `${proxy.url(redis.url)}?keyPrefix=${encodeURIComponent(redis.prefix)}`;
    const server = await startServer(["--insecure-http", "--store", "postgres", "--database-url", db.url, "--redis-url", redisUrl, ...flags]);
    try {
      const line = server
        .output()
        .split("\n")
        .filter((l) => l.includes("trying again"))
        .map((l) => JSON.parse(l) as { level: number | string; msg: string });
      assert.equal(line.length, 1, server.output());
      assert.match(line[0]!.msg, new RegExp(`^redis at 127\\.0\\.0\\.1:${proxy.port} did not answer in [\\d.]+ s; trying again \\(attempt 2 of 3\\)$`));
      assert.ok(line[0]!.level === 40 || line[0]!.level === "warn", `level ${line[0]!.level}`);
    } finally {
      await server.stop();
      await proxy.close();
    }
  });
});
