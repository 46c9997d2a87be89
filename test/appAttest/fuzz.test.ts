import assert from "node:assert/strict";
import { readFileSync } from "node:fs";
import { before, test } from "node:test";
import fc from "fast-check";
import { decode, encode } from "cbor2";
import { appraise } from "../../src/attestation/appraise.ts";
import { parsePemBundle } from "../../src/attestation/encoding/pem.ts";
import { VERDICT_FIELDS, type AppAttestKnownKey, type AppraisalInput } from "../../src/attestation/types.ts";
import { DEMO_APP_ID, makeAppAttestAssertion, makeAppAttestAttestation } from "../../src/attestation/sim/appAttest.ts";
import { nonceForChallenge } from "../../src/cli/appraiseCommand.ts";
import { appraisalRefusal } from "../helpers/appraisalRefusal.ts";
import { NONCE, NOW, demoCa, knownKey, trustOf } from "./fixtures.ts";

/**
 * Mutated App Attest bodies through `appraise` (every format registered): every outcome is a well-formed verdict
 * record or one of the refusals appraise documents (test/helpers/appraisalRefusal.ts: BLOB_MALFORMED, or
 * NOT_IMPLEMENTED for a body the vendor container fallback reads as version 1), never another exception, and no
 * mutant reaches Yes unless what App Attest authenticates is unchanged: an attestation's authData and
 * certificates, and its receipt (held here to the seed's by a stand-in for the receipt check, since until the
 * receipt module is wired a receipt is kept, not judged); an assertion's key id and authenticator data (an ECDSA
 * signature has two valid encodings, so its bytes are not compared). 13,000 cases, more than
 * test/playIntegrity/fuzz.test.ts's 12,000.
 */

const STATUSES = new Set(["Success", "DeviceError", "CertificateInvalid", "SignatureInvalid", "NonceMismatch", "Revoked"]);
const VECTOR = new URL("../vectors/app-attest/nodeappattest-prod.cbor", import.meta.url);
const VECTOR_NONCE = nonceForChallenge(Buffer.from("64653565303335392d383466372d346464372d613938642d353336336539343135666231", "hex"));
const VECTOR_AT = new Date("2024-02-07T21:08:56.308Z");
const appleRoot = parsePemBundle(readFileSync(new URL("../../src/trust/appleAppAttestationRootCa.pem", import.meta.url), "utf8"));

interface Seed {
  bytes: Uint8Array;
  nonce: string;
  now: Date;
  key?: AppAttestKnownKey;
  receipt?: Uint8Array;
}
const attestations: Seed[] = [];
const assertions: Seed[] = [];
let input: (s: Seed, blob: Uint8Array) => AppraisalInput;

const strict = (b: Uint8Array): unknown => decode(b, { rejectDuplicateKeys: true, rejectStreaming: true, preferMap: true });
const same = (a: unknown, b: unknown) => {
  try {
    assert.deepEqual(a, b);
    return true;
  } catch {
    return false;
  }
};

/** what an attestation's Yes may rest on: authData, x5c and the receipt, decoded */
function authenticatedAttestation(b: Uint8Array): unknown {
  const m = strict(b) as Map<string, unknown>;
  const stmt = m.get("attStmt") as Map<string, unknown>;
  return [Buffer.from(m.get("authData") as Uint8Array), (stmt.get("x5c") as Uint8Array[]).map((c) => Buffer.from(c)), Buffer.from(stmt.get("receipt") as Uint8Array)];
}

/** what an assertion's Yes may rest on: the key id and the authenticator data */
function authenticatedAssertion(b: Uint8Array): unknown {
  const o = JSON.parse(Buffer.from(b).toString("utf8")) as { keyId: string; assertion: string };
  const m = strict(Buffer.from(o.assertion, "base64")) as Map<string, unknown>;
  return [Buffer.from(o.keyId, "base64"), Buffer.from(m.get("authenticatorData") as Uint8Array)];
}

function outcome(seed: Seed, blob: Uint8Array): "Yes" | "other" {
  let r;
  try {
    r = appraise(input(seed, blob));
  } catch (e) {
    if (appraisalRefusal(e)) return "other";
    throw e;
  }
  assert.deepEqual(Object.keys(r.record), [...VERDICT_FIELDS]);
  assert.ok(STATUSES.has(r.record.status));
  for (const v of Object.values(r.record)) assert.equal(typeof v, "string");
  return r.record.verdict === "Yes" ? "Yes" : "other";
}

