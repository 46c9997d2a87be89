import { createHash } from "node:crypto";
import type { IosAppPolicy, PlayAppPolicy, TrustConfig } from "../types.ts";

/**
 * The id of the appraisal policy a verdict was reached under: a URI naming the SHA-256 of everything an operator or
 * tenant configures that decides a verdict — the rules' version, the trusted roots (vendor root certificates,
 * pinned Android root keys), the reference values, the boot-key allow-list and the tenant's android-key policy.
 * Two verdicts with the same id were appraised under the same policy; a changed reference value, root or tenant
 * policy changes it. A tenant's stored policy version is named after the hash (`...;policy=v3`). Left out on purpose: the revocation and status lists, which are data that changes by itself
 * (Google's list hourly), and their freshness. docs/results.md, "ear.appraisal-policy-id".
 */

/**
 * Bumped whenever a rule of the appraisal changes what it concludes from the same evidence and trust (the format
 * rules, the verdict rules, the integrity labels, the checks vocabulary), so that ids of older verdicts stay apart.
 */
export const APPRAISAL_RULES_VERSION = "attestd-appraisal/1";

const POLICY_URI_PREFIX = "urn:attestd:appraisal-policy:sha-256:";

// One id per trust object: tenantTrust hands out the same TrustConfig while nothing changes, so this is computed
// once per trust generation, not per appraisal.
const cache = new WeakMap<TrustConfig, string>();

const sha256Hex = (b: Uint8Array | string) => createHash("sha256").update(b).digest("hex");
const byString = (a: string, b: string) => (a < b ? -1 : a > b ? 1 : 0);

const referenceSets = (sets: TrustConfig["vendor"]["referenceValues"]) =>
  sets.map((r) => JSON.stringify([r.model, r.firmwareVersion, r.measurements])).sort(byString);

function canonicalPolicy(trust: TrustConfig): unknown {
  const { vendor, android } = trust;
  const policy = android.policy;
  return [
    APPRAISAL_RULES_VERSION,
    {
      vendorRoots: vendor.rootsDer.map((d) => sha256Hex(d)).sort(byString),
      referenceValues: referenceSets(vendor.referenceValues),
      // a tenant's own sets replace global ones for its devices: they are part of its policy
      tenantReferenceValues: referenceSets(vendor.tenantReferenceValues ?? []),
      androidRootKeys: [...android.pinnedRootSpkiSha256].sort(byString),
      allowedBootKeys: android.allowedBootKeys
        .map((k) => JSON.stringify([k.key, k.models ? [...k.models].sort(byString) : null]))
        .sort(byString),
      androidPolicy: {
        minOsPatchLevel: policy.minOsPatchLevel ?? null,
        allowedApps: policy.allowedApps
          ? policy.allowedApps
              .map((a) => JSON.stringify([a.packageName, a.signatureDigests ? a.signatureDigests.map((d) => d.toLowerCase()).sort(byString) : null]))
              .sort(byString)
          : null,
        factoryExpiry: policy.factoryExpiry ?? "accept",
        // added only when set, so that ids of verdicts under a policy without it stay what they were
        ...(policy.requiredSecurityLevel ? { requiredSecurityLevel: policy.requiredSecurityLevel } : {}),
      },
      ...(trust.tenantPolicy ? { tenantFloors: [trust.tenantPolicy.playIntegrityFloor ?? null, trust.tenantPolicy.appAttestEnvironments ?? null] } : {}),
    },
  ];
}

/**
 * `;policy=v<N>` when the tenant's stored policy version N shaped the trust (docs/policy.md): the hash says what
 * the policy was, the version says which of the tenant's versions it was, for a person reading an EAR.
 */
const versionSuffix = (trust: TrustConfig) => (trust.tenantPolicy ? `;policy=v${trust.tenantPolicy.version}` : "");

/** canonical JSON of the trust's part of the policy, once per trust object */
const canonicalCache = new WeakMap<TrustConfig, string>();

function canonicalTrustJson(trust: TrustConfig): string {
  let json = canonicalCache.get(trust);
  if (json === undefined) {
    json = JSON.stringify(canonicalPolicy(trust));
    canonicalCache.set(trust, json);
  }
  return json;
}

/**
 * `playApp`: for a play-integrity verdict, the policy of the registered app whose token it was (its package,
 * digests, floor, age and required signals decide that verdict, docs/play-integrity.md), hashed with the trust's
 * policy; without one the id is the trust's alone, as before Play Integrity existed.
 */
export function appraisalPolicyId(trust: TrustConfig, playApp?: PlayAppPolicy, iosApp?: IosAppPolicy): string {
  const app = playApp ?? iosApp;
  if (app) {
    // the registry hands out the same policy object while the app is unchanged: once per (trust, app), as above
    let perApp = appCache.get(trust);
    if (perApp === undefined) appCache.set(trust, (perApp = new WeakMap()));
    let appId = perApp.get(app);
    if (appId === undefined) perApp.set(app, (appId = playApp ? playPolicyId(trust, playApp) : iosPolicyId(trust, iosApp!)));
    return appId;
  }
  let id = cache.get(trust);
  if (id === undefined) {
    id = POLICY_URI_PREFIX + sha256Hex(canonicalTrustJson(trust)) + versionSuffix(trust);
    cache.set(trust, id);
  }
  return id;
}

const appCache = new WeakMap<TrustConfig, WeakMap<PlayAppPolicy | IosAppPolicy, string>>();

function playPolicyId(trust: TrustConfig, playApp: PlayAppPolicy): string {
  const play = JSON.stringify([
    playApp.packageName,
    playApp.certDigests.map((d) => d.toLowerCase()).sort(byString),
    playApp.deviceFloor,
    playApp.maxAgeSeconds,
    [playApp.require.licensed, playApp.require.playProtect, playApp.require.appAccessRisk],
  ]);
  // the trust's canonical JSON is an array: the app's policy is one more element of it
  return POLICY_URI_PREFIX + sha256Hex(`${canonicalTrustJson(trust).slice(0, -1)},{"playApp":${play}}]`) + versionSuffix(trust);
}

/**
 * An app-attest attestation's policy: the registered iOS app it was judged against — its app id and its environment
 * (production, development or both decides which AAGUIDs are Yes, docs/app-attest.md) — and the App Attestation
 * roots in force, hashed with the trust's policy as a Play app's is.
 */
function iosPolicyId(trust: TrustConfig, iosApp: IosAppPolicy): string {
  const ios = JSON.stringify([iosApp.appId, iosApp.environment, (trust.appAttest?.rootsDer ?? []).map((d) => sha256Hex(d)).sort(byString)]);
  return POLICY_URI_PREFIX + sha256Hex(`${canonicalTrustJson(trust).slice(0, -1)},{"iosApp":${ios}}]`);
}
