import { readdirSync, readFileSync } from "node:fs";
import path from "node:path";

export interface Migration {
  version: number;
  name: string;
  sql: string;
}

/**
 * Numbered SQL files (`NNN_name.sql`) of one backend, in order. A gap or a duplicate number is a packaging
 * mistake that would leave instances disagreeing on the schema, so it stops start-up.
 */
export function loadMigrations(dir: string): Migration[] {
  const files = readdirSync(dir).filter((f) => f.endsWith(".sql")).sort();
  const out = files.map((file) => {
    const m = /^(\d{3})_([a-z0-9_]+)\.sql$/.exec(file);
    if (!m) throw new Error(`migration file ${file} in ${dir} is not named NNN_name.sql`);
    return { version: Number(m[1]), name: m[2]!, sql: readFileSync(path.join(dir, file), "utf8") };
  });
  out.forEach((m, i) => {
    if (m.version !== i + 1) throw new Error(`migrations in ${dir}: expected version ${i + 1}, found ${m.version}`);
  });
  return out;
}