before(async () => {
  const ca = await demoCa();
  const trust = trustOf(ca);
  const trustBoth = { ...trust, appAttest: { rootsDer: [ca.rootDer, ...appleRoot] } };
  input = (s, blob) => ({
    blob,
    nonce: s.nonce,
    trust: trustBoth,
    now: s.now,
    appAttest: {
      apps: [
        { appId: DEMO_APP_ID, environment: "both" },
        { appId: "V8H6LQ9448.io.uebelacker.AppAttestExample", environment: "both" },
      ],
      key: s.key,
      // stands for the receipt module: the seed's receipt, byte for byte
      receiptCheck: (receipt) => (s.receipt && Buffer.from(receipt).equals(Buffer.from(s.receipt)) ? { ok: true } : { ok: false, reason: "not the seed's receipt" }),
    },
  });
  const vector = new Uint8Array(readFileSync(VECTOR));
  attestations.push({ bytes: vector, nonce: VECTOR_NONCE, now: VECTOR_AT, receipt: ((strict(vector) as Map<string, Map<string, Uint8Array>>).get("attStmt")!).get("receipt")! });
  const sim = await makeAppAttestAttestation(ca, { nonce: NONCE, now: NOW });
  attestations.push({ bytes: sim.blob, nonce: NONCE, now: NOW, receipt: ((strict(sim.blob) as Map<string, Map<string, Uint8Array>>).get("attStmt")!).get("receipt")! });
  const key = knownKey(sim.key);
  assertions.push({ bytes: makeAppAttestAssertion(sim.key, { nonce: NONCE }).body, nonce: NONCE, now: NOW, key });
  assertions.push({ bytes: makeAppAttestAssertion(sim.key, { nonce: NONCE, counter: 0x01020304 }).body, nonce: NONCE, now: NOW, key });
  for (const s of [...attestations, ...assertions]) assert.equal(outcome(s, s.bytes), "Yes", "every seed is Yes");
});

/** byte-level edits: flip, set, insert, delete, truncate, duplicate a range */
const edit = fc.oneof(
  fc.record({ kind: fc.constant("flip" as const), at: fc.nat(), bit: fc.integer({ min: 0, max: 7 }) }),
  fc.record({ kind: fc.constant("set" as const), at: fc.nat(), value: fc.integer({ min: 0, max: 255 }) }),
  fc.record({ kind: fc.constant("insert" as const), at: fc.nat(), bytes: fc.uint8Array({ minLength: 1, maxLength: 8 }) }),
  fc.record({ kind: fc.constant("delete" as const), at: fc.nat(), length: fc.integer({ min: 1, max: 16 }) }),
  fc.record({ kind: fc.constant("truncate" as const), at: fc.nat() }),
  fc.record({ kind: fc.constant("repeat" as const), at: fc.nat(), length: fc.integer({ min: 1, max: 64 }) }),
);
type Edit = typeof edit extends fc.Arbitrary<infer T> ? T : never;

function apply(bytes: Uint8Array, edits: Edit[]): Uint8Array {
  let b = Buffer.from(bytes);
  for (const e of edits) {
    if (b.length === 0) break;
    const at = e.at % b.length;
    if (e.kind === "flip") b[at]! ^= 1 << e.bit;
    else if (e.kind === "set") b[at] = e.value;
    else if (e.kind === "insert") b = Buffer.concat([b.subarray(0, at), Buffer.from(e.bytes), b.subarray(at)]);
    else if (e.kind === "delete") b = Buffer.concat([b.subarray(0, at), b.subarray(at + e.length)]);
    else if (e.kind === "truncate") b = b.subarray(0, at);
    else b = Buffer.concat([b.subarray(0, at + e.length), b.subarray(at, at + e.length), b.subarray(at + e.length)]);
  }
  return new Uint8Array(b);
}

