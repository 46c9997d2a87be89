import assert from "node:assert/strict";
import { mkdtempSync, readFileSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import path from "node:path";
import { after, describe, it } from "node:test";
import { cryptoRng } from "../../src/clock.ts";
import { newAuditId, type AuditRecord } from "../../src/domain/audit.ts";
import { AuditFileSink, AuditSyslogSink, parseSyslogTarget, syslogLine } from "../../src/services/auditSinks.ts";
import { AuditTrail } from "../../src/services/auditTrail.ts";
import { MemoryDurableStore } from "../../src/store/memory/memoryDurableStore.ts";
import { T0 } from "../helpers/clock.ts";

/**
 * AuditTrail's promises: a record's before / after are redacted; a store that refuses the record and a stream that
 * fails never fail the change (the failure is counted by sink and logged with the record); streams are never waited for.
 */
describe("AuditTrail", () => {
  const dir = mkdtempSync(path.join(tmpdir(), "attestd-audit-trail-"));
  after(() => rmSync(dir, { recursive: true, force: true }));
  const clock = { nowMs: () => T0 };
  const change = { tenantId: "t_1", action: "key.created", target: { kind: "api-key", id: "k1" }, before: null, after: { keyId: "k1", secretHash: "ab".repeat(32) } };

  it("stores the record with before / after redacted, and appends it to the file sink", async () => {
    const store = new MemoryDurableStore();
    const file = path.join(dir, "ok.jsonl");
    const trail = new AuditTrail(store, clock, cryptoRng, { sinks: [new AuditFileSink(file)] });
    await trail.as({ kind: "operator", id: "alice" }, { kind: "cli", hostname: "h" }).record(change);
    await trail.close();
    const [r] = await store.queryAudit({});
    assert.deepEqual(r!.after, { keyId: "k1" });
    assert.deepEqual(JSON.parse(readFileSync(file, "utf8")), r);
  });

  it("a store that refuses, a file that cannot be written, a syslog socket that is not there: the change goes on, each failure counted and logged", async () => {
    const store = new MemoryDurableStore();
    store.appendAudit = async () => {
      throw new Error("disk full");
    };
    const failures: string[] = [];
    const logged: { sink: string; audit: AuditRecord }[] = [];
    const trail = new AuditTrail(store, clock, cryptoRng, {
      sinks: [new AuditFileSink(path.join(dir, "no-such-dir", "audit.jsonl")), new AuditSyslogSink(path.join(dir, "no-such-socket"))],
      onFailure: (sink) => failures.push(sink),
      log: { error: (obj) => logged.push(obj as { sink: string; audit: AuditRecord }) },
    });
    await trail.as({ kind: "operator", id: "alice" }, { kind: "cli", hostname: "h" }).record(change);
    for (let i = 0; i < 100 && failures.length < 3; i++) await new Promise((r) => setTimeout(r, 10));
    await trail.close();
    assert.deepEqual(failures.sort(), ["file", "store", "syslog"]);
    assert.ok(logged.every((l) => l.audit.action === "key.created" && !JSON.stringify(l.audit).includes("secretHash")), "the record is in the log, redacted");
  });

  it("syslog: an RFC 5424 line, the action as MSGID; targets udp:// and unix paths, nothing else", () => {
    const r: AuditRecord = { id: "au_x", time: "2026-11-26T10:00:00.000Z", actor: { kind: "system", id: "t" }, tenantId: null, action: "key.revoked", target: { kind: "api-key", id: "k" }, before: null, after: null, from: { kind: "system" } };
    assert.equal(syslogLine(r, "host"), `<109>1 2026-11-26T10:00:00.000Z host attestd ${process.pid} key.revoked - ${JSON.stringify(r)}`);
    assert.deepEqual(parseSyslogTarget("udp://127.0.0.1:5514"), { kind: "udp", host: "127.0.0.1", port: 5514 });
    assert.deepEqual(parseSyslogTarget("udp://[::1]:514"), { kind: "udp", host: "::1", port: 514 });
    assert.deepEqual(parseSyslogTarget("/run/syslog.sock"), { kind: "unix", path: "/run/syslog.sock" });
    assert.deepEqual(parseSyslogTarget("unix:/run/syslog.sock"), { kind: "unix", path: "/run/syslog.sock" });
    assert.throws(() => parseSyslogTarget("tcp://host:514"), /expected udp:\/\/HOST:PORT or a unix socket path/);
  });
});

describe("audit record ids", () => {
  it("records one trail makes in one millisecond read back newest first in the order they were made", async () => {
    const store = new MemoryDurableStore();
    let now = T0;
    const trail = new AuditTrail(store, { nowMs: () => now }, cryptoRng);
    const by = trail.as({ kind: "operator", id: "alice" }, { kind: "cli", hostname: "h" });
    for (let i = 0; i < 40; i++) {
      if (i === 30) now += 1;
      await by.record({ tenantId: "t_1", action: "key.created", target: { kind: "api-key", id: `k${i}` } });
    }
    await trail.close();
    const read = await store.queryAudit({ limit: 100 });
    assert.deepEqual(
      read.map((r) => r.target.id),
      Array.from({ length: 40 }, (_, i) => `k${39 - i}`),
    );
    for (const r of read) assert.match(r.id, /^au_[0-9a-hjkmnp-tv-z]{30}$/);
    assert.equal(new Set(read.map((r) => r.id)).size, 40);
  });

  it("the id starts with the time: ids of later milliseconds sort after, whatever the sequence", () => {
    const rng = { bytes: (n: number) => Buffer.alloc(n, 0xff) };
    const low = { bytes: (n: number) => Buffer.alloc(n, 0) };
    assert.ok(newAuditId(T0, 1000, rng) < newAuditId(T0 + 1, 0, low));
    assert.ok(newAuditId(T0, 1, low) > newAuditId(T0, 0, rng));
    assert.equal(newAuditId(0, 0, low), `au_${"0".repeat(30)}`);
    assert.equal(newAuditId(31, 1, rng), `au_${"0".repeat(9)}z0001${"z".repeat(16)}`);
  });
});
