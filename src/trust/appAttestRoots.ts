import { X509Certificate } from "node:crypto";
import { readFileSync } from "node:fs";
import { fileURLToPath } from "node:url";
import { parsePemBundle } from "../attestation/encoding/pem.ts";
import type { AppAttestTrust } from "../attestation/types.ts";

/**
 * App Attest's trust anchor: Apple's App Attestation Root CA, built in (appleAppAttestationRootCa.pem, as Apple
 * publishes it: CN=Apple App Attestation Root CA, O=Apple Inc., ST=California, P-384, valid 2020-03-18 ..
 * 2045-03-15, SHA-256 fingerprint 1CB9823BA28BA6AD2D33A006941DE2AE4F513EF1D4E831B9F7E0FA7B6242C932), or the
 * operator's `--app-attest-roots FILE` (a PEM bundle), which replaces it as `--android-roots` replaces Google's
 * roots (the demo root of `attestd dev-ca --app-attest`, for one). Read once at start; a file that does not hold
 * at least one CA certificate stops start-up with one line.
 */

export const BUILT_IN_APP_ATTEST_ROOT_URL = new URL("./appleAppAttestationRootCa.pem", import.meta.url);
export const APPLE_APP_ATTEST_ROOT_SHA256 = "1CB9823BA28BA6AD2D33A006941DE2AE4F513EF1D4E831B9F7E0FA7B6242C932";

let builtIn: AppAttestTrust | undefined;

function readRoots(file: string, where: string): AppAttestTrust {
  let text: string;
  try {
    text = readFileSync(file, "utf8");
  } catch (e) {
    throw new Error(`${where}: ${(e as NodeJS.ErrnoException).code ?? (e as Error).message}`);
  }
  const rootsDer = parsePemBundle(text, where);
  for (const [i, der] of rootsDer.entries()) {
    let ca = false;
    try {
      ca = new X509Certificate(der).ca;
    } catch {
      // reported below
    }
    if (!ca) throw new Error(`${where}: certificate ${i} is not a CA certificate`);
  }
  if (rootsDer.length === 0) throw new Error(`${where}: no certificate`);
  return { rootsDer };
}

/** The built-in root, checked against its published fingerprint (a damaged installation stops start-up). */
export function builtInAppAttestTrust(): AppAttestTrust {
  if (builtIn) return builtIn;
  const file = fileURLToPath(BUILT_IN_APP_ATTEST_ROOT_URL);
  const trust = readRoots(file, `built-in App Attestation root ${file}`);
  const fingerprint = new X509Certificate(trust.rootsDer[0]!).fingerprint256.replaceAll(":", "");
  if (trust.rootsDer.length !== 1 || fingerprint !== APPLE_APP_ATTEST_ROOT_SHA256) {
    throw new Error(`built-in App Attestation root ${file}: not Apple's (SHA-256 ${fingerprint}): a damaged installation`);
  }
  return (builtIn = trust);
}

/** `--app-attest-roots FILE`, or the built-in root. */
export function loadAppAttestTrust(rootsFile: string | undefined): AppAttestTrust {
  return rootsFile === undefined ? builtInAppAttestTrust() : readRoots(rootsFile, `--app-attest-roots ${rootsFile}`);
}

/**
 * Whether Apple's receipts are judged (under Apple Root CA - G3, src/attestation/chain/appleRootCaG3.ts): only while
 * Apple's App Attestation root is the one in force. A demo or private root (`--app-attest-roots`) issues
 * attestations whose receipts Apple never signed, so they are kept, not checked (docs/app-attest.md, "Where it
 * applies"). The one rule `serve`, `attestd appraise` and the portal's trust page follow.
 */
export const appAttestReceiptsChecked = (rootsFile: string | undefined): boolean => rootsFile === undefined;

/** App Attest's trust as the portal's trust page shows it: read once, at start-up. */
export interface AppAttestTrustFacts {
  /** --app-attest-roots, when given; otherwise Apple's root, built in (`builtInFile`) */
  rootsFile?: string;
  builtInFile: string;
  /** the subject of each root in force, one line each ("CN=…, O=…") */
  subjects: readonly string[];
  /** Apple's receipts are judged (appAttestReceiptsChecked) */
  receiptsChecked: boolean;
}

export function appAttestTrustFacts(rootsFile: string | undefined, trust: AppAttestTrust): AppAttestTrustFacts {
  return {
    ...(rootsFile !== undefined ? { rootsFile } : {}),
    builtInFile: fileURLToPath(BUILT_IN_APP_ATTEST_ROOT_URL),
    subjects: trust.rootsDer.map((der) => new X509Certificate(der).subject.split("\n").join(", ")),
    receiptsChecked: appAttestReceiptsChecked(rootsFile),
  };
}
