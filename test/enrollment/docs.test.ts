import assert from "node:assert/strict";
import { readFileSync } from "node:fs";
import path from "node:path";
import { describe, it } from "node:test";
import { renderErrorDocs } from "../../src/errors/renderErrorDocs.ts";
import { REPO } from "../helpers/serverProcess.ts";
import { walkthroughBlocks, walkthroughSession } from "../helpers/walkthrough.ts";

const jsonLines = (text: string) =>
  text
    .split("\n")
    .filter((l) => l.startsWith("{") && l.endsWith("}"))
    .map((l) => JSON.parse(l) as Record<string, any>);

describe("enrollment docs", () => {
  it("docs/errors.md matches the catalog (regenerate: node --import tsx src/errors/renderErrorDocs.ts > docs/errors.md)", () => {
    assert.equal(readFileSync(path.join(REPO, "docs/errors.md"), "utf8"), renderErrorDocs());
  });

  /**
   * Runs docs/enrollment.md's walk-through as written, with the README test's two substitutions (./data → a
   * temporary directory, 8443 → a free port, also given to the CLI as ATTESTD_DATA_DIR / ATTESTD_PORT). The blocks
   * after the server start run in one shell, as in one terminal, so their variables and helper carry over.
   */
  it("runs the walk-through: client → token → profile → devices → status → error lookup", { timeout: 180_000 }, async () => {
    const blocks = walkthroughBlocks("docs/enrollment.md");
    assert.equal(blocks.length, 8, "setup, start, token, helper, profile, devices, status, error lookup");
    const { data, localise, bash, startServer, close } = await walkthroughSession();
    try {
      bash(localise(blocks[0]!));
      await startServer(blocks[1]!);
      const script = blocks
        .slice(2)
        .map((b, i) => `echo "@@block ${i + 2}@@"\n${localise(b)}`)
        .join("\n");
      const out: Record<number, string> = {};
      for (const part of bash(script).split(/^@@block (\d+)@@$/m).slice(1).reduce<string[][]>((acc, x, i) => {
        if (i % 2 === 0) acc.push([x]);
        else acc[acc.length - 1]!.push(x);
        return acc;
      }, [])) {
        out[Number(part[0])] = part[1] ?? "";
      }

      const [created] = jsonLines(out[4]!);
      assert.match(created!.profileId, /^pr_/);
      assert.match(created!.transactionId, /^tx_/);

      const devicesOut = jsonLines(out[5]!);
      assert.equal(devicesOut[0]!.algorithm, "RSA-OAEP-256");
      const upload = devicesOut.at(-1)!;
      assert.match(upload.transactionId, /^tx_/);

      const [deviceList, status] = jsonLines(out[6]!).slice(-2);
      assert.equal(deviceList!.totalCount, 2);
      assert.equal(deviceList!.processingCount, 0);
      assert.deepEqual(
        deviceList!.deviceList.map((d: { deviceId: string; state: string; profileId: string }) => [d.deviceId, d.state, d.profileId]),
        [
          ["356938035643809", "Enrolled", created!.profileId],
          ["R58M12ABCDE", "Enrolled", created!.profileId],
        ],
      );
      assert.equal(status!.profiles.totalCount, 2);
      assert.deepEqual(
        status!.profiles.transactions.map((t: { transactionId: string; state: string }) => [t.transactionId, t.state]),
        [
          [upload.transactionId, "Complete"],
          [created!.transactionId, "Complete"],
        ],
      );

      const [error, logged] = jsonLines(out[7]!);
      assert.equal(error!.code, "4040400");
      assert.equal(error!.message, "PROFILE_NOT_FOUND");
      assert.equal(logged!.errorId, error!.errorId, "the activity log finds the request from its errorId");
      assert.equal(logged!.status, 404);
      assert.equal(logged!.route, "/svc/v1/enroll/profiles/:profileId");
      assert.match(logged!.clientId, /^cl_/);

      // keys.json is written once: a second create refuses and leaves the file (and the store) alone
      const keysBefore = readFileSync(path.join(data, "keys.json"), "utf8");
      const again = `npm run --silent attestd -- client create --tenant acme --user ops@acme.example --out ${data}/keys.json`;
      assert.throws(() => bash(again), /already exists/);
      assert.equal(readFileSync(path.join(data, "keys.json"), "utf8"), keysBefore);
      const tenantLog = jsonLines(bash("npm run --silent attestd -- activity --tenant acme --since 10m"));
      assert.ok(tenantLog.some((e) => e.route === "/svc/v1/enroll/devices" && e.method === "POST" && e.status === 200));
      assert.ok(tenantLog.every((e) => e.tenantId === logged!.tenantId));
    } finally {
      await close();
    }
  });
});
