import assert from "node:assert/strict";
import { randomBytes } from "node:crypto";
import { after, before, describe, it } from "node:test";
import type { AuditRecord } from "../../src/domain/audit.ts";
import type { DurableStore } from "../../src/store/types.ts";

/**
 * The audit trail (AuditStore), asserted the same on memory, SQLite and PostgreSQL: a record comes back as it was
 * written (actor, source, before and after as JSON), newest first, every filter narrows the same way, keyset paging
 * neither skips nor repeats a record of the same millisecond, and a tenant's query never reads another's. Every test
 * works under its own tenant ids, so the suite also runs on a database other suites write to.
 */
export interface AuditBackend {
  durable: DurableStore;
  close(): Promise<void>;
}

const uid = () => randomBytes(6).toString("hex");

function record(o: Partial<AuditRecord> & { id: string; time: string }): AuditRecord {
  return {
    actor: { kind: "operator", id: "alice" },
    tenantId: null,
    action: "tenant.created",
    target: { kind: "tenant", id: "t_x" },
    before: null,
    after: { name: "x", nested: { n: 1, list: [1, "two", null] } },
    from: { kind: "cli", hostname: "host1" },
    ...o,
  };
}

export function auditConformance(name: string, factory: () => Promise<AuditBackend>): void {
  describe(`audit store conformance: ${name}`, () => {
    let b: AuditBackend;
    before(async () => {
      b = await factory();
    });
    after(async () => {
      await b.close();
    });

    it("gives a record back as it was written, JSON values and all", async () => {
      const t = "t_" + uid();
      const r = record({
        id: "au_" + uid(),
        time: "2026-11-26T10:00:00.000Z",
        tenantId: t,
        actor: { kind: "user", id: "u_1", email: "ann@example.com" },
        action: "key.revoked",
        target: { kind: "api-key", id: "k1" },
        before: { keyId: "k1", revokedAt: null, label: "é \u2028 \"q\"" },
        after: { keyId: "k1", revokedAt: "2026-11-26T10:00:00.000Z" },
        from: { kind: "http", remoteAddress: "192.0.2.1", userAgent: "curl/8" },
      });
      await b.durable.appendAudit(r);
      assert.deepEqual(await b.durable.queryAudit({ tenantId: t }), [r]);
    });

    it("refuses a second record with the same id", async () => {
      const r = record({ id: "au_" + uid(), time: "2026-11-26T10:00:00.000Z", tenantId: "t_" + uid() });
      await b.durable.appendAudit(r);
      await assert.rejects(b.durable.appendAudit(r));
    });

    it("filters by tenant, time, actor, action (and family) and target, newest first", async () => {
      const t1 = "t_" + uid();
      const t2 = "t_" + uid();
      const rs = [
        record({ id: "au_a" + uid(), time: "2026-11-26T10:00:01.000Z", tenantId: t1, action: "key.created", target: { kind: "api-key", id: "k1" } }),
        record({ id: "au_b" + uid(), time: "2026-11-26T10:00:02.000Z", tenantId: t1, action: "key.revoked", target: { kind: "api-key", id: "k1" }, actor: { kind: "user", id: "u_9", email: "b@example.com" } }),
        record({ id: "au_c" + uid(), time: "2026-11-26T10:00:03.000Z", tenantId: t1, action: "play-app.added", target: { kind: "play-app", id: "p1" } }),
        record({ id: "au_d" + uid(), time: "2026-11-26T10:00:04.000Z", tenantId: t2, action: "key.created", target: { kind: "api-key", id: "k2" } }),
      ];
      for (const r of rs) await b.durable.appendAudit(r);
      const ids = async (f: Parameters<DurableStore["queryAudit"]>[0]) => (await b.durable.queryAudit(f)).map((r) => r.id);
      assert.deepEqual(await ids({ tenantId: t1 }), [rs[2]!.id, rs[1]!.id, rs[0]!.id]);
      assert.deepEqual(await ids({ tenantId: t2 }), [rs[3]!.id], "a tenant's query never reads another's");
      assert.deepEqual(await ids({ tenantId: t1, since: "2026-11-26T10:00:02.000Z", until: "2026-11-26T10:00:03.000Z" }), [rs[1]!.id]);
      assert.deepEqual(await ids({ tenantId: t1, action: "key.*" }), [rs[1]!.id, rs[0]!.id]);
      assert.deepEqual(await ids({ tenantId: t1, action: "key.created" }), [rs[0]!.id]);
      assert.deepEqual(await ids({ tenantId: t1, action: "key%" }), [], "a LIKE wildcard is an ordinary character");
      assert.deepEqual(await ids({ tenantId: t1, actorKind: "user" }), [rs[1]!.id]);
      assert.deepEqual(await ids({ tenantId: t1, actorId: "u_9" }), [rs[1]!.id]);
      assert.deepEqual(await ids({ tenantId: t1, targetKind: "play-app" }), [rs[2]!.id]);
      assert.deepEqual(await ids({ tenantId: t1, targetId: "k1" }), [rs[1]!.id, rs[0]!.id]);
      const all = await ids({ since: "2026-11-26T10:00:01.000Z", until: "2026-11-26T10:00:05.000Z", action: "key.created" });
      assert.ok(all.includes(rs[0]!.id) && all.includes(rs[3]!.id), "no tenant filter: every tenant's (operators)");
    });

    it("pages by (time, id) without skipping or repeating records of one millisecond", async () => {
      const t = "t_" + uid();
      const time = "2026-11-26T11:00:00.000Z";
      const written = Array.from({ length: 7 }, (_, i) => record({ id: `au_${i}${uid()}`, time: i < 5 ? time : `2026-11-26T11:00:0${i}.000Z`, tenantId: t }));
      for (const r of written) await b.durable.appendAudit(r);
      const seen: string[] = [];
      let before: { time: string; id: string } | undefined;
      for (;;) {
        const page = await b.durable.queryAudit({ tenantId: t, limit: 2, ...(before ? { before } : {}) });
        seen.push(...page.map((r) => r.id));
        if (page.length < 2) break;
        const last = page[page.length - 1]!;
        before = { time: last.time, id: last.id };
      }
      assert.equal(seen.length, 7);
      assert.equal(new Set(seen).size, 7);
      const expected = [...written].sort((x, y) => (x.time === y.time ? (x.id < y.id ? 1 : -1) : x.time < y.time ? 1 : -1)).map((r) => r.id);
      assert.deepEqual(seen, expected);
    });

    it("keeps operator-wide records (no tenant) out of every tenant's view", async () => {
      const t = "t_" + uid();
      const wide = record({ id: "au_w" + uid(), time: "2026-11-26T12:00:00.000Z", tenantId: null, target: { kind: "signing-key", id: "kid" + uid() } });
      await b.durable.appendAudit(wide);
      assert.deepEqual(await b.durable.queryAudit({ tenantId: t }), []);
      const found = await b.durable.queryAudit({ targetId: wide.target.id });
      assert.deepEqual(found, [wide]);
    });
  });
}
