import { describe, it, before } from "node:test";
import assert from "node:assert/strict";
import { performance } from "node:perf_hooks";
import v8 from "node:v8";
import vm from "node:vm";
import fc from "fast-check";
import { isAppError } from "../../src/errors/AppError.ts";
import { vendorContainerFormat } from "../../src/attestation/formats/vendorContainer.ts";
import { createDevCa, issueDeviceLeaf, type DevCa } from "../../src/attestation/sim/devCa.ts";
import {
  demoReferenceValues,
  encodeContainer,
  encodeTlv,
  encodeVendorBlob,
  type TlvRecord,
} from "../../src/attestation/sim/deviceSim.ts";
import { VERDICT_FIELDS, type TrustConfig } from "../../src/attestation/types.ts";

/**
 * Whatever the bytes, the vendor format answers with a verdict or an AppError BLOB_MALFORMED / NOT_IMPLEMENTED —
 * never another exception — within a time bound, without allocating by what length fields claim.
 */

const PINNED = new Date("2030-06-15T12:00:00.000Z");
const NONCE = Buffer.alloc(32, 0x5a).toString("base64url");
const PER_CALL_MS = 500; // typical calls take under 1 ms; generous so a loaded CI machine cannot fail it, tight enough for hangs
const STATUSES = new Set(["Success", "DeviceError", "CertificateInvalid", "SignatureInvalid", "NonceMismatch", "Revoked"]);
const VERDICTS = new Set(["Yes", "No", "Unknown"]);

let ca: DevCa;
let trust: TrustConfig;
/** valid blobs of several shapes, and the offsets of their length/count fields: [offset, width] */
let seeds: { blob: Uint8Array; lengthFields: [number, 1 | 2][] }[];
let certPool: Uint8Array[];

/** Offsets of every length or count field of a well-formed container (the fields worth lying in). */
function lengthFields(blob: Uint8Array): [number, 1 | 2][] {
  const fields: [number, 1 | 2][] = [[1, 1]];
  let p = 2 + blob[1]! + 1;
  const dataLen = (blob[p]! << 8) | blob[p + 1]!;
  fields.push([p, 2]);
  for (let q = p + 2; q < p + 2 + dataLen; q += 3 + ((blob[q + 1]! << 8) | blob[q + 2]!)) fields.push([q + 1, 2]);
  p += 2 + dataLen;
  fields.push([p, 2]);
  p += 2 + ((blob[p]! << 8) | blob[p + 1]!);
  fields.push([p, 1]);
  const count = blob[p]!;
  p += 1;
  for (let i = 0; i < count; i++) {
    fields.push([p, 2]);
    p += 2 + ((blob[p]! << 8) | blob[p + 1]!);
  }
  return fields;
}

before(async () => {
  ca = await createDevCa({ now: PINNED });
  const [ec, rsa, ed] = await Promise.all([
    issueDeviceLeaf(ca, { now: PINNED }),
    issueDeviceLeaf(ca, { now: PINNED, keyType: "rsa" }),
    issueDeviceLeaf(ca, { now: PINNED, keyType: "ed25519" }),
  ]);
  trust = {
    vendor: { rootsDer: [ca.root.certDer], revocations: new Map(), referenceValues: demoReferenceValues() },
    android: {} as TrustConfig["android"],
  };
  const base = { nonce: NONCE, now: PINNED, ca };
  const blobs = [
    encodeVendorBlob({ ...base, leaf: ec }),
    encodeVendorBlob({ ...base, leaf: rsa, includeRoot: true }),
    encodeVendorBlob({ ...base, leaf: ed, tamper: true, extraRecords: [{ type: 0x20, value: Uint8Array.of(1, 2, 3) }] }),
    encodeVendorBlob({ ...base, leaf: ec, deviceError: { exitCode: 2, omitSignature: true } }),
  ];
  for (const b of blobs) assert.ok(outcome(b) === "verdict", "every seed appraises");
  seeds = blobs.map((blob) => ({ blob, lengthFields: lengthFields(blob) }));
  certPool = [ec.certDer, rsa.certDer, ed.certDer, ca.intermediate.certDer, ca.root.certDer];
});

