import assert from "node:assert/strict";
import { before, test } from "node:test";
import fc from "fast-check";
import { verifyAppAttestReceipt, type ReceiptExpectations } from "../../src/attestation/encoding/appAttestReceipt.ts";
import { createReceiptSigningCa, encodeReceiptContent, signAppAttestReceipt } from "../../src/attestation/sim/appAttestReceipt.ts";
import { T0 as T0_MS } from "../helpers/clock.ts";
import { receiptVectors } from "./receiptVectors.ts";

/**
 * Mutated receipts: the parser never throws, and no mutant of a valid receipt is valid. Seeds are the real
 * receipts (Apple's BER: indefinite lengths, a chunked content) and a test CA's (definite lengths, a risk metric).
 * 12,000 random mutants of one to four bytes, a sweep of every byte of one real receipt, and truncations.
 */

const REASONS = new Set([
  "too-large", "malformed", "untrusted-signer", "signature-invalid", "content-malformed",
  "app-id-mismatch", "certificate-mismatch", "type-mismatch", "created-in-future", "expired",
]);

interface Seed {
  bytes: Uint8Array;
  expect: ReceiptExpectations;
}
const seeds: Seed[] = [];

before(async () => {
  for (const v of receiptVectors()) {
    seeds.push({ bytes: v.receipt, expect: { appId: v.appId, credentialCertificate: v.credentialCertificate, at: v.at } });
  }
  const T0 = new Date(T0_MS);
  const ca = await createReceiptSigningCa({ now: T0 });
  const credential = (await createReceiptSigningCa({ now: T0 })).leaf.certDer;
  const appId = "ABCDE12345.com.example.wallet";
  const content = encodeReceiptContent({ type: "RECEIPT", appId, attestedCertificate: credential, createdAt: T0, riskMetric: 4, notBefore: new Date(T0_MS + 86_400_000) });
  seeds.push({ bytes: signAppAttestReceipt(ca, content), expect: { appId, credentialCertificate: credential, at: T0, roots: [ca.root.certDer] } });
  for (const s of seeds) assert.ok(verifyAppAttestReceipt(s.bytes, s.expect).ok, "every seed is valid");
});

/** true when accepted; throws when the module throws or answers out of its contract */
function accepted(bytes: Uint8Array, expect: ReceiptExpectations): boolean {
  const r = verifyAppAttestReceipt(bytes, expect);
  if (!r.ok) {
    assert.ok(REASONS.has(r.reason), r.reason);
    assert.equal(typeof r.message, "string");
  }
  return r.ok;
}

test("12,000 random mutants of valid receipts (1 to 4 bytes changed): none valid, none throws", () => {
  fc.assert(
    fc.property(
      fc.nat(),
      fc.array(fc.tuple(fc.double({ min: 0, max: 1, maxExcluded: true, noNaN: true }), fc.integer({ min: 1, max: 255 })), { minLength: 1, maxLength: 4 }),
      (seedIndex, edits) => {
        const seed = seeds[seedIndex % seeds.length]!;
        const mutant = new Uint8Array(seed.bytes);
        for (const [where, xor] of edits) {
          const i = Math.floor(where * mutant.length);
          mutant[i]! ^= xor;
        }
        if (Buffer.from(mutant).equals(Buffer.from(seed.bytes))) return; // edits that cancelled out
        assert.equal(accepted(mutant, seed.expect), false);
      },
    ),
    { numRuns: 12_000 },
  );
});

test("every byte of a real receipt and of the test CA's, flipped in turn: none valid", () => {
  for (const seed of [seeds[0]!, seeds[seeds.length - 1]!]) {
    for (let i = 0; i < seed.bytes.length; i++) {
      const mutant = new Uint8Array(seed.bytes);
      mutant[i]! ^= 0x01;
      assert.equal(accepted(mutant, seed.expect), false, `byte ${i} flipped`);
    }
  }
});

test("inserted and deleted bytes, truncations: none valid, none throws", () => {
  fc.assert(
    fc.property(fc.nat(), fc.double({ min: 0, max: 1, maxExcluded: true, noNaN: true }), fc.integer({ min: 0, max: 255 }), fc.constantFrom("insert", "delete", "truncate"), (seedIndex, where, byte, how) => {
      const seed = seeds[seedIndex % seeds.length]!;
      const b = Buffer.from(seed.bytes);
      const i = Math.floor(where * b.length);
      const mutant =
        how === "insert" ? Buffer.concat([b.subarray(0, i), Buffer.from([byte]), b.subarray(i)])
        : how === "delete" ? Buffer.concat([b.subarray(0, i), b.subarray(i + 1)])
        : b.subarray(0, i);
      assert.equal(accepted(mutant, seed.expect), false);
    }),
    { numRuns: 2_000 },
  );
});

test("random bytes: never throws", () => {
  fc.assert(
    fc.property(fc.uint8Array({ maxLength: 4096 }), (bytes) => {
      assert.equal(accepted(bytes, seeds[0]!.expect), false);
    }),
    { numRuns: 2_000 },
  );
});
