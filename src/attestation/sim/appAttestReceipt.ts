import "reflect-metadata";
import { createHash, sign } from "node:crypto";
import * as asn1js from "asn1js";
import * as x509 from "@peculiar/x509";
import { OID_RECEIPT_SIGNING_MARKER, RECEIPT_FIELD, type ReceiptType } from "../encoding/appAttestReceipt.ts";
import { createRootCertificate, issueCertificate, type CertifiedKey } from "./devCa.ts";

/**
 * Apple's receipt side of App Attest, for tests and demos: a receipt-signing PKI shaped like Apple's (a P-384
 * root, an intermediate, a P-256 leaf with Apple's receipt-signing marker extension) and receipts in the CMS shape
 * `encoding/appAttestReceipt.ts` reads, with every attribute chosen by the caller (a refreshed receipt's
 * fraud-risk metric included). Trust its root with `ReceiptTrust.roots`.
 */

export interface ReceiptSigningCa {
  root: CertifiedKey;
  intermediate: CertifiedKey;
  leaf: CertifiedKey;
}

/** `unmarked`: a leaf without Apple's receipt-signing marker (another certificate of the same intermediate) */
export async function createReceiptSigningCa(opts: { now?: Date; validityDays?: number; unmarked?: boolean } = {}): Promise<ReceiptSigningCa> {
  const now = opts.now ?? new Date();
  const validityDays = opts.validityDays ?? 3650;
  const root = await createRootCertificate({ subject: "CN=attestd Demo Receipt Root CA, O=attestd Demo", keyType: "ec-p384", now, validityDays });
  const intermediate = await issueCertificate(root, { subject: "CN=attestd Demo Application Integration CA, O=attestd Demo", ca: true, pathLen: 0, now, validityDays });
  const leaf = await issueCertificate(intermediate, {
    subject: "CN=attestd Demo Receipt Signing, O=attestd Demo",
    now,
    validityDays,
    extensions: opts.unmarked ? [] : [new x509.Extension(OID_RECEIPT_SIGNING_MARKER, false, new Uint8Array([0x05, 0x00]))],
  });
  return { root, intermediate, leaf };
}

export interface ReceiptContent {
  type: ReceiptType;
  appId: string;
  /** the credential certificate (DER) */
  attestedCertificate: Uint8Array;
  /** default 32 zero bytes */
  clientHash?: Uint8Array;
  /** default a hash of the app id and creation time, base64 */
  token?: string;
  environment?: string;
  createdAt: Date;
  notBefore?: Date;
  /** default createdAt + 90 days, as Apple's */
  expiresAt?: Date;
  riskMetric?: number;
  /** attributes as written, after the documented ones (unknown types, or a documented one repeated) */
  extra?: readonly { type: number; value: Uint8Array }[];
}

/** The SET OF ReceiptAttribute, each value as Apple writes it (ASCII text, the certificate and hash as bytes). */
export function encodeReceiptContent(c: ReceiptContent): Uint8Array {
  const text = (s: string) => new Uint8Array(Buffer.from(s, "latin1"));
  const fields: { type: number; value: Uint8Array }[] = [
    { type: RECEIPT_FIELD.appId, value: text(c.appId) },
    { type: RECEIPT_FIELD.attestedCertificate, value: c.attestedCertificate },
    { type: RECEIPT_FIELD.clientHash, value: c.clientHash ?? new Uint8Array(32) },
    {
      type: RECEIPT_FIELD.token,
      value: text(c.token ?? createHash("sha256").update(`${c.appId} ${c.createdAt.toISOString()}`).digest("base64")),
    },
    { type: RECEIPT_FIELD.receiptType, value: text(c.type) },
  ];
  if (c.environment !== undefined) fields.push({ type: RECEIPT_FIELD.environment, value: text(c.environment) });
  fields.push({ type: RECEIPT_FIELD.creationTime, value: text(c.createdAt.toISOString()) });
  if (c.riskMetric !== undefined) fields.push({ type: RECEIPT_FIELD.riskMetric, value: text(String(c.riskMetric)) });
  if (c.notBefore) fields.push({ type: RECEIPT_FIELD.notBefore, value: text(c.notBefore.toISOString()) });
  const expiresAt = c.expiresAt ?? new Date(c.createdAt.getTime() + 90 * 86_400_000);
  fields.push({ type: RECEIPT_FIELD.expirationTime, value: text(expiresAt.toISOString()) });
  fields.push(...(c.extra ?? []));
  const set = new asn1js.Set({
    value: fields.map(
      (f) =>
        new asn1js.Sequence({
          value: [new asn1js.Integer({ value: f.type }), new asn1js.Integer({ value: 1 }), new asn1js.OctetString({ valueHex: f.value })],
        }),
    ),
  });
  return new Uint8Array(set.toBER(false));
}

