import assert from "node:assert/strict";
import { after, before, describe, it } from "node:test";
import type { AuditRecord } from "../../src/domain/audit.ts";
import { encryptForTenant } from "../../src/enrollment/tenantKeys.ts";
import { Harness, imeiFrom14, type Session } from "./harness.ts";
import { testActor } from "../helpers/audit.ts";

const imei = (n: number) => imeiFrom14(String(35_200_000_000_000 + n));

/**
 * Part B's changes in the audit trail (docs/audit.md): each change an API client makes — profiles, device uploads,
 * assignments, restrictions — is one record naming the client (`api-client`), the request's address and user
 * agent, and before / after; a device's user password (even encrypted) is never in it; and each tenant's records
 * are its own.
 */
describe("Part B changes in the audit trail", () => {
  let h: Harness;
  let s: Session;
  let other: Session;
  const records = async (tenantId: string): Promise<AuditRecord[]> => (await h.sqlite.queryAudit({ tenantId, limit: 1000 })).reverse();
  before(async () => {
    h = await Harness.start();
    s = await h.session();
    other = await h.session();
  });
  after(() => h.close());

  it("profiles made, replaced and deleted: one record each, the client as actor, before and after", async () => {
    const made = (await s.call("POST", "/svc/v1/enroll/profiles", { name: "Warehouse", mdmUrl: "https://mdm.example.com/enroll" }, { headers: { "user-agent": "knox-client/1.0" } })).json();
    h.clock.advance(1000);
    assert.equal((await s.call("PUT", `/svc/v1/enroll/profiles/${made.profileId}`, { name: "Warehouse B" })).statusCode, 200);
    h.clock.advance(1000);
    assert.equal((await s.call("DELETE", `/svc/v1/enroll/profiles/${made.profileId}`)).statusCode, 200);
    const r = (await records(s.tenant.tenantId)).filter((x) => x.target.id === made.profileId);
    assert.deepEqual(r.map((x) => x.action), ["profile.created", "profile.updated", "profile.removed"]);
    for (const x of r) {
      assert.deepEqual(x.actor, { kind: "api-client", id: s.client.clientId });
      assert.equal(x.from.kind, "http");
    }
    assert.equal((r[0]!.from as { userAgent: string }).userAgent, "knox-client/1.0");
    assert.equal((r[0]!.after as { name: string }).name, "Warehouse");
    assert.equal((r[1]!.before as { name: string }).name, "Warehouse");
    assert.equal((r[1]!.after as { name: string }).name, "Warehouse B");
    assert.equal((r[2]!.before as { name: string }).name, "Warehouse B");
  });

  it("devices uploaded (the password never in the record), assigned and unassigned", async () => {
    const p1 = (await s.call("POST", "/svc/v1/enroll/profiles", { name: "P1" })).json().profileId as string;
    const p2 = (await s.call("POST", "/svc/v1/enroll/profiles", { name: "P2" })).json().profileId as string;
    const email = `pw@${s.tenant.name}.example`;
    await h.enrollment.clients.registerUser(s.tenant, email, testActor());
    const { publicKey } = (await s.call("GET", "/svc/v1/tenant/encryption-key")).json();
    const ciphertext = encryptForTenant(publicKey, "correct horse battery staple");
    const up = await s.call("POST", "/svc/v1/enroll/devices", { profileId: p1, devices: [{ deviceId: imei(1), userId: email, userPassword: ciphertext }, { deviceId: imei(2) }] });
    assert.equal(up.statusCode, 200, up.body);
    await h.enrollment.worker.drain();
    h.clock.advance(1000);
    assert.equal((await s.call("POST", "/svc/v1/enroll/devices/assign", { profileId: p2, deviceIds: [imei(1)] })).statusCode, 200);
    h.clock.advance(1000);
    assert.equal((await s.call("POST", "/svc/v1/enroll/devices/unassign", { deviceIds: [imei(2)] })).statusCode, 200);

    const r = (await records(s.tenant.tenantId)).filter((x) => x.action.startsWith("enrollment."));
    assert.deepEqual(r.map((x) => x.action), ["enrollment.devices-uploaded", "enrollment.devices-assigned", "enrollment.devices-unassigned"]);
    assert.deepEqual(r[0]!.target, { kind: "transaction", id: up.json().transactionId });
    assert.deepEqual((r[0]!.after as { deviceIds: string[] }).deviceIds, [imei(1), imei(2)]);
    assert.deepEqual(r[1]!.after, { profileId: p2, count: 1, deviceIds: [imei(1)] });
    assert.deepEqual((r[2]!.after as { deviceIds: string[] }).deviceIds, [imei(2)]);
    const text = JSON.stringify(await records(s.tenant.tenantId));
    assert.ok(!text.includes(ciphertext) && !text.includes("correct horse"), "no user password, encrypted or not");
  });

  it("restrictions set and cleared on a Part A key of the tenant", async () => {
    const { keyId } = await h.partAKey(s.tenant);
    const url = `/svc/v1/apikeys/${keyId}/restrictions`;
    assert.equal((await s.call("POST", url, { ipAddresses: ["203.0.113.0/24"] })).statusCode, 200);
    h.clock.advance(1000);
    assert.equal((await s.call("DELETE", url)).statusCode, 200);
    const r = (await records(s.tenant.tenantId)).filter((x) => x.action.startsWith("restrictions."));
    assert.deepEqual(r.map((x) => [x.action, x.target.kind, x.target.id]), [
      ["restrictions.set", "api-key", keyId],
      ["restrictions.cleared", "api-key", keyId],
    ]);
    assert.deepEqual((r[0]!.after as { ipAddresses: string[] }).ipAddresses, ["203.0.113.0/24"]);
    assert.deepEqual(r[1]!.before, { restrictions: { ipAddresses: ["203.0.113.0/24"], referers: [] } });
  });

  it("each tenant's records are its own", async () => {
    assert.equal((await other.call("POST", "/svc/v1/enroll/profiles", { name: "Other's" })).statusCode, 200);
    const mine = await records(s.tenant.tenantId);
    const theirs = await records(other.tenant.tenantId);
    assert.ok(mine.every((x) => x.actor.id === s.client.clientId));
    assert.deepEqual(theirs.map((x) => [x.action, x.actor.id]), [["profile.created", other.client.clientId]]);
  });
});
