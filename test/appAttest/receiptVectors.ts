import { readFileSync } from "node:fs";
import { isoCBOR } from "@simplewebauthn/server/helpers";

/**
 * The real App Attest attestation objects of test/vectors/app-attest/ (origins in ../shared's README and the
 * MANIFEST's columns), reduced to what the receipt tests need: the receipt, the credential certificate, and the
 * MANIFEST's app id, environment and appraisal time. CBOR stays in the tests: the receipt module takes bytes.
 */

export interface ReceiptVector {
  name: string;
  receipt: Uint8Array;
  credentialCertificate: Uint8Array;
  appId: string;
  environment: "development" | "production";
  at: Date;
}

const DIR = new URL("../vectors/app-attest/", import.meta.url);

export function receiptVectors(): ReceiptVector[] {
  const [header, ...rows] = readFileSync(new URL("MANIFEST.tsv", DIR), "utf8").trimEnd().split("\n").map((l) => l.split("\t"));
  const col = (name: string) => {
    const i = header!.indexOf(name);
    if (i < 0) throw new Error(`MANIFEST.tsv has no column ${name}`);
    return i;
  };
  return rows.map((row) => {
    const object = isoCBOR.decodeFirst<Map<string, unknown>>(readFileSync(new URL(row[col("file")]!, DIR)));
    const attStmt = object.get("attStmt") as Map<string, unknown>;
    return {
      name: row[col("name")]!,
      receipt: attStmt.get("receipt") as Uint8Array,
      credentialCertificate: (attStmt.get("x5c") as Uint8Array[])[0]!,
      appId: row[col("app_id")]!,
      environment: row[col("environment")] as "development" | "production",
      at: new Date(row[col("at")]!),
    };
  });
}
