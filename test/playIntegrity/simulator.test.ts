import assert from "node:assert/strict";
import { createPublicKey, randomBytes } from "node:crypto";
import { mkdtempSync, readFileSync, rmSync, statSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import path from "node:path";
import { after, before, describe, it } from "node:test";
import { compactDecrypt, compactVerify, decodeProtectedHeader, errors as joseErrors } from "jose";
import {
  DEMO_PLAY_PACKAGE,
  OTHER_APP_CERT_DIGEST,
  OTHER_PLAY_PACKAGE,
  PLAY_DEV_CA_FILES as F,
  STALE_AGE_MS,
  createPlayDevCa,
  makePlayIntegrityToken,
  playConsoleKeys,
  readPlayDevCa,
  writePlayDevCa,
  type PlayDevCa,
  type PlayDevCaManifest,
  type PlayIntegrityPayload,
  type PlayTokenOptions,
} from "../../src/attestation/sim/playIntegrity.ts";
import { T0 } from "../helpers/clock.ts";
import { attestdCli } from "../helpers/serverProcess.ts";

/**
 * The Play Integrity simulator (src/attestation/sim/playIntegrity.ts, `attestd dev-ca --play-integrity`,
 * `attestd device-sim --format play-integrity`). Tokens are opened as a relying party's server opens a real one:
 * with jose alone, and only the two keys the Play Console would show (read from the files dev-ca wrote), never
 * the simulator's own reading of them. Each case must change exactly the fields it names and nothing else.
 */

const NOW = new Date(T0);
const newNonce = () => randomBytes(32).toString("base64url");

let dir: string;
let ca: PlayDevCa;
let manifest: PlayDevCaManifest;
let cliRun: ReturnType<typeof attestdCli>;

before(async () => {
  dir = mkdtempSync(path.join(tmpdir(), "attestd-play-ca-"));
  // Made by the compiled CLI, as an operator makes it; the module tests below use the same directory.
  cliRun = attestdCli(["dev-ca", "--play-integrity", "--out", path.join(dir, "ca")]);
  assert.equal(cliRun.status, 0, cliRun.stderr);
  ca = await readPlayDevCa(path.join(dir, "ca"));
  manifest = JSON.parse(readFileSync(path.join(dir, "ca", F.manifest), "utf8"));
});

after(() => rmSync(dir, { recursive: true, force: true }));

const caDir = () => path.join(dir, "ca");
const caFile = (name: string) => path.join(caDir(), name);

interface Opened {
  jweHeader: Record<string, unknown>;
  jwsHeader: Record<string, unknown>;
  payload: PlayIntegrityPayload;
}

/** The console's two keys, from the files, as a relying party would paste them. */
function consoleKeys(d = caDir()) {
  const decryptionKey = Buffer.from(readFileSync(path.join(d, F.decryptionKey), "utf8").trim(), "base64");
  const spki = Buffer.from(readFileSync(path.join(d, F.verificationKey), "utf8").trim(), "base64");
  return { decryptionKey, verificationKey: createPublicKey({ key: spki, format: "der", type: "spki" }) };
}

async function decrypt(token: string): Promise<{ jws: string; jweHeader: Record<string, unknown> }> {
  const { plaintext, protectedHeader } = await compactDecrypt(token, consoleKeys().decryptionKey);
  return { jws: new TextDecoder().decode(plaintext), jweHeader: protectedHeader as Record<string, unknown> };
}

async function open(token: string): Promise<Opened> {
  const { jws, jweHeader } = await decrypt(token);
  const { payload, protectedHeader } = await compactVerify(jws, consoleKeys().verificationKey);
  return { jweHeader, jwsHeader: protectedHeader as Record<string, unknown>, payload: JSON.parse(new TextDecoder().decode(payload)) };
}

/** The default token's payload for `nonce` at NOW, written out in full: what every case is compared against. */
function defaultPayload(nonce: string): PlayIntegrityPayload {
  return {
    requestDetails: { requestPackageName: DEMO_PLAY_PACKAGE, timestampMillis: String(T0), requestHash: nonce },
    appIntegrity: {
      appRecognitionVerdict: "PLAY_RECOGNIZED",
      packageName: DEMO_PLAY_PACKAGE,
      certificateSha256Digest: [manifest.certDigestBase64url],
      versionCode: "1",
    },
    deviceIntegrity: {
      deviceRecognitionVerdict: ["MEETS_BASIC_INTEGRITY", "MEETS_DEVICE_INTEGRITY"],
      recentDeviceActivity: { deviceActivityLevel: "LEVEL_1" },
      deviceAttributes: { sdkVersion: 35 },
    },
    accountDetails: { appLicensingVerdict: "LICENSED" },
    environmentDetails: { playProtectVerdict: "NO_ISSUES", appAccessRiskVerdict: { appsDetected: ["KNOWN_INSTALLED"] } },
  };
}

/** The default payload with `change` applied: the case's payload must be exactly this. */
function expected(nonce: string, change: (p: PlayIntegrityPayload) => void): PlayIntegrityPayload {
  const p = defaultPayload(nonce);
  change(p);
  return p;
}

async function tokenFor(opts: Omit<PlayTokenOptions, "nonce">): Promise<{ nonce: string; opened: Opened; token: string }> {
  const nonce = newNonce();
  const token = await makePlayIntegrityToken(ca, { nonce, now: NOW, ...opts });
  return { nonce, token, opened: await open(token) };
}

describe("dev-ca --play-integrity", () => {
  it("writes the console's keys (base64: 32 AES bytes; the signing key's P-256 SPKI), secrets 0600 in a 0700 directory", () => {
    assert.deepEqual(cliRun.stdout.trim().split("\n").map((f) => path.basename(f)), Object.values(F));
    assert.equal(statSync(caDir()).mode & 0o777, 0o700);
    for (const secret of [F.decryptionKey, F.signingKey]) assert.equal(statSync(caFile(secret)).mode & 0o777, 0o600, secret);
    const { decryptionKey, verificationKey } = consoleKeys();
    assert.equal(decryptionKey.length, 32);
    assert.match(readFileSync(caFile(F.decryptionKey), "utf8"), /^[A-Za-z0-9+/]{43}=\n$/, "standard base64, as the console shows it");
    assert.equal(verificationKey.asymmetricKeyDetails?.namedCurve, "prime256v1");
    const signingPublic = createPublicKey(readFileSync(caFile(F.signingKey), "utf8"));
    assert.ok(signingPublic.equals(verificationKey), "the verification key is the signing key's public half");
    assert.match(readFileSync(caFile(F.signingKey), "utf8"), /^-----BEGIN PRIVATE KEY-----\n/);
  });

  it("names the demo package and its certificate digest, hex and base64url, and the command lines that use them", () => {
    assert.equal(manifest.packageName, DEMO_PLAY_PACKAGE);
    assert.match(manifest.certDigestHex, /^[0-9a-f]{64}$/);
    assert.equal(Buffer.from(manifest.certDigestBase64url, "base64url").toString("hex"), manifest.certDigestHex);
    const keysFrom = `--decryption-key "$(cat ${caFile(F.decryptionKey)})" --verification-key "$(cat ${caFile(F.verificationKey)})"`;
    assert.equal(
      manifest.commands.playAppAdd,
      `attestd play-app add --tenant TENANT --package ${DEMO_PLAY_PACKAGE} --cert-digest ${manifest.certDigestHex} ${keysFrom}`,
    );
    assert.equal(
      manifest.commands.appraise,
      `attestd appraise token.txt --nonce "$NONCE" --play-package ${DEMO_PLAY_PACKAGE} ` +
        `--play-decryption-key "$(cat ${caFile(F.decryptionKey)})" --play-verification-key "$(cat ${caFile(F.verificationKey)})" ` +
        `--play-cert-digest ${manifest.certDigestHex}`,
    );
    const readme = readFileSync(caFile(F.readme), "utf8");
    for (const line of Object.values(manifest.commands)) assert.ok(readme.includes(line), line);
    assert.ok(cliRun.stderr.includes(manifest.commands.playAppAdd), cliRun.stderr);
    // Neither the manifest nor the README, both world-readable, holds a key.
    const secret = readFileSync(caFile(F.decryptionKey), "utf8").trim();
    for (const f of [F.manifest, F.readme]) assert.ok(!readFileSync(caFile(f), "utf8").includes(secret), f);
  });

  it("quotes a directory with a space in the command lines, so they run as printed", async () => {
    const odd = path.join(dir, "my demo");
    await writePlayDevCa(createPlayDevCa(), odd);
    const written = JSON.parse(readFileSync(path.join(odd, F.manifest), "utf8")) as PlayDevCaManifest;
    assert.ok(written.commands.playAppAdd.includes(`"$(cat '${path.join(odd, F.decryptionKey)}')"`), written.commands.playAppAdd);
    assert.ok(written.commands.deviceSim.includes(`--ca '${odd}' `), written.commands.deviceSim);
  });

  it("refuses to replace an existing demo app and leaves it as it was; --force replaces it", () => {
    const before = readFileSync(caFile(F.decryptionKey));
    const again = attestdCli(["dev-ca", "--play-integrity", "--out", caDir()]);
    assert.equal(again.status, 1);
    assert.equal(
      again.stderr,
      `attestd: --out DIR: ${caDir()}: already holds a demo CA (${F.decryptionKey}); give each CA its own directory, or --force to replace this one\n`,
    );
    assert.deepEqual(readFileSync(caFile(F.decryptionKey)), before);

    const other = path.join(dir, "forced");
    assert.equal(attestdCli(["dev-ca", "--play-integrity", "--out", other]).status, 0);
    const first = readFileSync(path.join(other, F.decryptionKey), "utf8");
    const forced = attestdCli(["dev-ca", "--play-integrity", "--out", other, "--force"]);
    assert.equal(forced.status, 0, forced.stderr);
    assert.notEqual(readFileSync(path.join(other, F.decryptionKey), "utf8"), first);
    assert.equal(statSync(path.join(other, F.decryptionKey)).mode & 0o777, 0o600);
  });

  it("refuses --android with it, and a --key-type (Google's key types are fixed)", () => {
    const both = attestdCli(["dev-ca", "--play-integrity", "--android", "--out", path.join(dir, "never")]);
    assert.equal(both.status, 1);
    assert.match(both.stderr, /^attestd: --android, --play-integrity and --app-attest write different demo CAs; give one\n$/);
    const keyType = attestdCli(["dev-ca", "--play-integrity", "--key-type", "rsa", "--out", path.join(dir, "never")]);
    assert.equal(keyType.status, 1);
    assert.match(keyType.stderr, /^attestd: --key-type applies to the vendor CA/);
  });

  it("a directory another dev-ca wrote is not a demo Play app: the reader says which command makes one", async () => {
    const android = path.join(dir, "android");
    assert.equal(attestdCli(["dev-ca", "--android", "--out", android]).status, 0);
    await assert.rejects(readPlayDevCa(android), /no play-app\.json: not a directory written by `attestd dev-ca --play-integrity`/);
  });

  it("the reader refuses a verification key that is not the signing key's public half", async () => {
    const other = path.join(dir, "mismatch");
    await writePlayDevCa(createPlayDevCa(), other);
    writeFileSync(path.join(other, F.verificationKey), playConsoleKeys(createPlayDevCa()).verificationKey + "\n");
    await assert.rejects(readPlayDevCa(other), /verification-key\.txt is not the public half of signing-key\.pem/);
  });
});

describe("device-sim --format play-integrity: tokens, case by case (module)", () => {
  it("default: a standard request, a JWE (A256KW, A256GCM) holding an ES256 JWS over Google's payload", async () => {
    const { nonce, token, opened } = await tokenFor({});
    assert.match(token, /^[A-Za-z0-9_-]+\.[A-Za-z0-9_-]+\.[A-Za-z0-9_-]+\.[A-Za-z0-9_-]+\.[A-Za-z0-9_-]+$/, "five base64url parts");
    assert.deepEqual(opened.jweHeader, { alg: "A256KW", enc: "A256GCM" });
    assert.deepEqual(opened.jwsHeader, { alg: "ES256" });
    assert.deepEqual(opened.payload, defaultPayload(nonce));
  });

  it("--classic: the nonce in requestDetails.nonce, no requestHash", async () => {
    const { nonce, opened } = await tokenFor({ classic: true });
    assert.deepEqual(
      opened.payload,
      expected(nonce, (p) => {
        delete p.requestDetails.requestHash;
        p.requestDetails.nonce = nonce;
      }),
    );
  });

  it("--wrong-nonce: another nonce of the same shape, in the request's field", async () => {
    for (const classic of [false, true]) {
      const { nonce, opened } = await tokenFor({ wrongNonce: true, classic });
      const carried = classic ? opened.payload.requestDetails.nonce : opened.payload.requestDetails.requestHash;
      assert.match(carried ?? "", /^[A-Za-z0-9_-]{43}$/);
      assert.notEqual(carried, nonce);
    }
  });

  it("device verdict levels: none is empty, and each level carries the ones below it", async () => {
    const levels = {
      none: [],
      basic: ["MEETS_BASIC_INTEGRITY"],
      device: ["MEETS_BASIC_INTEGRITY", "MEETS_DEVICE_INTEGRITY"],
      strong: ["MEETS_BASIC_INTEGRITY", "MEETS_DEVICE_INTEGRITY", "MEETS_STRONG_INTEGRITY"],
    } as const;
    for (const [level, labels] of Object.entries(levels)) {
      const { nonce, opened } = await tokenFor({ deviceVerdict: level as keyof typeof levels });
      assert.deepEqual(opened.payload, expected(nonce, (p) => (p.deviceIntegrity.deviceRecognitionVerdict = [...labels])), level);
    }
  });

  it("app verdicts: UNRECOGNIZED_VERSION keeps the app's details; UNEVALUATED leaves them out, as Google does", async () => {
    const unrecognized = await tokenFor({ appVerdict: "UNRECOGNIZED_VERSION" });
    assert.deepEqual(
      unrecognized.opened.payload,
      expected(unrecognized.nonce, (p) => (p.appIntegrity.appRecognitionVerdict = "UNRECOGNIZED_VERSION")),
    );
    const unevaluated = await tokenFor({ appVerdict: "UNEVALUATED" });
    assert.deepEqual(unevaluated.opened.payload, expected(unevaluated.nonce, (p) => (p.appIntegrity = { appRecognitionVerdict: "UNEVALUATED" })));
  });

  it("--wrong-cert-digest: another certificate's digest, base64url", async () => {
    const { nonce, opened } = await tokenFor({ wrongCertDigest: true });
    const other = OTHER_APP_CERT_DIGEST.toString("base64url");
    assert.notEqual(other, manifest.certDigestBase64url);
    assert.deepEqual(opened.payload, expected(nonce, (p) => (p.appIntegrity.certificateSha256Digest = [other])));
  });

  it("--wrong-package: the request and the app are another package's", async () => {
    const { nonce, opened } = await tokenFor({ wrongPackage: true });
    assert.deepEqual(
      opened.payload,
      expected(nonce, (p) => {
        p.requestDetails.requestPackageName = OTHER_PLAY_PACKAGE;
        p.appIntegrity.packageName = OTHER_PLAY_PACKAGE;
      }),
    );
  });

  it("--stale is two days before now; an exact timestamp is taken as given; the two together are refused", async () => {
    const stale = await tokenFor({ stale: true });
    assert.equal(STALE_AGE_MS, 2 * 86_400_000);
    assert.deepEqual(stale.opened.payload, expected(stale.nonce, (p) => (p.requestDetails.timestampMillis = String(T0 - STALE_AGE_MS))));
    const exact = await tokenFor({ timestampMs: 1_700_000_000_123 });
    assert.equal(exact.opened.payload.requestDetails.timestampMillis, "1700000000123");
    await assert.rejects(makePlayIntegrityToken(ca, { nonce: newNonce(), stale: true, timestampMs: T0 }), /stale or has an exact timestamp/);
  });

  it("the optional signals: licensing, Play Protect, app access risk", async () => {
    const { nonce, opened } = await tokenFor({
      licensing: "UNLICENSED",
      playProtect: "HIGH_RISK",
      accessRiskApps: ["UNKNOWN_CAPTURING", "KNOWN_CONTROLLING"],
    });
    assert.deepEqual(
      opened.payload,
      expected(nonce, (p) => {
        p.accountDetails.appLicensingVerdict = "UNLICENSED";
        p.environmentDetails.playProtectVerdict = "HIGH_RISK";
        p.environmentDetails.appAccessRiskVerdict.appsDetected = ["UNKNOWN_CAPTURING", "KNOWN_CONTROLLING"];
      }),
    );
  });

  it("--tampered-signature: decrypts with the demo keys, carries the intended payload, and fails jose's verify", async () => {
    const nonce = newNonce();
    const token = await makePlayIntegrityToken(ca, { nonce, now: NOW, tamperedSignature: true });
    const { jws } = await decrypt(token);
    assert.deepEqual(JSON.parse(Buffer.from(jws.split(".")[1]!, "base64url").toString()), defaultPayload(nonce));
    await assert.rejects(compactVerify(jws, consoleKeys().verificationKey), joseErrors.JWSSignatureVerificationFailed);
  });

  it("--other-app-keys: still a JWE of the same shape, which the demo app's keys do not decrypt", async () => {
    const token = await makePlayIntegrityToken(ca, { nonce: newNonce(), now: NOW, otherAppKeys: true });
    assert.deepEqual(decodeProtectedHeader(token), { alg: "A256KW", enc: "A256GCM" });
    await assert.rejects(compactDecrypt(token, consoleKeys().decryptionKey), joseErrors.JWEDecryptionFailed);
  });

  it("the same case twice gives the same payload (time injected), in two different encryptions", async () => {
    const nonce = newNonce();
    const [a, b] = [await makePlayIntegrityToken(ca, { nonce, now: NOW }), await makePlayIntegrityToken(ca, { nonce, now: NOW })];
    assert.notEqual(a, b);
    assert.deepEqual((await open(a)).payload, (await open(b)).payload);
  });
});

describe("device-sim --format play-integrity (compiled CLI)", () => {
  const sim = (args: string[]) => attestdCli(["device-sim", "--format", "play-integrity", "--ca", caDir(), ...args]);

  it("prints the token alone on stdout without --out; writes exactly the token with it", async () => {
    const nonce = newNonce();
    const printed = sim(["--nonce", nonce]);
    assert.equal(printed.status, 0, printed.stderr);
    assert.equal(printed.stderr, "");
    assert.match(printed.stdout, /^[A-Za-z0-9_.-]+\n$/);
    const { payload } = await open(printed.stdout.trim());
    assert.equal(payload.requestDetails.requestHash, nonce);
    assert.ok(Math.abs(Number(payload.requestDetails.timestampMillis) - Date.now()) < 60_000, "now, by default");

    const out = path.join(dir, "token.txt");
    const written = sim(["--nonce", nonce, "--classic", "--device-verdict", "strong", "--out", out]);
    assert.equal(written.status, 0, written.stderr);
    const token = readFileSync(out, "utf8");
    assert.equal(written.stderr, `${token.length} bytes written to ${out}\n`);
    const opened = await open(token);
    assert.equal(opened.payload.requestDetails.nonce, nonce);
    assert.equal(opened.payload.requestDetails.requestHash, undefined);
    assert.deepEqual(opened.payload.deviceIntegrity.deviceRecognitionVerdict, [
      "MEETS_BASIC_INTEGRITY",
      "MEETS_DEVICE_INTEGRITY",
      "MEETS_STRONG_INTEGRITY",
    ]);
  });

  it("each flag gives its case", async () => {
    const nonce = newNonce();
    const at = "2026-11-22T10:00:00.000Z";
    const run = async (...flags: string[]) => {
      const r = sim(["--nonce", nonce, "--at", at, ...flags]);
      assert.equal(r.status, 0, r.stderr);
      return (await open(r.stdout.trim())).payload;
    };
    assert.deepEqual(await run(), defaultPayload(nonce));
    assert.equal((await run("--stale")).requestDetails.timestampMillis, String(T0 - STALE_AGE_MS));
    assert.equal((await run("--device-verdict", "none")).deviceIntegrity.deviceRecognitionVerdict.length, 0);
    assert.equal((await run("--unrecognized-app")).appIntegrity.appRecognitionVerdict, "UNRECOGNIZED_VERSION");
    assert.deepEqual(await run("--app-verdict", "UNEVALUATED"), expected(nonce, (p) => (p.appIntegrity = { appRecognitionVerdict: "UNEVALUATED" })));
    assert.deepEqual(
      await run("--wrong-package", "--wrong-cert-digest"),
      expected(nonce, (p) => {
        p.requestDetails.requestPackageName = OTHER_PLAY_PACKAGE;
        p.appIntegrity.packageName = OTHER_PLAY_PACKAGE;
        p.appIntegrity.certificateSha256Digest = [OTHER_APP_CERT_DIGEST.toString("base64url")];
      }),
    );
    assert.deepEqual(
      await run("--unlicensed", "--play-protect", "MEDIUM_RISK", "--access-risk-apps", "UNKNOWN_INSTALLED,UNKNOWN_OVERLAYS"),
      expected(nonce, (p) => {
        p.accountDetails.appLicensingVerdict = "UNLICENSED";
        p.environmentDetails.playProtectVerdict = "MEDIUM_RISK";
        p.environmentDetails.appAccessRiskVerdict.appsDetected = ["UNKNOWN_INSTALLED", "UNKNOWN_OVERLAYS"];
      }),
    );
    assert.deepEqual((await run("--access-risk-apps", "none")).environmentDetails.appAccessRiskVerdict.appsDetected, []);
    const exact = sim(["--nonce", nonce, "--timestamp-ms", "1700000000123"]);
    assert.equal((await open(exact.stdout.trim())).payload.requestDetails.timestampMillis, "1700000000123");

    const tampered = sim(["--nonce", nonce, "--tampered-signature"]);
    const { jws } = await decrypt(tampered.stdout.trim());
    await assert.rejects(compactVerify(jws, consoleKeys().verificationKey), joseErrors.JWSSignatureVerificationFailed);
    const foreign = sim(["--nonce", nonce, "--other-app-keys"]);
    assert.equal(foreign.status, 0, foreign.stderr);
    await assert.rejects(compactDecrypt(foreign.stdout.trim(), consoleKeys().decryptionKey), joseErrors.JWEDecryptionFailed);
  });

  it("contradictions, bad values and other formats' flags: exit 1 with one line", () => {
    const nonce = newNonce();
    const refused = (args: string[], line: RegExp) => {
      const r = sim(["--nonce", nonce, ...args]);
      assert.equal(r.status, 1, `${args.join(" ")}: ${r.stdout}`);
      assert.equal(r.stdout, "");
      assert.match(r.stderr, line);
      assert.equal(r.stderr.split("\n").length, 2, r.stderr);
    };
    refused(["--unrecognized-app", "--app-verdict", "UNEVALUATED"], /^attestd: --unrecognized-app is --app-verdict UNRECOGNIZED_VERSION/);
    refused(["--timestamp-ms", "1", "--stale"], /^attestd: --timestamp-ms sets the timestamp exactly/);
    refused(["--timestamp-ms", "soon"], /^attestd: --timestamp-ms soon: not a whole number/);
    refused(["--at", "yesterday"], /^attestd: --at yesterday: not an ISO 8601 time/);
    refused(["--access-risk-apps", "KNOWN_INSTALLED,EVIL"], /^attestd: --access-risk-apps: EVIL is none of KNOWN_INSTALLED/);
    refused(["--tamper"], /^attestd: --tamper applies to --format vendor\n$/);
    refused(["--knox"], /^attestd: --knox applies to --format android-key\n$/);
    refused(["--device-key", path.join(dir, "phone.json")], /^attestd: --device-key applies to --format vendor or android-key\n$/);

    const vendorGetsPlayFlag = attestdCli(["device-sim", "--ca", caDir(), "--nonce", nonce, "--classic", "--out", path.join(dir, "x")]);
    assert.equal(vendorGetsPlayFlag.stderr, "attestd: --classic applies to --format play-integrity\n");
    const wrongCa = attestdCli(["device-sim", "--format", "play-integrity", "--ca", dir, "--nonce", nonce]);
    assert.equal(wrongCa.status, 1);
    assert.match(wrongCa.stderr, /^attestd: --ca DIR: .*: no play-app\.json \(expected the output of attestd dev-ca --play-integrity --out DIR\)\n$/);
    const noOut = attestdCli(["device-sim", "--ca", caDir(), "--nonce", nonce]);
    assert.equal(noOut.stderr, "attestd: --format vendor writes a binary blob: give --out FILE\n");
  });

  it("--help lists the format and every case's flag; dev-ca --help lists --play-integrity", () => {
    const help = attestdCli(["device-sim", "--help"]);
    assert.equal(help.status, 0);
    assert.match(help.stdout, /"play-integrity"/);
    assert.match(help.stdout, /^--format play-integrity:$/m);
    for (const flag of [
      "--device-verdict <level>",
      "--app-verdict <verdict>",
      "--unrecognized-app",
      "--wrong-cert-digest",
      "--wrong-package",
      "--stale",
      "--timestamp-ms <ms>",
      "--at <iso8601>",
      "--classic",
      "--tampered-signature",
      "--other-app-keys",
      "--unlicensed",
      "--play-protect <verdict>",
      "--access-risk-apps <list>",
    ]) {
      assert.ok(help.stdout.includes(`  ${flag} `), flag);
    }
    assert.match(attestdCli(["dev-ca", "--help"]).stdout, /--play-integrity /);
  });
});
