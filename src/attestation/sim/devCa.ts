import "reflect-metadata";
import * as x509 from "@peculiar/x509";
import {
  X509Certificate,
  createPrivateKey,
  createPublicKey,
  generateKeyPair,
  randomBytes,
  webcrypto,
  type KeyObject,
} from "node:crypto";
import { access, mkdir, readFile, writeFile } from "node:fs/promises";
import { join } from "node:path";
import { promisify } from "node:util";
import { normalizeSerial } from "../chain/statusList.ts";
import { parsePemBundle, toPem } from "../encoding/pem.ts";
import { PRIVATE_DIR_MODE } from "../../secrets/privateFiles.ts";

/**
 * A demo vendor PKI for the device simulator and the tests: a root and an intermediate like a vendor's, and device
 * leaves issued by the intermediate — including deliberately broken ones (no CA flag, wrong keyUsage, wrong issuer
 * name, odd validity, weak keys) so every chain rule of the appraisal can be exercised.
 *
 * Keys are node:crypto KeyObjects; certificates are built with @peculiar/x509 over WebCrypto, passed explicitly so
 * this module sets no global crypto provider.
 */

const crypto = webcrypto;
type Algorithm = webcrypto.Algorithm;
const generateKeyPairAsync = promisify(generateKeyPair);

/** "ec" is P-256 and "rsa" is RSA-2048; the others exist to test what the appraisal must refuse or accept. */
export type KeyType =
  | "ec"
  | "ec-p256"
  | "ec-p384"
  | "rsa"
  | "rsa-1024"
  | "rsa-2048"
  | "rsa-3072"
  | "rsa-4096"
  | "ed25519";

export const KEY_TYPES: readonly KeyType[] = [
  "ec", "ec-p256", "ec-p384", "rsa", "rsa-1024", "rsa-2048", "rsa-3072", "rsa-4096", "ed25519",
];

export interface IssuedCertificate {
  certDer: Uint8Array;
  certPem: string;
  /** as OpenSSL prints it, one line */
  subject: string;
  /** lowercase hex without leading zeros, the revocation list's form */
  serial: string;
}

export interface CertifiedKey extends IssuedCertificate {
  privateKey: KeyObject;
  /** PKCS#8 PEM */
  keyPem: string;
}

export interface DevCa {
  /** the key is absent when read from a directory that does not hold root.key.pem */
  root: IssuedCertificate & Partial<Pick<CertifiedKey, "privateKey" | "keyPem">>;
  intermediate: CertifiedKey;
}

export type KeyUsageName =
  | "digitalSignature"
  | "nonRepudiation"
  | "keyEncipherment"
  | "dataEncipherment"
  | "keyAgreement"
  | "keyCertSign"
  | "cRLSign";

export interface IssueOptions {
  /**
   * "CN=Device 1, O=Example" (attributes encoded in the order written), or an x509.Name for attribute types the
   * text form does not know (Android factory names use serialNumber and title)
   */
  subject: string | x509.Name;
  /** the subject's key type when no `privateKey` is given (default "ec") */
  keyType?: KeyType;
  /** certify this existing key instead of generating one */
  privateKey?: KeyObject;
  /** the clock; default now */
  now?: Date;
  /** default: `now` minus one hour (tolerates device clock skew) */
  notBefore?: Date;
  /** default: `notBefore` plus `validityDays` */
  notAfter?: Date;
  /** default 730 */
  validityDays?: number;
  /** basicConstraints cA (default false) */
  ca?: boolean;
  pathLen?: number;
  /** leave basicConstraints out entirely (a v3 certificate that says nothing about being a CA) */
  omitBasicConstraints?: boolean;
  /** default: CA → keyCertSign + cRLSign; otherwise digitalSignature. Empty array → no keyUsage extension. */
  keyUsage?: readonly KeyUsageName[];
  /** write this issuer name instead of the issuer's subject (to break the name chain while the signature holds) */
  issuerName?: string;
  /** hex; default 16 random bytes */
  serial?: string;
  /** further extensions, e.g. an unknown critical one */
  extensions?: readonly x509.Extension[];
}

export interface DevCaOptions {
  /** algorithm of the root and intermediate keys (default "ec", i.e. P-256) */
  keyType?: KeyType;
  now?: Date;
  /** prefix of the CA names (default "attestd Demo Vendor") */
  name?: string;
  /** default 3650 */
  rootValidityDays?: number;
  /** default 1825 */
  intermediateValidityDays?: number;
  /** pathLenConstraint of the intermediate (default 0: it issues device leaves only) */
  intermediatePathLen?: number;
}

