import assert from "node:assert/strict";
import { mkdirSync, mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import path from "node:path";
import { after, before, describe, it } from "node:test";
import { attestdCli } from "../helpers/serverProcess.ts";

/** stderr as its lines, without the final newline's empty one */
const lines = (stderr: string) => stderr.replace(/\n$/, "").split("\n");

/**
 * The errors a newcomer meets at the command line (src/cli/main.ts, options.ts, simulatorCommands.ts): each says
 * what was wrong in a line or three (a usage error: the error, its "did you mean", where the usage is; never the
 * whole help), names the flag and the path it was given, and what was expected there. Exit 1, nothing on stdout.
 */
describe("attestd's errors, as a newcomer meets them", () => {
  const dir = mkdtempSync(path.join(tmpdir(), "attestd-cli-errors-"));
  const at = (name: string) => path.join(dir, name);
  const nonce = "q9Ji2wAnbqUWbcS7B7ymBzBfWAzQ6Tz0Hk9dC4Jk3xM";
  const refused = (args: string[]) => {
    const r = attestdCli(args);
    assert.equal(r.status, 1, r.stderr);
    assert.equal(r.stdout, "");
    return lines(r.stderr);
  };
  before(() => {
    assert.equal(attestdCli(["dev-ca", "--out", at("vendor-ca")]).status, 0);
  });
  after(() => rmSync(dir, { recursive: true, force: true }));

  it("a mistyped flag: the flag, its suggestion and where the usage is, even where it hides a required option", () => {
    // --nonse for --nonce: commander alone would say "required option '--nonce' not specified", then 100 lines of help
    assert.deepEqual(refused(["device-sim", "--ca", at("vendor-ca"), "--nonse", nonce, "--out", at("blob.bin")]), [
      "attestd: unknown option '--nonse'",
      "(Did you mean --nonce?)",
      "(attestd device-sim --help lists its options)",
    ]);
    assert.deepEqual(refused(["appraise", at("blob.bin"), "--nonce", nonce, "--detial"]), [
      "attestd: unknown option '--detial'",
      "(Did you mean --detail?)",
      "(attestd appraise --help lists its options)",
    ]);
    // a flag with nothing near it: no suggestion, still no help text
    assert.deepEqual(refused(["dev-ca", "--out", at("x"), "--zzz"]), ["attestd: unknown option '--zzz'", "(attestd dev-ca --help lists its options)"]);
  });

  it("a mistyped command, a missing argument or required option: as short", () => {
    assert.deepEqual(refused(["tenat", "list"]), ["attestd: unknown command 'tenat'", "(Did you mean tenant?)", "(attestd --help lists its commands)"]);
    assert.deepEqual(refused(["tenant", "creat", "acme", "--data-dir", at("data")]), [
      "attestd: unknown command 'creat'",
      "(Did you mean create?)",
      "(attestd tenant --help lists its commands)",
    ]);
    assert.deepEqual(refused(["tenant", "create", "--data-dir", at("data")]), [
      "attestd: missing required argument 'name'",
      "(attestd tenant create --help lists its options)",
    ]);
    assert.deepEqual(refused(["dev-ca"]), ["attestd: required option '--out <dir>' not specified", "(attestd dev-ca --help lists its options)"]);
    // asking for help is not an error: the whole help, on stdout, exit 0
    const help = attestdCli(["device-sim", "--help"]);
    assert.equal(help.status, 0);
    assert.ok(lines(help.stdout).length > 20);
  });

  it("--ca DIR: none there, a file, or a directory the other dev-ca wrote: the path and which dev-ca writes it", () => {
    assert.deepEqual(refused(["device-sim", "--ca", at("nowhere"), "--nonce", nonce, "--out", at("blob.bin")]), [
      `attestd: --ca DIR: ${at("nowhere")}: no such directory (expected the output of attestd dev-ca --out DIR)`,
    ]);
    assert.deepEqual(refused(["device-sim", "--ca", path.join(at("vendor-ca"), "root.pem"), "--nonce", nonce, "--out", at("blob.bin")]), [
      `attestd: --ca DIR: ${path.join(at("vendor-ca"), "root.pem")}: not a directory (expected the output of attestd dev-ca --out DIR)`,
    ]);
    mkdirSync(at("empty"));
    assert.deepEqual(refused(["device-sim", "--ca", at("empty"), "--nonce", nonce, "--out", at("blob.bin")]), [
      `attestd: --ca DIR: ${at("empty")}: no root.pem (expected the output of attestd dev-ca --out DIR)`,
    ]);
    assert.deepEqual(refused(["device-sim", "--format", "android-key", "--ca", at("vendor-ca"), "--nonce", nonce, "--out", at("chain.der")]), [
      `attestd: --ca DIR: ${at("vendor-ca")}: no rkp-intermediate.pem (expected the output of attestd dev-ca --android --out DIR)`,
    ]);
  });

  it("--nonce that is not a nonce: echoed as it came (bounded), and what a nonce is", () => {
    assert.deepEqual(refused(["device-sim", "--ca", at("vendor-ca"), "--nonce", "abc", "--out", at("blob.bin")]), [
      'attestd: --nonce "abc": not a nonce (expected 43 base64url characters from POST /v2/nonces)',
    ]);
    // a whole JSON answer pasted for the nonce: its start, not all of it; a control character shown escaped
    const pasted = `{"nonce":"${nonce}"}\n${"x".repeat(500)}`;
    const [line, ...more] = refused(["device-sim", "--format", "play-integrity", "--ca", at("vendor-ca"), "--nonce", pasted]);
    assert.deepEqual(more, []);
    assert.equal(line, `attestd: --nonce ${JSON.stringify(`${pasted.slice(0, 60)}…`)}: not a nonce (expected 43 base64url characters from POST /v2/nonces)`);
  });

  it("files: the flag (or FILE), the path, why, and what belongs there", () => {
    assert.deepEqual(refused(["appraise", at("missing.bin"), "--nonce", nonce]), [
      `attestd: FILE: ${at("missing.bin")}: no such file (expected a blob, a certificate chain or a token, as a device sends it: attestd device-sim --out FILE writes one)`,
    ]);
    assert.deepEqual(refused(["device-sim", "--ca", at("vendor-ca"), "--nonce", nonce, "--out", path.join(at("no-dir"), "blob.bin")]), [
      `attestd: --out FILE: ${path.join(at("no-dir"), "blob.bin")}: no such directory to write it in`,
    ]);
    assert.deepEqual(refused(["device-sim", "--ca", at("vendor-ca"), "--nonce", nonce, "--out", at("b.bin"), "--device-key", path.join(at("no-dir"), "k.json")]), [
      `attestd: --device-key FILE: ${path.join(at("no-dir"), "k.json")}: no such directory to keep it in`,
    ]);
    // the settings file, by flag or environment; a file that is not JSON is not quoted (it may hold a database URL)
    assert.deepEqual(refused(["tenant", "list", "--config", at("attestd.json")]), [
      `attestd: --config FILE: ${at("attestd.json")}: no such file (expected a JSON object of settings, keys as in docs/configuration.md)`,
    ]);
    const notJson = attestdCli(["tenant", "list"], { ATTESTD_CONFIG: path.join(at("vendor-ca"), "root.pem") });
    assert.equal(notJson.status, 1);
    assert.equal(notJson.stderr, `attestd: ATTESTD_CONFIG: ${path.join(at("vendor-ca"), "root.pem")}: not JSON (expected a JSON object of settings, keys as in docs/configuration.md)\n`);
    // a trust flag: the same shape, from where the trust is read (serve says the same at start-up)
    assert.deepEqual(refused(["appraise", path.join(at("vendor-ca"), "root.pem"), "--nonce", nonce, "--data-dir", at("appraise-data"), "--vendor-roots", at("roots.pem")]), [
      `attestd: --vendor-roots FILE: ${at("roots.pem")}: no such file (expected a PEM bundle of vendor root certificates, e.g. the root.pem attestd dev-ca writes)`,
    ]);
    assert.deepEqual(refused(["client", "token-request", "--keys", path.join(at("vendor-ca"), "root.pem")]), [
      `attestd: --keys FILE: ${path.join(at("vendor-ca"), "root.pem")}: not JSON (expected the keys.json attestd client create --out FILE wrote)`,
    ]);
  });

  it("dev-ca into a directory that holds a CA keeps it and says what to do; each CA in its own directory is fine", () => {
    assert.deepEqual(refused(["dev-ca", "--android", "--out", at("vendor-ca")]), [
      `attestd: --out DIR: ${at("vendor-ca")}: already holds a demo CA (root.pem); give each CA its own directory, or --force to replace this one`,
    ]);
    assert.equal(attestdCli(["dev-ca", "--android", "--out", at("android-ca")]).status, 0);
  });

  it("appraise --detail says when its verdict comes from trust flags it was not given, and not when it was", () => {
    const blob = at("vendor.bin");
    assert.equal(attestdCli(["device-sim", "--ca", at("vendor-ca"), "--nonce", nonce, "--out", blob]).status, 0);
    const offline = attestdCli(["appraise", blob, "--nonce", nonce, "--detail", "--data-dir", at("appraise-data")]);
    assert.equal(offline.status, 0, offline.stderr);
    const out = JSON.parse(offline.stdout) as { record: { status: string; verdict: string }; notes?: string[] };
    assert.deepEqual([out.record.status, out.record.verdict], ["CertificateInvalid", "No"]);
    assert.equal(out.notes?.length, 1);
    assert.match(out.notes![0]!, /^no trust roots were given to appraise \(--vendor-roots\), so no vendor chain can pass; the server uses the --vendor-roots it was started with/);
    assert.ok(offline.stderr.includes(`note: ${out.notes![0]}\n`));

    const trusted = attestdCli([
      "appraise", blob, "--nonce", nonce, "--detail", "--data-dir", at("appraise-data"),
      "--vendor-roots", path.join(at("vendor-ca"), "root.pem"), "--reference-values", path.join(at("vendor-ca"), "reference-values.json"),
    ]);
    assert.equal(trusted.status, 0, trusted.stderr);
    const yes = JSON.parse(trusted.stdout) as { record: { verdict: string }; notes?: string[] };
    assert.equal(yes.record.verdict, "Yes");
    assert.equal(yes.notes, undefined);
    assert.doesNotMatch(trusted.stderr, /note:/);

    // android-key: the demo phone's chain, with the demo status list but Google's roots
    const chain = at("chain.der");
    assert.equal(attestdCli(["device-sim", "--format", "android-key", "--ca", at("android-ca"), "--nonce", nonce, "--out", chain]).status, 0);
    const google = attestdCli(["appraise", chain, "--nonce", nonce, "--detail", "--data-dir", at("appraise-data"), "--android-status", path.join(at("android-ca"), "status.json")]);
    const phone = JSON.parse(google.stdout) as { record: { verdict: string }; notes?: string[] };
    assert.equal(phone.record.verdict, "No");
    assert.match(phone.notes?.[0] ?? "", /^no trust roots were given to appraise \(--android-roots\), so only Google's built-in roots are trusted/);
  });
});
