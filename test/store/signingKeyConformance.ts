import assert from "node:assert/strict";
import { randomBytes } from "node:crypto";
import { after, before, describe, it } from "node:test";
import type { SigningKeyRecord } from "../../src/domain/signingKeys.ts";
import { newSigningKey } from "../../src/results/signingKeys.ts";
import { SecretBox } from "../../src/secrets/secretBox.ts";
import type { SigningKeyStore } from "../../src/store/types.ts";
import { T0 } from "../helpers/clock.ts";

/**
 * Store-level conformance for the result-signing keys (SigningKeyStore), the same assertions on every backend. The
 * keys are one set for the whole store, not per tenant, so the tests of a suite run in order on one store: empty,
 * the first key (instances racing), rotations (operators racing). `other` is a second connection to the same
 * storage (the same object where the backend is in-process), as a second instance would hold.
 */
export interface SigningKeyBackend {
  keys: SigningKeyStore;
  other: SigningKeyStore;
  close(): Promise<void>;
}

const iso = (ms: number) => new Date(ms).toISOString();

function fakeKey(createdAtMs: number): SigningKeyRecord {
  const kid = randomBytes(32).toString("base64url");
  return {
    kid,
    alg: "ES256",
    publicJwk: JSON.stringify({ kty: "EC", kid, alg: "ES256", use: "sig", crv: "P-256", x: "x", y: "y" }),
    privateKey: `-----BEGIN PRIVATE KEY-----\n${randomBytes(48).toString("base64")}\n-----END PRIVATE KEY-----\n`,
    createdAt: iso(createdAtMs),
    retiresAt: null,
  };
}

export function signingKeyConformance(name: string, factory: () => Promise<SigningKeyBackend>): void {
  describe(`signing key store conformance: ${name}`, () => {
    let b: SigningKeyBackend;
    before(async () => {
      b = await factory();
    });
    after(async () => b?.close());

    let first: SigningKeyRecord;

    it("starts empty; of instances racing to store the first key, all get the one that was kept", async () => {
      assert.deepEqual(await b.keys.listSigningKeys(iso(T0)), []);
      first = await newSigningKey("ES256", new Date(T0), new SecretBox([randomBytes(32)]));
      const rivals = [first, ...Array.from({ length: 7 }, () => fakeKey(T0))];
      const answers = await Promise.all(rivals.map((k, i) => (i % 2 ? b.other : b.keys).putFirstSigningKey(k)));
      const kept = answers[0]!;
      assert.ok(rivals.some((k) => k.kid === kept.kid));
      for (const a of answers) assert.deepEqual(a, kept);
      const listed = await b.other.listSigningKeys(iso(T0));
      assert.deepEqual(listed, [kept]);
      // later instances keep it too
      assert.deepEqual(await b.keys.putFirstSigningKey(fakeKey(T0 + 1)), kept);
      first = kept;
    });

    it("keeps a key exactly as given, private key included", async () => {
      const [stored] = await b.keys.listSigningKeys(iso(T0));
      assert.deepEqual(stored, first);
      assert.equal(stored!.retiresAt, null);
    });

    it("a rotation makes the new key current and keeps the previous one published until it retires", async () => {
      const next = fakeKey(T0 + 1000);
      const retiresAt = iso(T0 + 3_600_000);
      assert.deepEqual(await b.keys.rotateSigningKey(next, retiresAt), { retired: first.kid });
      const during = await b.other.listSigningKeys(iso(T0 + 2000));
      assert.deepEqual(during, [next, { ...first, retiresAt }], "newest first");
      // the retirement instant is exclusive: at it the key is no longer published
      assert.deepEqual(await b.keys.listSigningKeys(retiresAt), [next]);
      assert.deepEqual(await b.keys.listSigningKeys(iso(T0 + 7_200_000)), [next]);
      // a first-start key offered now changes nothing
      assert.deepEqual(await b.other.putFirstSigningKey(fakeKey(T0 + 3000)), next);
      first = next;
    });

    it("concurrent rotations each retire the key before them: one current key, every other one retiring", async () => {
      const rotations = Array.from({ length: 4 }, (_, i) => fakeKey(T0 + 10_000 + i));
      const retiresAt = iso(T0 + 86_400_000);
      const answers = await Promise.all(rotations.map((k, i) => (i % 2 ? b.other : b.keys).rotateSigningKey(k, retiresAt)));
      const listed = await b.keys.listSigningKeys(iso(T0 + 20_000));
      const current = listed.filter((k) => k.retiresAt === null);
      assert.equal(current.length, 1, JSON.stringify(listed.map((k) => [k.kid, k.retiresAt])));
      assert.ok(rotations.some((k) => k.kid === current[0]!.kid));
      // every key rotated out was retired exactly once: the previous current one and all but one of the rivals
      const retired = answers.map((a) => a.retired).sort();
      assert.deepEqual(retired, [first.kid, ...rotations.map((k) => k.kid).filter((k) => k !== current[0]!.kid)].sort());
      // published: the four rotated in, the one they retired, and the first key, still in its grace period
      assert.equal(listed.length, 6);
    });
  });
}
