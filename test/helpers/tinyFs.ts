import { spawnSync } from "node:child_process";
import { closeSync, mkdirSync, openSync, rmSync, writeSync } from "node:fs";
import path from "node:path";

/**
 * A small filesystem of its own (tmpfs) for tests of a full disk: the log's, the data dir's. Mounting needs root,
 * which the tests and CI have; when it is refused the test fails saying so, it is never skipped (a full disk would
 * then go untested without anyone noticing).
 */
export function mountTinyFs(dir: string, size: string): void {
  mkdirSync(dir, { recursive: true });
  const r = spawnSync("mount", ["-t", "tmpfs", "-o", `size=${size},mode=0700`, "tmpfs", dir], { encoding: "utf8" });
  if (r.status !== 0) {
    throw new Error(
      `cannot mount a ${size} tmpfs on ${dir} (${(r.stderr || r.error?.message || "").trim()}): ` +
        "the full-disk tests need root (or CAP_SYS_ADMIN) to make a small filesystem; run them as root, as CI does",
    );
  }
}

export function unmountTinyFs(dir: string): void {
  spawnSync("umount", ["-l", dir]);
  rmSync(dir, { recursive: true, force: true });
}

/** Fills the filesystem under `dir` to the last byte with one file, whose path it returns (remove it to free the space). */
export function fillUp(dir: string, name = "filler"): string {
  const file = path.join(dir, name);
  const fd = openSync(file, "a");
  try {
    for (let chunk = 64 * 1024; chunk >= 1; ) {
      try {
        writeSync(fd, Buffer.alloc(chunk));
      } catch (err) {
        if ((err as NodeJS.ErrnoException).code !== "ENOSPC") throw err;
        chunk = Math.floor(chunk / 2);
      }
    }
  } finally {
    closeSync(fd);
  }
  return file;
}
