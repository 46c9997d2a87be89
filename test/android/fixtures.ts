/**
 * Shared helpers for the android-key tests: the real vectors (the project's copy in test/vectors/android-key,
 * whose README names each one's origin), trust built from Google's published roots, and a small synthetic PKI built with
 * @peculiar/x509 for what no real device produces (forgeries, Knox, odd chains).
 */
import "reflect-metadata";
import { readFileSync } from "node:fs";
import path from "node:path";
import { fileURLToPath } from "node:url";
import { webcrypto } from "node:crypto";
import * as x509 from "@peculiar/x509";
import { keyDescriptionDer, type KeyDescriptionOptions } from "../../src/attestation/sim/androidExtensions.ts";
import { androidKeyFormat } from "../../src/attestation/formats/androidKey.ts";
import type { AndroidTrust, AppraisalResult, TrustConfig } from "../../src/attestation/types.ts";
import { parseAndroidRoots } from "../../src/trust/androidTrustSource.ts";
import { KEY_DESCRIPTION_OID } from "../../src/attestation/encoding/keyDescription.ts";
import { parseStatusList } from "../../src/attestation/chain/statusList.ts";
import { ANDROID_DEV_CA_FILES } from "../../src/attestation/sim/androidCa.ts";

type CryptoKeyPair = webcrypto.CryptoKeyPair;
x509.cryptoProvider.set(webcrypto as unknown as Parameters<typeof x509.cryptoProvider.set>[0]);

export const repoRoot = path.resolve(path.dirname(fileURLToPath(import.meta.url)), "../..");
export const VECTORS = path.resolve(repoRoot, "test/vectors/android-key");
export const vec = (rel: string) => path.join(VECTORS, rel);

/** A PEM chain file as the blob a device sends: DER certificates end to end. */
export function pemBlob(rel: string): Buffer {
  const text = readFileSync(vec(rel), "utf8");
  const ders = [...text.matchAll(/-----BEGIN CERTIFICATE-----([\s\S]*?)-----END CERTIFICATE-----/g)].map((m) =>
    Buffer.from(m[1]!.replace(/\s+/g, ""), "base64"),
  );
  return Buffer.concat(ders);
}

/** DER files concatenated, leaf first. */
export function derBlob(...rels: string[]): Buffer {
  return Buffer.concat(rels.map((r) => readFileSync(vec(r))));
}

/** Google's published roots (2022 RSA + 2025 EC "Key Attestation CA1"), as the operator would configure them. */
export function googleRoots(): { rootsDer: Uint8Array[]; pinnedRootSpkiSha256: Set<string> } {
  return parseAndroidRoots(readFileSync(vec("android_keyattestation/roots.json")), "roots.json");
}

/** The five roots GrapheneOS's AttestationServer pins (DER files). */
export function grapheneRoots(): { rootsDer: Uint8Array[]; pinnedRootSpkiSha256: Set<string> } {
  const body = derBlob(...[0, 1, 2, 3, 4].map((i) => `grapheneos_attestationserver_roots/google_root_${i}.der`));
  return parseAndroidRoots(body, "grapheneos roots");
}

export function androidTrust(over: Partial<AndroidTrust> = {}): AndroidTrust {
  return {
    ...googleRoots(),
    status: new Map(),
    fresh: true,
    allowedBootKeys: [],
    policy: {},
    ...over,
  };
}

/** Android trust as an operator builds it from a directory `attestd dev-ca --android` wrote: its root and status list. */
export function demoAndroidTrust(dir: string): AndroidTrust {
  const file = (name: string) => readFileSync(path.join(dir, name));
  return androidTrust({
    ...parseAndroidRoots(file(ANDROID_DEV_CA_FILES.root), ANDROID_DEV_CA_FILES.root),
    status: parseStatusList(file(ANDROID_DEV_CA_FILES.status).toString("utf8"), ANDROID_DEV_CA_FILES.status),
  });
}

export function trustConfig(android: AndroidTrust): TrustConfig {
  return { vendor: { rootsDer: [], revocations: new Map(), referenceValues: [] }, android };
}

/** The nonce a test sends so that the device's fixed challenge matches: 32 bytes → base64url, else ASCII. */
export function nonceFor(challenge: Uint8Array): string {
  const b = Buffer.from(challenge);
  if (b.length === 32) return b.toString("base64url");
  const ascii = b.toString("latin1");
  if (!/^[\x20-\x7e]+$/.test(ascii)) throw new Error(`challenge ${b.toString("hex")} is neither 32 bytes nor ASCII`);
  return ascii;
}

/** Another nonce of the standard shape that matches nothing. */
export const WRONG_NONCE = Buffer.alloc(32, 0xab).toString("base64url");

export function appraiseAt(blob: Uint8Array, nonce: string, android: AndroidTrust, at: string): AppraisalResult {
  return androidKeyFormat.appraise({ blob, nonce, trust: trustConfig(android), now: new Date(at) });
}

