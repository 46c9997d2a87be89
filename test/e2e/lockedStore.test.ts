import assert from "node:assert/strict";
import { mkdtempSync, readFileSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import path from "node:path";
import { after, before, describe, it } from "node:test";
import { accessTokenRequest, parseClientKeys, type ClientKeys } from "../../src/enrollment/clientJwt.ts";
import { sqliteFile } from "../../src/store/openStores.ts";
import { issueNonce, KEY, postBlob, request, tenantWithKeys, type Res } from "../scale/harness.ts";
import { attestdCli, attestdCliAsync, startInstance, type Instance } from "../helpers/serverProcess.ts";
import { holdSqliteLock } from "../helpers/sqliteLock.ts";

/**
 * Issue 13, item 3: while another process held the SQLite file's write lock (an `attestd` command may, by
 * operator.md), the server's synchronous busy wait stalled its event loop: /healthz took seconds and writes
 * answered 500 "database is locked". Now the wait is asynchronous: health and reads are answered meanwhile, a
 * write that cannot get the lock within --sqlite-lock-wait-ms answers 503 with Retry-After, and everything works
 * again once the lock is released. A real server, and a real second process holding `BEGIN IMMEDIATE`.
 */
describe("a SQLite file locked by another process (real processes)", () => {
  let dir: string;
  let inst: Instance;
  let key: string;
  let keys: ClientKeys;

  before(async () => {
    dir = mkdtempSync(path.join(tmpdir(), "attestd-locked-"));
    const data = ["--data-dir", dir];
    key = (await tenantWithKeys(data, "acme", [{ rps: 1000, burst: 1000 }]))[0]!;
    const keysFile = path.join(dir, "keys.json");
    await attestdCliAsync(["client", "create", "--tenant", "acme", "--user", "ops@acme.example", "--out", keysFile, ...data]);
    keys = parseClientKeys(readFileSync(keysFile, "utf8"));
    inst = await startInstance([...data, "--log-format", "json", "--sqlite-lock-wait-ms", "3000"]);
  });
  after(async () => {
    if (inst && inst.proc.exitCode === null && inst.proc.signalCode === null) {
      inst.kill("SIGKILL");
      await inst.exited;
    }
    rmSync(dir, { recursive: true, force: true });
  });

  const tokenRequest = async () =>
    request(
      "POST",
      `${inst.base}/svc/v1/auth/accesstoken`,
      { "content-type": "application/json" },
      JSON.stringify(await accessTokenRequest(keys, { nowMs: Date.now() })),
    );

  function assertLockedOut(r: Res, part: "A" | "B"): void {
    assert.equal(r.status, 503, r.body);
    assert.equal(r.headers["retry-after"], "1");
    const body = r.json();
    if (part === "A") {
      assert.equal(body.result, "FAIL");
      assert.equal(body.error.code, "5030000");
      assert.equal(body.error.message, "SERVICE_UNAVAILABLE");
    } else {
      assert.match(body.errorId, /^[0-9a-f]{24}$/);
      assert.equal(body.code, "5030000");
      assert.equal(body.message, "SERVICE_UNAVAILABLE");
    }
  }

  it("health and reads are served while the lock is held, writes answer 503 with Retry-After, and all works after", async () => {
    const nonce = await issueNonce(inst.base, key);
    const stored = await postBlob(inst.base, key, nonce);
    assert.equal(stored.status, 200, stored.body);
    const verdictUrl = `${inst.base}${stored.headers.location}`;
    const unused = await issueNonce(inst.base, key);

    const lock = await holdSqliteLock(sqliteFile(dir));
    let partBErrorId: string;
    try {
      const answered: string[] = [];
      const track = <T>(name: string, p: Promise<T>) => p.then((v) => (answered.push(name), v));
      const nonceWrite = track("nonce", request("POST", `${inst.base}/v2/nonces`, { [KEY]: key }));
      const tokenWrite = track("token", tokenRequest());
      const health = await track("healthz", request("GET", `${inst.base}/healthz`));
      const read = await track("verdict", request("GET", verdictUrl, { [KEY]: key }));
      assert.equal(health.status, 200);
      assert.equal(read.status, 200, read.body);
      assert.equal(read.json().nonce, nonce);
      assert.deepEqual(answered, ["healthz", "verdict"], "health and the read are answered while the writes wait for the lock");

      assertLockedOut(await nonceWrite, "A");
      const token = await tokenWrite;
      assertLockedOut(token, "B");
      partBErrorId = token.json().errorId;
      // a blob too: its verdict cannot be stored, so it is not acknowledged
      assertLockedOut(await postBlob(inst.base, key, unused), "A");
    } finally {
      await lock.release();
    }

    const after = await request("POST", `${inst.base}/v2/nonces`, { [KEY]: key });
    assert.equal(after.status, 200, after.body);
    assert.equal((await postBlob(inst.base, key, after.json().nonce)).status, 200);
    assert.equal((await postBlob(inst.base, key, unused)).status, 200, "the refused post did not spend its nonce");
    const token = await tokenRequest();
    assert.equal(token.status, 200, token.body);
    assert.ok(token.json().accessToken);

    // the refusals were logged once the file was free again (the activity log waits for the lock too)
    inst.kill("SIGTERM");
    assert.equal(await inst.exited, 0);
    const found = attestdCli(["activity", "--error-id", partBErrorId, "--data-dir", dir]);
    assert.equal(found.status, 0, found.stderr);
    const entries = found.stdout.split("\n").filter(Boolean).map((l) => JSON.parse(l));
    assert.deepEqual(entries.map((e) => [e.route, e.status, e.code]), [["/svc/v1/auth/accesstoken", 503, "5030000"]]);
    assert.deepEqual(inst.logs().filter((l) => l.msg === "internal error"), [], "no 500 anywhere");
  });
});

/**
 * Servers making their first start at once on one data directory (a `--workers`-less fleet on one host, a
 * supervisor starting several, a test): each migrates, seals the secrets and records the first signing key, and
 * each of those takes the file's write lock. Seen in CI: one met another's lock while sealing, with busy_timeout
 * 0, and exited "database is locked". The start-up writes now wait for the lock as request writes do.
 */
describe("first starts at once on one SQLite data directory (real processes)", () => {
  let dir: string;
  let instances: Instance[] = [];

  before(() => {
    dir = mkdtempSync(path.join(tmpdir(), "attestd-firststarts-"));
  });
  after(async () => {
    for (const i of instances) i.kill("SIGKILL");
    await Promise.all(instances.map((i) => i.exited));
    rmSync(dir, { recursive: true, force: true });
  });

  // a start whose key file did not match the secrets the store was sealed with would have refused to come up
  it("all of them start, and they share one secrets key and one signing key", async () => {
    const starts = await Promise.allSettled([1, 2, 3].map(() => startInstance(["--data-dir", dir, "--log-format", "json"])));
    instances = starts.flatMap((s) => (s.status === "fulfilled" ? [s.value] : []));
    const failed = starts.flatMap((s) => (s.status === "rejected" ? [String(s.reason)] : []));
    assert.deepEqual(failed, [], "every first start came up");
    const kids = await Promise.all(
      instances.map(async (i) => {
        const res = await request("GET", `${i.base}/.well-known/jwks.json`);
        assert.equal(res.status, 200);
        return (JSON.parse(res.body) as { keys: { kid: string }[] }).keys.map((k) => k.kid);
      }),
    );
    assert.equal(kids[0]!.length, 1, "one signing key");
    assert.deepEqual(kids[1], kids[0]);
    assert.deepEqual(kids[2], kids[0]);
  });
});
