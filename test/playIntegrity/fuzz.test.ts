import assert from "node:assert/strict";
import { before, test } from "node:test";
import fc from "fast-check";
import { appraise } from "../../src/attestation/appraise.ts";
import { openWithApps } from "../../src/attestation/encoding/playIntegrityToken.ts";
import { VERDICT_FIELDS } from "../../src/attestation/types.ts";
import { appraisalRefusal } from "../helpers/appraisalRefusal.ts";
import { independentPlayToken } from "../helpers/independentJose.ts";
import { emptyTrust, joseToken, makeApp, NONCE, NOW, payload } from "./fixtures.ts";

/**
 * Mutated Play Integrity tokens, through the production path (openWithApps, then appraise with every format
 * registered): every outcome is a well-formed verdict record or a refusal appraise documents
 * (test/helpers/appraisalRefusal.ts), never another exception, and no mutant appraises Yes unless it is the seed
 * token itself with only surrounding whitespace changed (every byte of a token is authenticated: the header as
 * GCM's additional data, the rest by key wrap and tag).
 * 12,000 cases, more than test/android/fuzz.test.ts's 10,000.
 */

const app = makeApp();
const other = makeApp({ packageName: "com.example.other" });
const apps = [other, app];
const seeds: string[] = [];
const STATUSES = new Set(["Success", "DeviceError", "CertificateInvalid", "SignatureInvalid", "NonceMismatch", "Revoked"]);
const B64URL = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_";

before(async () => {
  seeds.push(await joseToken(payload(), app));
  seeds.push(await joseToken(payload({ requestDetails: { requestHash: undefined, nonce: NONCE } }), app));
  seeds.push(independentPlayToken(payload(), { decryptionKey: app.decryptionKey, signingKey: app.signingKey }));
  for (const s of seeds) assert.equal(await outcome(Buffer.from(s)), "Yes");
});

/** The verdict, or "malformed"; throws for anything the invariant forbids. */
async function outcome(blob: Buffer): Promise<string> {
  const evidence = await openWithApps(blob.toString("latin1"), apps.map((a) => a.registered));
  try {
    const r = appraise({ blob, nonce: NONCE, trust: emptyTrust, now: NOW, playIntegrity: evidence });
    assert.deepEqual(Object.keys(r.record), [...VERDICT_FIELDS]);
    for (const f of VERDICT_FIELDS) assert.equal(typeof r.record[f], "string");
    assert.ok(STATUSES.has(r.record.status), r.record.status);
    JSON.stringify(r.detail);
    return r.record.verdict;
  } catch (e) {
    const refusal = appraisalRefusal(e);
    if (refusal) return refusal;
    throw e;
  }
}

function assertNoForgedYes(v: string, blob: Buffer, seed: string, how: unknown): void {
  if (v === "Yes") assert.equal(blob.toString("latin1").trim(), seed, `a changed token appraised Yes: ${JSON.stringify(how)}`);
}

type CharMutation =
  | { kind: "replace"; at: number; c: string }
  | { kind: "insert"; at: number; c: string }
  | { kind: "delete"; at: number; len: number }
  | { kind: "byte"; at: number; value: number };

const charMutation: fc.Arbitrary<CharMutation> = fc.oneof(
  fc.record({ kind: fc.constant("replace" as const), at: fc.nat(), c: fc.constantFrom(...B64URL, ".", "=", " ", "+", "/") }),
  fc.record({ kind: fc.constant("insert" as const), at: fc.nat(), c: fc.constantFrom(...B64URL, ".", "\n", "=") }),
  fc.record({ kind: fc.constant("delete" as const), at: fc.nat(), len: fc.integer({ min: 1, max: 6 }) }),
  fc.record({ kind: fc.constant("byte" as const), at: fc.nat(), value: fc.constantFrom(0x00, 0x7f, 0x80, 0xff, 0x09, 0x22, 0x7b) }),
);

function applyChars(token: string, muts: CharMutation[]): Buffer {
  let b = Buffer.from(token, "latin1");
  for (const m of muts) {
    const at = b.length === 0 ? 0 : m.at % b.length;
    if (m.kind === "replace") b[at] = m.c.charCodeAt(0);
    else if (m.kind === "insert") b = Buffer.concat([b.subarray(0, at), Buffer.from(m.c, "latin1"), b.subarray(at)]);
    else if (m.kind === "delete") b = Buffer.concat([b.subarray(0, at), b.subarray(at + m.len)]);
    else b[at] = m.value;
  }
  return b;
}

test("fuzz: character-level mutations of tokens that appraise Yes give a record or a documented refusal, never a Yes", async () => {
  const seen = new Map<string, number>();
  await fc.assert(
    fc.asyncProperty(fc.nat(), fc.array(charMutation, { minLength: 1, maxLength: 3 }), async (i, muts) => {
      const seed = seeds[i % seeds.length]!;
      const blob = applyChars(seed, muts);
      const v = await outcome(blob);
      seen.set(v, (seen.get(v) ?? 0) + 1);
      assertNoForgedYes(v, blob, seed, muts);
    }),
    { numRuns: 5000, seed: 23 },
  );
  assert.ok((seen.get("No") ?? 0) > 1000 && (seen.get("malformed") ?? 0) > 1000, JSON.stringify([...seen]));
});

