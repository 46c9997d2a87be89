import assert from "node:assert/strict";
import { mkdtempSync, rmSync } from "node:fs";
import net from "node:net";
import { tmpdir } from "node:os";
import path from "node:path";
import { after, before, describe, it } from "node:test";
import { request } from "../scale/harness.ts";
import { attestdCli, startInstance, type Instance } from "../helpers/serverProcess.ts";

/**
 * Issue 13, item 1: the activity log lost whole batches. A request whose client had closed its connection before
 * the answer had no remote address left to log, its row broke `NOT NULL remote_address`, and the write of its
 * whole batch failed, taking the entries of the requests around it (the error ids support looks up) with it.
 * Here as an operator meets it: a real server, Part B requests each on a connection of its own, some of whose
 * clients hang up at once, then `attestd activity --error-id ID` for every error id a client was given.
 */
describe("activity log: every request is logged, whoever hung up (real process)", () => {
  let dir: string;
  let inst: Instance;

  before(async () => {
    dir = mkdtempSync(path.join(tmpdir(), "attestd-activity-"));
    inst = await startInstance(["--data-dir", dir, "--log-format", "json"]);
  });
  after(async () => {
    if (inst && inst.proc.exitCode === null && inst.proc.signalCode === null) {
      inst.kill("SIGKILL");
      await inst.exited;
    }
    rmSync(dir, { recursive: true, force: true });
  });

  /** writes a request and closes the connection at once, before any answer */
  const hangUp = (raw: string) =>
    new Promise<void>((resolve, reject) => {
      const s = net.connect(inst.port, "127.0.0.1", () => {
        s.write(raw);
        s.destroy();
        resolve();
      });
      s.on("error", reject);
    });

  it("logs the requests whose clients closed early, and the error ids of the others are found", async () => {
    // an unknown Part B path: nothing on the way to its 404 reads the caller's address before the answer
    const gone = "/svc/v1/no-such-thing";
    const hungUp = 3;
    for (let i = 0; i < hungUp; i++) await hangUp(`GET ${gone} HTTP/1.1\r\nHost: 127.0.0.1\r\n\r\n`);
    const errorIds: string[] = [];
    for (let i = 0; i < 5; i++) {
      // a connection per request, closed after its answer (harness.request: agent false)
      const r = await request("GET", `${inst.base}/svc/v1/enroll/profiles`);
      assert.equal(r.status, 401);
      errorIds.push(r.json().errorId as string);
    }
    // an API key's request and a portal page view, for the CLI's --key and --kind filters below
    assert.equal(attestdCli(["tenant", "create", "acme", "--data-dir", dir]).status, 0);
    const key = attestdCli(["key", "create", "--tenant", "acme", "--data-dir", dir]).stdout.trim();
    const keyId = key.split("_")[1]!;
    assert.equal((await request("POST", `${inst.base}/v2/nonces`, { "x-vendor-attest-api-key": key })).status, 200);
    assert.equal((await request("GET", `${inst.base}/portal/signin`)).status, 200);
    // a graceful stop writes what the recorder holds; nothing is read before the log is complete
    inst.kill("SIGTERM");
    assert.equal(await inst.exited, 0);

    for (const id of [errorIds[0]!, errorIds.at(-1)!]) {
      const out = attestdCli(["activity", "--error-id", id, "--data-dir", dir]);
      assert.equal(out.status, 0, out.stderr);
      const found = out.stdout.split("\n").filter(Boolean).map((l) => JSON.parse(l));
      assert.deepEqual(found.map((e) => [e.errorId, e.route, e.code]), [[id, "/svc/v1/enroll/profiles", "4010000"]]);
    }
    const all = attestdCli(["activity", "--data-dir", dir]).stdout.split("\n").filter(Boolean).map((l) => JSON.parse(l));
    assert.deepEqual(
      all.filter((e) => errorIds.includes(e.errorId)).map((e) => e.errorId),
      errorIds,
      "every error id a client was given is in the log",
    );
    const early = all.filter((e) => e.route === "unmatched" && e.code === "4040000");
    assert.equal(early.length, hungUp, "the requests whose clients hung up are logged too");
    assert.deepEqual([...new Set(all.map((e) => e.remoteAddress))], ["127.0.0.1"], "each with the address it came from");
    assert.deepEqual(inst.logs().filter((l) => /activity log/.test(String(l.msg))), [], "no write failed, nothing dropped");

    const rows = (...args: string[]) => {
      const out = attestdCli(["activity", ...args, "--data-dir", dir]);
      assert.equal(out.status, 0, out.stderr);
      return out.stdout.split("\n").filter(Boolean).map((l) => JSON.parse(l) as { route: string; clientId: string | null });
    };
    assert.deepEqual(rows("--key", keyId).map((e) => [e.route, e.clientId]), [["/v2/nonces", keyId]], "--key: that key's requests only");
    assert.deepEqual(rows("--kind", "portal").map((e) => e.route), ["/portal/signin"], "--kind portal: the page views");
    const api = rows("--kind", "api");
    assert.ok(api.length === all.length - 1 && api.every((e) => e.route !== "/portal/signin"), "--kind api: every request but the page view");
    const refused = attestdCli(["activity", "--kind", "pages", "--data-dir", dir]);
    assert.equal(refused.status, 1);
    assert.match(refused.stderr, /Allowed choices are api, portal, all/);
  });
});
