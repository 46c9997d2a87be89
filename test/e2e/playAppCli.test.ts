import assert from "node:assert/strict";
import { mkdtempSync, readFileSync, readdirSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import path from "node:path";
import { DatabaseSync } from "node:sqlite";
import { after, before, describe, it } from "node:test";
import { attestdCli } from "../helpers/serverProcess.ts";
import { responseKeys, serviceAccountFile } from "../helpers/playAppKeys.ts";

/**
 * `attestd play-app add|list|remove` (mobile-attestation.md, "Per-tenant configuration") through the compiled CLI:
 * the same PlayAppRegistry as the portal's Play apps page, so the same defaults and refusals; the keys go into the
 * store sealed and come out on no stream.
 */
describe("attestd play-app", () => {
  const dir = mkdtempSync(path.join(tmpdir(), "attestd-play-cli-"));
  const data = ["--data-dir", dir];
  const cli = (...args: string[]) => attestdCli([...args, ...data]);
  const keys = responseKeys();
  const account = serviceAccountFile();
  const accountFile = path.join(dir, "service-account.json");
  const digest = "AB:".repeat(31) + "AB";
  /** every text that must never be printed or stored as is */
  const secrets = [keys.decryptionKey, keys.verificationKey, account.privateKeyPem.split("\n")[1]!, JSON.parse(account.text).private_key_id as string];
  const printedNoSecret = (r: { stdout: string; stderr: string }) => {
    for (const s of secrets) assert.ok(!r.stdout.includes(s) && !r.stderr.includes(s), "no key text printed");
  };

  before(() => {
    writeFileSync(accountFile, account.text);
    const t = cli("tenant", "create", "acme");
    assert.equal(t.status, 0, t.stderr);
  });
  after(() => rmSync(dir, { recursive: true, force: true }));

  it("add with the response keys: the defaults, printed as JSON without the keys", () => {
    const r = cli("play-app", "add", "--tenant", "acme", "--package", "com.acme.shop", "--decryption-key", keys.decryptionKey, "--verification-key", keys.verificationKey);
    assert.equal(r.status, 0, r.stderr);
    printedNoSecret(r);
    const added = JSON.parse(r.stdout);
    assert.match(added.id, /^pa_/);
    assert.deepEqual([added.opensWith, added.policy], [
      "response-keys",
      { packageName: "com.acme.shop", certDigests: [], deviceFloor: "MEETS_DEVICE_INTEGRITY", maxAgeSeconds: 300, require: { licensed: false, playProtect: false, appAccessRisk: false } },
    ]);
    assert.match(r.stderr, /com\.acme\.shop registered for tenant acme/);
  });

  it("add with a service-account file and every policy flag", () => {
    const r = cli(
      "play-app", "add", "--tenant", "acme", "--package", "com.acme.bank", "--service-account", accountFile,
      "--cert-digest", digest, "--cert-digest", "cd".repeat(32), "--device-floor", "strong", "--max-age-seconds", "60",
      "--require-licensed", "--require-play-protect", "--require-app-access-risk",
    );
    assert.equal(r.status, 0, r.stderr);
    printedNoSecret(r);
    const added = JSON.parse(r.stdout);
    assert.deepEqual([added.opensWith, added.serviceAccountEmail, added.policy], [
      "service-account",
      "attest@demo-project.iam.gserviceaccount.com",
      { packageName: "com.acme.bank", certDigests: ["ab".repeat(32), "cd".repeat(32)], deviceFloor: "MEETS_STRONG_INTEGRITY", maxAgeSeconds: 60, require: { licensed: true, playProtect: true, appAccessRisk: true } },
    ]);
  });

  it("refusals: one line, exit 1, nothing stored", () => {
    const k = ["--decryption-key", keys.decryptionKey, "--verification-key", keys.verificationKey];
    const cases: [string[], RegExp][] = [
      [["--package", "com.acme.shop", ...k], /^attestd: the tenant has registered com\.acme\.shop already/],
      [["--package", "shop", ...k], /^attestd: the package name must be an Android application id/],
      [["--package", "com.acme.x"], /^attestd: give --decryption-key and --verification-key, or --service-account FILE/],
      [["--package", "com.acme.x", ...k, "--service-account", accountFile], /^attestd: give --decryption-key and --verification-key, or --service-account FILE/],
      [["--package", "com.acme.x", "--decryption-key", keys.decryptionKey], /^attestd: the response keys are two/],
      [["--package", "com.acme.x", "--decryption-key", keys.verificationKey, "--verification-key", keys.verificationKey], /^attestd: decryption key: \d+ bytes, expected 32 \(AES-256\)/],
      [["--package", "com.acme.x", ...k, "--max-age-seconds", "5"], /^attestd: the freshness window is a whole number of seconds from 10 to 86400/],
      [["--package", "com.acme.x", ...k, "--max-age-seconds", "ten"], /^attestd: --max-age-seconds must be a whole number/],
      [["--package", "com.acme.x", ...k, "--cert-digest", "abcd"], /^attestd: a certificate digest is a SHA-256/],
      [["--package", "com.acme.x", "--service-account", path.join(dir, "missing.json")], /^attestd: --service-account FILE: .*missing\.json: no such file \(expected the JSON key of a Google Cloud service account\)$/m],
    ];
    for (const [args, message] of cases) {
      const r = cli("play-app", "add", "--tenant", "acme", ...args);
      assert.equal(r.status, 1, `${args.join(" ")}: ${r.stderr}`);
      assert.match(r.stderr, message);
      assert.equal(r.stderr.trim().split("\n").length, 1, "one line");
      printedNoSecret(r);
    }
    const floor = cli("play-app", "add", "--tenant", "acme", "--package", "com.acme.x", ...k, "--device-floor", "virtual");
    assert.equal(floor.status, 1);
    assert.match(floor.stderr, /Allowed choices are basic, device, strong/);
    const noTenant = cli("play-app", "list", "--tenant", "nobody");
    assert.deepEqual([noTenant.status, noTenant.stderr], [1, 'attestd: no tenant named "nobody"\n']);
    assert.deepEqual((JSON.parse(cli("play-app", "list", "--tenant", "acme").stdout) as { policy: { packageName: string } }[]).map((a) => a.policy.packageName), ["com.acme.bank", "com.acme.shop"]);
  });

  it("list shows policies and no key; the store holds the keys sealed only", () => {
    const r = cli("play-app", "list", "--tenant", "acme");
    assert.equal(r.status, 0, r.stderr);
    printedNoSecret(r);
    const listed = JSON.parse(r.stdout) as Record<string, unknown>[];
    assert.deepEqual(listed.map((a) => Object.keys(a).sort()), [
      ["createdAt", "id", "opensWith", "policy", "serviceAccountEmail", "tenantId"],
      ["createdAt", "id", "opensWith", "policy", "tenantId"],
    ]);
    const file = path.join(dir, readdirSync(dir).find((f) => f.endsWith(".sqlite"))!);
    const db = new DatabaseSync(file, { readOnly: true });
    try {
      const rows = db.prepare("SELECT secret FROM play_apps").all() as { secret: string }[];
      assert.equal(rows.length, 2);
      for (const { secret } of rows) {
        assert.match(secret, /^sealed:v1:[0-9a-f]{16}:/);
        for (const s of secrets) assert.ok(!secret.includes(s));
      }
    } finally {
      db.close();
    }
    // and not anywhere else in the file either (the WAL included): the keys' bytes were never written in the clear
    for (const f of readdirSync(dir).filter((x) => x.startsWith(path.basename(file)))) {
      const bytes = readFileSync(path.join(dir, f)).toString("latin1");
      for (const s of secrets) assert.ok(!bytes.includes(s), `${f} holds no key text`);
    }
  });

  it("remove by package or id; an unknown one is exit 1", () => {
    const [bank] = JSON.parse(cli("play-app", "list", "--tenant", "acme").stdout) as { id: string }[];
    const byId = cli("play-app", "remove", "--tenant", "acme", "--id", bank!.id);
    assert.equal(byId.status, 0, byId.stderr);
    const byName = cli("play-app", "remove", "--tenant", "acme", "--package", "com.acme.shop");
    assert.equal(byName.status, 0, byName.stderr);
    assert.deepEqual(JSON.parse(cli("play-app", "list", "--tenant", "acme").stdout), []);
    const again = cli("play-app", "remove", "--tenant", "acme", "--package", "com.acme.shop");
    assert.deepEqual([again.status, again.stderr], [1, "attestd: tenant acme has no Play app com.acme.shop\n"]);
    const neither = cli("play-app", "remove", "--tenant", "acme");
    assert.deepEqual([neither.status, neither.stderr], [1, "attestd: name the app with --package NAME or --id ID (one of the two)\n"]);
  });
});
