import assert from "node:assert/strict";
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import path from "node:path";
import { after, describe, it } from "node:test";
import { cryptoRng, systemClock } from "../../src/clock.ts";
import { accessTokenRequest, apiToken, type ClientKeys } from "../../src/enrollment/clientJwt.ts";
import { ClientAdmin } from "../../src/enrollment/clients.ts";
import { imeiFrom14 } from "../../src/enrollment/deviceIds.ts";
import { sqliteFile } from "../../src/store/openStores.ts";
import { openDatabase, pluck } from "../../src/store/sqlite/database.ts";
import { SqliteEnrollmentStore } from "../../src/store/sqlite/sqliteEnrollmentStore.ts";
import { SqliteStore } from "../../src/store/sqlite/sqliteStore.ts";
import { startServer, type ServerProcess } from "../helpers/serverProcess.ts";
import { testActor } from "../helpers/audit.ts";

const DEVICES = 40;
const KILL_AFTER = 12;

/**
 * The job queue survives a SIGKILL mid-batch: a real `attestd serve` child process is killed while it holds leased,
 * unfinished items, a new one starts on the same data dir, and every device ends up processed exactly once.
 * The first server runs through test/helpers/slowWorkerServe.ts, which slows each device so the kill lands
 * inside a batch; the second is a plain `attestd serve`.
 */
describe("device job queue across a crash", () => {
  const dir = mkdtempSync(path.join(tmpdir(), "attestd-crash-"));
  const servers: ServerProcess[] = [];
  after(async () => {
    // a child already ended (by a signal too) is left alone: waiting for its exit would wait forever
    for (const s of servers) if (s.proc.exitCode === null && s.proc.signalCode === null) await s.stop("SIGKILL");
    rmSync(dir, { recursive: true, force: true });
  });

  async function setUp(): Promise<ClientKeys> {
    const sqlite = new SqliteStore({ file: sqliteFile(dir) });
    try {
      const tenant = await sqlite.createTenant({
        tenantId: "t_crash",
        name: "crash",
        customerId: "4242424242",
        kind: "customer",
        createdAt: new Date().toISOString(),
      });
      const admin = new ClientAdmin(new SqliteEnrollmentStore(sqlite.db), systemClock, cryptoRng);
      return (await admin.createClient(tenant, { email: "ops@crash.example", rps: 1000, burst: 1000 }, testActor())).keys;
    } finally {
      await sqlite.close();
    }
  }

  it("finishes a batch after the process is killed halfway, each device once", async () => {
    const keys = await setUp();
    const first = await startServer(["--insecure-http", "--data-dir", dir, "--log-level", "warn", "--device-delay-ms", "100"], {
      entry: "test/helpers/slowWorkerServe.ts",
    });
    servers.push(first);

    const token = (
      (await (
        await fetch(`${first.url}/svc/v1/auth/accesstoken`, {
          method: "POST",
          headers: { "content-type": "application/json" },
          body: JSON.stringify(await accessTokenRequest(keys, { nowMs: Date.now() })),
        })
      ).json()) as { accessToken: string }
    ).accessToken;
    const call = async (base: string, method: string, url: string, body?: unknown) => {
      const res = await fetch(base + url, {
        method,
        headers: {
          "x-vendor-apitoken": await apiToken(keys, token, { nowMs: Date.now() }),
          ...(body ? { "content-type": "application/json" } : {}),
        },
        ...(body ? { body: JSON.stringify(body) } : {}),
      });
      const json = (await res.json()) as Record<string, unknown>;
      assert.equal(res.status, 200, JSON.stringify(json));
      return json;
    };

    const { profileId } = (await call(first.url, "POST", "/svc/v1/enroll/profiles", { name: "Crash" })) as { profileId: string };
    const ids = Array.from({ length: DEVICES }, (_, i) => imeiFrom14(String(35_200_000_000_000 + i)));
    const { transactionId } = (await call(first.url, "POST", "/svc/v1/enroll/devices", {
      profileId,
      devices: ids.map((deviceId) => ({ deviceId })),
    })) as { transactionId: string };

    const db = openDatabase(sqliteFile(dir), { readOnly: true, mustExist: true });
    try {
      const doneCount = () =>
        pluck(db.prepare("SELECT COUNT(*) FROM enroll_jobs WHERE transaction_id = ? AND state = 'done'")).get(transactionId) as number;
      const deadline = Date.now() + 30_000;
      while (doneCount() < KILL_AFTER) {
        assert.ok(Date.now() < deadline, "the worker makes progress");
        await new Promise((r) => setTimeout(r, 20));
      }
      await first.stop("SIGKILL");
      const atKill = doneCount();
      assert.ok(atKill < DEVICES, `killed mid-batch (${atKill} of ${DEVICES} done)`);
      const leased = pluck(db.prepare("SELECT COUNT(*) FROM enroll_jobs WHERE transaction_id = ? AND state = 'pending' AND lease_owner IS NOT NULL"))
        .get(transactionId) as number;
      assert.ok(leased > 0, "the dead process still held leased items");

      const second = await startServer(["--insecure-http", "--data-dir", dir, "--log-level", "warn"]);
      servers.push(second);
      let result: { totalCount: number; processingCount: number; deviceList: { deviceId: string; state: string }[] };
      for (;;) {
        result = (await call(second.url, "GET", `/svc/v1/enroll/devices?transactionId=${transactionId}&pageSize=100`)) as typeof result;
        if (result.processingCount === 0) break;
        assert.ok(Date.now() < deadline, `finished after the restart (${result.processingCount} left)`);
        await new Promise((r) => setTimeout(r, 200));
      }
      assert.equal(result.totalCount, DEVICES);
      assert.deepEqual(
        result.deviceList.map((d) => [d.deviceId, d.state]),
        ids.map((d) => [d, "Enrolled"]),
      );

      const perDevice = db
        .prepare("SELECT device_id, COUNT(*) AS n FROM enroll_device_history WHERE transaction_id = ? GROUP BY device_id")
        .all(transactionId) as { device_id: string; n: number }[];
      assert.equal(perDevice.length, DEVICES, "every device processed");
      assert.ok(perDevice.every((r) => r.n === 1), "no device processed twice");
      const retried = pluck(db.prepare("SELECT COUNT(*) FROM enroll_jobs WHERE transaction_id = ? AND attempts > 1"))
        .get(transactionId) as number;
      assert.ok(retried > 0, "the killed batch's items were leased again after the restart");
      assert.equal(pluck(db.prepare("SELECT state FROM enroll_transactions WHERE transaction_id = ?")).get(transactionId), "Complete");
    } finally {
      db.close();
    }
  });
});