/**
 * A receipt: `content` signed by the CA's leaf (ECDSA SHA-256 over the content itself, no signed attributes), the
 * leaf and intermediate carried, and the root too unless `includeRoot` is false (Apple includes its root).
 * `signWith` signs with another key than the leaf's (a forgery that names the leaf).
 */
export function signAppAttestReceipt(
  ca: ReceiptSigningCa,
  content: Uint8Array,
  opts: { includeRoot?: boolean; signWith?: CertifiedKey["privateKey"] } = {},
): Uint8Array {
  const certificate = (der: Uint8Array) => asn1js.fromBER(new Uint8Array(der)).result;
  const leafTree = asn1js.fromBER(new Uint8Array(ca.leaf.certDer)).result as asn1js.Sequence;
  const tbs = leafTree.valueBlock.value[0] as asn1js.Sequence;
  // TBSCertificate: [0] version, serialNumber, signature, issuer, ...
  const serial = tbs.valueBlock.value[1]!;
  const issuer = tbs.valueBlock.value[3]!;
  const signature = sign("sha256", content, { key: opts.signWith ?? ca.leaf.privateKey, dsaEncoding: "der" });
  const sha256 = () => new asn1js.Sequence({ value: [new asn1js.ObjectIdentifier({ value: "2.16.840.1.101.3.4.2.1" }), new asn1js.Null()] });
  const certs = [ca.leaf.certDer, ca.intermediate.certDer, ...(opts.includeRoot === false ? [] : [ca.root.certDer])].map(certificate);
  const signedData = new asn1js.Sequence({
    value: [
      new asn1js.Integer({ value: 1 }),
      new asn1js.Set({ value: [sha256()] }),
      new asn1js.Sequence({
        value: [
          new asn1js.ObjectIdentifier({ value: "1.2.840.113549.1.7.1" }),
          new asn1js.Constructed({ idBlock: { tagClass: 3, tagNumber: 0 }, value: [new asn1js.OctetString({ valueHex: content })] }),
        ],
      }),
      new asn1js.Constructed({ idBlock: { tagClass: 3, tagNumber: 0 }, value: certs }),
      new asn1js.Set({
        value: [
          new asn1js.Sequence({
            value: [
              new asn1js.Integer({ value: 1 }),
              new asn1js.Sequence({ value: [issuer, serial] }),
              sha256(),
              new asn1js.Sequence({ value: [new asn1js.ObjectIdentifier({ value: "1.2.840.10045.4.3.2" })] }),
              new asn1js.OctetString({ valueHex: signature }),
            ],
          }),
        ],
      }),
    ],
  });
  const contentInfo = new asn1js.Sequence({
    value: [
      new asn1js.ObjectIdentifier({ value: "1.2.840.113549.1.7.2" }),
      new asn1js.Constructed({ idBlock: { tagClass: 3, tagNumber: 0 }, value: [signedData] }),
    ],
  });
  return new Uint8Array(contentInfo.toBER(false));
}
