import { test } from "node:test";
import assert from "node:assert/strict";
import fc from "fast-check";
import { androidKeyFormat } from "../../src/attestation/formats/androidKey.ts";
import { isAppError } from "../../src/errors/AppError.ts";
import { androidTrust, derBlob, pemBlob, trustConfig } from "./fixtures.ts";

/**
 * Mutated real chains only ever give a verdict record, or AppError BLOB_MALFORMED — never another exception.
 * (Mutations that break the outer DER make matches() false: those blobs belong to the vendor format.)
 */
const seeds = [
  { blob: pemBlob("android_keyattestation/testdata/caiman/sdk36/TEE_EC_RKP.pem"), at: "2025-10-01T00:00:00Z" },
  { blob: pemBlob("android_keyattestation/testdata/sony-xperia10-iii/sdk33/TEE_EC.pem"), at: "2025-06-01T00:00:00Z" },
  { blob: pemBlob("android_keyattestation/testdata/akita/sdk34/TEE_RSA_BASE+IMEI.pem"), at: "2024-09-20T00:00:00Z" },
  { blob: derBlob(...[0, 1, 2, 3].map((i) => `grapheneos_auditor_samples/4/0_cert-${i}.der.x509`)), at: "2025-01-01T00:00:00Z" },
];
const trust = trustConfig(androidTrust());
const STATUSES = new Set(["Success", "CertificateInvalid", "NonceMismatch", "Revoked"]);

type Mutation =
  | { kind: "flip"; at: number; xor: number }
  | { kind: "set"; at: number; value: number }
  | { kind: "cut"; at: number; len: number }
  | { kind: "insert"; at: number; bytes: Uint8Array };

const mutation: fc.Arbitrary<Mutation> = fc.oneof(
  fc.record({ kind: fc.constant("flip" as const), at: fc.nat(), xor: fc.integer({ min: 1, max: 255 }) }),
  fc.record({ kind: fc.constant("set" as const), at: fc.nat(), value: fc.constantFrom(0x00, 0x01, 0x30, 0x80, 0x81, 0xff) }),
  fc.record({ kind: fc.constant("cut" as const), at: fc.nat(), len: fc.integer({ min: 1, max: 8 }) }),
  fc.record({ kind: fc.constant("insert" as const), at: fc.nat(), bytes: fc.uint8Array({ minLength: 1, maxLength: 4 }) }),
);

function apply(blob: Buffer, muts: Mutation[]): Buffer {
  let b = Buffer.from(blob);
  for (const m of muts) {
    const at = m.at % b.length;
    if (m.kind === "flip") b[at] = b[at]! ^ m.xor;
    else if (m.kind === "set") b[at] = m.value;
    else if (m.kind === "cut") b = Buffer.concat([b.subarray(0, at), b.subarray(at + m.len)]);
    else b = Buffer.concat([b.subarray(0, at), Buffer.from(m.bytes), b.subarray(at)]);
  }
  return b;
}

function check(blob: Buffer, at: string): void {
  if (!androidKeyFormat.matches(blob)) return;
  try {
    const r = androidKeyFormat.appraise({ blob, nonce: "challenge", trust, now: new Date(at) });
    assert.ok(STATUSES.has(r.record.status), r.record.status);
    assert.ok(r.record.verdict === "Yes" || r.record.verdict === "No");
    JSON.stringify(r.detail);
  } catch (e) {
    if (isAppError(e) && e.entry.code === "4000006") return;
    throw e;
  }
}

test("fuzz: mutated real chains give a verdict or BLOB_MALFORMED", () => {
  let matched = 0;
  fc.assert(
    fc.property(fc.nat(seeds.length - 1), fc.array(mutation, { minLength: 1, maxLength: 3 }), (i, muts) => {
      const seed = seeds[i]!;
      const blob = apply(seed.blob, muts);
      if (androidKeyFormat.matches(blob)) matched++;
      check(blob, seed.at);
    }),
    { numRuns: 1500, seed: 20250101 },
  );
  assert.ok(matched > 300, `only ${matched} mutants still looked like DER chains`);
});

test("fuzz: mutations confined to the leaf's KeyDescription region", () => {
  // Most random flips land in signatures and keys; aim at the leaf's extension bytes instead.
  const seed = seeds[0]!;
  const oid = Buffer.from("2b06010401d679020111", "hex"); // 1.3.6.1.4.1.11129.2.1.17
  const start = seed.blob.indexOf(oid) + oid.length;
  assert.ok(start > oid.length);
  fc.assert(
    fc.property(
      fc.array(fc.record({ off: fc.nat(400), xor: fc.integer({ min: 1, max: 255 }) }), { minLength: 1, maxLength: 4 }),
      (flips) => {
        const b = Buffer.from(seed.blob);
        for (const f of flips) b[start + f.off] = b[start + f.off]! ^ f.xor;
        check(b, seed.at);
      },
    ),
    { numRuns: 1500, seed: 7 },
  );
});

test("fuzz: arbitrary bytes that happen to start a SEQUENCE", () => {
  fc.assert(
    fc.property(fc.uint8Array({ minLength: 2, maxLength: 300 }), (bytes) => {
      const b = Buffer.from(bytes);
      b[0] = 0x30;
      check(b, "2025-01-01T00:00:00Z");
    }),
    { numRuns: 2000, seed: 11 },
  );
});