export interface LeafOptions extends Omit<IssueOptions, "subject"> {
  /** default "CN=Device <serial>, O=<the intermediate's O or 'attestd Demo Vendor'>" */
  subject?: string;
}

/** The file names `writeDevCa` writes and `readDevCa` reads. `root.pem` is what `--vendor-roots` takes. */
export const DEV_CA_FILES = {
  root: "root.pem",
  rootKey: "root.key.pem",
  intermediate: "intermediate.pem",
  intermediateKey: "intermediate.key.pem",
} as const;

const DAY_MS = 86_400_000;
const KEY_USAGE_FLAGS: Record<KeyUsageName, x509.KeyUsageFlags> = {
  digitalSignature: x509.KeyUsageFlags.digitalSignature,
  nonRepudiation: x509.KeyUsageFlags.nonRepudiation,
  keyEncipherment: x509.KeyUsageFlags.keyEncipherment,
  dataEncipherment: x509.KeyUsageFlags.dataEncipherment,
  keyAgreement: x509.KeyUsageFlags.keyAgreement,
  keyCertSign: x509.KeyUsageFlags.keyCertSign,
  cRLSign: x509.KeyUsageFlags.cRLSign,
};

export async function generateKey(type: KeyType): Promise<KeyObject> {
  switch (type) {
    case "ec":
    case "ec-p256":
      return (await generateKeyPairAsync("ec", { namedCurve: "P-256" })).privateKey;
    case "ec-p384":
      return (await generateKeyPairAsync("ec", { namedCurve: "P-384" })).privateKey;
    case "ed25519":
      return (await generateKeyPairAsync("ed25519")).privateKey;
    case "rsa":
      return (await generateKeyPairAsync("rsa", { modulusLength: 2048 })).privateKey;
    default: {
      const bits = Number(/^rsa-(\d+)$/.exec(type)?.[1]);
      if (!bits) throw new Error(`unknown key type ${JSON.stringify(type)}; one of ${KEY_TYPES.join(", ")}`);
      return (await generateKeyPairAsync("rsa", { modulusLength: bits })).privateKey;
    }
  }
}

/** WebCrypto views of a node key, for @peculiar/x509: how to import it and how it signs certificates. */
function webCryptoAlgorithms(key: KeyObject): { importAs: Algorithm; signWith: Algorithm } {
  const type = key.asymmetricKeyType;
  if (type === "ec") {
    const curve = key.asymmetricKeyDetails?.namedCurve;
    const [namedCurve, hash] = curve === "secp384r1" ? ["P-384", "SHA-384"] : curve === "prime256v1" ? ["P-256", "SHA-256"] : [];
    if (!namedCurve) throw new Error(`cannot sign certificates with an EC key on ${curve}`);
    return { importAs: { name: "ECDSA", namedCurve } as Algorithm, signWith: { name: "ECDSA", hash } as Algorithm };
  }
  if (type === "rsa") {
    return {
      importAs: { name: "RSASSA-PKCS1-v1_5", hash: "SHA-256" } as Algorithm,
      signWith: { name: "RSASSA-PKCS1-v1_5" },
    };
  }
  if (type === "ed25519") return { importAs: { name: "Ed25519" }, signWith: { name: "Ed25519" } };
  throw new Error(`cannot sign certificates with a ${type} key`);
}

// Kept per key object: the bench's device simulator certifies the same keys thousands of times (issue 15), and
// deriving and importing them dominated the cost of a chain.
const spkis = new WeakMap<KeyObject, Uint8Array>();
const signingKeys = new WeakMap<KeyObject, Promise<webcrypto.CryptoKey>>();

function spkiOf(key: KeyObject): Uint8Array {
  let spki = spkis.get(key);
  // createPublicKey derives the public half of a private KeyObject.
  if (!spki) spkis.set(key, (spki = new Uint8Array(createPublicKey(key).export({ type: "spki", format: "der" }))));
  return spki;
}

function signingKeyOf(key: KeyObject, importAs: Algorithm): Promise<webcrypto.CryptoKey> {
  let k = signingKeys.get(key);
  if (!k) {
    k = crypto.subtle.importKey("pkcs8", key.export({ type: "pkcs8", format: "der" }), importAs, false, ["sign"]);
    signingKeys.set(key, k);
  }
  return k;
}

/** A random positive 16-byte serial, as hex. */
export function randomSerial(): string {
  const bytes = randomBytes(16);
  // Positive and without a leading zero byte, so the DER INTEGER is exactly these 16 bytes.
  bytes[0] = (bytes[0]! & 0x7f) | 0x40;
  return bytes.toString("hex");
}

