import { appraise } from "../../src/attestation/appraise.ts";
import { isAppError } from "../../src/errors/AppError.ts";
import { appraisalRefusal } from "../../test/helpers/appraisalRefusal.ts";
import { splitDerCertificates } from "../../src/attestation/encoding/derChain.ts";
import { createDevCa, issueDeviceLeaf } from "../../src/attestation/sim/devCa.ts";
import { demoReferenceValues, encodeVendorBlob } from "../../src/attestation/sim/deviceSim.ts";
import { VERDICT_FIELDS, type AppAttestEvidence, type AppAttestKnownKey, type IosAppPolicy, type PlayIntegrityEvidence, type TrustConfig } from "../../src/attestation/types.ts";
import { readAppAttestAssertion, readAppAttestAttestation } from "../../src/attestation/encoding/appAttestObject.ts";
import { AppAttestKeys } from "../../src/services/appAttestKeys.ts";
import type { AppAttestStore } from "../../src/store/types.ts";
import type { StoredAppAttestKey } from "../../src/domain/iosApps.ts";
import { openWithApps, parsePlayResponseKeys } from "../../src/attestation/encoding/playIntegrityToken.ts";
import type { RegisteredPlayApp } from "../../src/domain/playApps.ts";
import { readFileSync } from "node:fs";
import { androidTrust, challengeOf, derBlob, nonceFor, pemBlob } from "../../test/android/fixtures.ts";

/**
 * Part (a) of the campaign: mutated blobs through the service's own entry point, `appraise`, with the trust of
 * both formats loaded (so a mutant that stops looking like one format is read as the other, as in production).
 * A seeded mutator rather than fast-check: a million cases need a cheap, reproducible generator, and a failure is
 * replayed from (seed, case index) alone.
 *
 * Invariants: every call returns a well-formed record or throws the documented container error (AppError
 * BLOB_MALFORMED 4000006 or NOT_IMPLEMENTED 5010000); nothing else escapes. A `Yes` comes only from bytes whose
 * signed region is the seed's: for the vendor container everything but exitCode's label (errLen, errString) is
 * signed or checked; an android-key chain's certificates must be the seed's, the root possibly left out; a Play
 * Integrity token must be the seed's, only the whitespace around it changed (every byte of a token is authenticated).
 * The process's peak RSS stays under a bound.
 *
 * play-integrity mutants are opened as the service opens them (openWithApps, with the seed app's response keys and
 * another app's first), then appraised: the opening is async, so that format's cases are awaited one by one.
 *
 * app-attest mutants come from the simulator's attestation objects and assertions (kept in
 * test/vectors/app-attest-fuzz/seeds.json), appraised with the demo App Attestation root trusted and the demo app
 * registered; the service's own lookup (AppAttestKeys.evidence) gives each one its evidence, so an assertion whose
 * key id survived the mutation is appraised with the remembered key (counter 0, as after the attestation) and one
 * whose key id changed with none. A Yes needs what App Attest authenticates to be the seed's: an attestation's
 * authData and certificates (the receipt is kept, not judged, under a root other than Apple's: docs/app-attest.md),
 * an assertion's key id and authenticator data (not the signature's bytes: an ECDSA signature has more than one
 * valid encoding).
 */

export type FuzzFormat = "vendor" | "android-key" | "play-integrity" | "app-attest";

/** Every format the campaign fuzzes, in the order it runs and reports them. */
export const FUZZ_FORMATS: readonly FuzzFormat[] = ["vendor", "android-key", "play-integrity", "app-attest"];

export interface FuzzOptions {
  format: FuzzFormat;
  cases: number;
  seed: number;
  /** the peak RSS above which the run counts as a violation */
  rssLimitMb: number;
  /** called every ~5 % of the cases */
  progress?: (done: number) => void;
}

export interface FuzzResult {
  format: FuzzFormat;
  cases: number;
  seed: number;
  /** how many cases ended as each verdict or container error */
  outcomes: Record<string, number>;
  /** mutants that still appraised Yes with their signed bytes unchanged (vendor: only the unsigned label moved) */
  yesUnchangedSignedRegion: number;
  violations: number;
  /** the first few violations, each with its case index (replayable with the seed) */
  examples: string[];
  rssStartMb: number;
  peakRssMb: number;
  rssLimitMb: number;
  seconds: number;
  casesPerSecond: number;
}

interface Seed {
  name: string;
  blob: Buffer;
  nonce: string;
  now: Date;
  yes: boolean;
  /** for a text body (an app-attest assertion): the characters most set and inserted bytes are */
  text?: Buffer;
}