/** Appraises once and checks the invariant; returns what happened. */
function outcome(blob: Uint8Array): "verdict" | "malformed" | "notImplemented" {
  const start = performance.now();
  try {
    const r = vendorContainerFormat.appraise({ blob, nonce: NONCE, trust, now: PINNED });
    assert.deepEqual(Object.keys(r.record), [...VERDICT_FIELDS]);
    for (const f of VERDICT_FIELDS) assert.equal(typeof r.record[f], "string", f);
    assert.ok(STATUSES.has(r.record.status) && VERDICTS.has(r.record.verdict));
    assert.equal(r.record.version, "2");
    assert.equal(r.record.nonce, NONCE);
    JSON.stringify(r.detail); // JSON-safe (no BigInt, no cycles)
    return "verdict";
  } catch (e) {
    if (e instanceof assert.AssertionError) throw e;
    if (!isAppError(e)) throw new Error(`non-AppError escaped: ${(e as Error)?.stack ?? String(e)}`);
    if (e.entry.code === "4000006") return "malformed";
    if (e.entry.code === "5010000") return "notImplemented";
    throw new Error(`unexpected AppError ${e.entry.code}: ${e.reason}`);
  } finally {
    const ms = performance.now() - start;
    assert.ok(ms < PER_CALL_MS, `one appraisal took ${ms.toFixed(1)} ms`);
  }
}

/** The verdict, or how the container was refused. */
function verdictOf(blob: Uint8Array): string {
  const o = outcome(blob);
  return o === "verdict" ? vendorContainerFormat.appraise({ blob, nonce: NONCE, trust, now: PINNED }).record.verdict : o;
}

type Mutation =
  | { kind: "flip"; at: number; bit: number }
  | { kind: "set"; at: number; value: number }
  | { kind: "truncate"; at: number }
  | { kind: "insert"; at: number; bytes: Uint8Array }
  | { kind: "delete"; at: number; count: number }
  | { kind: "length"; field: number; value: number; relative: boolean };

const mutationArb: fc.Arbitrary<Mutation> = fc.oneof(
  fc.record({ kind: fc.constant("flip" as const), at: fc.nat(), bit: fc.integer({ min: 0, max: 7 }) }),
  fc.record({ kind: fc.constant("set" as const), at: fc.nat(), value: fc.integer({ min: 0, max: 255 }) }),
  fc.record({ kind: fc.constant("truncate" as const), at: fc.nat() }),
  fc.record({ kind: fc.constant("insert" as const), at: fc.nat(), bytes: fc.uint8Array({ minLength: 1, maxLength: 8 }) }),
  fc.record({ kind: fc.constant("delete" as const), at: fc.nat(), count: fc.integer({ min: 1, max: 16 }) }),
  fc.record({
    kind: fc.constant("length" as const),
    field: fc.nat(),
    value: fc.oneof(fc.constantFrom(0, 1, 0xff, 0x100, 0x7fff, 0xffff), fc.integer({ min: -4, max: 0xffff })),
    relative: fc.boolean(),
  }),
);

function mutate(seed: (typeof seeds)[number], mutations: readonly Mutation[]): Uint8Array {
  let b = Buffer.from(seed.blob);
  for (const m of mutations) {
    if (b.length === 0) break;
    const at = "at" in m ? m.at % b.length : 0;
    switch (m.kind) {
      case "flip":
        b[at]! ^= 1 << m.bit;
        break;
      case "set":
        b[at] = m.value;
        break;
      case "truncate":
        b = b.subarray(0, at);
        break;
      case "insert":
        b = Buffer.concat([b.subarray(0, at), m.bytes, b.subarray(at)]);
        break;
      case "delete":
        b = Buffer.concat([b.subarray(0, at), b.subarray(at + m.count)]);
        break;
      case "length": {
        // Offsets refer to the seed's layout; after an insert or delete they land elsewhere, which is fine too.
        const [off, width] = seed.lengthFields[m.field % seed.lengthFields.length]!;
        if (off + width > b.length) break;
        const old = width === 1 ? b[off]! : b.readUInt16BE(off);
        const max = width === 1 ? 0xff : 0xffff;
        const v = Math.min(max, Math.max(0, m.relative ? old + Math.sign(m.value) * (Math.abs(m.value) % 8) : m.value));
        if (width === 1) b[off] = v & 0xff;
        else b.writeUInt16BE(v, off);
        break;
      }
    }
  }
  return b;
}

