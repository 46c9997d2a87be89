import assert from "node:assert/strict";
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import path from "node:path";
import { after, describe, it } from "node:test";
import { DEFAULT_MEASUREMENTS } from "../../src/attestation/sim/deviceSim.ts";
import { formatClientKeys, parseClientKeys } from "../../src/enrollment/clientJwt.ts";
import { attestdCli } from "../helpers/serverProcess.ts";

const DIGESTS = DEFAULT_MEASUREMENTS.map((m) => Buffer.from(m).toString("hex"));

/**
 * The operator's side of what the portal's enrollment pages do, as scripts run it: `refvals import|list|delete`
 * with and without --tenant, and `client revoke|read-only|list`. Each is the same service the portal calls.
 */
describe("refvals and client commands", () => {
  const dir = mkdtempSync(path.join(tmpdir(), "attestd-cli-enroll-"));
  const data = ["--data-dir", dir];
  const run = (...args: string[]) => attestdCli([...args, ...data]);
  const file = (name: string, body: unknown) => {
    const f = path.join(dir, name);
    writeFileSync(f, typeof body === "string" ? body : JSON.stringify(body));
    return f;
  };
  after(() => rmSync(dir, { recursive: true, force: true }));

  it("imports, lists and deletes reference sets per scope; a faulty file is refused whole, naming the item", () => {
    assert.equal(run("tenant", "create", "acme").status, 0);
    const set = (firmwareVersion: string, measurements = DIGESTS) => ({ model: "SM-X100", firmwareVersion, measurements });

    const bad = run("refvals", "import", file("bad.json", [set("A1"), set("B2", ["xyz"])]), "--tenant", "acme");
    assert.equal(bad.status, 1);
    assert.match(bad.stderr, /bad\.json: item 1 \("SM-X100" \/ "B2"\): measurements\[0\] is not 64 hex digits/);

    const own = run("refvals", "import", file("own.json", [set("A1"), set("B2")]), "--tenant", "acme");
    assert.equal(own.status, 0, own.stderr);
    assert.deepEqual(JSON.parse(own.stdout), { imported: 2 });
    assert.equal(run("refvals", "import", file("global.json", [set("G1")])).status, 0);

    const listed = JSON.parse(run("refvals", "list", "--tenant", "acme").stdout) as { source: string; firmwareVersion: string; measurements: string[] }[];
    assert.deepEqual(listed.map((s) => [s.source, s.firmwareVersion, s.measurements.length]), [["tenant", "A1", 7], ["tenant", "B2", 7]], "the tenant's, and only them");
    const global = JSON.parse(run("refvals", "list", "--reference-values", file("startup.json", [set("F1")])).stdout) as { source: string; firmwareVersion: string }[];
    assert.deepEqual(global.map((s) => [s.source, s.firmwareVersion]), [["file", "F1"], ["global", "G1"]]);

    assert.equal(run("refvals", "delete", "--model", "SM-X100", "--firmware", "A1", "--tenant", "acme").status, 0);
    const again = run("refvals", "delete", "--model", "SM-X100", "--firmware", "A1", "--tenant", "acme");
    assert.equal(again.status, 1);
    assert.match(again.stderr, /no set of tenant acme for model "SM-X100", firmware "A1"/);
    assert.equal(run("refvals", "delete", "--model", "SM-X100", "--firmware", "B2").status, 1, "B2 is acme's, not a global set");
    assert.deepEqual((JSON.parse(run("refvals", "list", "--tenant", "acme").stdout) as { firmwareVersion: string }[]).map((s) => s.firmwareVersion), ["B2"]);
  });

  it("revokes a client (kept, marked) and sets its read-only flag; keys.json is formatClientKeys's text", () => {
    const out = path.join(dir, "keys.json");
    const made = run("client", "create", "--tenant", "acme", "--user", "ops@acme.example", "--out", out);
    assert.equal(made.status, 0, made.stderr);
    const text = readFileSync(out, "utf8");
    assert.equal(text, formatClientKeys(parseClientKeys(text)), "the bytes the portal's download holds");
    const { clientId } = JSON.parse(made.stdout) as { clientId: string };

    assert.equal(run("client", "read-only", clientId).status, 0);
    const list = () => JSON.parse(run("client", "list", "--tenant", "acme").stdout) as { clientId: string; email: string; readOnly: boolean; state: string; revokedAt: string | null }[];
    assert.deepEqual(list().map((c) => [c.clientId, c.email, c.readOnly, c.state]), [[clientId, "ops@acme.example", true, "active"]]);
    assert.equal(run("client", "read-only", clientId, "--off").status, 0);
    assert.equal(list()[0]!.readOnly, false);

    assert.equal(run("client", "revoke", clientId).status, 0);
    const [revoked] = list();
    assert.equal(revoked!.state, "revoked");
    assert.ok(revoked!.revokedAt);
    const twice = run("client", "revoke", clientId);
    assert.equal(twice.status, 1);
    assert.match(twice.stderr, /no active client/);
    assert.equal(run("client", "read-only", clientId).status, 1, "a revoked client has no flag to set");
  });
});