/** What the service looks up before appraising a format's blobs (play-integrity: the opened token; app-attest: apps and key). */
type Opener = (blob: Uint8Array, nonce: string) => Promise<{ playIntegrity?: PlayIntegrityEvidence; appAttest?: AppAttestEvidence }>;

const VENDOR_NOW = new Date("2030-06-15T12:00:00.000Z");
const VENDOR_NONCE = Buffer.alloc(32, 0x5a).toString("base64url");
const STATUSES = new Set(["Success", "DeviceError", "CertificateInvalid", "SignatureInvalid", "NonceMismatch", "Revoked"]);

/**
 * Tokens made once with throw-away keys and kept (test/vectors/play-integrity-core/seeds.json), so that a case
 * replays from (seed, case index): tokens made afresh would differ in every run (random IV, content key, ECDSA k).
 */
async function playSeeds(trust: TrustConfig): Promise<{ seeds: Seed[]; trust: TrustConfig; open: Opener }> {
  const v = JSON.parse(readFileSync(new URL("../../test/vectors/play-integrity-core/seeds.json", import.meta.url), "utf8")) as {
    packageName: string; certDigest: string; nonce: string; now: string; decryptionKey: string; verificationKey: string;
    tokens: { name: string; token: string }[];
  };
  const app = (id: string, packageName: string, keys: RegisteredPlayApp["responseKeys"]): RegisteredPlayApp => ({
    id, tenantId: "fuzz", createdAt: v.now, responseKeys: keys,
    policy: { packageName, certDigests: [v.certDigest], deviceFloor: "MEETS_DEVICE_INTEGRITY", maxAgeSeconds: 300, require: { licensed: false, playProtect: false, appAccessRisk: false } },
  });
  // another app's keys tried first, as a tenant with several apps has them: every mutant pays a failed unwrap too
  const other = app("other", "com.example.other", { decryptionKey: Buffer.alloc(32, 7), verificationKeySpki: Buffer.from(v.verificationKey, "base64") });
  const apps = [other, app("seed", v.packageName, parsePlayResponseKeys(v.decryptionKey, v.verificationKey))];
  const open: Opener = async (blob) => ({ playIntegrity: await openWithApps(Buffer.from(blob).toString("latin1"), apps) });
  const seeds: Seed[] = [];
  for (const t of v.tokens) {
    const s: Seed = { name: t.name, blob: Buffer.from(t.token, "latin1"), nonce: v.nonce, now: new Date(v.now), yes: false };
    s.yes = verdictOf(s, s.blob, trust, await open(s.blob, s.nonce)) === "Yes";
    seeds.push(s);
  }
  if (seeds.filter((s) => s.yes).length < 3) throw new Error("fuzz: the play-integrity seeds do not appraise Yes");
  return { seeds, trust, open };
}

/** an assertion's own characters: its JSON and the base64 inside it */
const ASSERTION_CHARS = Buffer.from('ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/=-_{}":, ');

/**
 * The simulator's attestation objects and assertions, made once with throw-away keys and kept
 * (test/vectors/app-attest-fuzz/seeds.json), for the same reason as play-integrity's. The evidence comes from the
 * service's AppAttestKeys over a store that holds the one attested key, as after its attestation.
 */
