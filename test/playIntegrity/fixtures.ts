import { generateKeyPairSync, randomBytes, type KeyObject } from "node:crypto";
import { CompactEncrypt, CompactSign } from "jose";
import { appraise } from "../../src/attestation/appraise.ts";
import { openWithApps } from "../../src/attestation/encoding/playIntegrityToken.ts";
import type { AppraisalResult, PlayAppPolicy, PlayIntegrityEvidence, TrustConfig } from "../../src/attestation/types.ts";
import type { RegisteredPlayApp } from "../../src/domain/playApps.ts";

/**
 * Play Integrity tokens for the tests, made with jose's CompactSign + CompactEncrypt (the simulator is another
 * module's; test/helpers/independentJose.ts makes the same tokens without jose), and the one path a token takes in
 * production: opened with the tenant's apps, then appraised through `appraise`.
 */

export const NOW = new Date("2026-11-26T12:00:00.000Z");
export const NONCE = Buffer.alloc(32, 0x17).toString("base64url");
export const PACKAGE = "com.example.wallet";
/** the app's signing certificate digest as Google writes it (base64url) and as the tenant registers it (hex) */
export const CERT_HEX = "5a".repeat(32);
export const CERT_B64U = Buffer.from(CERT_HEX, "hex").toString("base64url");

/** Trust of the other formats, empty: a play-integrity appraisal reads none of it. */
export const emptyTrust: TrustConfig = {
  vendor: { rootsDer: [], revocations: new Map(), referenceValues: [] },
  android: { pinnedRootSpkiSha256: new Set(), rootsDer: [], status: new Map(), fresh: false, allowedBootKeys: [], policy: {} },
};

export interface TestApp {
  registered: RegisteredPlayApp;
  signingKey: KeyObject;
  decryptionKey: Uint8Array;
}

export function policy(over: Partial<PlayAppPolicy> = {}): PlayAppPolicy {
  return {
    packageName: PACKAGE,
    certDigests: [CERT_HEX],
    deviceFloor: "MEETS_DEVICE_INTEGRITY",
    maxAgeSeconds: 300,
    require: { licensed: false, playProtect: false, appAccessRisk: false },
    ...over,
  };
}

let counter = 0;
export function makeApp(over: Partial<PlayAppPolicy> = {}): TestApp {
  const { privateKey, publicKey } = generateKeyPairSync("ec", { namedCurve: "P-256" });
  const decryptionKey = randomBytes(32);
  return {
    registered: {
      id: `app-${++counter}`,
      tenantId: "t1",
      policy: policy(over),
      responseKeys: { decryptionKey, verificationKeySpki: publicKey.export({ format: "der", type: "spki" }) },
      createdAt: NOW.toISOString(),
    },
    signingKey: privateKey,
    decryptionKey,
  };
}

type Json = Record<string, unknown>;

/** A payload that appraises Yes for `PACKAGE` at NOW with NONCE (standard request), with parts replaced. */
export function payload(over: { requestDetails?: Json; appIntegrity?: Json; deviceIntegrity?: Json; accountDetails?: Json; environmentDetails?: Json; [k: string]: unknown } = {}): Json {
  const base: Json = {
    requestDetails: { requestPackageName: PACKAGE, requestHash: NONCE, timestampMillis: String(NOW.getTime() - 2_000) },
    appIntegrity: { appRecognitionVerdict: "PLAY_RECOGNIZED", packageName: PACKAGE, certificateSha256Digest: [CERT_B64U], versionCode: "42" },
    deviceIntegrity: {
      deviceRecognitionVerdict: ["MEETS_BASIC_INTEGRITY", "MEETS_DEVICE_INTEGRITY", "MEETS_STRONG_INTEGRITY"],
      recentDeviceActivity: { deviceActivityLevel: "LEVEL_1" },
      deviceAttributes: { sdkVersion: 35 },
    },
    accountDetails: { appLicensingVerdict: "LICENSED" },
    environmentDetails: { playProtectVerdict: "NO_ISSUES", appAccessRiskVerdict: { appsDetected: ["KNOWN_INSTALLED"] } },
  };
  for (const [k, v] of Object.entries(over)) {
    if (v === undefined) delete base[k];
    else if (typeof v === "object" && v !== null && !Array.isArray(v) && typeof base[k] === "object") {
      const merged = { ...(base[k] as Json), ...(v as Json) };
      for (const [kk, vv] of Object.entries(merged)) if (vv === undefined) delete merged[kk];
      base[k] = merged;
    } else base[k] = v;
  }
  return base;
}

export interface TokenOptions {
  jweHeader?: Json;
  jwsHeader?: Json;
  /** the JWS payload as raw text, instead of the JSON of `payload` */
  rawPayload?: string;
}

/** The token Google would give: `payload` signed with the app's key (ES256), then encrypted (A256KW, A256GCM). */
export async function joseToken(p: unknown, app: TestApp, opts: TokenOptions = {}): Promise<string> {
  const body = opts.rawPayload ?? JSON.stringify(p);
  const jws = await new CompactSign(new TextEncoder().encode(body))
    .setProtectedHeader((opts.jwsHeader ?? { alg: "ES256" }) as { alg: string })
    .sign(app.signingKey);
  return new CompactEncrypt(new TextEncoder().encode(jws))
    .setProtectedHeader((opts.jweHeader ?? { alg: "A256KW", enc: "A256GCM" }) as { alg: string; enc: string })
    .encrypt(app.decryptionKey);
}

export interface Appraised {
  evidence: PlayIntegrityEvidence;
  result: AppraisalResult;
}

/** Opens `token` with `apps` and appraises it, as the service does. Throws what appraise throws (BLOB_MALFORMED). */
export async function openAndAppraise(token: string | Uint8Array, apps: readonly TestApp[], opts: { nonce?: string; now?: Date } = {}): Promise<Appraised> {
  const blob = typeof token === "string" ? Buffer.from(token, "latin1") : token;
  const evidence = await openWithApps(Buffer.from(blob).toString("latin1"), apps.map((a) => a.registered));
  const result = appraise({ blob, nonce: opts.nonce ?? NONCE, trust: emptyTrust, now: opts.now ?? NOW, playIntegrity: evidence });
  return { evidence, result };
}