describe("vendor container fuzzing", () => {
  it("random bytes: a verdict or BLOB_MALFORMED / NOT_IMPLEMENTED, nothing else", () => {
    fc.assert(
      fc.property(
        fc.oneof(
          fc.uint8Array({ maxLength: 64 }),
          fc.uint8Array({ maxLength: 4096 }),
          // plausible headers, random rest: reaches deeper than pure noise
          fc.tuple(fc.nat({ max: 3 }), fc.uint8Array({ maxLength: 2048 })).map(([v, rest]) =>
            Buffer.concat([Uint8Array.of(0, 0, v), rest]),
          ),
        ),
        (bytes) => {
          outcome(bytes);
        },
      ),
      { numRuns: 3000 },
    );
  });

  it("mutations of valid blobs (bit flips, truncations, insertions, deletions, length fields)", () => {
    const seen = new Set<string>();
    fc.assert(
      fc.property(fc.nat(), fc.array(mutationArb, { minLength: 1, maxLength: 4 }), (seedIndex, mutations) => {
        seen.add(outcome(mutate(seeds[seedIndex % seeds.length]!, mutations)));
      }),
      { numRuns: 2500 },
    );
    // The mutations must reach both sides of the parser, or this property would be testing nothing.
    assert.ok(seen.has("verdict") && seen.has("malformed"), [...seen].join(","));
  });

  it("structured random containers (any field, record or certificate)", () => {
    const record: fc.Arbitrary<TlvRecord> = fc.record({
      type: fc.oneof(fc.integer({ min: 0, max: 0x0d }), fc.integer({ min: 0, max: 255 })),
      value: fc.oneof(fc.uint8Array({ maxLength: 40 }), fc.constantFrom(new Uint8Array(32), new Uint8Array(224))),
    });
    const cert = fc.oneof(
      fc.nat().map((i) => certPool[i % certPool.length]!),
      fc.uint8Array({ minLength: 1, maxLength: 64 }),
    );
    const seen = new Set<string>();
    fc.assert(
      fc.property(
        fc.record({
          exitCode: fc.oneof(fc.constant(0), fc.integer({ min: 0, max: 255 })),
          errString: fc.oneof(fc.constant("Success"), fc.uint8Array({ maxLength: 12 })),
          version: fc.oneof(fc.constant(2), fc.integer({ min: 0, max: 255 })),
          records: fc.array(record, { maxLength: 14 }),
          signature: fc.uint8Array({ maxLength: 80 }),
          certificates: fc.array(cert, { maxLength: 5 }),
        }),
        (f) => {
          const data = encodeTlv(f.records);
          seen.add(outcome(encodeContainer({ ...f, data })));
        },
      ),
      { numRuns: 1500 },
    );
    assert.ok(seen.has("verdict") && seen.has("malformed") && seen.has("notImplemented"), [...seen].join(","));
  });

  it("no mutation of a blob that appraises Yes appraises Yes, but for the unsigned errString", () => {
    // The data is signed by the leaf, the leaf by the carried intermediate, that by an operator root, and a carried
    // root must be the operator's or genuinely self-signed under its key. Only exitCode/errLen/errString are
    // outside every signature: exitCode ≠ 0 is DeviceError, errString is a label (blob-format.md).
    const yes = seeds.filter((s) => verdictOf(s.blob) === "Yes");
    assert.ok(yes.length >= 2, "a seed without and one with a carried root");
    const sameButErrString = (a: Uint8Array, b: Uint8Array) =>
      a.length >= 2 && a[0] === b[0] && Buffer.from(a.subarray(2 + a[1]!)).equals(b.subarray(2 + b[1]!));
    const seen = new Map<string, number>();
    fc.assert(
      fc.property(fc.nat(), fc.array(mutationArb, { minLength: 1, maxLength: 3 }), (seedIndex, mutations) => {
        const seed = yes[seedIndex % yes.length]!;
        const blob = mutate(seed, mutations);
        const v = verdictOf(blob);
        seen.set(v, (seen.get(v) ?? 0) + 1);
        if (v === "Yes") {
          assert.ok(sameButErrString(blob, seed.blob), `mutation ${JSON.stringify(mutations)} still appraises Yes`);
        }
      }),
      { numRuns: 2500, seed: 20261122 },
    );
    assert.ok((seen.get("No") ?? 0) > 100 && (seen.get("malformed") ?? 0) > 100, JSON.stringify([...seen]));
  });

  it("length fields claiming up to 65 535 bytes allocate nothing of that size", () => {
    v8.setFlagsFromString("--expose-gc");
    const gc = vm.runInNewContext("gc") as () => void;
    const seed = seeds[0]!;
    // every length/count field of the seed set to its maximum, one at a time, plus a few in the data
    const liars = seed.lengthFields.map(([off, width]) => {
      const b = Buffer.from(seed.blob);
      if (width === 1) b[off] = 0xff;
      else b.writeUInt16BE(0xffff, off);
      return b.subarray(0, Math.min(b.length, off + width + 64));
    });
    gc();
    const base = process.memoryUsage();
    let peakExternal = 0;
    for (let round = 0; round < 40; round++) {
      for (const b of liars) {
        assert.equal(outcome(b), "malformed");
        const m = process.memoryUsage();
        peakExternal = Math.max(peakExternal, m.arrayBuffers - base.arrayBuffers);
      }
    }
    // Byte buffers of that size live outside the JS heap (arrayBuffers). 40 rounds × ~20 liars × 64 KiB would be
    // ~50 MiB if claims were allocated; views keep it near zero. (The JS heap is not measured: its young
    // generation grows and shrinks by megabytes on its own, which would make a bound there flaky.)
    const calls = 40 * liars.length;
    assert.ok(peakExternal < 1024 * 1024, `external memory grew by ${peakExternal} bytes over ${calls} calls`);
  });
});