test("attestation objects, mutated byte by byte: a record or a documented refusal, and Yes only with what is authenticated unchanged", async () => {
  await fc.assert(
    fc.property(fc.nat(), fc.array(edit, { minLength: 1, maxLength: 4 }), (which, edits) => {
      const seed = attestations[which % attestations.length]!;
      const mutant = apply(seed.bytes, edits);
      if (outcome(seed, mutant) === "Yes") assert.ok(same(authenticatedAttestation(mutant), authenticatedAttestation(seed.bytes)), "a Yes mutant changed nothing authenticated");
    }),
    { numRuns: 5000, seed: 25 },
  );
});

test("assertions, mutated in the JSON and in the CBOR inside: never Yes with another key id or authenticator data", async () => {
  await fc.assert(
    fc.property(fc.nat(), fc.boolean(), fc.array(edit, { minLength: 1, maxLength: 4 }), (which, inner, edits) => {
      const seed = assertions[which % assertions.length]!;
      let mutant: Uint8Array;
      if (inner) {
        const o = JSON.parse(Buffer.from(seed.bytes).toString()) as { keyId: string; assertion: string };
        mutant = Buffer.from(JSON.stringify({ ...o, assertion: Buffer.from(apply(Buffer.from(o.assertion, "base64"), edits)).toString("base64") }));
      } else {
        mutant = apply(seed.bytes, edits);
      }
      if (outcome(seed, mutant) === "Yes") assert.ok(same(authenticatedAssertion(mutant), authenticatedAssertion(seed.bytes)), "a Yes mutant changed nothing authenticated");
    }),
    { numRuns: 4000, seed: 2525 },
  );
});

/** CBOR values of App Attest's shapes with arbitrary contents */
const cborValue: fc.Arbitrary<unknown> = fc.letrec((tie) => ({
  value: fc.oneof(
    { depthSize: "small" },
    fc.integer(),
    fc.string({ maxLength: 20 }),
    fc.uint8Array({ maxLength: 80 }),
    fc.boolean(),
    fc.constant(null),
    fc.array(tie("value"), { maxLength: 4 }),
    fc.array(fc.tuple(fc.oneof(fc.string({ maxLength: 10 }), fc.integer()), tie("value")), { maxLength: 4 }).map((es) => new Map(es)),
  ),
})).value;

test("attestation objects of arbitrary content in App Attest's shape: a record or a documented refusal, never Yes", async () => {
  const seed = attestations[1]!;
  const real = strict(seed.bytes) as Map<string, Map<string, unknown> | Uint8Array>;
  await fc.assert(
    fc.property(
      fc.record({ x5c: fc.oneof(cborValue, fc.constant((real.get("attStmt") as Map<string, unknown>).get("x5c"))), receipt: cborValue, authData: fc.oneof(cborValue, fc.uint8Array({ minLength: 37, maxLength: 300 })), extra: fc.option(cborValue) }),
      (p) => {
        const stmt = new Map<string, unknown>([["x5c", p.x5c], ["receipt", p.receipt]]);
        const top = new Map<string, unknown>([["fmt", "apple-appattest"], ["attStmt", stmt], ["authData", p.authData]]);
        if (p.extra !== null) top.set("extra", p.extra);
        assert.equal(outcome(seed, encode(top)), "other");
      },
    ),
    { numRuns: 2000, seed: 725 },
  );
});

test("assertion bodies of arbitrary content: a record or a documented refusal, never Yes", async () => {
  const seed = assertions[0]!;
  const keyId = (JSON.parse(Buffer.from(seed.bytes).toString()) as { keyId: string }).keyId;
  await fc.assert(
    fc.property(
      fc.oneof(fc.constant(keyId), fc.base64String({ maxLength: 60 }), fc.string({ maxLength: 60 })),
      fc.oneof(cborValue.map((v) => Buffer.from(encode(v)).toString("base64")), fc.record({ signature: cborValue, authenticatorData: fc.oneof(cborValue, fc.uint8Array({ minLength: 37, maxLength: 37 })) }).map((r) => Buffer.from(encode(new Map(Object.entries(r)))).toString("base64"))),
      (k, a) => {
        assert.equal(outcome(seed, Buffer.from(JSON.stringify({ keyId: k, assertion: a }))), "other");
      },
    ),
    { numRuns: 2000, seed: 257 },
  );
});