/** The leaf challenge of a chain, read through the appraisal's own detail (any nonce will do). */
export function challengeOf(blob: Uint8Array, android: AndroidTrust, at: string): Buffer {
  const r = appraiseAt(blob, WRONG_NONCE, android, at);
  const kd = r.detail.keyDescription as { attestationChallenge: string } | null;
  if (!kd) throw new Error(`no KeyDescription: ${r.reason}`);
  return Buffer.from(kd.attestationChallenge, "hex");
}

// ---------------------------------------------------------------------------------------------------------------
// Synthetic PKI

const EC = { name: "ECDSA", namedCurve: "P-256", hash: "SHA-256" } as const;

export interface TestCa {
  cert: x509.X509Certificate;
  keys: CryptoKeyPair;
  der: Buffer;
}

export async function newKeys(): Promise<CryptoKeyPair> {
  return (await webcrypto.subtle.generateKey(EC, true, ["sign", "verify"])) as CryptoKeyPair;
}

const LONG_AGO = new Date("2020-01-01T00:00:00Z");
const FAR_AHEAD = new Date("2040-01-01T00:00:00Z");

export async function testRoot(name = "CN=attestd Test Root"): Promise<TestCa> {
  const keys = await newKeys();
  const cert = await x509.X509CertificateGenerator.createSelfSigned({
    serialNumber: "01",
    name,
    notBefore: LONG_AGO,
    notAfter: FAR_AHEAD,
    keys,
    signingAlgorithm: EC,
    extensions: [
      new x509.BasicConstraintsExtension(true, undefined, true),
      new x509.KeyUsagesExtension(x509.KeyUsageFlags.keyCertSign | x509.KeyUsageFlags.cRLSign, true),
    ],
  });
  return { cert, keys, der: Buffer.from(cert.rawData) };
}

export interface IssueOptions {
  subject: string;
  serialNumber?: string;
  ca?: boolean;
  pathLength?: number;
  keyUsage?: number;
  notBefore?: Date;
  notAfter?: Date;
  extensions?: x509.Extension[];
  keys?: CryptoKeyPair;
}

/** A certificate issued by `issuer` (a CA, or any key pair with a certificate: that is how forgeries are made). */
export async function issue(issuer: TestCa, o: IssueOptions): Promise<TestCa> {
  const keys = o.keys ?? (await newKeys());
  const extensions: x509.Extension[] = [];
  if (o.ca !== undefined) extensions.push(new x509.BasicConstraintsExtension(o.ca, o.pathLength, true));
  if (o.keyUsage !== undefined) extensions.push(new x509.KeyUsagesExtension(o.keyUsage, true));
  extensions.push(...(o.extensions ?? []));
  const cert = await x509.X509CertificateGenerator.create({
    serialNumber: o.serialNumber ?? "0a0b0c",
    subject: o.subject,
    issuer: issuer.cert.subject,
    notBefore: o.notBefore ?? LONG_AGO,
    notAfter: o.notAfter ?? FAR_AHEAD,
    publicKey: keys.publicKey,
    signingKey: issuer.keys.privateKey,
    signingAlgorithm: EC,
    extensions,
  });
  return { cert, keys, der: Buffer.from(cert.rawData) };
}

/** A KeyDescription as a device writes it (src/attestation/sim/androidExtensions.ts). */
export type KdOptions = KeyDescriptionOptions;
export { keyDescriptionDer };

export function keyDescriptionExtension(o: KdOptions = {}): x509.Extension {
  return new x509.Extension(KEY_DESCRIPTION_OID, false, keyDescriptionDer(o));
}

/** A synthetic "device" chain: test root → CA intermediate → leaf carrying `leafExtensions`. */
export async function syntheticChain(leafExtensions: x509.Extension[]): Promise<{
  root: TestCa;
  intermediate: TestCa;
  leaf: TestCa;
  blob: Buffer;
  trust: AndroidTrust;
}> {
  const root = await testRoot();
  const intermediate = await issue(root, {
    subject: "CN=attestd Test Intermediate",
    serialNumber: "7e57",
    ca: true,
    keyUsage: x509.KeyUsageFlags.keyCertSign,
  });
  const leaf = await issue(intermediate, {
    subject: "CN=Android Keystore Key",
    serialNumber: "01",
    keyUsage: x509.KeyUsageFlags.digitalSignature,
    extensions: leafExtensions,
  });
  return {
    root,
    intermediate,
    leaf,
    blob: Buffer.concat([leaf.der, intermediate.der, root.der]),
    trust: trustWithRoots([root.der]),
  };
}

export function trustWithRoots(roots: Uint8Array[], over: Partial<AndroidTrust> = {}): AndroidTrust {
  return androidTrust({ ...parseAndroidRoots(Buffer.concat(roots), "test roots"), ...over });
}

export { x509 };