async function appAttestSeeds(trust: TrustConfig): Promise<{ seeds: Seed[]; trust: TrustConfig; open: Opener }> {
  const v = JSON.parse(readFileSync(new URL("../../test/vectors/app-attest-fuzz/seeds.json", import.meta.url), "utf8")) as {
    appId: string; nonce: string; now: string; rootDer: string; key: AppAttestKnownKey;
    attestations: { name: string; blob: string }[]; assertions: { name: string; body: string }[];
  };
  const withRoot: TrustConfig = { ...trust, appAttest: { rootsDer: [Buffer.from(v.rootDer, "base64")] } };
  // the app as `ios-app add --environment both` registers it (the seeds hold both environments' attestations), and another app
  const apps: IosAppPolicy[] = [{ appId: "ABCDE12345.com.example.other", environment: "production" }, { appId: v.appId, environment: "both" }];
  const stored: StoredAppAttestKey = {
    ...v.key, tenantId: "fuzz", environment: "production", receipt: "", attestedAt: v.now, lastAssertedAt: null, revokedAt: null,
    riskMetric: null, riskMetricAt: null, lastRefreshResult: null, lastRefreshReason: null, lastRefreshAt: null, refreshDueAt: null,
  };
  // the one read AppAttestKeys.evidence makes of the store
  const store: Pick<AppAttestStore, "getAppAttestKey"> = { getAppAttestKey: async (_tenant, keyId) => (keyId === stored.keyId ? stored : undefined) };
  const keys = new AppAttestKeys(store as AppAttestStore, { appsForAppraisal: async () => apps }, { nowMs: () => Date.parse(v.now) });
  const open: Opener = async (blob, nonce) => {
    const appAttest = await keys.evidence("fuzz", blob, nonce);
    return appAttest ? { appAttest } : {};
  };
  const now = new Date(v.now);
  const seeds: Seed[] = [
    ...v.attestations.map((a) => ({ name: a.name, blob: Buffer.from(a.blob, "base64"), nonce: v.nonce, now, yes: false })),
    ...v.assertions.map((a) => ({ name: a.name, blob: Buffer.from(a.body, "utf8"), nonce: v.nonce, now, yes: false, text: ASSERTION_CHARS })),
  ];
  for (const s of seeds) s.yes = verdictOf(s, s.blob, withRoot, await open(s.blob, s.nonce)) === "Yes";
  if (!seeds.every((s) => s.yes)) throw new Error(`fuzz: the app-attest seeds do not all appraise Yes: ${seeds.filter((s) => !s.yes).map((s) => s.name).join(", ")}`);
  return { seeds, trust: withRoot, open };
}

async function seedsFor(format: FuzzFormat): Promise<{ seeds: Seed[]; trust: TrustConfig; open?: Opener }> {
  const android = androidTrust();
  if (format === "app-attest") {
    return appAttestSeeds({ vendor: { rootsDer: [], revocations: new Map(), referenceValues: [] }, android });
  }
  if (format === "play-integrity") {
    return playSeeds({ vendor: { rootsDer: [], revocations: new Map(), referenceValues: [] }, android });
  }
  if (format === "vendor") {
    const ca = await createDevCa({ now: VENDOR_NOW });
    const [ec, rsa, ed] = await Promise.all([
      issueDeviceLeaf(ca, { now: VENDOR_NOW }),
      issueDeviceLeaf(ca, { now: VENDOR_NOW, keyType: "rsa" }),
      issueDeviceLeaf(ca, { now: VENDOR_NOW, keyType: "ed25519" }),
    ]);
    const trust: TrustConfig = {
      vendor: { rootsDer: [ca.root.certDer], revocations: new Map(), referenceValues: demoReferenceValues() },
      android,
    };
    const base = { nonce: VENDOR_NONCE, now: VENDOR_NOW, ca };
    const blobs: [string, Uint8Array][] = [
      ["EC leaf", encodeVendorBlob({ ...base, leaf: ec })],
      ["RSA leaf, root carried", encodeVendorBlob({ ...base, leaf: rsa, includeRoot: true })],
      ["Ed25519 leaf, tamper, unknown record", encodeVendorBlob({ ...base, leaf: ed, tamper: true, extraRecords: [{ type: 0x20, value: Uint8Array.of(1, 2, 3) }] })],
      ["device error", encodeVendorBlob({ ...base, leaf: ec, deviceError: { exitCode: 2, omitSignature: true } })],
    ];
    const seeds = blobs.map(([name, b]) => {
      const s: Seed = { name, blob: Buffer.from(b), nonce: VENDOR_NONCE, now: VENDOR_NOW, yes: false };
      s.yes = verdictOf(s, s.blob, trust) === "Yes";
      return s;
    });
    if (seeds.filter((s) => s.yes).length < 2) throw new Error("fuzz: the vendor seeds do not appraise Yes");
    return { seeds, trust };
  }
  const trust: TrustConfig = { vendor: { rootsDer: [], revocations: new Map(), referenceValues: [] }, android };
  const real: [string, Buffer, string][] = [
    ["caiman RKP", pemBlob("android_keyattestation/testdata/caiman/sdk36/TEE_EC_RKP.pem"), "2025-10-01T00:00:00Z"],
    ["tegu, root carried", pemBlob("android_keyattestation/testdata/tegu/sdk36/TEE_EC_2026_ROOT.pem"), "2026-03-01T00:00:00Z"],
    ["Sony factory", pemBlob("android_keyattestation/testdata/sony-xperia10-iii/sdk33/TEE_EC.pem"), "2026-11-22T00:00:00Z"],
    ["akita RSA", pemBlob("android_keyattestation/testdata/akita/sdk34/TEE_RSA_BASE+IMEI.pem"), "2024-09-20T00:00:00Z"],
    ["Pixel 7a, root left out", derBlob(...[0, 1, 2, 3].map((i) => `grapheneos_auditor_samples/4/0_cert-${i}.der.x509`)), "2025-01-01T00:00:00Z"],
  ];
  const seeds = real.map(([name, blob, at]) => {
    const s: Seed = { name, blob, nonce: nonceFor(challengeOf(blob, android, at)), now: new Date(at), yes: false };
    s.yes = verdictOf(s, s.blob, trust) === "Yes";
    return s;
  });
  if (seeds.filter((s) => s.yes).length < 3) throw new Error("fuzz: the android-key seeds do not appraise Yes");
  return { seeds, trust };
}

