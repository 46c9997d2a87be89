import assert from "node:assert/strict";
import { after, before, describe, it } from "node:test";
import pino from "pino";
import { cryptoRng } from "../../src/clock.ts";
import { DeviceJobWorker } from "../../src/enrollment/jobWorker.ts";
import { encryptForTenant } from "../../src/enrollment/tenantKeys.ts";
import { catalog } from "../../src/errors/catalog.ts";
import { pluck } from "../../src/store/sqlite/database.ts";
import { assertPartBError, Harness, imeiFrom14, type Session } from "./harness.ts";
import { testActor } from "../helpers/audit.ts";

const imei = (n: number) => imeiFrom14(String(35_100_000_000_000 + n));
const log = pino({ level: "silent" });

interface DeviceListBody {
  totalCount: number;
  processingCount: number;
  deviceList: { deviceId: string; profileId?: string; state: string; updatedDate: string; error?: { code: string; message: string } }[];
}

describe("Part B devices and the job queue", () => {
  let h: Harness;
  let s: Session;
  before(async () => {
    h = await Harness.start(50);
    s = await h.session();
  });
  after(() => h.close());

  const profile = async (name: string, session = s) => {
    const res = await session.call("POST", "/svc/v1/enroll/profiles", { name });
    assert.equal(res.statusCode, 200, res.body);
    return res.json().profileId as string;
  };
  const upload = async (profileId: string, devices: object[], session = s) => {
    const res = await session.call("POST", "/svc/v1/enroll/devices", { profileId, devices });
    assert.equal(res.statusCode, 200, res.body);
    return res.json().transactionId as string;
  };
  const list = async (q: string, session = s): Promise<DeviceListBody> => {
    const res = await session.call("GET", `/svc/v1/enroll/devices${q}`);
    assert.equal(res.statusCode, 200, res.body);
    return res.json();
  };
  const txState = (transactionId: string) =>
    pluck(h.sqlite.db.prepare("SELECT state FROM enroll_transactions WHERE transaction_id = ?")).get(transactionId);

  it("answers with a transactionId at once and enrolls the devices in the background", async () => {
    const p = await profile("Tablets");
    const ids = [imei(1), imei(2), "SERIAL0000AB"];
    const tx = await upload(p, ids.map((deviceId) => ({ deviceId })));

    const pending = await list(`?transactionId=${tx}`);
    assert.equal(pending.totalCount, 3);
    assert.equal(pending.processingCount, 3);
    assert.ok(pending.deviceList.every((d) => d.state === "Processing" && d.profileId === p));
    const statusRow = (await s.call("GET", `/svc/v1/enroll/profiles/status?state=Processing&profileId=${p}`)).json().profiles;
    assert.equal(statusRow.totalCount, 1, "the upload is a Processing transaction of the profile");
    assert.equal(statusRow.transactions[0].transactionId, tx);
    assert.equal(statusRow.transactions[0].type, "Post");

    assert.equal(await h.enrollment.worker.drain(), 3);
    const done = await list(`?transactionId=${tx}`);
    assert.equal(done.processingCount, 0);
    assert.deepEqual(done.deviceList.map((d) => [d.deviceId, d.state]), ids.map((d) => [d, "Enrolled"]));
    assert.equal(txState(tx), "Complete");

    const tenantView = await list(`?profileId=${p}`);
    assert.deepEqual([tenantView.totalCount, tenantView.processingCount], [3, 0]);
  });

  it("validates the list: empty, too many, bad ids, duplicates, password without user", async () => {
    const p = await profile("Validation");
    const empty = assertPartBError(await s.call("POST", "/svc/v1/enroll/devices", { profileId: p, devices: [] }), catalog.RESOURCE_INVALID_PARAM);
    assert.equal(empty.data, "Device ID list cannot be empty");
    const max = Array.from({ length: 50 }, (_, i) => ({ deviceId: imei(1000 + i) }));
    assert.equal((await s.call("POST", "/svc/v1/enroll/devices", { profileId: p, devices: max })).statusCode, 200, "exactly maxDevices");
    assertPartBError(
      await s.call("POST", "/svc/v1/enroll/devices", { profileId: p, devices: [...max, { deviceId: imei(2000) }] }),
      catalog.TOO_MANY_DEVICES,
    );
    for (const deviceId of ["serial0001", "SER1", "SERIAL-0001", "ABCDEFGHIJKLMNOPQRSTU", ""]) {
      assertPartBError(await s.call("POST", "/svc/v1/enroll/devices", { profileId: p, devices: [{ deviceId }] }), catalog.BULK_ENROLL_DEVICE_INVALID, deviceId);
    }
    assertPartBError(
      await s.call("POST", "/svc/v1/enroll/devices", { profileId: p, devices: [{ deviceId: imei(3) }, { deviceId: imei(3) }] }),
      catalog.BULK_ENROLL_REQUEST_INVALID,
      "duplicate",
    );
    assertPartBError(
      await s.call("POST", "/svc/v1/enroll/devices", { profileId: p, devices: [{ deviceId: imei(3), userPassword: "AAAA" }] }),
      catalog.BULK_ENROLL_REQUEST_INVALID,
      "password without user",
    );
    assertPartBError(await s.call("POST", "/svc/v1/enroll/devices/assign", { profileId: p, deviceIds: [] }), catalog.RESOURCE_INVALID_PARAM);
    await h.enrollment.worker.drain();
  });

  it("records failures per device when the profile or user goes away before processing", async () => {
    const p = await profile("Doomed");
    const email = `worker@${s.tenant.name}.example`;
    await h.enrollment.clients.registerUser(s.tenant, email, testActor());
    const tx1 = await upload(p, [{ deviceId: imei(10) }, { deviceId: imei(11) }]);
    assert.equal((await s.call("DELETE", `/svc/v1/enroll/profiles/${p}`)).statusCode, 200);
    await h.enrollment.worker.drain();
    const r1 = await list(`?transactionId=${tx1}`);
    assert.ok(r1.deviceList.every((d) => d.state === "Failed" && d.error?.code === catalog.BULK_ENROLL_PROFILE_NOT_FOUND.code));
    assert.equal(txState(tx1), "Failed");

    const q = await profile("Users");
    const tx2 = await upload(q, [{ deviceId: imei(12), userId: email }, { deviceId: imei(13) }]);
    await h.enrollment.clients.deregisterUser(s.tenant, email, testActor());
    await h.enrollment.worker.drain();
    const r2 = await list(`?transactionId=${tx2}`);
    assert.deepEqual(
      r2.deviceList.map((d) => [d.deviceId, d.state, d.error?.message]),
      [
        [imei(12), "Failed", "USER_NOT_FOUND"],
        [imei(13), "Enrolled", undefined],
      ],
    );
    assert.equal(txState(tx2), "Failed", "a transaction with any failed device is Failed");
    const failedRow = (await list(`?pageSize=100`)).deviceList.find((d) => d.deviceId === imei(10));
    assert.equal(failedRow?.state, "Failed", "a device never enrolled keeps its failure");
  });

  it("leaves one consistent state after two concurrent uploads of the same devices", async () => {
    const a = await profile("Concurrent A");
    const b = await profile("Concurrent B");
    const ids = Array.from({ length: 12 }, (_, i) => imei(100 + i));
    const devices = ids.map((deviceId) => ({ deviceId }));
    const [txA, txB] = await Promise.all([upload(a, devices), upload(b, devices)]);

    // two workers (as two processes would) drain the queue at once, in small interleaved batches
    const w1 = new DeviceJobWorker(h.store, h.clock, cryptoRng, log, { batchSize: 3 });
    const w2 = new DeviceJobWorker(h.store, h.clock, cryptoRng, log, { batchSize: 2 });
    const [n1, n2] = await Promise.all([w1.drain(), w2.drain()]);
    assert.equal(n1 + n2, 24, "every item claimed once");

    const seqOf = (tx: string) => pluck(h.sqlite.db.prepare("SELECT MIN(seq) FROM enroll_jobs WHERE transaction_id = ?")).get(tx) as number;
    const [later, laterProfile] = seqOf(txA) > seqOf(txB) ? [txA, a] : [txB, b];
    const rows = h.sqlite.db
      .prepare(`SELECT device_id, profile_id, state, transaction_id FROM enroll_devices WHERE tenant_id = ? AND device_id IN (${ids.map(() => "?").join(",")})`)
      .all(s.tenant.tenantId, ...ids) as { profile_id: string; state: string; transaction_id: string }[];
    assert.equal(rows.length, 12, "one row per device");
    for (const r of rows) {
      assert.deepEqual([r.profile_id, r.state, r.transaction_id], [laterProfile, "Enrolled", later], "the later upload's state, whole");
    }
    const history = h.sqlite.db
      .prepare("SELECT COUNT(*) AS n, COUNT(DISTINCT item_seq) AS d FROM enroll_device_history WHERE transaction_id IN (?, ?)")
      .get(txA, txB) as { n: number; d: number };
    assert.deepEqual({ ...history }, { n: 24, d: 24 }, "each item finished exactly once"); // rows have no prototype
    assert.equal(txState(txA), "Complete");
    assert.equal(txState(txB), "Complete");
  });

  it("hands a dead worker's items to another after the lease, and refuses the late finish", async () => {
    const p = await profile("Leases");
    const tx = await upload(p, [{ deviceId: imei(200) }, { deviceId: imei(201) }]);
    const dead = await h.store.claimJobs("dead-worker", 10, h.clock.nowMs(), 5000);
    assert.equal(dead.length, 2);
    assert.equal(await h.enrollment.worker.drain(), 0, "leased items are not claimable");
    h.clock.advance(5000);
    assert.equal(await h.enrollment.worker.drain(), 2);
    assert.equal(await h.store.completeJob(dead[0]!.seq, "dead-worker", new Date(h.clock.nowMs()).toISOString()), undefined);
    const attempts = pluck(h.sqlite.db.prepare("SELECT attempts FROM enroll_jobs WHERE transaction_id = ?")).all(tx);
    assert.deepEqual(attempts, [2, 2]);
    assert.equal(pluck(h.sqlite.db.prepare("SELECT COUNT(*) FROM enroll_device_history WHERE transaction_id = ?")).get(tx), 2);
    assert.equal(txState(tx), "Complete");
  });

  it("on a graceful stop finishes the current device and gives the rest back at once", async () => {
    const p = await profile("Stopping");
    const tx = await upload(p, Array.from({ length: 6 }, (_, i) => ({ deviceId: imei(250 + i) })));
    const slow = new DeviceJobWorker(h.store, h.clock, cryptoRng, log, { batchSize: 6, deviceDelayMs: 40 });
    slow.start();
    const doneCount = () =>
      pluck(h.sqlite.db.prepare("SELECT COUNT(*) FROM enroll_jobs WHERE transaction_id = ? AND state = 'done'")).get(tx) as number;
    while (doneCount() < 1) await new Promise((r) => setTimeout(r, 5));
    await slow.stop();
    const done = doneCount();
    assert.ok(done >= 1 && done < 6, `stopped mid-batch (${done} done)`);
    const held = pluck(h.sqlite.db.prepare("SELECT COUNT(*) FROM enroll_jobs WHERE transaction_id = ? AND lease_owner IS NOT NULL")).get(tx);
    assert.equal(held, 0, "no lease left behind");
    assert.equal(await h.enrollment.worker.drain(), 6 - done, "another worker takes the rest without waiting for a lease");
    assert.equal(txState(tx), "Complete");
  });

  it("takes userPassword encrypted to the tenant key and never stores the plaintext", async () => {
    const p = await profile("Passwords");
    const email = `pw@${s.tenant.name}.example`;
    await h.enrollment.clients.registerUser(s.tenant, email, testActor());
    const keyRes = await s.call("GET", "/svc/v1/tenant/encryption-key");
    assert.equal(keyRes.statusCode, 200);
    const { algorithm, publicKey } = keyRes.json();
    assert.equal(algorithm, "RSA-OAEP-256");
    assert.equal((await s.call("GET", "/svc/v1/tenant/encryption-key")).json().publicKey, publicKey, "one key per tenant");
    const plaintext = "correct horse battery staple";
    const ciphertext = encryptForTenant(publicKey, plaintext);
    const tx = await upload(p, [{ deviceId: imei(300), userId: email, userPassword: ciphertext }]);
    await h.enrollment.worker.drain();
    assert.equal((await list(`?transactionId=${tx}`)).deviceList[0]!.state, "Enrolled");
    const dump = JSON.stringify(
      ["enroll_jobs", "enroll_devices", "enroll_transactions"].map((t) => h.sqlite.db.prepare(`SELECT * FROM ${t}`).all()),
    );
    assert.ok(!dump.includes(plaintext), "plaintext stored nowhere");
    assert.ok(dump.includes(ciphertext), "the client's ciphertext is what is kept");

    for (const bad of ["not base64!", "AAAA", ciphertext.slice(0, -8) + "AAAAAAA="]) {
      assertPartBError(
        await s.call("POST", "/svc/v1/enroll/devices", { profileId: p, devices: [{ deviceId: imei(301), userId: email, userPassword: bad }] }),
        catalog.RSA_DECRYPTION_FAIL,
        bad,
      );
    }
  });

  it("assigns and unassigns enrolled devices, all or nothing", async () => {
    const a = await profile("Assign A");
    const b = await profile("Assign B");
    const ids = [imei(400), imei(401)];
    await upload(a, ids.map((deviceId) => ({ deviceId })));
    await h.enrollment.worker.drain();

    assertPartBError(
      await s.call("POST", "/svc/v1/enroll/devices/assign", { profileId: b, deviceIds: [...ids, imei(499)] }),
      catalog.BULK_ENROLL_CONFIGURATION_DEVICE_NOT_FOUND,
    );
    assert.equal((await list(`?profileId=${a}`)).totalCount, 2, "nothing moved");
    assertPartBError(
      await s.call("POST", "/svc/v1/enroll/devices/assign", { profileId: "pr_aaaaaaaaaaaaaaaa", deviceIds: ids }),
      catalog.BULK_ENROLL_PROFILE_NOT_FOUND,
    );

    const moved = await s.call("POST", "/svc/v1/enroll/devices/assign", { profileId: b, deviceIds: ids });
    assert.deepEqual(moved.json(), { count: 2 });
    assert.equal((await list(`?profileId=${b}`)).totalCount, 2);
    assert.equal((await list(`?profileId=${a}`)).totalCount, 0);

    const unassign = assertPartBError(
      await s.call("POST", "/svc/v1/enroll/devices/unassign", { deviceIds: [ids[0], imei(498)] }),
      catalog.DEVICE_NOT_FOUND,
    );
    assert.equal(unassign.data, "Some/All devices don't exist");
    assert.deepEqual((await s.call("POST", "/svc/v1/enroll/devices/unassign", { deviceIds: ids })).json(), { count: 2 });
    const row = (await list("?pageSize=100")).deviceList.find((d) => d.deviceId === ids[0]);
    assert.equal(row?.profileId, undefined, "an unassigned device has no profileId");
  });

  it("lets an assignment outrank an upload queued before it", async () => {
    const a = await profile("Order A");
    const b = await profile("Order B");
    const c = await profile("Order C");
    const id = imei(500);
    await upload(a, [{ deviceId: id }]);
    await h.enrollment.worker.drain();
    await upload(b, [{ deviceId: id }]);
    const during = (await list(`?profileId=${a}`)).deviceList[0]!;
    assert.equal(during.state, "Processing", "an enrolled device with a queued upload shows as Processing");
    assert.equal((await s.call("POST", "/svc/v1/enroll/devices/assign", { profileId: c, deviceIds: [id] })).statusCode, 200);
    await h.enrollment.worker.drain();
    const final = (await list(`?profileId=${c}`)).deviceList;
    assert.deepEqual(final.map((d) => [d.deviceId, d.state]), [[id, "Enrolled"]]);
  });

  it("keeps tenants apart", async () => {
    const other = await h.session();
    const p = await profile("Mine");
    const tx = await upload(p, [{ deviceId: imei(600) }]);
    assertPartBError(await other.call("GET", `/svc/v1/enroll/devices?transactionId=${tx}`), catalog.RESOURCE_NOT_FOUND);
    assertPartBError(
      await other.call("POST", "/svc/v1/enroll/devices", { profileId: p, devices: [{ deviceId: imei(601) }] }),
      catalog.BULK_ENROLL_PROFILE_NOT_FOUND,
    );
    assert.equal((await list("", other)).totalCount, 0);
    await h.enrollment.worker.drain();
  });
});
