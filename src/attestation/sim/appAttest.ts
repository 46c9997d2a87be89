import "reflect-metadata";
import * as x509 from "@peculiar/x509";
import { createHash, createPrivateKey, sign, webcrypto } from "node:crypto";
import { mkdir, readFile, writeFile } from "node:fs/promises";
import { join } from "node:path";
import * as asn1js from "asn1js";
import { encode } from "cbor2";
import { challengesForNonce } from "../../nonces/nonce.ts";
import { AAGUID_DEVELOPMENT, AAGUID_PRODUCTION } from "../encoding/appAttestObject.ts";
import { APP_ATTEST_NONCE_OID } from "../chain/appAttestChain.ts";
import { parsePemBundle, toPem } from "../encoding/pem.ts";
import { PRIVATE_DIR_MODE } from "../../secrets/privateFiles.ts";

/**
 * Apple's side of App Attest, for one machine (`attestd dev-ca --app-attest`, `attestd device-sim --format
 * app-attest`): a demo App Attestation root (P-384, as Apple's) and intermediate, attestation objects as
 * `DCAppAttestService.attestKey` returns them (CBOR {fmt, attStmt: {x5c, receipt}, authData}, the credential
 * certificate carrying the nonce extension), and assertions as `generateAssertion` makes them, with the relying
 * party's JSON around them. Every case the appraisal tells apart has an option. The receipt is a placeholder (the
 * demo root signs no receipts): a receipt check plugged in refuses it.
 */

const crypto = webcrypto;

const P384 = { name: "ECDSA", namedCurve: "P-384" } as const;
const P256 = { name: "ECDSA", namedCurve: "P-256" } as const;
const SIGN_384 = { name: "ECDSA", hash: "SHA-384" } as const;

export const DEMO_APP_ID = "DEMOTEAM01.com.example.attestd.demo";

export const APP_ATTEST_CA_FILES = {
  root: "app-attest-root.pem",
  intermediate: "app-attest-intermediate.pem",
  intermediateKey: "app-attest-intermediate-key.pem",
  readme: "README.txt",
} as const;

export interface AppAttestCa {
  rootDer: Uint8Array;
  intermediateDer: Uint8Array;
  /** PKCS#8 PEM of the intermediate's P-384 key: it issues credential certificates */
  intermediateKeyPem: string;
}

const sha256 = (...parts: Uint8Array[]) => {
  const h = createHash("sha256");
  for (const p of parts) h.update(p);
  return h.digest();
};

async function pkcs8Pem(key: webcrypto.CryptoKey): Promise<string> {
  return toPem(new Uint8Array(await crypto.subtle.exportKey("pkcs8", key)), "PRIVATE KEY");
}

async function importSigning(pem: string, alg: typeof P384 | typeof P256): Promise<webcrypto.CryptoKey> {
  const der = createPrivateKey(pem).export({ type: "pkcs8", format: "der" });
  return crypto.subtle.importKey("pkcs8", der, alg, false, ["sign"]);
}

/** A demo root and intermediate, valid from a day before `now` for ten years (Apple's CA 1 is valid ten years). */
export async function makeAppAttestCa(now = new Date()): Promise<AppAttestCa> {
  const notBefore = new Date(now.getTime() - 86_400_000);
  const notAfter = new Date(now.getTime() + 10 * 365 * 86_400_000);
  const rootKeys = (await crypto.subtle.generateKey(P384, true, ["sign", "verify"])) as webcrypto.CryptoKeyPair;
  const root = await x509.X509CertificateGenerator.createSelfSigned({
    serialNumber: "01",
    name: "CN=attestd demo App Attestation Root CA, O=attestd demo",
    notBefore,
    notAfter,
    keys: rootKeys as never,
    signingAlgorithm: SIGN_384,
    extensions: [
      new x509.BasicConstraintsExtension(true, undefined, true),
      new x509.KeyUsagesExtension(x509.KeyUsageFlags.keyCertSign | x509.KeyUsageFlags.cRLSign, true),
      await x509.SubjectKeyIdentifierExtension.create(rootKeys.publicKey as never, false, crypto as never),
    ],
  }, crypto as never);
  const interKeys = (await crypto.subtle.generateKey(P384, true, ["sign", "verify"])) as webcrypto.CryptoKeyPair;
  const intermediate = await x509.X509CertificateGenerator.create({
    serialNumber: "02",
    subject: "CN=attestd demo App Attestation CA 1, O=attestd demo",
    issuer: root.subject,
    notBefore,
    notAfter,
    publicKey: interKeys.publicKey as never,
    signingKey: rootKeys.privateKey as never,
    signingAlgorithm: SIGN_384,
    extensions: [
      new x509.BasicConstraintsExtension(true, 0, true),
      new x509.KeyUsagesExtension(x509.KeyUsageFlags.keyCertSign | x509.KeyUsageFlags.cRLSign, true),
      await x509.AuthorityKeyIdentifierExtension.create(rootKeys.publicKey as never, false, crypto as never),
      await x509.SubjectKeyIdentifierExtension.create(interKeys.publicKey as never, false, crypto as never),
    ],
  }, crypto as never);
  return {
    rootDer: new Uint8Array(root.rawData),
    intermediateDer: new Uint8Array(intermediate.rawData),
    intermediateKeyPem: await pkcs8Pem(interKeys.privateKey),
  };
}

