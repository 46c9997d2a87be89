import assert from "node:assert/strict";
import { mkdtempSync, readFileSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import path from "node:path";
import { X509Certificate } from "node:crypto";
import { before, describe, it } from "node:test";
import { createRootCertificate, generateKey, issueCertificate, type CertifiedKey } from "../src/attestation/sim/devCa.ts";
import { checkServerChain } from "../src/tls/checkServerChain.ts";
import { ensureDevTls } from "../src/tls/devTls.ts";
import { attestdCli } from "./helpers/serverProcess.ts";

describe("TLS: start-up refusals for operator chains, and dev TLS", () => {
  let root: CertifiedKey;
  let inter: CertifiedKey;
  let leaf: CertifiedKey;
  const now = new Date();

  before(async () => {
    root = await createRootCertificate({ subject: "CN=Op Root", keyType: "ec", pathLen: 1 });
    inter = await issueCertificate(root, { subject: "CN=Op Intermediate", keyType: "ec", ca: true, pathLen: 0 });
    leaf = await issueCertificate(inter, { subject: "CN=localhost", keyType: "ec" });
  });

  it("accepts leaf + intermediate + private root with the matching key", () => {
    assert.equal(checkServerChain(leaf.certPem + inter.certPem + root.certPem, leaf.keyPem, now), undefined);
  });

  it("refuses a self-signed leaf", async () => {
    const self = await createRootCertificate({ subject: "CN=localhost", keyType: "ec" });
    assert.match(checkServerChain(self.certPem, self.keyPem, now)!, /self-signed/);
  });

  it("refuses a chain whose links don't verify", async () => {
    const stranger = await createRootCertificate({ subject: "CN=Op Intermediate", keyType: "ec" });
    assert.match(checkServerChain(leaf.certPem + stranger.certPem, leaf.keyPem, now)!, /link 0 → 1 does not verify/);
  });

  it("refuses an incomplete chain (intermediate missing)", () => {
    assert.match(checkServerChain(leaf.certPem, leaf.keyPem, now)!, /incomplete/);
  });

  it("refuses an expired certificate", () => {
    const later = new Date(now.getTime() + 5 * 365 * 86_400_000);
    assert.match(checkServerChain(leaf.certPem + inter.certPem + root.certPem, leaf.keyPem, later)!, /expired/);
  });

  it("refuses a key that doesn't match the leaf", async () => {
    const other = (await generateKey("ec")).export({ format: "pem", type: "pkcs8" }) as string;
    assert.match(checkServerChain(leaf.certPem + inter.certPem + root.certPem, other, now)!, /does not match/);
  });

  it("`attestd serve` prints one clear line and exits 1 for a refused chain", async () => {
    const dir = mkdtempSync(path.join(tmpdir(), "attestd-tls-"));
    const self = await createRootCertificate({ subject: "CN=localhost", keyType: "ec" });
    writeFileSync(path.join(dir, "cert.pem"), self.certPem);
    writeFileSync(path.join(dir, "key.pem"), self.keyPem);
    const r = attestdCli(["serve", "--port", "0", "--data-dir", dir, "--tls-cert", path.join(dir, "cert.pem"), "--tls-key", path.join(dir, "key.pem")]);
    assert.equal(r.status, 1);
    const lines = r.stderr.trim().split("\n");
    assert.equal(lines.length, 1, r.stderr);
    assert.match(lines[0]!, /^attestd: refusing to start: TLS leaf certificate .* is self-signed$/);
  });

  it("dev TLS: made once, leaf + intermediate presented, verifying to the printed CA", async () => {
    const dir = mkdtempSync(path.join(tmpdir(), "attestd-devtls-"));
    const first = await ensureDevTls(dir);
    assert.equal(first.created, true);
    const again = await ensureDevTls(dir);
    assert.equal(again.created, false);
    const [leafPem, interPem] = readFileSync(first.certFile, "utf8").match(/-----BEGIN CERTIFICATE-----[\s\S]+?-----END CERTIFICATE-----/g)!;
    const ca = new X509Certificate(readFileSync(first.caFile));
    const l = new X509Certificate(leafPem!);
    const i = new X509Certificate(interPem!);
    assert.ok(l.verify(i.publicKey) && i.verify(ca.publicKey));
    assert.ok(l.checkHost("localhost") && l.checkIP("127.0.0.1"));
    assert.equal(checkServerChain(readFileSync(first.certFile, "utf8") + ca.toString(), readFileSync(first.keyFile, "utf8")), undefined);
  });
});