type PartMutation =
  | { kind: "drop"; part: number }
  | { kind: "duplicate"; part: number }
  | { kind: "swap"; a: number; b: number }
  | { kind: "foreign"; part: number; from: number }
  | { kind: "truncate"; part: number; keep: number }
  | { kind: "extend"; part: number; extra: string };

const partMutation: fc.Arbitrary<PartMutation> = fc.oneof(
  fc.record({ kind: fc.constant("drop" as const), part: fc.nat(4) }),
  fc.record({ kind: fc.constant("duplicate" as const), part: fc.nat(4) }),
  fc.record({ kind: fc.constant("swap" as const), a: fc.nat(4), b: fc.nat(4) }),
  fc.record({ kind: fc.constant("foreign" as const), part: fc.nat(4), from: fc.nat() }),
  fc.record({ kind: fc.constant("truncate" as const), part: fc.nat(4), keep: fc.nat(64) }),
  fc.record({ kind: fc.constant("extend" as const), part: fc.nat(4), extra: fc.stringMatching(/^[A-Za-z0-9_-]{1,8}$/) }),
);

test("fuzz: parts dropped, repeated, swapped, cut, lengthened or taken from another token", async () => {
  const seen = new Map<string, number>();
  await fc.assert(
    fc.asyncProperty(fc.nat(), fc.array(partMutation, { minLength: 1, maxLength: 3 }), async (i, muts) => {
      const seed = seeds[i % seeds.length]!;
      let parts = seed.split(".");
      for (const m of muts) {
        const p = parts.length === 0 ? 0 : (("part" in m ? m.part : 0) % parts.length);
        if (m.kind === "drop") parts.splice(p, 1);
        else if (m.kind === "duplicate") parts.splice(p, 0, parts[p] ?? "");
        else if (m.kind === "swap" && parts.length > 0) {
          const a = m.a % parts.length;
          const b = m.b % parts.length;
          [parts[a], parts[b]] = [parts[b]!, parts[a]!];
        } else if (m.kind === "foreign") parts[p] = seeds[m.from % seeds.length]!.split(".")[p % 5]!;
        else if (m.kind === "truncate") parts[p] = (parts[p] ?? "").slice(0, m.keep);
        else if (m.kind === "extend") parts[p] = (parts[p] ?? "") + m.extra;
        parts = parts.slice(0, 8);
      }
      const blob = Buffer.from(parts.join("."), "latin1");
      const v = await outcome(blob);
      seen.set(v, (seen.get(v) ?? 0) + 1);
      assertNoForgedYes(v, blob, seed, muts);
    }),
    { numRuns: 3000, seed: 2323 },
  );
  assert.ok((seen.get("No") ?? 0) > 100 && (seen.get("malformed") ?? 0) > 500, JSON.stringify([...seen]));
});

test("fuzz: protected headers rewritten (other algorithms, zip, crit, extra or odd JSON) never open", async () => {
  const headerJson = fc.oneof(
    fc.record({ alg: fc.constantFrom("A256KW", "A128KW", "dir", "RSA-OAEP", "none", "a256kw"), enc: fc.constantFrom("A256GCM", "A128GCM", "A256CBC-HS512", "") }),
    fc.record({ alg: fc.constant("A256KW"), enc: fc.constant("A256GCM"), zip: fc.constant("DEF") }),
    fc.record({ alg: fc.constant("A256KW"), enc: fc.constant("A256GCM"), crit: fc.array(fc.string({ maxLength: 4 }), { maxLength: 2 }) }),
    fc.record({ alg: fc.constant("A256KW"), enc: fc.constant("A256GCM"), kid: fc.string({ maxLength: 8 }) }),
    fc.dictionary(fc.string({ maxLength: 5 }), fc.jsonValue({ maxDepth: 1 }), { maxKeys: 4 }),
  );
  const text = fc.oneof(headerJson.map((h) => JSON.stringify(h)), fc.string({ maxLength: 40 }), fc.constantFrom('{"alg":"A256KW","enc":"A256GCM"} ', '{"alg":"A256KW","alg":"A256KW","enc":"A256GCM"}'));
  const seen = new Map<string, number>();
  await fc.assert(
    fc.asyncProperty(fc.nat(), text, async (i, json) => {
      const seed = seeds[i % seeds.length]!;
      const parts = seed.split(".");
      parts[0] = Buffer.from(json).toString("base64url");
      const blob = Buffer.from(parts.join("."), "latin1");
      const v = await outcome(blob);
      seen.set(v, (seen.get(v) ?? 0) + 1);
      // the one header that may still give Yes is the seed's own, byte for byte
      assertNoForgedYes(v, blob, seed, json);
    }),
    { numRuns: 2000, seed: 99 },
  );
  assert.ok((seen.get("malformed") ?? 0) > 500 && (seen.get("No") ?? 0) > 10, JSON.stringify([...seen]));
});

test("fuzz: arbitrary text behind a valid header, and whitespace around the seed", async () => {
  const header = seeds[0]!.split(".")[0]!;
  await fc.assert(
    fc.asyncProperty(fc.nat(), fc.string({ maxLength: 300 }), fc.constantFrom("", " ", "\n", "\r\n\t "), async (i, rest, ws) => {
      const v = await outcome(Buffer.from(`${header}.${rest}`, "latin1"));
      assert.notEqual(v, "Yes");
      const seed = seeds[i % seeds.length]!;
      assert.equal(await outcome(Buffer.from(ws + seed + ws)), "Yes", "surrounding whitespace changes nothing");
    }),
    { numRuns: 2000, seed: 7 },
  );
});