async function certify(
  subjectKey: KeyObject,
  issuerKey: KeyObject,
  issuerName: string | x509.Name,
  opts: IssueOptions,
): Promise<CertifiedKey> {
  const now = opts.now ?? new Date();
  const notBefore = opts.notBefore ?? new Date(now.getTime() - 3_600_000);
  const notAfter = opts.notAfter ?? new Date(notBefore.getTime() + (opts.validityDays ?? 730) * DAY_MS);
  const ca = opts.ca ?? false;
  const spki = spkiOf(subjectKey);
  const issuerSpki = spkiOf(issuerKey);
  const usage = opts.keyUsage ?? (ca ? ["keyCertSign", "cRLSign"] : ["digitalSignature"]);
  const extensions: x509.Extension[] = [];
  if (!opts.omitBasicConstraints) extensions.push(new x509.BasicConstraintsExtension(ca, ca ? opts.pathLen : undefined, true));
  if (usage.length) {
    extensions.push(new x509.KeyUsagesExtension(usage.reduce((f, u) => f | KEY_USAGE_FLAGS[u], 0), true));
  }
  extensions.push(await x509.SubjectKeyIdentifierExtension.create(spki, false, crypto));
  extensions.push(await x509.AuthorityKeyIdentifierExtension.create(issuerSpki, false, crypto));
  extensions.push(...(opts.extensions ?? []));

  const { importAs, signWith } = webCryptoAlgorithms(issuerKey);
  const signingKey = await signingKeyOf(issuerKey, importAs);
  const cert = await x509.X509CertificateGenerator.create(
    {
      serialNumber: opts.serial ?? randomSerial(),
      subject: opts.subject,
      issuer: opts.issuerName ?? issuerName,
      notBefore,
      notAfter,
      signingAlgorithm: signWith,
      publicKey: spki,
      signingKey,
      extensions,
    },
    crypto,
  );
  return certifiedKey(new Uint8Array(cert.rawData), subjectKey);
}

function issuedCertificate(certDer: Uint8Array): IssuedCertificate {
  const parsed = new X509Certificate(certDer);
  return {
    certDer,
    certPem: toPem(certDer, "CERTIFICATE"),
    subject: parsed.subject.replace(/\n/g, ", "),
    serial: normalizeSerial(parsed.serialNumber),
  };
}

function certifiedKey(certDer: Uint8Array, privateKey: KeyObject): CertifiedKey {
  return {
    ...issuedCertificate(certDer),
    privateKey,
    keyPem: privateKey.export({ type: "pkcs8", format: "pem" }) as string,
  };
}

/** A self-signed CA certificate (default pathLen 1: room for one intermediate). */
export async function createRootCertificate(opts: IssueOptions): Promise<CertifiedKey> {
  const key = opts.privateKey ?? (await generateKey(opts.keyType ?? "ec"));
  return certify(key, key, opts.subject, { ca: true, pathLen: 1, validityDays: 3650, ...opts });
}

/** A certificate for a (new or given) key, signed by `issuer`. Everything about it can be bent for tests. */
export async function issueCertificate(issuer: CertifiedKey, opts: IssueOptions): Promise<CertifiedKey> {
  const key = opts.privateKey ?? (await generateKey(opts.keyType ?? "ec"));
  // The issuer's subject exactly as encoded, so the name link holds byte for byte (re-parsing the printed form
  // could reorder or re-escape it).
  return certify(key, issuer.privateKey, new x509.X509Certificate(issuer.certDer).subjectName, opts);
}

/** A demo vendor root and intermediate, as `attestd dev-ca` writes them. */
export async function createDevCa(opts: DevCaOptions = {}): Promise<DevCa> {
  const keyType = opts.keyType ?? "ec";
  const name = opts.name ?? "attestd Demo Vendor";
  const now = opts.now ?? new Date();
  const notBefore = new Date(now.getTime() - DAY_MS);
  const root = await createRootCertificate({
    subject: `CN=${name} Root CA, O=${name}`,
    keyType,
    notBefore,
    validityDays: opts.rootValidityDays ?? 3650,
    pathLen: 1,
  });
  const intermediate = await issueCertificate(root, {
    subject: `CN=${name} Intermediate CA, O=${name}`,
    keyType,
    notBefore,
    validityDays: opts.intermediateValidityDays ?? 1825,
    ca: true,
    pathLen: opts.intermediatePathLen ?? 0,
  });
  return { root, intermediate };
}

/** A device certificate issued by the dev CA's intermediate (or by any CA key given as `issuer`). */
export async function issueDeviceLeaf(issuer: DevCa | CertifiedKey, opts: LeafOptions = {}): Promise<CertifiedKey> {
  const ca = "intermediate" in issuer ? issuer.intermediate : issuer;
  const serial = opts.serial ?? randomSerial();
  const org = /(?:^|, )O=([^,]+)/.exec(ca.subject)?.[1] ?? "attestd Demo Vendor";
  return issueCertificate(ca, { ...opts, serial, subject: opts.subject ?? `CN=Device ${serial}, O=${org}` });
}