export async function saveAppAttestCa(ca: AppAttestCa, dir: string): Promise<string[]> {
  await mkdir(dir, { recursive: true, mode: PRIVATE_DIR_MODE });
  const files = [
    [APP_ATTEST_CA_FILES.root, toPem(ca.rootDer, "CERTIFICATE"), 0o644],
    [APP_ATTEST_CA_FILES.intermediate, toPem(ca.intermediateDer, "CERTIFICATE"), 0o644],
    [APP_ATTEST_CA_FILES.intermediateKey, ca.intermediateKeyPem, 0o600],
    [
      APP_ATTEST_CA_FILES.readme,
      `attestd demo App Attestation PKI (attestd dev-ca --app-attest). Not Apple's: trust it with\n` +
        `  attestd serve --app-attest-roots ${join(dir, APP_ATTEST_CA_FILES.root)}\n` +
        `and register the demo app with\n  attestd ios-app add --tenant TENANT --app-id ${DEMO_APP_ID} --environment both\n`,
      0o644,
    ],
  ] as const;
  for (const [name, text, mode] of files) await writeFile(join(dir, name), text, { mode });
  return files.map(([name]) => join(dir, name));
}

export async function loadAppAttestCa(dir: string): Promise<AppAttestCa> {
  const read = async (name: string) => {
    try {
      return await readFile(join(dir, name), "utf8");
    } catch {
      throw new Error(`${dir} was not written by attestd dev-ca --app-attest (no ${name})`);
    }
  };
  return {
    rootDer: parsePemBundle(await read(APP_ATTEST_CA_FILES.root))[0]!,
    intermediateDer: parsePemBundle(await read(APP_ATTEST_CA_FILES.intermediate))[0]!,
    intermediateKeyPem: await read(APP_ATTEST_CA_FILES.intermediateKey),
  };
}

/** A simulated App Attest key, as kept between runs (`--key-file`): what the app's Secure Enclave holds. */
export interface SimAppAttestKey {
  /** base64 of SHA-256(public key), as generateKey returns it */
  keyId: string;
  appId: string;
  /** PKCS#8 PEM of the P-256 key */
  privateKeyPem: string;
  /** the last counter used; the next assertion uses counter + 1 */
  counter: number;
}

export interface AttestationOptions {
  nonce: string;
  appId?: string;
  environment?: "production" | "development";
  now?: Date;
  /** the nonce extension answers another nonce */
  wrongNonce?: boolean;
  /** the credential id is not SHA-256 of the key */
  wrongKeyId?: boolean;
  /** the RP ID hash names another app */
  otherAppId?: string;
  /** a counter other than 0 */
  counter?: number;
  /** an AAGUID of neither environment */
  unknownAaguid?: boolean;
  /** the credential certificate expired before `now` */
  expired?: boolean;
  /** issued by a CA made afresh, not the demo one */
  otherCa?: boolean;
  /**
   * the receipt to carry, made for the credential certificate (DER) once it exists (a test's receipt CA signs it:
   * sim/appAttestReceipt.ts); default a placeholder that no receipt check accepts
   */
  receipt?: (credentialCertificateDer: Uint8Array) => Uint8Array;
}

function nonceHash(nonce: string): Buffer {
  return sha256(challengesForNonce(nonce)[0] ?? Buffer.alloc(0));
}

function u32(n: number): Buffer {
  const b = Buffer.alloc(4);
  b.writeUInt32BE(n);
  return b;
}

/** The nonce extension's DER: SEQUENCE { [1] EXPLICIT OCTET STRING nonce }. */
function nonceExtension(nonce: Uint8Array): x509.Extension {
  const value = new asn1js.Sequence({
    value: [new asn1js.Constructed({ idBlock: { tagClass: 3, tagNumber: 1 }, value: [new asn1js.OctetString({ valueHex: nonce })] })],
  }).toBER(false);
  return new x509.Extension(APP_ATTEST_NONCE_OID, false, value);
}

