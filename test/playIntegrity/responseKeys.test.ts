import assert from "node:assert/strict";
import { describe, it } from "node:test";
import { generateKeyPairSync, randomBytes } from "node:crypto";
import { PlayResponseKeyError, parsePlayResponseKeys } from "../../src/attestation/encoding/playIntegrityToken.ts";

/** The response keys as the Play Console shows them: base64 AES-256 key, base64 EC P-256 SubjectPublicKeyInfo. */

const aes = randomBytes(32);
const ec = generateKeyPairSync("ec", { namedCurve: "P-256" }).publicKey.export({ format: "der", type: "spki" });
const b64 = (b: Uint8Array) => Buffer.from(b).toString("base64");

function refused(dec: string, ver: string, why: RegExp): void {
  assert.throws(() => parsePlayResponseKeys(dec, ver), (e: unknown) => e instanceof PlayResponseKeyError && why.test(e.message));
}

describe("parsePlayResponseKeys", () => {
  it("reads the console's base64 (padding optional, surrounding whitespace ignored) into bytes", () => {
    const k = parsePlayResponseKeys(` ${b64(aes)}\n`, b64(ec).replace(/=+$/, ""));
    assert.deepEqual(Buffer.from(k.decryptionKey), aes);
    assert.deepEqual(Buffer.from(k.verificationKeySpki), ec);
  });

  it("refuses a decryption key that is not 32 bytes, or not base64", () => {
    refused(b64(randomBytes(16)), b64(ec), /^decryption key: 16 bytes, expected 32/);
    refused("not base64!", b64(ec), /^decryption key: not base64/);
    refused(Buffer.from(aes).toString("base64url").replace(/[A-Za-z0-9]/g, "") + "-_-_", b64(ec), /decryption key: not base64/);
  });

  it("refuses a verification key that is not EC P-256 SubjectPublicKeyInfo", () => {
    const p384 = generateKeyPairSync("ec", { namedCurve: "P-384" }).publicKey.export({ format: "der", type: "spki" });
    const rsa = generateKeyPairSync("rsa", { modulusLength: 2048 }).publicKey.export({ format: "der", type: "spki" });
    const ed = generateKeyPairSync("ed25519").publicKey.export({ format: "der", type: "spki" });
    refused(b64(aes), b64(p384), /^verification key: ec secp384r1, expected EC P-256/);
    refused(b64(aes), b64(rsa), /^verification key: rsa, expected EC P-256/);
    refused(b64(aes), b64(ed), /^verification key: ed25519, expected EC P-256/);
    refused(b64(aes), b64(Buffer.concat([ec, Buffer.of(0)])), /^verification key: /);
    refused(b64(aes), b64(randomBytes(91)), /^verification key: not an X.509 SubjectPublicKeyInfo/);
  });
});
