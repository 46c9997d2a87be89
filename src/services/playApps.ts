import { createPrivateKey } from "node:crypto";
import { TenantReadCache } from "./tenantReadCache.ts";
import { parsePlayResponseKeys, PlayResponseKeyError } from "../attestation/encoding/playIntegrityToken.ts";
import type { IntegrityLabel, PlayAppPolicy } from "../attestation/types.ts";
import type { Clock, Rng } from "../clock.ts";
import type { GoogleServiceAccount, PlayAppSummary, PlayResponseKeys, RegisteredPlayApp, StoredPlayApp } from "../domain/playApps.ts";
import type { Tenant } from "../domain/tenants.ts";
import { randomId } from "../enrollment/ids.ts";
import type { ChangeActor } from "./auditTrail.ts";
import { AppError } from "../errors/AppError.ts";
import { catalog } from "../errors/catalog.ts";
import { sealContext, type SecretBox } from "../secrets/secretBox.ts";
import { PLAY_APP_SECRET_PURPOSE } from "../store/sealedColumns.ts";
import type { PlayAppStore } from "../store/types.ts";

/** Android's rule for an application id (a Java-like package name of at least two segments), and its length cap. */
const PACKAGE_RE = /^[a-zA-Z][a-zA-Z0-9_]*(\.[a-zA-Z][a-zA-Z0-9_]*)+$/;
export const MAX_PACKAGE_NAME = 255;
/** an app has one signing certificate, a few during a key rotation; more is a mistake, not an app */
export const MAX_CERT_DIGESTS = 20;
export const DEFAULT_DEVICE_FLOOR: IntegrityLabel = "MEETS_DEVICE_INTEGRITY";
export const DEFAULT_MAX_AGE_SECONDS = 300;
/** below 10 s a device's clock and the network make honest tokens fail; above a day a token is no proof of now */
export const MAX_AGE_BOUNDS = { min: 10, max: 86_400 } as const;
/** a service-account key file is about 2.3 KB; this leaves room and no more */
export const MAX_SERVICE_ACCOUNT_BYTES = 16 * 1024;
/**
 * How long an instance appraises with the apps it read (appsForAppraisal): the bound on a registration or a removal
 * made elsewhere (another instance, the CLI) reaching it. This instance drops its copy at once. A token appraisal then
 * costs no store read and no unsealing, except once per tenant every 5 s.
 */
export const PLAY_APP_CACHE_MS = 5_000;

/** The CLI's short names of the device-verdict floor (`--device-floor basic|device|strong`). */
export const DEVICE_FLOOR_NAMES: Readonly<Record<"basic" | "device" | "strong", IntegrityLabel>> = {
  basic: "MEETS_BASIC_INTEGRITY",
  device: "MEETS_DEVICE_INTEGRITY",
  strong: "MEETS_STRONG_INTEGRITY",
};
const FLOORS: readonly IntegrityLabel[] = Object.values(DEVICE_FLOOR_NAMES);

/** What a person registers, as the CLI, the admin API and the portal take it. */
export interface PlayAppInput {
  packageName: string;
  /** SHA-256 of the signing certificates: 64 hex digits, or colon-separated pairs as the Play Console shows them */
  certDigests?: readonly string[];
  deviceFloor?: IntegrityLabel;
  maxAgeSeconds?: number;
  require?: Partial<PlayAppPolicy["require"]>;
  /** the Play Console's response keys, base64 as it shows them; exactly one of this and `serviceAccount` */
  responseKeys?: { decryptionKey: string; verificationKey: string };
  /** the text of a Google service-account key file (JSON) */
  serviceAccount?: string;
}

const invalid = (reason: string) => new AppError(catalog.PORTAL_INVALID_REQUEST, reason);

/** What lists show: the stored registration without its sealed secret. */
function summaryOf({ sealedSecret: _secret, ...summary }: StoredPlayApp): PlayAppSummary {
  return summary;
}

function packageName(name: string): string {
  if (typeof name !== "string" || name.length > MAX_PACKAGE_NAME || !PACKAGE_RE.test(name)) {
    throw invalid(`the package name must be an Android application id (such as com.example.app), at most ${MAX_PACKAGE_NAME} characters`);
  }
  return name;
}

/** Lowercase hex, colons dropped (the Play Console shows `AB:CD:...`), duplicates once, in the order given. */
function certDigests(digests: readonly string[] = []): string[] {
  if (digests.length > MAX_CERT_DIGESTS) throw invalid(`at most ${MAX_CERT_DIGESTS} certificate digests`);
  const out: string[] = [];
  for (const d of digests) {
    const hex = typeof d === "string" && /^[0-9a-fA-F]{2}(:[0-9a-fA-F]{2}){31}$/.test(d.trim()) ? d.trim().replaceAll(":", "") : String(d).trim();
    if (!/^[0-9a-fA-F]{64}$/.test(hex)) throw invalid("a certificate digest is a SHA-256: 64 hex digits, or 32 colon-separated pairs as the Play Console shows it");
    const lower = hex.toLowerCase();
    if (!out.includes(lower)) out.push(lower);
  }
  return out;
}

