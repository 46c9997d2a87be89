import { existsSync, readFileSync } from "node:fs";
import path from "node:path";

/**
 * The package's root directory and version. The same modules run from `src/` (tsx: tests, development) and from the
 * compiled build in `dist/src/` (npm start, the `attestd` bin, an installed package), one directory deeper, so a
 * path relative to a module cannot name the root: the nearest directory above with a package.json does.
 */
function findPackageRoot(from: string): string {
  for (let dir = from; ; dir = path.dirname(dir)) {
    if (existsSync(path.join(dir, "package.json"))) return dir;
    if (path.dirname(dir) === dir) throw new Error(`no package.json above ${from}`);
  }
}

export const PACKAGE_ROOT = findPackageRoot(import.meta.dirname);

export const PACKAGE_VERSION = (JSON.parse(readFileSync(path.join(PACKAGE_ROOT, "package.json"), "utf8")) as { version: string }).version;