export async function makeAppAttestAttestation(caIn: AppAttestCa, o: AttestationOptions): Promise<{ blob: Uint8Array; key: SimAppAttestKey }> {
  const ca = o.otherCa ? await makeAppAttestCa(o.now) : caIn;
  const now = o.now ?? new Date();
  const appId = o.appId ?? DEMO_APP_ID;
  const keys = (await crypto.subtle.generateKey(P256, true, ["sign", "verify"])) as webcrypto.CryptoKeyPair;
  const point = Buffer.from(await crypto.subtle.exportKey("raw", keys.publicKey));
  const keyId = sha256(point);
  const credentialId = o.wrongKeyId ? sha256(keyId) : keyId;
  const aaguid = o.unknownAaguid ? Buffer.from("notappattest0000", "latin1") : o.environment === "development" ? AAGUID_DEVELOPMENT : AAGUID_PRODUCTION;
  const cose = Buffer.from(
    encode(
      new Map<number, number | Uint8Array>([
        [1, 2],
        [3, -7],
        [-1, 1],
        [-2, new Uint8Array(point.subarray(1, 33))],
        [-3, new Uint8Array(point.subarray(33))],
      ]),
    ),
  );
  const authData = Buffer.concat([
    sha256(Buffer.from(o.otherAppId ?? appId, "utf8")),
    Buffer.from([0x40]),
    u32(o.counter ?? 0),
    aaguid,
    Buffer.from([0, 32]),
    credentialId,
    cose,
  ]);
  const clientDataHash = o.wrongNonce ? sha256(Buffer.from("another nonce")) : nonceHash(o.nonce);
  const notBefore = o.expired ? new Date(now.getTime() - 10 * 86_400_000) : new Date(now.getTime() - 86_400_000);
  const notAfter = o.expired ? new Date(now.getTime() - 7 * 86_400_000) : new Date(now.getTime() + 3 * 86_400_000);
  const leaf = await x509.X509CertificateGenerator.create({
    serialNumber: Buffer.from(keyId.subarray(0, 8)).toString("hex").replace(/^[89a-f]/, "1"),
    subject: `CN=${keyId.toString("hex")}, OU=AAA Certification, O=attestd demo`,
    issuer: new x509.X509Certificate(ca.intermediateDer).subject,
    notBefore,
    notAfter,
    publicKey: keys.publicKey as never,
    signingKey: (await importSigning(ca.intermediateKeyPem, P384)) as never,
    signingAlgorithm: SIGN_384,
    extensions: [new x509.BasicConstraintsExtension(false, undefined, true), new x509.KeyUsagesExtension(x509.KeyUsageFlags.digitalSignature, true), nonceExtension(sha256(authData, clientDataHash))],
  }, crypto as never);
  const blob = encode(
    new Map<string, unknown>([
      ["fmt", "apple-appattest"],
      [
        "attStmt",
        new Map<string, unknown>([
          ["x5c", [new Uint8Array(leaf.rawData), ca.intermediateDer]],
          ["receipt", o.receipt ? o.receipt(new Uint8Array(leaf.rawData)) : new Uint8Array(Buffer.from("attestd demo receipt: not signed by Apple"))],
        ]),
      ],
      ["authData", new Uint8Array(authData)],
    ]),
  );
  return { blob, key: { keyId: keyId.toString("base64"), appId, privateKeyPem: await pkcs8Pem(keys.privateKey), counter: 0 } };
}

export interface AssertionOptions {
  nonce: string;
  /** default key.counter + 1 */
  counter?: number;
  /** the RP ID hash names another app */
  otherAppId?: string;
  /** signed over another nonce */
  wrongNonce?: boolean;
  /** one byte of the signature's value changed */
  tamperedSignature?: boolean;
  /** the body names another key id (32 random-looking bytes) */
  unknownKeyId?: boolean;
}

/** The relying party's post: JSON {keyId, assertion}; the key's counter is moved to the one used. */
export function makeAppAttestAssertion(key: SimAppAttestKey, o: AssertionOptions): { body: Uint8Array; key: SimAppAttestKey } {
  const counter = o.counter ?? key.counter + 1;
  const authenticatorData = Buffer.concat([sha256(Buffer.from(o.otherAppId ?? key.appId, "utf8")), Buffer.from([0]), u32(counter)]);
  const clientDataHash = o.wrongNonce ? sha256(Buffer.from("another nonce")) : nonceHash(o.nonce);
  const signature = sign("sha256", Buffer.concat([authenticatorData, clientDataHash]), { key: createPrivateKey(key.privateKeyPem), dsaEncoding: "der" });
  if (o.tamperedSignature) signature[signature.length - 1]! ^= 0x01;
  const assertion = Buffer.from(encode(new Map<string, Uint8Array>([["signature", new Uint8Array(signature)], ["authenticatorData", new Uint8Array(authenticatorData)]])));
  const keyId = o.unknownKeyId ? sha256(Buffer.from(key.keyId)).toString("base64") : key.keyId;
  const body = Buffer.from(JSON.stringify({ keyId, assertion: assertion.toString("base64") }));
  return { body: new Uint8Array(body), key: { ...key, counter: Math.max(key.counter, counter) } };
}