function policyOf(input: PlayAppInput): PlayAppPolicy {
  const deviceFloor = input.deviceFloor ?? DEFAULT_DEVICE_FLOOR;
  if (!FLOORS.includes(deviceFloor)) throw invalid(`the device floor is one of ${FLOORS.join(", ")}`);
  const maxAgeSeconds = input.maxAgeSeconds ?? DEFAULT_MAX_AGE_SECONDS;
  if (!Number.isInteger(maxAgeSeconds) || maxAgeSeconds < MAX_AGE_BOUNDS.min || maxAgeSeconds > MAX_AGE_BOUNDS.max) {
    throw invalid(`the freshness window is a whole number of seconds from ${MAX_AGE_BOUNDS.min} to ${MAX_AGE_BOUNDS.max}`);
  }
  return {
    packageName: packageName(input.packageName),
    certDigests: certDigests(input.certDigests),
    deviceFloor,
    maxAgeSeconds,
    require: {
      licensed: input.require?.licensed === true,
      playProtect: input.require?.playProtect === true,
      appAccessRisk: input.require?.appAccessRisk === true,
    },
  };
}

/** The Play Console's two response keys, checked where the token reader defines what they are; 400 when they are not. */
function readResponseKeys(decryptionKeyB64: string, verificationKeyB64: string): PlayResponseKeys {
  try {
    return parsePlayResponseKeys(decryptionKeyB64, verificationKeyB64);
  } catch (e) {
    if (e instanceof PlayResponseKeyError) throw invalid(e.message);
    throw e;
  }
}

/** A Google service-account key file, checked, reduced to what the decoder uses (its private key as PKCS#8 PEM). */
function readServiceAccount(text: string): GoogleServiceAccount {
  const bad = (why: string) => invalid(`the service account ${why}`);
  if (typeof text !== "string" || Buffer.byteLength(text) > MAX_SERVICE_ACCOUNT_BYTES) throw bad(`file is larger than ${MAX_SERVICE_ACCOUNT_BYTES} bytes`);
  let f: unknown;
  try {
    f = JSON.parse(text);
  } catch {
    throw bad("file is not JSON: it is the key file Google Cloud gives for a service account");
  }
  if (typeof f !== "object" || f === null || Array.isArray(f)) throw bad("file is not a JSON object");
  const o = f as Record<string, unknown>;
  if (o.type !== "service_account") throw bad('file\'s "type" is not "service_account"');
  const email = o.client_email;
  if (typeof email !== "string" || email.length > 320 || !/^[^\s@]+@[^\s@]+$/.test(email)) throw bad('file has no valid "client_email"');
  let privateKeyPem: string;
  try {
    const key = createPrivateKey({ key: String(o.private_key ?? ""), format: "pem" });
    if (key.asymmetricKeyType !== "rsa") throw new Error("not RSA");
    privateKeyPem = key.export({ format: "pem", type: "pkcs8" }) as string;
  } catch {
    throw bad('file\'s "private_key" is not an RSA private key in PEM');
  }
  const optional = (name: "private_key_id" | "project_id"): string | undefined => {
    const v = o[name];
    if (v === undefined || v === null || v === "") return undefined;
    if (typeof v !== "string" || v.length > 200 || !/^[\x21-\x7e]+$/.test(v)) throw bad(`file's "${name}" is not a short printable string`);
    return v;
  };
  const privateKeyId = optional("private_key_id");
  const projectId = optional("project_id");
  return { clientEmail: email, privateKeyPem, ...(privateKeyId ? { privateKeyId } : {}), ...(projectId ? { projectId } : {}) };
}

/** The sealed secret's JSON: the response keys as base64, or the service account as is. */
type SecretJson =
  | { responseKeys: { decryptionKey: string; verificationKeySpki: string } }
  | { serviceAccount: GoogleServiceAccount };

/**
 * A tenant's registered Google Play apps (issue 23), for the CLI (`attestd play-app ...`), the admin API and the
 * portal's Play apps page alike, and for the attestation service, which opens the tenant's tokens with them.
 *
 * Secrets (response keys, a service account) are checked and sealed here, bound to the registration's id, before
 * the store sees them, and leave this class only through `appsForAppraisal`: `add` and `list` answer summaries.
 */
export class PlayAppRegistry {
  private readonly cache: TenantReadCache<RegisteredPlayApp[]>;

