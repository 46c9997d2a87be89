import { webcrypto, X509Certificate } from "node:crypto";
import { mkdtempSync, readdirSync, readFileSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import path from "node:path";
import { validateCertificatePath } from "@simplewebauthn/server/helpers";
import * as pkijs from "pkijs";
import { appraise } from "../../src/attestation/appraise.ts";
import { findExtension, readCertificate } from "../../src/attestation/encoding/derChain.ts";
import { KEY_DESCRIPTION_OID, parseKeyDescription } from "../../src/attestation/encoding/keyDescription.ts";
import { parsePemBundle, toPem } from "../../src/attestation/encoding/pem.ts";
import type { TrustConfig } from "../../src/attestation/types.ts";
import { EMPTY_STATUS_LIST } from "../../src/attestation/chain/statusList.ts";
import { loadAndroidTrust } from "../../src/trust/androidTrustSource.ts";
import { selfCpuSeconds, systemBusySeconds } from "../lib/cpu.ts";
import { round } from "../lib/load.ts";
import { androidFloor } from "../lib/androidFloor.ts";
import { compare, type MicroOptions, type MicroResult } from "../lib/micro.ts";
import { geomean } from "../lib/stats.ts";
import { REPO } from "../lib/processes.ts";

/** Where the real chains live: the project's copy in test/vectors/android-key (its README names each origin). */
export const VECTORS = process.env.ATTESTD_VECTORS ?? path.join(REPO, "test/vectors/android-key");

interface ChainSpec {
  name: string;
  /** relative to VECTORS */
  file: string;
  /** appraisal time; default: the middle of the window in which every certificate of the chain is valid */
  at?: string;
}

/** Real device chains: the 2026 EC root (RKP), the 2019 RSA root (RKP), a factory chain to the 2016 root. */
export const CHAINS: readonly ChainSpec[] = [
  { name: "tegu StrongBox EC, RKP → 2026 EC root", file: "android_keyattestation/testdata/tegu/sdk36/SB_EC_2026_ROOT.pem" },
  { name: "caiman TEE EC, RKP → 2019 RSA root", file: "android_keyattestation/testdata/caiman/sdk36/TEE_EC_RKP.pem" },
  { name: "sony Xperia TEE EC, factory → 2016 RSA root", file: "android_keyattestation/testdata/sony-xperia10-iii/sdk33/TEE_EC.pem" },
  {
    name: "Pixel 8a TEE (simplewebauthn case1), RKP → 2019 RSA root",
    file: "simplewebauthn_android-key/case1_android-key/chain.pem",
    at: "2025-02-02T10:00:00Z",
  },
];

const ROOTS_JSON = "android_keyattestation/roots.json";
const STATUS_JSON = "google_android-key-attestation/status.json";
const EXTRA_ROOTS_DIR = "grapheneos_attestationserver_roots";

export type Library = "attestd" | "attestdCold" | "floor" | "simplewebauthn" | "pkijs";

export interface LibraryRun extends MicroResult {
  /** what the library concluded about the chain */
  outcome: string;
  /** the chain was accepted (attestd: status not CertificateInvalid/Revoked) */
  accepted: boolean;
}

export interface ChainResult {
  name: string;
  file: string;
  certificates: number;
  at: string;
  results: Record<Library, LibraryRun>;
  /** attestd ops/s ÷ the other library's ops/s */
  speedup: { vsSimplewebauthn: number; vsPkijs: number; coldVsSimplewebauthn: number; coldVsPkijs: number };
  /** attestd's µs per chain ÷ the floor's (issue 15: ≤ 4) */
  timesFloor: number;
}

export interface AndroidSection {
  status: "ok";
  how: Record<Library, string> & { trust: string; timing: string };
  settings: MicroOptions;
  chains: ChainResult[];
  /** cores busy with other work on the machine while this section ran (should be ≈ 0; else the figures are noisy) */
  otherCores?: number;
  summary: {
    /** geometric means over the chains */
    speedupVsSimplewebauthn: number;
    speedupVsPkijs: number;
    coldSpeedupVsSimplewebauthn: number;
    coldSpeedupVsPkijs: number;
    /** geometric mean of attestd ÷ floor over the chains, and the worst chain */
    timesFloor: number;
    worstTimesFloor: number;
    target: string;
    /** attestd (steady state) faster than both on every chain */
    met: boolean;
    /** also true for the cold variant */
    coldMet: boolean;
    /** issue 15: attestd ≤ 4× the floor and ≥ 8× faster than pkijs, on every chain */
    floorTarget: string;
    floorMet: boolean;
  };
  notes: string[];
}

const DAY = 86_400_000;

function chainDers(file: string): Uint8Array[] {
  return parsePemBundle(readFileSync(path.join(VECTORS, file), "utf8"), file);
}

/** The middle of the window in which every certificate is within its validity (leaf included). */
function pinnedTime(ders: readonly Uint8Array[]): Date {
  let from = -Infinity;
  let to = Infinity;
  for (const d of ders) {
    const x = new X509Certificate(d);
    from = Math.max(from, Date.parse(x.validFrom));
    to = Math.min(to, Date.parse(x.validTo));
  }
  if (!(from < to)) throw new Error("the chain's validity periods do not overlap");
  return new Date(Math.floor((from + Math.min(to, from + 3650 * DAY)) / 2));
}

/** The nonce whose challenge the leaf carries: base64url of 32 bytes, or the ASCII challenge itself (blob-format.md). */
function nonceOf(leafDer: Uint8Array): string {
  const ext = findExtension(readCertificate(leafDer), KEY_DESCRIPTION_OID);
  if (!ext) throw new Error("the leaf carries no KeyDescription");
  const challenge = parseKeyDescription(ext.value).attestationChallenge;
  return challenge.length === 32 ? challenge.toString("base64url") : challenge.toString("latin1");
}

/** The trust anchor for the other libraries: the chain's own root when it carries one, else a Google root that issued its top. */
function anchorOf(ders: readonly Uint8Array[]): { anchor: Uint8Array; path: Uint8Array[] } {
  const last = new X509Certificate(ders[ders.length - 1]!);
  if (last.subject === last.issuer && last.verify(last.publicKey)) return { anchor: ders[ders.length - 1]!, path: ders.slice(0, -1) };
  const dir = path.join(VECTORS, EXTRA_ROOTS_DIR);
  for (const f of readdirSync(dir).filter((n) => n.endsWith(".der"))) {
    const der = new Uint8Array(readFileSync(path.join(dir, f)));
    const root = new X509Certificate(der);
    if (root.subject === last.issuer && last.verify(root.publicKey)) return { anchor: der, path: [...ders] };
  }
  throw new Error("no Google root issued the chain's top certificate");
}

/** The attestationChallenge bytes of the leaf, for the floor (which compares bytes, as any verifier must). */
function challengeOf(leafDer: Uint8Array): Buffer {
  const ext = findExtension(readCertificate(leafDer), KEY_DESCRIPTION_OID);
  if (!ext) throw new Error("the leaf carries no KeyDescription");
  return parseKeyDescription(ext.value).attestationChallenge;
}

let pkijsReady = false;
function pkijsEngine(): void {
  if (pkijsReady) return;
  pkijs.setEngine("node-webcrypto", new pkijs.CryptoEngine({ name: "node-webcrypto", crypto: webcrypto as unknown as ConstructorParameters<typeof pkijs.CryptoEngine>[0]["crypto"] }));
  pkijsReady = true;
}

function pkijsCert(der: Uint8Array): pkijs.Certificate {
  return pkijs.Certificate.fromBER(der);
}

export interface AndroidContext {
  micro: MicroOptions;
  log: (line: string) => void;
}

/**
 * Issue 3, library level: attestd's appraise() (android-key: parse, path validation to a root pinned by SPKI,
 * KeyDescription, policy) beside @simplewebauthn/server's validateCertificatePath and pkijs's
 * CertificateChainValidationEngine on the same real chains, each at a time inside the chain's validity.
 */
export async function runAndroidSection(ctx: AndroidContext): Promise<AndroidSection> {
  pkijsEngine();
  const notes: string[] = [];
  const t0 = performance.now();
  const sys0 = systemBusySeconds();
  const self0 = selfCpuSeconds();
  const cacheDir = mkdtempSync(path.join(tmpdir(), "attestd-bench-trust-"));
  const realNow = Date.now;
  const realFetch = globalThis.fetch;
  const chains: ChainResult[] = [];
  try {
    // simplewebauthn downloads the CRL each certificate names and treats a failed download as "not revoked";
    // the bench is offline, so the download fails at once (the same for every call) instead of hanging.
    globalThis.fetch = (() => Promise.reject(new Error("offline (bench)"))) as typeof fetch;

    // Two passes: the first only warms attestd and the floor up on every chain, so that V8 has optimised their
    // code before any chain is timed (without it the first chain measured paid for the JIT: ~1.5x its steady
    // time, and its ratio to the floor with it).
    for (const pass of ["warm", "measure"] as const) for (const spec of CHAINS) {
      const ders = chainDers(spec.file);
      const at = spec.at ? new Date(spec.at) : pinnedTime(ders);
      const blob = Buffer.concat(ders);
      const nonce = nonceOf(ders[0]!);
      const source = await loadAndroidTrust({
        rootsSource: path.join(VECTORS, ROOTS_JSON),
        statusSource: path.join(VECTORS, STATUS_JSON),
        cacheDir,
        maxAgeSeconds: 7 * 86_400,
        refreshSeconds: 0,
        now: () => at,
      });
      const android = source.current();
      const trust: TrustConfig = {
        vendor: { rootsDer: [], revocations: EMPTY_STATUS_LIST, referenceValues: [] },
        android,
      };
      const { anchor, path: x5c } = anchorOf(ders);
      const x5cPem = x5c.map((d) => toPem(d, "CERTIFICATE"));
      const anchorPem = toPem(anchor, "CERTIFICATE");
      const pkijsAnchor = pkijsCert(anchor);
      const challenge = challengeOf(ders[0]!);
      const status = android.status;

      const ops = {
        attestd: () => appraise({ blob, nonce, trust, now: at }),
        // a fresh trust object per call: the per-trust caches (pinned roots parsed, intermediates verified) start empty
        attestdCold: () =>
          appraise({ blob, nonce, trust: { vendor: trust.vendor, android: { ...android, rootsDer: [...android.rootsDer] } }, now: at }),
        floor: () => androidFloor(blob, challenge, status),
        simplewebauthn: () => validateCertificatePath(x5cPem, [anchorPem]).catch((e: unknown) => e),
        pkijs: () =>
          new pkijs.CertificateChainValidationEngine({
            trustedCerts: [pkijsAnchor],
            certs: x5c.map(pkijsCert),
            checkDate: at,
          }).verify(),
      };

      // What each library concludes, once, before timing.
      Date.now = () => at.getTime(); // simplewebauthn checks validity against Date.now()
      const a = ops.attestd();
      const swa = await ops.simplewebauthn();
      const pk = await ops.pkijs();
      const outcomes: Record<Library, { outcome: string; accepted: boolean }> = {
        attestd: {
          outcome: `${a.record.status}/${a.record.verdict}${a.record.status === "Success" ? "" : `: ${a.reason}`}`,
          accepted: a.record.status !== "CertificateInvalid" && a.record.status !== "Revoked",
        },
        attestdCold: { outcome: "", accepted: false },
        floor: { outcome: "", accepted: false },
        simplewebauthn: {
          outcome: swa === true ? "valid" : `rejected: ${(swa as Error).message}`,
          accepted: swa === true,
        },
        pkijs: { outcome: pk.result ? "valid" : `rejected: ${pk.resultMessage}`, accepted: pk.result },
      };
      const cold = ops.attestdCold();
      outcomes.attestdCold = { outcome: `${cold.record.status}/${cold.record.verdict}`, accepted: outcomes.attestd.accepted };
      const fl = ops.floor();
      outcomes.floor = { outcome: fl ? "valid" : "rejected", accepted: fl };

      if (pass === "warm") {
        Date.now = realNow;
        await compare({ attestd: ops.attestd, floor: ops.floor }, { ...ctx.micro, rounds: 0 });
        continue;
      }
      ctx.log(`android: ${spec.name} at ${at.toISOString()}: attestd ${outcomes.attestd.outcome}`);
      const timed = await compare(ops, ctx.micro);
      Date.now = realNow;

      const results = {} as Record<Library, LibraryRun>;
      for (const lib of Object.keys(ops) as Library[]) results[lib] = { ...timed[lib]!, ...outcomes[lib] };
      for (const lib of ["floor", "simplewebauthn", "pkijs"] as const) {
        if (!results[lib].accepted) notes.push(`${spec.name}: ${lib} ${results[lib].outcome} (its timing is of a rejection)`);
      }
      if (!results.attestd.accepted) notes.push(`${spec.name}: attestd ${results.attestd.outcome}`);
      const sp = (x: LibraryRun, y: LibraryRun) => round(x.opsPerSec / y.opsPerSec, 2);
      chains.push({
        name: spec.name,
        file: spec.file,
        certificates: ders.length,
        at: at.toISOString(),
        results,
        speedup: {
          vsSimplewebauthn: sp(results.attestd, results.simplewebauthn),
          vsPkijs: sp(results.attestd, results.pkijs),
          coldVsSimplewebauthn: sp(results.attestdCold, results.simplewebauthn),
          coldVsPkijs: sp(results.attestdCold, results.pkijs),
        },
        timesFloor: sp(results.floor, results.attestd),
      });
    }
  } finally {
    Date.now = realNow;
    globalThis.fetch = realFetch;
    rmSync(cacheDir, { recursive: true, force: true });
  }

  const wall = (performance.now() - t0) / 1000;
  const sys1 = systemBusySeconds();
  const otherCores =
    sys0 !== undefined && sys1 !== undefined ? round(Math.max(0, (sys1 - sys0 - (selfCpuSeconds() - self0)) / wall), 2) : undefined;
  const g = (k: keyof ChainResult["speedup"]) => round(geomean(chains.map((c) => c.speedup[k])), 2);
  const FLOOR_MAX = 4;
  const PKIJS_MIN = 8;
  return {
    status: "ok",
    how: {
      attestd:
        "appraise({blob, nonce, trust, now}) from src/attestation/appraise.ts: the whole android-key appraisal (DER split, certificate parsing, path validation to a root pinned by SPKI, status list, KeyDescription, policy, verdict record); the same trust object on every call, so its intermediate cache is warm (the server's steady state)",
      floor:
        "bench/lib/androidFloor.ts: only the unavoidable work with node:crypto: split the DER chain, verify the leaf's signature with its issuer's key kept by the issuer's DER bytes, find the KeyDescription and compare its challenge, look the issuers' serials up in the status list",
      attestdCold:
        "the same, with a fresh trust object per call: nothing cached, the two pinned roots re-read on every call (a worst case)",
      simplewebauthn:
        "validateCertificatePath(x5cPem, [rootPem]) from @simplewebauthn/server/helpers (its lowest-level chain check; parses PEM, validity at Date.now(), CRL lookups, X509ChainBuilder signatures); the chain's own root as the only anchor; Date.now pinned; CRL downloads fail at once (offline)",
      pkijs:
        "new CertificateChainValidationEngine({trustedCerts: [root], certs: chain without root, checkDate}).verify(), certificates parsed from DER per call, the root parsed once; WebCrypto engine (node:crypto webcrypto)",
      trust: `attestd: loadAndroidTrust over ${ROOTS_JSON} (2022 RSA root, whose key the 2016/2019 roots share, and the 2026 EC root) and ${STATUS_JSON}`,
      timing: `attestd and the floor first warmed up on every chain (${ctx.micro.warmupMs} ms each); then per chain, the libraries take turns in ${ctx.micro.rounds} round(s) of ${ctx.micro.roundMs} ms after ${ctx.micro.warmupMs} ms warm-up each; the median round is reported; one thread, calls back to back (async ones awaited)`,
    },
    settings: ctx.micro,
    chains,
    ...(otherCores !== undefined ? { otherCores } : {}),
    summary: {
      speedupVsSimplewebauthn: g("vsSimplewebauthn"),
      speedupVsPkijs: g("vsPkijs"),
      coldSpeedupVsSimplewebauthn: g("coldVsSimplewebauthn"),
      coldSpeedupVsPkijs: g("coldVsPkijs"),
      target: "attestd faster than both @simplewebauthn/server and pkijs on every chain",
      met: chains.every((c) => c.speedup.vsSimplewebauthn > 1 && c.speedup.vsPkijs > 1),
      coldMet: chains.every((c) => c.speedup.coldVsSimplewebauthn > 1 && c.speedup.coldVsPkijs > 1),
      timesFloor: round(geomean(chains.map((c) => c.timesFloor)), 2),
      worstTimesFloor: Math.max(...chains.map((c) => c.timesFloor)),
      floorTarget: `attestd ≤ ${FLOOR_MAX}× the floor and ≥ ${PKIJS_MIN}× faster than pkijs, on every chain`,
      floorMet: chains.every((c) => c.timesFloor <= FLOOR_MAX && c.speedup.vsPkijs >= PKIJS_MIN),
    },
    notes,
  };
}
