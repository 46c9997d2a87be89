import { spawn } from "node:child_process";
import { createInterface } from "node:readline";
import { connectionArgs } from "../../src/store/sqlite/database.ts";

/**
 * Another process holding the write lock of a SQLite file, as an `attestd` command (or any other program) may
 * while the server runs: `BEGIN IMMEDIATE`, held until `release()` (which COMMITs) or the test process exits.
 */
export interface HeldSqliteLock {
  /** commits and ends the holder; resolves once the lock is free */
  release(): Promise<void>;
}

const HOLDER = `
const { DatabaseSync } = require("node:sqlite");
const { location, options } = JSON.parse(process.argv[1]);
const db = new DatabaseSync(location, options);
db.exec("BEGIN IMMEDIATE");
process.stdout.write("locked\\n");
process.stdin.once("data", () => {
  db.exec("COMMIT");
  db.close();
  process.stdout.write("released\\n");
  process.exit(0);
});
`;

/** Resolves once the other process holds the lock. */
export async function holdSqliteLock(file: string): Promise<HeldSqliteLock> {
  const connection = JSON.stringify(connectionArgs(file, { mustExist: true }));
  const child = spawn(process.execPath, ["-e", HOLDER, connection], { stdio: ["pipe", "pipe", "inherit"] });
  process.once("exit", () => child.kill("SIGKILL"));
  const lines = createInterface({ input: child.stdout! })[Symbol.asyncIterator]();
  const next = async (want: string) => {
    const { value, done } = await lines.next();
    if (done || value !== want) throw new Error(`SQLite lock holder: expected "${want}", got ${done ? "its exit" : `"${value}"`}`);
  };
  await next("locked");
  return {
    release: async () => {
      child.stdin!.end("release\n");
      await next("released");
    },
  };
}