  constructor(
    private readonly store: PlayAppStore,
    private readonly clock: Clock,
    private readonly rng: Rng,
    private readonly secrets: SecretBox,
    cacheMs = PLAY_APP_CACHE_MS,
  ) {
    this.cache = new TenantReadCache(clock, cacheMs);
  }

  /** Registers an app; 400 PORTAL_INVALID_REQUEST for a bad field, 409 PORTAL_PLAY_APP_EXISTS for a package already registered. */
  async add(tenant: Tenant, input: PlayAppInput, by: ChangeActor): Promise<PlayAppSummary> {
    const policy = policyOf(input);
    if ((input.responseKeys === undefined) === (input.serviceAccount === undefined)) {
      throw invalid("give either the response keys (decryption and verification key) or a service account, not both and not neither");
    }
    let secret: SecretJson;
    let serviceAccountEmail: string | undefined;
    if (input.responseKeys) {
      const keys = readResponseKeys(input.responseKeys.decryptionKey, input.responseKeys.verificationKey);
      secret = {
        responseKeys: { decryptionKey: Buffer.from(keys.decryptionKey).toString("base64"), verificationKeySpki: Buffer.from(keys.verificationKeySpki).toString("base64") },
      };
    } else {
      const account = readServiceAccount(input.serviceAccount!);
      secret = { serviceAccount: account };
      serviceAccountEmail = account.clientEmail;
    }
    const id = randomId(this.rng, "pa_");
    const stored: StoredPlayApp = {
      id,
      tenantId: tenant.tenantId,
      policy,
      opensWith: input.responseKeys ? "response-keys" : "service-account",
      ...(serviceAccountEmail ? { serviceAccountEmail } : {}),
      sealedSecret: this.secrets.seal(JSON.stringify(secret), sealContext(PLAY_APP_SECRET_PURPOSE, id)),
      createdAt: new Date(this.clock.nowMs()).toISOString(),
    };
    if ((await this.store.addPlayApp(stored)) === "exists") {
      throw new AppError(catalog.PORTAL_PLAY_APP_EXISTS, `the tenant has registered ${policy.packageName} already; remove it first to register it anew`);
    }
    this.forget(tenant.tenantId);
    const summary = summaryOf(stored);
    await by.record({ tenantId: tenant.tenantId, action: "play-app.added", target: { kind: "play-app", id }, before: null, after: summary });
    return summary;
  }

  /** The tenant's apps by package name, without any secret. */
  async list(tenant: Tenant): Promise<PlayAppSummary[]> {
    return (await this.store.listPlayApps(tenant.tenantId)).map(summaryOf);
  }

  /** false when the tenant has no app of that id (another tenant's is not found either). */
  async remove(tenant: Tenant, id: string, by: ChangeActor): Promise<boolean> {
    const before = await this.store.getPlayApp(tenant.tenantId, id);
    const removed = await this.store.removePlayApp(tenant.tenantId, id);
    this.forget(tenant.tenantId);
    if (removed) await by.record({ tenantId: tenant.tenantId, action: "play-app.removed", target: { kind: "play-app", id }, before: before ? summaryOf(before) : null, after: null });
    return removed;
  }

  /**
   * The tenant's apps with their secrets opened, for opening its Play Integrity tokens. Read at most every
   * PLAY_APP_CACHE_MS per tenant; a change made through this registry holds here from its answer on. A sealed
   * value that does not open (a row altered, or copied from another registration) is 500 to the client and its
   * reason goes to the activity log only, as for the tenants' other keys.
   */
  async appsForAppraisal(tenantId: string): Promise<RegisteredPlayApp[]> {
    return this.cache.get(tenantId, async () => (await this.store.listPlayApps(tenantId)).map((a) => this.opened(a)));
  }

  private forget(tenantId: string): void {
    this.cache.forget(tenantId);
  }

  private opened(a: StoredPlayApp): RegisteredPlayApp {
    let secret: SecretJson;
    try {
      secret = JSON.parse(this.secrets.open(a.sealedSecret, sealContext(PLAY_APP_SECRET_PURPOSE, a.id))) as SecretJson;
    } catch (e) {
      throw new AppError(catalog.INTERNAL_SERVER_ERROR, "The tenant's Play app keys cannot be used", {}, (e as Error).message);
    }
    const app: RegisteredPlayApp = { id: a.id, tenantId: a.tenantId, policy: a.policy, createdAt: a.createdAt };
    if ("responseKeys" in secret) {
      app.responseKeys = {
        decryptionKey: new Uint8Array(Buffer.from(secret.responseKeys.decryptionKey, "base64")),
        verificationKeySpki: new Uint8Array(Buffer.from(secret.responseKeys.verificationKeySpki, "base64")),
      };
    } else {
      app.serviceAccount = secret.serviceAccount;
    }
    return app;
  }
}
