import { createHash, createPublicKey, verify, type KeyObject } from "node:crypto";
import { AppError } from "../../errors/AppError.ts";
import { catalog } from "../../errors/catalog.ts";
import { challengesForNonce } from "../../nonces/nonce.ts";
import type {
  AppraisalChecks,
  AppraisalInput,
  AppraisalResult,
  AppraisalStatus,
  IosAppPolicy,
  VerdictRecord,
  VerdictValue,
} from "../types.ts";
import type { BlobFormat } from "./format.ts";
import {
  AAGUID_DEVELOPMENT,
  AAGUID_PRODUCTION,
  AppAttestFormatError,
  looksLikeAppAttestAssertion,
  looksLikeAppAttestAttestation,
  readAppAttestAssertion,
  readAppAttestAttestation,
} from "../encoding/appAttestObject.ts";
import { appAttestNonceExtension, uncompressedPoint, validateAppAttestChain } from "../chain/appAttestChain.ts";
import { appAttestDeviceFacts } from "../deviceFacts.ts";

/**
 * app-attest: Apple's App Attest (mobile-attestation.md; Apple, "Validating apps that connect to your server").
 * Two bodies, told apart by the bytes: the attestation object of `attestKey` (CBOR) and an assertion of
 * `generateAssertion` with its key id (JSON). Pure like the other formats: the tenant's apps and, for an assertion,
 * the key the tenant's devices attested are looked up before (`input.appAttest`); what a Yes must store (the key,
 * the new counter) is returned in `result.appAttest` for the service to store with the verdict. The first rule that
 * applies decides; its id is `detail.rule` and starts the reason (docs/app-attest.md, "Rules").
 *
 * Attestation:
 * 0. unreadable (encoding/appAttestObject.ts) → AppError BLOB_MALFORMED.
 * 1. `no-app`: the tenant registered no iOS app → CertificateInvalid, No.
 * 2. `chain`: x5c does not validate to an App Attestation root at the appraisal time → CertificateInvalid, No.
 * 3. `nonce`: the credential certificate's nonce extension is not SHA-256(authData ‖ SHA-256(nonce bytes)), for
 *    either reading of the nonce (its 32 decoded bytes, its ASCII) → NonceMismatch, No.
 * 4. `key-id`: SHA-256 of the certificate's public key (uncompressed point) is not the credential id, or the COSE
 *    key in authData is not the certificate's key → CertificateInvalid, No.
 * 5. `app-id`: the RP ID hash is not SHA-256 of one of the tenant's app ids → NonceMismatch, No (another app's key).
 * 6. `counter`: the counter is not 0 → Success, No.
 * 7. `environment`: the AAGUID is neither `appattestdevelop` nor `appattest`+7 NULs, or is one the app does not
 *    allow → Success, No.
 * 8. `receipt`: only with a receipt check plugged in (AppAttestEvidence.receiptCheck): it refuses → Success, No.
 * 9. `pass` → Success, Yes; the key is to be remembered for the tenant.
 *
 * Assertion:
 * 0. unreadable → BLOB_MALFORMED.
 * 1. `unknown-key`: the key id is not one the tenant's devices attested (never attested, or another tenant's)
 *    → CertificateInvalid, No.
 * 2. `revoked-key`: the tenant revoked the key → Revoked, No.
 * 3. `signature`: the signature does not verify with the key over SHA-256(authenticatorData ‖ SHA-256(nonce bytes))
 *    for either reading of the nonce (a forged signature and a wrong nonce look alike) → SignatureInvalid, No.
 * 4. `app-id`: the RP ID hash is not SHA-256 of the key's app id → NonceMismatch, No.
 * 5. `counter`: the counter is not above the last one stored → NonceMismatch, No (a replay).
 * 6. `pass` → Success, Yes; the counter is to be stored (compare-and-set: a concurrent assertion that stored first
 *    turns this one into `counter`, src/services/appAttestKeys.ts).
 */

export type AppAttestRuleId =
  | "no-app"
  | "chain"
  | "nonce"
  | "key-id"
  | "app-id"
  | "counter"
  | "environment"
  | "receipt"
  | "unknown-key"
  | "revoked-key"
  | "signature"
  | "pass";

const sha256 = (...parts: Uint8Array[]): Buffer => {
  const h = createHash("sha256");
  for (const p of parts) h.update(p);
  return h.digest();
};
const b64 = (b: Uint8Array): string => Buffer.from(b).toString("base64");

function malformed(e: unknown): never {
  if (e instanceof AppAttestFormatError) throw new AppError(catalog.BLOB_MALFORMED, `app-attest: ${e.message}`);
  throw e;
}

