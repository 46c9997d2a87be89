import assert from "node:assert/strict";
import { readdirSync, readFileSync, statSync } from "node:fs";
import path from "node:path";
import { describe, it } from "node:test";
import { parsePemBundle } from "../../src/attestation/encoding/pem.ts";
import {
  findExtension,
  readCertificate,
  readCertificateFast,
  readCertificateGeneral,
} from "../../src/attestation/encoding/derChain.ts";
import {
  KEY_DESCRIPTION_OID,
  parseKeyDescription,
  parseKeyDescriptionFast,
  parseKeyDescriptionGeneral,
} from "../../src/attestation/encoding/keyDescription.ts";
import { VECTORS } from "./fixtures.ts";

/**
 * The fast paths of readCertificate and parseKeyDescription (issue 15) must return exactly what the general
 * readers return, and give up (undefined) rather than differ: checked on every certificate of the real vectors,
 * and on thousands of mutations of them (a flipped byte, a truncation), where both readers must agree on the
 * facts or on the error.
 */

function allCertificates(): { name: string; der: Uint8Array }[] {
  const out: { name: string; der: Uint8Array }[] = [];
  const visit = (dir: string) => {
    for (const f of readdirSync(dir)) {
      const p = path.join(dir, f);
      if (statSync(p).isDirectory()) visit(p);
      else if (f.endsWith(".pem")) {
        try {
          parsePemBundle(readFileSync(p, "utf8"), f).forEach((der, i) => out.push({ name: `${path.relative(VECTORS, p)}[${i}]`, der }));
        } catch {
          // not a certificate bundle (a key, a broken sample kept on purpose)
        }
      } else if (f.endsWith(".der")) out.push({ name: path.relative(VECTORS, p), der: new Uint8Array(readFileSync(p)) });
    }
  };
  visit(VECTORS);
  return out;
}

type Outcome = { ok: unknown } | { error: string };
const outcome = (f: () => unknown): Outcome => {
  try {
    return { ok: f() };
  } catch (e) {
    return { error: `${(e as Error).name}: ${(e as Error).message}` };
  }
};

/** A deterministic PRNG, so a failure names a reproducible mutation. */
function rng(seed: number): () => number {
  let s = seed >>> 0;
  return () => {
    s = (s * 1664525 + 1013904223) >>> 0;
    return s / 2 ** 32;
  };
}

const certs = allCertificates();

describe("fast certificate and KeyDescription readers", () => {
  it("read every real certificate exactly as the general readers do, and take the fast path on them", () => {
    assert.ok(certs.length > 40, `found ${certs.length} certificates`);
    let fast = 0;
    let kds = 0;
    let fastKds = 0;
    for (const { name, der } of certs) {
      const general = outcome(() => readCertificateGeneral(new Uint8Array(der)));
      assert.deepEqual(outcome(() => readCertificate(der)), general, name);
      const f = readCertificateFast(new Uint8Array(der));
      if (f) {
        fast++;
        assert.deepEqual({ ok: f }, general, name);
      }
      if (!("ok" in general)) continue;
      const ext = findExtension(general.ok as ReturnType<typeof readCertificate>, KEY_DESCRIPTION_OID);
      if (!ext) continue;
      kds++;
      const kdGeneral = outcome(() => parseKeyDescriptionGeneral(ext.value));
      assert.deepEqual(outcome(() => parseKeyDescription(ext.value)), kdGeneral, `${name} KeyDescription`);
      const kf = parseKeyDescriptionFast(ext.value);
      if (kf) {
        fastKds++;
        assert.deepEqual({ ok: kf }, kdGeneral, `${name} KeyDescription`);
      }
    }
    // the fast paths are what the bench's real chains take (a give-up would be correct, but slow)
    assert.ok(fast >= certs.length * 0.9, `fast path on ${fast} of ${certs.length} certificates`);
    assert.ok(kds > 10 && fastKds >= kds * 0.8, `fast path on ${fastKds} of ${kds} KeyDescriptions`);
  });

  it("agree with the general readers on mutated certificates (flipped bytes, truncations)", () => {
    const next = rng(15);
    const leaves = certs.filter(({ der }) => {
      try {
        return findExtension(readCertificateGeneral(new Uint8Array(der)), KEY_DESCRIPTION_OID) !== undefined;
      } catch {
        return false;
      }
    });
    assert.ok(leaves.length > 5);
    let differentFromOriginal = 0;
    for (let n = 0; n < 3000; n++) {
      const { name, der } = leaves[Math.floor(next() * leaves.length)]!;
      const m = new Uint8Array(der);
      const at = Math.floor(next() * m.length);
      let what: string;
      let bytes: Uint8Array;
      if (next() < 0.1) {
        bytes = m.subarray(0, at);
        what = `truncated to ${at}`;
      } else {
        m[at] = next() < 0.5 ? m[at]! ^ (1 << Math.floor(next() * 8)) : Math.floor(next() * 256);
        bytes = m;
        what = `byte ${at} = ${m[at]}`;
      }
      const general = outcome(() => readCertificateGeneral(new Uint8Array(bytes)));
      const actual = outcome(() => readCertificate(bytes));
      assert.deepEqual(actual, general, `${name}, ${what}`);
      if (!("ok" in general)) continue;
      differentFromOriginal++;
      const ext = findExtension(general.ok as ReturnType<typeof readCertificate>, KEY_DESCRIPTION_OID);
      if (!ext) continue;
      assert.deepEqual(outcome(() => parseKeyDescription(ext.value)), outcome(() => parseKeyDescriptionGeneral(ext.value)), `${name}, ${what}: KeyDescription`);
    }
    assert.ok(differentFromOriginal > 1000, `${differentFromOriginal} mutations still read as certificates`);
  });
});