/** The verdict, or which container error; throws for anything the invariant forbids. */
function verdictOf(seed: Seed, blob: Uint8Array, trust: TrustConfig, evidence: Awaited<ReturnType<Opener>> = {}): string {
  let r;
  try {
    r = appraise({ blob, nonce: seed.nonce, trust, now: seed.now, ...evidence });
  } catch (e) {
    const refusal = appraisalRefusal(e);
    if (refusal) return refusal;
    throw new Error(`escaped: ${isAppError(e) ? `AppError ${e.entry.code} ${e.reason}` : ((e as Error)?.stack ?? String(e))}`);
  }
  const rec = r.record as unknown as Record<string, unknown>;
  if (Object.keys(rec).join() !== VERDICT_FIELDS.join()) throw new Error(`record fields ${Object.keys(rec).join()}`);
  for (const f of VERDICT_FIELDS) if (typeof rec[f] !== "string") throw new Error(`record field ${f} is not a string`);
  if (!STATUSES.has(r.record.status)) throw new Error(`status ${r.record.status}`);
  JSON.stringify(r.detail);
  return r.record.verdict;
}

/** mulberry32: small, fast, and the same sequence everywhere for a seed. */
function prng(seed: number): () => number {
  let a = seed >>> 0;
  return () => {
    a = (a + 0x6d2b79f5) >>> 0;
    let t = a;
    t = Math.imul(t ^ (t >>> 15), t | 1);
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  };
}

const INTERESTING = [0x00, 0x01, 0x02, 0x30, 0x7f, 0x80, 0x81, 0x82, 0xff];
/** a token's own characters: most set and inserted bytes of a play-integrity mutant are these, so it stays text */
const TOKEN_CHARS = Buffer.from("ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_. \n=");

/**
 * One to four byte-level mutations (flip, set, truncate, insert, delete, swap), or, now and then, noise. For a text
 * format (`text`), set and inserted bytes are mostly the format's own characters.
 */
function mutant(seeds: readonly Seed[], rnd: () => number, formatText?: Buffer): { seed: Seed; blob: Buffer; how: string } {
  const int = (n: number) => Math.floor(rnd() * n);
  const seed = seeds[int(seeds.length)]!;
  const text = formatText ?? seed.text;
  const byte = () => (text && rnd() < 0.8 ? text[int(text.length)]! : int(256));
  if (rnd() < 0.03) {
    const noise = Buffer.alloc(int(600));
    for (let i = 0; i < noise.length; i++) noise[i] = int(256);
    if (noise.length > 0 && rnd() < 0.5) noise[0] = 0x30; // starts like DER: reaches the android-key reader
    return { seed, blob: noise, how: `noise ${noise.toString("hex").slice(0, 64)}…` };
  }
  let b = Buffer.from(seed.blob);
  const steps: string[] = [];
  for (let n = 1 + int(4); n > 0 && b.length > 0; n--) {
    const at = int(b.length);
    switch (int(6)) {
      case 0:
        b[at] = b[at]! ^ (1 << int(8));
        steps.push(`flip@${at}`);
        break;
      case 1:
        b[at] = rnd() < 0.5 && !text ? INTERESTING[int(INTERESTING.length)]! : byte();
        steps.push(`set@${at}=${b[at]}`);
        break;
      case 2:
        b = b.subarray(0, at);
        steps.push(`truncate@${at}`);
        break;
      case 3: {
        const ins = Buffer.alloc(1 + int(8));
        for (let i = 0; i < ins.length; i++) ins[i] = byte();
        b = Buffer.concat([b.subarray(0, at), ins, b.subarray(at)]);
        steps.push(`insert@${at}:${ins.toString("hex")}`);
        break;
      }
      case 4: {
        const count = 1 + int(16);
        b = Buffer.concat([b.subarray(0, at), b.subarray(at + count)]);
        steps.push(`delete@${at}+${count}`);
        break;
      }
      default: {
        const other = int(b.length);
        const t = b[at]!;
        b[at] = b[other]!;
        b[other] = t;
        steps.push(`swap@${at},${other}`);
      }
    }
  }
  return { seed, blob: b, how: `${seed.name}: ${steps.join(" ")}` };
}