function record(input: AppraisalInput, status: AppraisalStatus, verdict: VerdictValue, measurements: string, version: string): VerdictRecord {
  const at = input.now.toISOString();
  return {
    // the app id the key was attested for: what runs, as Apple vouches for it
    measurements,
    tamperBit: "",
    IMEI: "",
    status,
    nonce: input.nonce,
    // the key id: App Attest's one device identity (one key per install of the app, in the Secure Enclave)
    chipId: "",
    verdict,
    MAC: "",
    // the counter the authenticator data carries
    version,
    createdDate: at,
    updateDate: at,
  };
}

function environmentOf(aaguid: Uint8Array): "production" | "development" | undefined {
  if (Buffer.from(aaguid).equals(AAGUID_PRODUCTION)) return "production";
  if (Buffer.from(aaguid).equals(AAGUID_DEVELOPMENT)) return "development";
  return undefined;
}

/** The nonce's readings as App Attest's clientDataHash: SHA-256 of the 32 decoded bytes, then of the ASCII. */
function clientDataHashes(nonce: string): { hash: Buffer; reading: "bytes" | "ascii" }[] {
  return challengesForNonce(nonce).map((c, i, all) => ({ hash: sha256(c), reading: readingOf(i, all.length) }));
}

/** Which reading of the nonce the i-th of `count` challenges is (challengesForNonce's order: its bytes, then its ASCII). */
function readingOf(i: number, count: number): "bytes" | "ascii" {
  return i === 0 && count === 2 ? "bytes" : "ascii";
}

/** What an assertion's signature may be over for `nonce`: authenticatorData ‖ clientDataHash, for each reading of it, in clientDataHashes' order. */
export function assertionMessages(authenticatorData: Uint8Array, nonce: string): Buffer[] {
  return clientDataHashes(nonce).map((c) => Buffer.concat([authenticatorData, c.hash]));
}

/** The index of the first of `messages` that `signature` (ECDSA, DER) verifies over with `key`; -1 when none. */
export function firstVerifying(key: KeyObject, messages: readonly Uint8Array[], signature: Uint8Array): number {
  return messages.findIndex((m) => {
    try {
      // DER, the default for an EC KeyObject (vendorContainer.ts says why no options object)
      return verify("sha256", m, key, signature);
    } catch {
      return false;
    }
  });
}