/** One file of a demo CA: its name in the directory, its text, and its mode (0600 for keys). */
export type CaFile = readonly [name: string, text: string, mode: number];

/**
 * Writes a demo CA's files. Refuses to replace any of them unless `overwrite` (checked for every file before the
 * first is written, so a refusal leaves the directory as it was): replacing a CA silently would invalidate every
 * configured trust flag that names it.
 */
export async function writeCaFiles(dir: string, files: readonly CaFile[], opts: { overwrite?: boolean } = {}): Promise<string[]> {
  // it holds private keys, and may be made inside (or make) the data directory: the service user's alone
  await mkdir(dir, { recursive: true, mode: PRIVATE_DIR_MODE });
  const refuse = (path: string) => new Error(`${path} exists; refusing to replace a CA`);
  if (!opts.overwrite) {
    for (const [name] of files) {
      const path = join(dir, name);
      const exists = await access(path).then(() => true, () => false);
      if (exists) throw refuse(path);
    }
  }
  const written: string[] = [];
  for (const [name, text, mode] of files) {
    const path = join(dir, name);
    try {
      // wx still, for a file that appeared since the check
      await writeFile(path, text, { flag: opts.overwrite ? "w" : "wx", mode });
    } catch (e) {
      if ((e as NodeJS.ErrnoException).code === "EEXIST") throw refuse(path);
      throw e;
    }
    written.push(path);
  }
  return written;
}

/** Writes the CA as PEM files (names in DEV_CA_FILES); see writeCaFiles for the refusal to overwrite. */
export async function writeDevCa(ca: DevCa, dir: string, opts: { overwrite?: boolean } = {}): Promise<string[]> {
  const files: CaFile[] = [
    [DEV_CA_FILES.root, ca.root.certPem, 0o644],
    [DEV_CA_FILES.intermediate, ca.intermediate.certPem, 0o644],
    [DEV_CA_FILES.intermediateKey, ca.intermediate.keyPem, 0o600],
  ];
  if (ca.root.keyPem) files.push([DEV_CA_FILES.rootKey, ca.root.keyPem, 0o600]);
  return writeCaFiles(dir, files, opts);
}

/** The first certificate of a PEM file in `dir`. */
async function readCaCertificate(dir: string, name: string): Promise<IssuedCertificate> {
  const [der] = parsePemBundle(await readFile(join(dir, name), "utf8"), join(dir, name));
  return issuedCertificate(der!);
}

/**
 * A certificate and its key from `dir`, checked to belong together. With `keyOptional`, a missing key file gives
 * the certificate alone (a root whose key was kept elsewhere).
 */
export async function readCertifiedKey(dir: string, certName: string, keyName: string): Promise<CertifiedKey>;
export async function readCertifiedKey(
  dir: string,
  certName: string,
  keyName: string,
  keyOptional: true,
): Promise<IssuedCertificate & Partial<Pick<CertifiedKey, "privateKey" | "keyPem">>>;
export async function readCertifiedKey(dir: string, certName: string, keyName: string, keyOptional = false) {
  const cert = await readCaCertificate(dir, certName);
  let keyText: string;
  try {
    keyText = await readFile(join(dir, keyName), "utf8");
  } catch (e) {
    if (keyOptional && (e as NodeJS.ErrnoException).code === "ENOENT") return cert;
    throw e;
  }
  return certifiedKeyFromPem(cert.certPem, keyText, `${join(dir, keyName)} is not the key of ${certName}`);
}

/** A certificate and its key from their PEM texts, checked to belong together (else an Error saying `mismatch`). */
export function certifiedKeyFromPem(certPem: string, keyPem: string, mismatch: string): CertifiedKey {
  const [der] = parsePemBundle(certPem, "certificate");
  const key = createPrivateKey(keyPem);
  if (!new X509Certificate(der!).checkPrivateKey(key)) throw new Error(mismatch);
  return certifiedKey(der!, key);
}

/** Reads what writeDevCa wrote; root.key.pem is optional (the simulator only needs the intermediate's key). */
export async function readDevCa(dir: string): Promise<DevCa> {
  return {
    root: await readCertifiedKey(dir, DEV_CA_FILES.root, DEV_CA_FILES.rootKey, true),
    intermediate: await readCertifiedKey(dir, DEV_CA_FILES.intermediate, DEV_CA_FILES.intermediateKey),
  };
}
