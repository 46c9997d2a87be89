import assert from "node:assert/strict";
import { mkdtempSync, rmSync, statSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import path from "node:path";
import { after, describe, it } from "node:test";
import fc from "fast-check";
import { generateKeyFile, readKeyFile } from "../../src/secrets/keyFile.ts";
import { isSealed, keyIdOf, SecretBox, SecretsError, sealContext, sealedKeyId } from "../../src/secrets/secretBox.ts";

const key = (b: number) => Buffer.alloc(32, b);

describe("SecretBox: AES-256-GCM with a key id, bound to its record", () => {
  const box = new SecretBox([key(1)]);
  const ctx = sealContext("tenant-private-key", "t_acme");

  it("round-trips any text, and the sealed text shows none of it", () => {
    fc.assert(
      fc.property(fc.string({ minLength: 8, maxLength: 3000 }), (plain) => {
        const sealed = box.seal(plain, ctx);
        assert.ok(isSealed(sealed) && !sealed.includes(plain));
        assert.equal(sealedKeyId(sealed), keyIdOf(key(1)));
        assert.equal(box.open(sealed, ctx), plain);
      }),
      { numRuns: 200 },
    );
    assert.notEqual(box.seal("same", ctx), box.seal("same", ctx), "a fresh nonce each time");
  });

  it("refuses a value moved to another record, altered, or sealed with a key it does not hold", () => {
    const sealed = box.seal("secret", ctx);
    assert.throws(() => box.open(sealed, sealContext("tenant-private-key", "t_other")), SecretsError);
    const flipped = sealed.slice(0, -2) + (sealed.endsWith("AA") ? "BB" : "AA");
    assert.throws(() => box.open(flipped, ctx), SecretsError);
    assert.throws(() => new SecretBox([key(2)]).open(sealed, ctx), /sealed with key [0-9a-f]{16}, which the secrets key file does not hold/);
    assert.throws(() => box.open("MIIEvQIBADANBgkqhkiG9w0BAQEFAASC", ctx), /not sealed/);
  });

  it("reseals plaintext and an older key's values with the current key (rotation)", () => {
    const old = new SecretBox([key(1)]);
    const rotated = new SecretBox([key(2), key(1)]);
    const resealed = rotated.reseal(old.seal("secret", ctx), ctx);
    assert.equal(sealedKeyId(resealed), keyIdOf(key(2)));
    assert.equal(new SecretBox([key(2)]).open(resealed, ctx), "secret");
    assert.equal(rotated.open(rotated.reseal("plain", ctx), ctx), "plain");
  });

  it("takes 32-byte keys only", () => {
    assert.throws(() => new SecretBox([Buffer.alloc(16)]), SecretsError);
    assert.throws(() => new SecretBox([]), SecretsError);
  });
});

describe("the secrets key file", () => {
  const dir = mkdtempSync(path.join(tmpdir(), "attestd-keyfile-"));
  after(() => rmSync(dir, { recursive: true, force: true }));

  it("is generated 0600 (in a 0700 directory it makes), once: a second call keeps the first key", () => {
    const file = path.join(dir, "fresh", "secrets.key");
    assert.equal(generateKeyFile(file), true);
    assert.equal(statSync(file).mode & 0o777, 0o600);
    assert.equal(statSync(path.dirname(file)).mode & 0o777, 0o700);
    const first = readKeyFile(file);
    assert.equal(generateKeyFile(file), false);
    assert.deepEqual(readKeyFile(file), first);
    assert.equal(first.length, 1);
    assert.equal(first[0]!.length, 32);
  });

  it("reads several keys, current first, base64 or base64url, with comments; names the bad line", () => {
    const file = path.join(dir, "ring.key");
    writeFileSync(file, `# rotated\n${key(3).toString("base64")}\n\n${key(4).toString("base64url")}\n`);
    assert.deepEqual(readKeyFile(file), [key(3), key(4)]);
    writeFileSync(file, `${key(3).toString("base64")}\nnot-a-key\n`);
    assert.throws(() => readKeyFile(file), /ring\.key line 2: not a 32-byte key/);
    writeFileSync(file, "# nothing\n");
    assert.throws(() => readKeyFile(file), /holds no key/);
    assert.throws(() => readKeyFile(path.join(dir, "missing.key")), /missing\.key: ENOENT/);
  });
});
