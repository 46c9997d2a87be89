import { test, before } from "node:test";
import assert from "node:assert/strict";
import fc from "fast-check";
import { androidKeyFormat } from "../../src/attestation/formats/androidKey.ts";
import { chainEncodingOf, readChainInput } from "../../src/attestation/encoding/chainInput.ts";
import { splitDerCertificates } from "../../src/attestation/encoding/derChain.ts";
import { toPem } from "../../src/attestation/encoding/pem.ts";
import { knoxExtensionDer, KNOX_OID } from "../../src/attestation/sim/androidExtensions.ts";
import { isAppError } from "../../src/errors/AppError.ts";
import type { AndroidTrust } from "../../src/attestation/types.ts";
import {
  androidTrust,
  challengeOf,
  derBlob,
  keyDescriptionExtension,
  nonceFor,
  pemBlob,
  syntheticChain,
  trustConfig,
  x509,
} from "./fixtures.ts";

/**
 * Mutated real chains only ever give a verdict record, or AppError BLOB_MALFORMED — never another exception —
 * and no mutation of a chain that appraises Yes appraises Yes: every byte of a chain is signed or checked.
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

/** Chains that appraise Yes with their own challenge, at a time inside their validity. */
interface YesSeed {
  name: string;
  blob: Buffer;
  at: string;
  trust: AndroidTrust;
  nonce: string;
}
const yesSeeds: YesSeed[] = [];

before(async () => {
  const google = androidTrust();
  const real: Omit<YesSeed, "nonce" | "trust">[] = [
    { name: "caiman RKP", blob: pemBlob("android_keyattestation/testdata/caiman/sdk36/TEE_EC_RKP.pem"), at: "2025-10-01T00:00:00Z" },
    { name: "tegu on CA1, root carried", blob: pemBlob("android_keyattestation/testdata/tegu/sdk36/TEE_EC_2026_ROOT.pem"), at: "2026-03-01T00:00:00Z" },
    { name: "Sony factory, expired intermediates accepted", blob: pemBlob("android_keyattestation/testdata/sony-xperia10-iii/sdk33/TEE_EC.pem"), at: "2026-11-22T00:00:00Z" },
    { name: "Pixel 7a attest key, root left out", blob: derBlob(...[0, 1, 2, 3].map((i) => `grapheneos_auditor_samples/4/0_cert-${i}.der.x509`)), at: "2025-01-01T00:00:00Z" },
  ];
  for (const r of real) yesSeeds.push({ ...r, trust: google, nonce: nonceFor(challengeOf(r.blob, google, r.at)) });
  const knox = await syntheticChain([
    keyDescriptionExtension(),
    new x509.Extension(KNOX_OID, false, knoxExtensionDer()),
  ]);
  yesSeeds.push({ name: "synthetic Samsung (Knox)", blob: knox.blob, at: "2026-01-15T00:00:00Z", trust: knox.trust, nonce: nonceFor(Buffer.alloc(32, 0x42)) });
  for (const s of yesSeeds) {
    const r = androidKeyFormat.appraise({ blob: s.blob, nonce: s.nonce, trust: trustConfig(s.trust), now: new Date(s.at) });
    assert.equal(r.record.verdict, "Yes", `${s.name}: ${r.reason}`);
  }
});

/** The verdict of a mutated blob, or "malformed"; throws for anything else (the first invariant). */
function verdictOf(blob: Buffer, seed: YesSeed): string {
  if (!androidKeyFormat.matches(blob)) return "not android-key";
  try {
    const r = androidKeyFormat.appraise({ blob, nonce: seed.nonce, trust: trustConfig(seed.trust), now: new Date(seed.at) });
    assert.ok(STATUSES.has(r.record.status), r.record.status);
    return r.record.verdict;
  } catch (e) {
    if (isAppError(e) && e.entry.code === "4000006") return "malformed";
    throw e;
  }
}

/**
 * What a mutant that still appraises Yes may be: the seed's own certificates, leaf first, with only trailing ones
 * dropped (a chain that stops before a root the trust pins is genuine). Any changed byte inside a certificate must
 * cost the Yes.
 */
function isSeedChainPrefix(blob: Buffer, seed: YesSeed): boolean {
  const mutant = splitDerCertificates(blob);
  const original = splitDerCertificates(seed.blob)!;
  return !!mutant && mutant.length > 0 && mutant.length <= original.length && mutant.every((d, i) => Buffer.from(d).equals(Buffer.from(original[i]!)));
}

test("fuzz: no mutation of a chain that appraises Yes appraises Yes (DER)", () => {
  const seen = new Map<string, number>();
  fc.assert(
    fc.property(fc.nat(), fc.array(mutation, { minLength: 1, maxLength: 3 }), (i, muts) => {
      const seed = yesSeeds[i % yesSeeds.length]!;
      const blob = apply(seed.blob, muts);
      if (blob.equals(seed.blob)) return;
      const v = verdictOf(blob, seed);
      seen.set(v, (seen.get(v) ?? 0) + 1);
      if (v === "Yes") assert.ok(isSeedChainPrefix(blob, seed), `${seed.name}: mutation ${JSON.stringify(muts)} still appraises Yes`);
    }),
    { numRuns: 3000, seed: 20261122 },
  );
  assert.ok((seen.get("No") ?? 0) > 300, `mutants must reach the chain rules: ${JSON.stringify([...seen])}`);
});

test("the one Yes the DER fuzz allows: a chain cut before the root it carries, which the trust pins", () => {
  const seed = yesSeeds.find((s) => s.name.includes("root carried"))!;
  const ders = splitDerCertificates(seed.blob)!;
  const cut = Buffer.concat(ders.slice(0, -1).map((d) => Buffer.from(d)));
  assert.equal(verdictOf(cut, seed), "Yes");
  assert.equal(isSeedChainPrefix(cut, seed), true);
  const changed = Buffer.from(cut);
  const at = changed.length - 40; // inside the last certificate's signature
  changed[at] = changed[at]! ^ 1;
  assert.equal(isSeedChainPrefix(changed, seed), false);
  assert.notEqual(verdictOf(changed, seed), "Yes");
});

test("fuzz: mutated PEM and x5c text gives Yes only when it decodes to the very same chain", () => {
  const texts = yesSeeds.flatMap((seed) => {
    const ders = splitDerCertificates(seed.blob)!;
    return [
      { seed, text: Buffer.from(ders.map((d) => toPem(d, "CERTIFICATE")).join("")) },
      { seed, text: Buffer.from(JSON.stringify({ x5c: ders.map((d) => Buffer.from(d).toString("base64")) })) },
    ];
  });
  let sameChain = 0;
  fc.assert(
    fc.property(fc.nat(), fc.array(mutation, { minLength: 1, maxLength: 3 }), (i, muts) => {
      const { seed, text } = texts[i % texts.length]!;
      const blob = apply(text, muts);
      const v = verdictOf(blob, seed);
      if (v !== "Yes") return;
      const decoded = Buffer.concat(readChainInput(blob, chainEncodingOf(blob, 16)!, 16).ders);
      assert.ok(decoded.equals(seed.blob), `${seed.name}: a different chain appraises Yes after ${JSON.stringify(muts)}`);
      sameChain++;
    }),
    { numRuns: 2000, seed: 5 },
  );
  // layout-only mutations (a space, a line break) do occur and keep the chain: the check above is not vacuous
  assert.ok(sameChain > 0, "no layout-only mutation was generated");
});
