/**
 * The android-key *floor*: a bare function doing only the work no android-key verifier can avoid, written with
 * node:crypto and a hand-rolled DER walk, so the bench can say how far attestd's appraisal is from it (issue 15).
 *
 *   1. split the body into DER certificates (header walk);
 *   2. verify the leaf's signature over its TBSCertificate with its issuer's key, kept by the issuer's DER bytes
 *      (the issuers of a validated chain are per CA, not per device: any verifier caches them);
 *   3. read the KeyDescription: find the extension in the leaf and compare its attestationChallenge with the nonce;
 *   4. look the issuers' serials up in the status list.
 *
 * No validity dates, no name links, no policy, no record: what it skips is what attestd's rules add, which is the
 * point of the comparison. Used by the library-level table (sections/android.ts) and, over HTTPS, by the bare
 * baseline server (baseline/server.ts) for the android-key workload.
 */
import { createPublicKey, verify, type KeyObject } from "node:crypto";

/** Header of the TLV at `off`: [header length, content length]. Trusts its input (the floor validates nothing). */
function tlv(buf: Uint8Array, off: number): [number, number] {
  const first = buf[off + 1]!;
  if (first < 0x80) return [2, first];
  const n = first & 0x7f;
  let length = 0;
  for (let i = 0; i < n; i++) length = length * 256 + buf[off + 2 + i]!;
  return [2 + n, length];
}

/** 1.3.6.1.4.1.11129.2.1.17 as DER content octets */
const KEY_DESCRIPTION_OID = Buffer.from("2b06010401d679020111", "hex");
/** ecdsa-with-SHA256 / SHA384 and sha256WithRSAEncryption, as the AlgorithmIdentifier's OID content octets */
const DIGESTS = new Map<string, string>([
  ["2a8648ce3d040302", "sha256"],
  ["2a8648ce3d040303", "sha384"],
  ["2a864886f70d01010b", "sha256"],
  ["2a864886f70d01010c", "sha384"],
]);

const issuerKeys = new Map<string, KeyObject>();

/** The issuer's key, kept by its DER bytes. */
function issuerKey(der: Uint8Array): KeyObject {
  const id = Buffer.from(der.buffer, der.byteOffset, der.byteLength).toString("latin1");
  let key = issuerKeys.get(id);
  if (!key) {
    const [h] = tlv(der, 0);
    const [th] = tlv(der, h);
    let p = h + th;
    if (der[p] === 0xa0) p += tlvSize(der, p); // version
    for (let i = 0; i < 5; i++) p += tlvSize(der, p); // serial, signature, issuer, validity, subject
    key = createPublicKey({ key: Buffer.from(der.subarray(p, p + tlvSize(der, p))), format: "der", type: "spki" });
    issuerKeys.set(id, key);
  }
  return key;
}

function tlvSize(buf: Uint8Array, off: number): number {
  const [h, l] = tlv(buf, off);
  return h + l;
}

function serialHex(der: Uint8Array): string {
  const [h] = tlv(der, 0);
  const [th] = tlv(der, h);
  let p = h + th;
  if (der[p] === 0xa0) p += tlvSize(der, p);
  const [sh, sl] = tlv(der, p);
  return Buffer.from(der.buffer, der.byteOffset + p + sh, sl).toString("hex");
}

/**
 * The floor's whole job for one android-key DER body: true when the leaf's signature verifies with its issuer's
 * key, its KeyDescription's challenge equals `challenge`, and no issuer serial is in `status`.
 */
export function androidFloor(body: Uint8Array, challenge: Uint8Array, status: ReadonlyMap<string, unknown>): boolean {
  // 1. split
  const certs: Uint8Array[] = [];
  for (let p = 0; p < body.length;) {
    const size = tlvSize(body, p);
    certs.push(body.subarray(p, p + size));
    p += size;
  }
  const leaf = certs[0]!;
  // 2. leaf signature: Certificate ::= SEQUENCE { tbs, algorithm, BIT STRING }
  const [h] = tlv(leaf, 0);
  const [th, tl] = tlv(leaf, h);
  const tbs = leaf.subarray(h, h + th + tl);
  const algAt = h + th + tl;
  const [ah, al] = tlv(leaf, algAt);
  const [oh, ol] = tlv(leaf, algAt + ah);
  const oidAt = algAt + ah + oh;
  const digest = DIGESTS.get(Buffer.from(leaf.buffer, leaf.byteOffset + oidAt, ol).toString("hex"));
  const sigAt = algAt + ah + al;
  const [sh, sl] = tlv(leaf, sigAt);
  const signature = leaf.subarray(sigAt + sh + 1, sigAt + sh + sl);
  if (!digest || !verify(digest, tbs, issuerKey(certs[1]!), signature)) return false;
  // 3. KeyDescription: tbs fields up to extensions [3]
  let p = h + th;
  const tbsEnd = p + tl;
  let found: Uint8Array | undefined;
  while (p < tbsEnd) {
    const [fh, fl] = tlv(leaf, p);
    if (leaf[p] === 0xa3) {
      const [xh, xl] = tlv(leaf, p + fh); // Extensions SEQUENCE
      for (let e = p + fh + xh; e < p + fh + xh + xl;) {
        const [eh, el] = tlv(leaf, e);
        const [idh, idl] = tlv(leaf, e + eh);
        const oid = leaf.subarray(e + eh + idh, e + eh + idh + idl);
        if (Buffer.compare(oid, KEY_DESCRIPTION_OID) === 0) {
          let v = e + eh + idh + idl;
          if (leaf[v] === 0x01) v += tlvSize(leaf, v); // critical
          const [vh, vl] = tlv(leaf, v);
          found = leaf.subarray(v + vh, v + vh + vl);
          break;
        }
        e += eh + el;
      }
      break;
    }
    p += fh + fl;
  }
  if (!found) return false;
  // KeyDescription ::= SEQUENCE { version, securityLevel, keyMintVersion, keyMintSecurityLevel, challenge, ... }
  const [kh] = tlv(found, 0);
  let k = kh;
  for (let i = 0; i < 4; i++) k += tlvSize(found, k);
  const [ch, cl] = tlv(found, k);
  if (Buffer.compare(found.subarray(k + ch, k + ch + cl), challenge) !== 0) return false;
  // 4. status list
  for (let i = 1; i < certs.length; i++) if (status.has(serialHex(certs[i]!).replace(/^0+/, ""))) return false;
  return true;
}