/**
 * Whether a mutant's signed bytes are the seed's. The vendor container's only unsigned bytes are exitCode's label:
 * errLen and errString (blob-format.md). An android-key chain is signed certificate by certificate, and the root
 * may be left out (it is pinned, docs/android-key.md): a mutant whose certificates are the seed's first ones,
 * byte for byte, is the same attestation (a truncation at a certificate boundary drops the root). An app-attest
 * body, read by the format's own reader: see the header.
 */
function sameSignedRegion(format: FuzzFormat, a: Uint8Array, seed: Uint8Array): boolean {
  if (format === "app-attest") {
    const eq = (x: Uint8Array, y: Uint8Array) => Buffer.from(x).equals(y);
    try {
      if (seed[0] === 0x7b) {
        const [m, s] = [readAppAttestAssertion(a), readAppAttestAssertion(seed)];
        return eq(m.keyId, s.keyId) && eq(m.authenticatorData, s.authenticatorData);
      }
      const [m, s] = [readAppAttestAttestation(a), readAppAttestAttestation(seed)];
      return eq(m.authData, s.authData) && m.x5c.length === s.x5c.length && m.x5c.every((c, i) => eq(c, s.x5c[i]!));
    } catch {
      return false;
    }
  }
  if (format === "play-integrity") return Buffer.from(a).toString("latin1").trim() === Buffer.from(seed).toString("latin1");
  if (format === "android-key") {
    const mine = splitDerCertificates(a);
    const theirs = splitDerCertificates(seed)!;
    return !!mine && mine.length > 0 && mine.length <= theirs.length && mine.every((c, i) => Buffer.from(c).equals(theirs[i]!));
  }
  return a.length >= 2 && a[0] === seed[0] && Buffer.from(a.subarray(2 + a[1]!)).equals(seed.subarray(2 + seed[1]!));
}

const mb = (bytes: number) => Math.round((bytes / 1048576) * 10) / 10;

export async function fuzzFormat(opts: FuzzOptions): Promise<FuzzResult> {
  const { seeds, trust, open } = await seedsFor(opts.format);
  const text = opts.format === "play-integrity" ? TOKEN_CHARS : undefined;
  const rnd = prng(opts.seed);
  const outcomes: Record<string, number> = {};
  const examples: string[] = [];
  let violations = 0;
  let yesUnchanged = 0;
  const violation = (i: number, what: string) => {
    violations++;
    if (examples.length < 10) examples.push(`case ${i}: ${what}`);
  };
  const rssStart = process.memoryUsage.rss();
  const step = Math.max(1, Math.floor(opts.cases / 20));
  const t0 = performance.now();
  for (let i = 0; i < opts.cases; i++) {
    const m = mutant(seeds, rnd, text);
    let v: string;
    try {
      v = verdictOf(m.seed, m.blob, trust, open ? await open(m.blob, m.seed.nonce) : {});
    } catch (e) {
      violation(i, `${(e as Error).message.split("\n").slice(0, 3).join(" ")} (${m.how})`);
      continue;
    }
    outcomes[v] = (outcomes[v] ?? 0) + 1;
    if (v === "Yes") {
      if (m.seed.yes && sameSignedRegion(opts.format, m.blob, m.seed.blob)) yesUnchanged++;
      else violation(i, `Yes from a change inside the signed region (${m.how})`);
    }
    if ((i + 1) % step === 0) opts.progress?.(i + 1);
  }
  const seconds = (performance.now() - t0) / 1000;
  // maxRSS is the kernel's high-water mark for the whole process, in KiB: no sampling can miss a spike
  const peakRssMb = mb(process.resourceUsage().maxRSS * 1024);
  if (peakRssMb > opts.rssLimitMb) violation(-1, `peak RSS ${peakRssMb} MiB above the ${opts.rssLimitMb} MiB bound`);
  return {
    format: opts.format,
    cases: opts.cases,
    seed: opts.seed,
    outcomes,
    yesUnchangedSignedRegion: yesUnchanged,
    violations,
    examples,
    rssStartMb: mb(rssStart),
    peakRssMb,
    rssLimitMb: opts.rssLimitMb,
    seconds: Math.round(seconds * 10) / 10,
    casesPerSecond: Math.round(opts.cases / seconds),
  };
}
