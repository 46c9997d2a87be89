import assert from "node:assert/strict";
import { mkdtempSync, readFileSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import path from "node:path";
import { X509Certificate } from "node:crypto";
import { after, before, describe, it } from "node:test";
import { connect, createServer, type ConnectionOptions } from "node:tls";
import { createRootCertificate, generateKey, issueCertificate, type CertifiedKey } from "../src/attestation/sim/devCa.ts";
import { checkServerChain } from "../src/tls/checkServerChain.ts";
import { ensureDevTls } from "../src/tls/devTls.ts";
import { attestdCli, startServer, type ServerProcess } from "./helpers/serverProcess.ts";

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

/** One real handshake with 127.0.0.1:port as `localhost`: what was agreed, or the error that ended it. */
function handshake(port: number, ca: string, o: ConnectionOptions): Promise<{ protocol: string; cipher: string } | { error: string }> {
  return new Promise((resolve) => {
    const socket = connect({ host: "127.0.0.1", port, servername: "localhost", ca, ...o });
    socket.once("secureConnect", () => {
      resolve({ protocol: socket.getProtocol()!, cipher: socket.getCipher().name });
      socket.end();
    });
    socket.once("error", (e) => resolve({ error: (e as NodeJS.ErrnoException).code ?? e.message }));
  });
}

describe("TLS policy: TLS 1.2+ and AEAD suites by default, configurable (real handshakes)", () => {
  const dir = mkdtempSync(path.join(tmpdir(), "attestd-tlspolicy-"));
  let ca: string;
  let byDefault: ServerProcess;
  let withCbc: ServerProcess;
  let tls13Only: ServerProcess;
  // what a client offering only that looks like; SECLEVEL=0 lets this OpenSSL speak TLS 1.1 at all
  const CBC_ONLY: ConnectionOptions = { ciphers: "ECDHE-ECDSA-AES128-SHA256:ECDHE-ECDSA-AES256-SHA", maxVersion: "TLSv1.2" };
  const TLS11_ONLY: ConnectionOptions = { minVersion: "TLSv1.1", maxVersion: "TLSv1.1", ciphers: "DEFAULT@SECLEVEL=0" };
  const TLS12_AEAD: ConnectionOptions = { maxVersion: "TLSv1.2" };

  before(async () => {
    const dev = await ensureDevTls(dir); // once, before the servers start side by side on it
    ca = readFileSync(dev.caFile, "utf8");
    const data = ["--data-dir", dir, "--log-level", "warn"];
    const tls = { caFile: dev.caFile };
    // one after another: three first starts at once on one SQLite file race for its write lock (each writes its
    // start-up records), and the loser exits with "database is locked" (seen in CI)
    byDefault = await startServer(data, { tls });
    withCbc = await startServer([...data, "--tls-ciphers", "ECDHE-ECDSA-AES128-SHA256:TLS_AES_128_GCM_SHA256"], { tls });
    tls13Only = await startServer([...data, "--tls-min-version", "TLSv1.3"], { tls });
  });
  after(async () => {
    await Promise.all([byDefault, withCbc, tls13Only].map((s) => s?.stop()));
  });

  it("by default agrees TLS 1.3, and TLS 1.2 with an ECDHE AEAD suite", async () => {
    assert.deepEqual(await handshake(byDefault.port, ca, {}), { protocol: "TLSv1.3", cipher: "TLS_AES_256_GCM_SHA384" });
    const v12 = await handshake(byDefault.port, ca, TLS12_AEAD);
    assert.ok("protocol" in v12 && v12.protocol === "TLSv1.2" && /^ECDHE-ECDSA-(AES\d+-GCM|CHACHA20)/.test(v12.cipher), JSON.stringify(v12));
  });

  it("by default refuses a client offering only CBC suites, or only TLS 1.1", async () => {
    assert.ok("error" in (await handshake(byDefault.port, ca, CBC_ONLY)), "CBC only");
    assert.ok("error" in (await handshake(byDefault.port, ca, TLS11_ONLY)), "TLS 1.1 only");
  });

  it("those clients do complete a handshake where the server allows it (the refusals above are the server's)", async () => {
    assert.deepEqual(await handshake(withCbc.port, ca, CBC_ONLY), { protocol: "TLSv1.2", cipher: "ECDHE-ECDSA-AES128-SHA256" });
    const dev = await ensureDevTls(dir);
    const lax = createServer({ key: readFileSync(dev.keyFile), cert: readFileSync(dev.certFile), minVersion: "TLSv1.1", ciphers: "DEFAULT@SECLEVEL=0" });
    await new Promise<void>((r) => lax.listen(0, "127.0.0.1", r));
    try {
      const r = await handshake((lax.address() as { port: number }).port, ca, TLS11_ONLY);
      assert.deepEqual("protocol" in r && r.protocol, "TLSv1.1", JSON.stringify(r));
    } finally {
      lax.close();
    }
  });

  it("--tls-min-version TLSv1.3 refuses TLS 1.2", async () => {
    assert.ok("error" in (await handshake(tls13Only.port, ca, TLS12_AEAD)));
    assert.equal((await handshake(tls13Only.port, ca, {}) as { protocol: string }).protocol, "TLSv1.3");
  });

  it("refuses to start, in one line, on a cipher list OpenSSL finds nothing in", () => {
    const r = attestdCli(["serve", "--port", "0", "--data-dir", dir, "--tls-ciphers", "NO-SUCH-SUITE"]);
    assert.equal(r.status, 1);
    const lines = r.stderr.trim().split("\n");
    assert.equal(lines.length, 1, r.stderr);
    assert.match(lines[0]!, /^attestd: refusing to start: --tls-ciphers "NO-SUCH-SUITE": /);
  });
});
