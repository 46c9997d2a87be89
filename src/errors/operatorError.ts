/**
 * A failure the operator can act on: a malformed flag or config file, an unreadable file, a start-up refused for a
 * stated reason, a secrets key that does not open the store. The `attestd` command prints its message as one line
 * and exits 1, with no stack trace; anything else is a bug and gets its stack with ATTESTD_DEBUG=1. A class of its
 * own, in a module that imports nothing, so the command can recognise these without loading the server.
 */
export class OperatorError extends Error {}

/**
 * Why a path could not be used, in words an operator reads at a glance ("no such file", "permission denied") rather
 * than the system's code (ENOENT); a code without words here is given as it is. `kind` is what the path should be.
 */
export function fileProblem(e: unknown, kind: "file" | "directory" = "file"): string {
  const code = (e as NodeJS.ErrnoException).code;
  const words: Record<string, string> = {
    ENOENT: `no such ${kind}`,
    EACCES: "permission denied",
    EPERM: "permission denied",
    EISDIR: "a directory, not a file",
    ENOTDIR: kind === "directory" ? "not a directory" : "a part of the path is not a directory",
    EROFS: "on a read-only file system",
    ENOSPC: "no space left on the device",
  };
  if (code === undefined) return (e as Error).message;
  return words[code] ?? code;
}

/**
 * One line for a path given to a flag that could not be used: the flag with its placeholder, the path, the problem
 * and, when it helps, what was expected there: `--ca DIR: /x/y: no such directory (expected the output of attestd
 * dev-ca --out DIR)`.
 */
export function pathMessage(flag: string, file: string, problem: string, expected?: string): string {
  return `${flag}: ${file}: ${problem}${expected ? ` (expected ${expected})` : ""}`;
}