export function appraiseAppAttestAttestation(input: AppraisalInput): AppraisalResult {
  let att;
  try {
    att = readAppAttestAttestation(input.blob);
  } catch (e) {
    malformed(e);
  }
  const evidence = input.appAttest ?? { apps: [] };
  const checks: AppraisalChecks = {};
  const cred = att.auth.credential;
  const detail: Record<string, unknown> = {
    format: "app-attest",
    kind: "attestation",
    appraisedAt: input.now.toISOString(),
    keyId: b64(cred.credentialId),
    counter: att.auth.counter,
    aaguid: Buffer.from(cred.aaguid).toString("latin1").replaceAll("\0", "\\0"),
    rpIdHash: Buffer.from(att.auth.rpIdHash).toString("hex"),
    receiptBytes: att.receipt.length,
    certificates: att.x5c.length,
  };
  let app: IosAppPolicy | undefined;
  let outcomeOnYes: AppraisalResult["appAttest"];

  const done = (rule: AppAttestRuleId, status: AppraisalStatus, verdict: VerdictValue, why: string): AppraisalResult => {
    const reason = `rule ${rule}: ${why}`;
    Object.assign(detail, { rule, status, reason, checks });
    const result: AppraisalResult = {
      format: "app-attest",
      record: record(input, status, verdict, app?.appId ?? "", String(att.auth.counter)),
      reason,
      detail,
    };
    result.record.chipId = status === "Success" ? b64(cred.credentialId) : "";
    if (status === "Success" && app) result.facts = appAttestDeviceFacts(b64(cred.credentialId), app.appId);
    if (verdict === "Yes") result.appAttest = outcomeOnYes;
    return result;
  };

  // 1. Something to judge against.
  if (evidence.apps.length === 0) {
    checks.trust = "unavailable";
    return done("no-app", "CertificateInvalid", "No", "the tenant registered no iOS app");
  }

  // 2. Apple's chain.
  const chain = validateAppAttestChain(att.x5c, input.trust.appAttest?.rootsDer ?? [], input.now);
  if (!chain.ok || !chain.leaf) {
    checks.chain = "fail";
    return done("chain", "CertificateInvalid", "No", chain.reason);
  }
  checks.chain = "pass";
  const leaf = chain.leaf;

  // 3. Nonce: the credential certificate binds authData and the clientDataHash the app passed.
  const ext = appAttestNonceExtension(leaf);
  const reading = ext && clientDataHashes(input.nonce).find((c) => sha256(att.authData, c.hash).equals(ext));
  if (!reading) {
    checks.nonce = "fail";
    return done("nonce", "NonceMismatch", "No", ext ? "the certificate's nonce does not answer this nonce (SHA-256(authData ‖ SHA-256(nonce)))" : "the credential certificate has no readable nonce extension (1.2.840.113635.100.8.2)");
  }
  checks.nonce = "pass";
  detail.nonceReading = reading.reading;

  // 4. Key id = SHA-256(public key) = credential id, and authData's key is the certificate's.
  const point = uncompressedPoint(leaf);
  const keyId = sha256(point);
  const coseMatches = Buffer.from(point.subarray(1, 33)).equals(cred.publicKey.x) && Buffer.from(point.subarray(33)).equals(cred.publicKey.y);
  if (!keyId.equals(cred.credentialId) || !coseMatches) {
    checks.key = "mismatch";
    return done("key-id", "CertificateInvalid", "No", !coseMatches ? "the credential public key in authData is not the certificate's" : "the credential id is not the SHA-256 of the certificate's public key");
  }
  checks.key = "match";

  // 5. Which of the tenant's apps.
  app = evidence.apps.find((a) => sha256(Buffer.from(a.appId, "utf8")).equals(att.auth.rpIdHash));
  if (!app) {
    checks.app = "refused";
    return done("app-id", "NonceMismatch", "No", "the RP ID hash is not the SHA-256 of an app id the tenant registered");
  }
  checks.app = "allowed";
  detail.appId = app.appId;

  // 6. A fresh key.
  if (att.auth.counter !== 0) {
    checks.counter = "fail";
    return done("counter", "Success", "No", `the counter is ${att.auth.counter}, an attestation's is 0`);
  }
  checks.counter = "pass";

  // 7. Environment.
  const env = environmentOf(cred.aaguid);
  detail.environment = env ?? "unknown";
  if (!env || (app.environment !== "both" && app.environment !== env)) {
    checks.environment = "refused";
    return done("environment", "Success", "No", env ? `the key is from the ${env} environment; ${app.appId} allows ${app.environment} only` : "the AAGUID is neither appattestdevelop nor appattest (production)");
  }
  // the tenant's policy may admit fewer environments than the app (docs/policy.md)
  const tenantEnvs = input.trust.tenantPolicy?.appAttestEnvironments;
  if (tenantEnvs && !tenantEnvs.includes(env)) {
    checks.environment = "refused";
    return done("environment", "Success", "No", `the key is from the ${env} environment; the tenant's policy admits ${tenantEnvs.join(", ")} only`);
  }
  checks.environment = "allowed";

  // 8. Apple's receipt, when the receipt module is plugged in.
  if (evidence.receiptCheck) {
    const r = evidence.receiptCheck(att.receipt, { appId: app.appId, keyId, publicKey: point, credentialCertDer: att.x5c[0]!, now: input.now });
    checks.receipt = r.ok ? "pass" : "fail";
    if (!r.ok) return done("receipt", "Success", "No", `the receipt: ${r.reason}`);
  } else {
    checks.receipt = "not-checked";
  }

  outcomeOnYes = { kind: "attested", keyId: b64(keyId), appId: app.appId, publicKey: b64(point), environment: env, receipt: b64(att.receipt) };
  // the key's first assertion then finds it imported already
  rememberKeyObject(outcomeOnYes.publicKey, leaf.key);
  return done("pass", "Success", "Yes", `${chain.reason}; a genuine ${env} key of ${app.appId}`);
}

/**
 * The remembered keys' KeyObjects, by their stored point (base64): importing one costs ~75 µs, a fifth of an
 * assertion's appraisal, and a key asserts again and again. Bounded: the oldest is dropped past KEY_OBJECTS_MAX.
 * A value of the point alone, so a cached object is exactly the one importing it anew would give.
 */
const KEY_OBJECTS_MAX = 10_000;
const keyObjects = new Map<string, KeyObject>();

/** A remembered key's KeyObject, from its stored point (base64 of the uncompressed point); kept, as above. */
export function appAttestKeyObject(publicKey: string): KeyObject {
  const k = keyObjects.get(publicKey);
  if (k) return k;
  const point = Buffer.from(publicKey, "base64");
  return rememberKeyObject(publicKey, createPublicKey({ key: { kty: "EC", crv: "P-256", x: point.subarray(1, 33).toString("base64url"), y: point.subarray(33).toString("base64url") }, format: "jwk" }));
}

function rememberKeyObject(point: string, key: KeyObject): KeyObject {
  if (keyObjects.size >= KEY_OBJECTS_MAX) keyObjects.delete(keyObjects.keys().next().value!);
  keyObjects.set(point, key);
  return key;
}

