import assert from "node:assert/strict";
import { chmodSync, mkdtempSync, renameSync, rmSync, statSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import path from "node:path";
import { after, before, describe, it } from "node:test";
import { sqliteFile } from "../../src/store/openStores.ts";
import { attestdCli, startServer, type ServerProcess } from "../helpers/serverProcess.ts";

const modeOf = (p: string) => "0" + (statSync(p).mode & 0o777).toString(8);

function logRecords(output: string): Record<string, unknown>[] {
  return output.split("\n").flatMap((l) => {
    try {
      return [JSON.parse(l) as Record<string, unknown>];
    } catch {
      return [];
    }
  });
}

/**
 * `attestd serve` as an operator runs it: what it makes in the data directory only its user can read, it says so
 * when what it finds there is looser, and it will not start with a key other than the one the store's secrets are
 * sealed with. One data directory, served three times.
 */
describe("files only the service can read, and the secrets key at start-up", () => {
  const root = mkdtempSync(path.join(tmpdir(), "attestd-private-"));
  const dir = path.join(root, "data"); // not there yet: serve makes it
  const tls = { caFile: path.join(dir, "tls", "ca.pem") };
  const db = sqliteFile(dir);
  const keyFile = path.join(dir, "secrets.key");
  const tlsKey = path.join(dir, "tls", "server.key.pem");
  let first: ServerProcess;
  after(() => rmSync(root, { recursive: true, force: true }));

  before(async () => {
    first = await startServer(["--data-dir", dir], { tls });
  });

  it("makes the data directory 0700 and the store, its WAL files, the secrets key and the dev TLS key 0600", async () => {
    // a write, so the WAL is in use
    attestdCli(["tenant", "create", "acme", "--data-dir", dir]);
    assert.equal(modeOf(dir), "0700");
    for (const f of [db, `${db}-wal`, `${db}-shm`, keyFile, tlsKey]) assert.equal(modeOf(f), "0600", f);
    assert.equal(modeOf(path.dirname(tlsKey)), "0700");
  });

  it("says at start that it generated the key, and where", () => {
    const records = logRecords(first.output());
    const generated = records.find((r) => String(r.msg).startsWith("secrets key generated") && r.level === 40);
    assert.equal(generated?.keyFile, keyFile, first.output());
    assert.match(String(generated?.keyId), /^[0-9a-f]{16}$/);
    assert.ok(!records.some((r) => typeof r.mode === "string"), "nothing looser than it should be");
  });

  it("operator commands use the same key: `attestd encrypt` works beside the server, and not with another key", async () => {
    const ok = attestdCli(["encrypt", "--tenant", "acme", "--data-dir", dir, "a secret"]);
    assert.equal(ok.status, 0, ok.stderr);
    assert.match(ok.stdout.trim(), /^[A-Za-z0-9+/]+=*$/);
    const wrong = path.join(root, "other.key");
    writeFileSync(wrong, Buffer.alloc(32, 5).toString("base64") + "\n", { mode: 0o600 });
    const refused = attestdCli(["encrypt", "--tenant", "acme", "--data-dir", dir, "--secrets-key-file", wrong, "a secret"]);
    assert.equal(refused.status, 1);
    assert.equal(refused.stderr.trim().split("\n").length, 1, refused.stderr);
    assert.match(refused.stderr, /^attestd: the store's secrets are sealed with key [0-9a-f]{16}, but .*other\.key holds/);
  });

  it("refuses to start, in one line, with another key or without its key", async () => {
    await first.stop();
    const wrong = path.join(root, "other.key");
    const withWrong = attestdCli(["serve", "--port", "0", "--insecure-http", "--data-dir", dir, "--secrets-key-file", wrong]);
    assert.equal(withWrong.status, 1);
    assert.equal(withWrong.stderr.trim().split("\n").length, 1, withWrong.stderr);
    assert.match(withWrong.stderr, /^attestd: the store's secrets are sealed with key [0-9a-f]{16}, but /);

    // the key file moved away: the store still needs it, so no new key is made in its place
    const kept = path.join(root, "kept.key");
    renameSync(keyFile, kept);
    const without = attestdCli(["serve", "--port", "0", "--insecure-http", "--data-dir", dir]);
    renameSync(kept, keyFile);
    assert.equal(without.status, 1);
    assert.equal(without.stderr.trim().split("\n").length, 1, without.stderr);
    assert.match(without.stderr, /^attestd: the store's secrets are sealed with key [0-9a-f]{16} and there is no key file at .*secrets\.key/);
  });

  it("warns once per file or directory that others may read, naming it and its mode", async () => {
    chmodSync(dir, 0o755);
    chmodSync(db, 0o644); // SQLite gives the -wal and -shm it makes this mode too
    chmodSync(keyFile, 0o640);
    chmodSync(tlsKey, 0o644);
    const again = await startServer(["--data-dir", dir], { tls });
    try {
      const warned = new Map(logRecords(again.output()).filter((r) => typeof r.mode === "string").map((r) => [r.path as string, r]));
      const expected: [string, string, string][] = [
        [dir, "0755", "0700"],
        [db, "0644", "0600"],
        [`${db}-wal`, "0644", "0600"],
        [`${db}-shm`, "0644", "0600"],
        [keyFile, "0640", "0600"],
        [tlsKey, "0644", "0600"],
      ];
      for (const [p, mode, want] of expected) {
        const w = warned.get(p);
        assert.equal(w?.mode, mode, `${p}: ${again.output()}`);
        assert.equal(w?.expected, want);
        assert.equal(w?.level, 40, "a warning");
        assert.ok(String(w?.msg).includes(p) && String(w?.msg).includes(mode), String(w?.msg));
      }
      assert.equal(warned.size, expected.length, [...warned.keys()].join(", "));
    } finally {
      await again.stop();
    }
  });
});