export function appraiseAppAttestAssertion(input: AppraisalInput): AppraisalResult {
  let a;
  const known = input.appAttest?.assertion;
  try {
    // read by the service already (to find the key) when it is this very body
    a = known && known.blob === input.blob ? known.read : readAppAttestAssertion(input.blob);
  } catch (e) {
    malformed(e);
  }
  const keyId = b64(a.keyId);
  const key = input.appAttest?.key;
  const checks: AppraisalChecks = {};
  const detail: Record<string, unknown> = {
    format: "app-attest",
    kind: "assertion",
    appraisedAt: input.now.toISOString(),
    keyId,
    counter: a.auth.counter,
    rpIdHash: Buffer.from(a.auth.rpIdHash).toString("hex"),
  };
  let authenticated = false;

  const done = (rule: AppAttestRuleId, status: AppraisalStatus, verdict: VerdictValue, why: string): AppraisalResult => {
    const reason = `rule ${rule}: ${why}`;
    Object.assign(detail, { rule, status, reason, checks });
    const result: AppraisalResult = {
      format: "app-attest",
      record: record(input, status, verdict, authenticated && key ? key.appId : "", String(a.auth.counter)),
      reason,
      detail,
    };
    if (authenticated && key) {
      result.record.chipId = keyId;
      if (status === "Success") result.facts = appAttestDeviceFacts(keyId, key.appId);
    }
    if (verdict === "Yes") result.appAttest = { kind: "asserted", keyId, counter: a.auth.counter };
    return result;
  };

  // 1–2. A key the tenant's devices attested, still in use.
  if (!key || key.keyId !== keyId) {
    checks.key = "unknown";
    return done("unknown-key", "CertificateInvalid", "No", "the key id is not one the tenant's devices attested");
  }
  detail.appId = key.appId;
  if (key.revoked) {
    checks.key = "revoked";
    return done("revoked-key", "Revoked", "No", "the tenant revoked this key");
  }
  checks.key = "known";

  // 3. The signature, over this nonce (checked already, on a thread, when the service could).
  const checked = input.appAttest?.signature;
  // the answer names the reading by its index: only the number of readings is needed then, not their hashes
  const readings = challengesForNonce(input.nonce).length;
  const at =
    checked && checked.keyId === keyId && checked.nonce === input.nonce
      ? checked.reading
      : firstVerifying(appAttestKeyObject(key.publicKey), assertionMessages(a.authenticatorData, input.nonce), a.signature);
  const reading = at >= 0 && at < readings ? readingOf(at, readings) : undefined;
  if (!reading) {
    checks.signature = "fail";
    return done("signature", "SignatureInvalid", "No", "the signature does not verify with the key over authenticatorData and this nonce");
  }
  checks.signature = "pass";
  checks.nonce = "pass";
  detail.nonceReading = reading;
  authenticated = true;

  // 4. The key's app.
  if (!sha256(Buffer.from(key.appId, "utf8")).equals(a.auth.rpIdHash)) {
    checks.app = "refused";
    return done("app-id", "NonceMismatch", "No", `the RP ID hash is not the SHA-256 of ${key.appId}, the key's app`);
  }
  checks.app = "allowed";

  // 5. Forward only.
  detail.storedCounter = key.counter;
  if (a.auth.counter <= key.counter) {
    checks.counter = "fail";
    return done("counter", "NonceMismatch", "No", `the counter ${a.auth.counter} is not above ${key.counter}, the last one stored (a replayed assertion)`);
  }
  checks.counter = "pass";
  return done("pass", "Success", "Yes", `signed by the key of ${key.appId}; counter ${a.auth.counter} above ${key.counter}`);
}

/**
 * The verdict stored instead of a Yes whose effect the store refused: an assertion whose counter another one stored
 * first (`counter`), an attestation of a key already known (`key-id`: a key is attested once, for one tenant).
 */
export function refusedByStore(result: AppraisalResult): AppraisalResult {
  const attested = result.appAttest?.kind === "attested";
  const rule: AppAttestRuleId = attested ? "key-id" : "counter";
  const status: AppraisalStatus = attested ? "CertificateInvalid" : "NonceMismatch";
  const reason = attested
    ? "rule key-id: this key id is attested already (a key is attested once)"
    : `rule counter: another assertion of this key stored a counter of at least ${String(result.detail.counter)} first (a replayed or concurrent assertion)`;
  const { appAttest: _stored, facts: _facts, ...rest } = result;
  const checks = { ...(result.detail.checks as AppraisalChecks), ...(attested ? { key: "mismatch" as const } : { counter: "fail" as const }) };
  return {
    ...rest,
    record: { ...result.record, status, verdict: "No" },
    reason,
    detail: { ...result.detail, rule, status, reason, checks },
  };
}

export const appAttestFormat: BlobFormat = {
  name: "app-attest",
  matches: (blob) => looksLikeAppAttestAttestation(blob) || looksLikeAppAttestAssertion(blob),
  appraise: (input) => (looksLikeAppAttestAttestation(input.blob) ? appraiseAppAttestAttestation(input) : appraiseAppAttestAssertion(input)),
};
