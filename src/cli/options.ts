import { Command, Option } from "commander";
import { readFileSync, writeFileSync } from "node:fs";
import { flagName, envName, loadConfig, settings, type Config, type SettingName } from "../config.ts";
import type { Stores } from "../store/types.ts";
import type { Tenant } from "../domain/tenants.ts";
import { isAppError } from "../errors/AppError.ts";
import { fileProblem, OperatorError, pathMessage } from "../errors/operatorError.ts";
import { hostname, userInfo } from "node:os";
import { cryptoRng, systemClock } from "../clock.ts";
import { AuditTrail, type ChangeActor } from "../services/auditTrail.ts";
import { auditSinks } from "../services/auditSinks.ts";

/**
 * What a command module gives main.ts: for each top-level command it owns (by name), the function that defines it
 * (arguments, options, subcommands, action) on the command main.ts made. main.ts imports a module only when one of
 * its commands runs, so a module may import whatever its commands need.
 */
export type CommandDefinitions = Record<string, (command: Command) => void>;

export const STORAGE_SETTINGS: SettingName[] = [
  "dataDir",
  "secretsKeyFile",
  "store",
  "databaseUrl",
  "redisUrl",
  "pgPoolMax",
  "sqliteSynchronous",
  "allowNewStore",
  "logLevel",
  "auditFile",
  "auditSyslog",
];

export const TRUST_SETTINGS: SettingName[] = [
  "vendorRoots",
  "referenceValues",
  "revocations",
  "androidRoots",
  "appAttestRoots",
  "androidStatus",
  "allowedBootKeys",
  "androidMaxAge",
  "androidRefresh",
  "androidMaxShrink",
  "androidMinPatchLevel",
  "androidPolicy",
];

/** Adds `--flag` options for settings; defaults are left to loadConfig so env and the config file can apply. */
export function addSettings(cmd: Command, names: readonly SettingName[]): Command {
  for (const name of names) {
    const s = settings[name];
    // a bool flag alone is true; its value may follow, so one that defaults to true can be turned off (--api-docs false)
    const flag = s.kind === "bool" ? `--${flagName(name)} [true|false]` : `--${flagName(name)} <${s.kind === "list" ? "list" : "value"}>`;
    const def = "default" in s && s.default !== undefined && s.kind !== "bool" ? ` (default ${JSON.stringify(s.default)})` : "";
    const opt = new Option(flag, `${s.help}${def}; env ${envName(name)}`);
    if ("choices" in s && s.choices) opt.choices(s.choices as readonly string[]);
    cmd.addOption(opt);
  }
  if (!cmd.options.some((o) => o.long === "--config")) {
    cmd.addOption(new Option("--config <file>", "JSON config file (keys as in the settings); env ATTESTD_CONFIG"));
  }
  return cmd;
}

export function configFrom(cmd: Command): Config {
  return loadConfig(cmd.opts());
}

/** Runs `fn` with the stores of the command's configuration, closing them afterwards. */
export async function withStores<T>(cmd: Command, fn: (stores: Stores, config: Config) => Promise<T>): Promise<T> {
  const config = configFrom(cmd);
  // loaded here, not at the top: commands that never touch the store (dev-ca, --help) skip the store modules
  const { openStores, CLI_STORE_OPTIONS } = await import("../store/openStores.ts");
  const stores = await openStores(config, CLI_STORE_OPTIONS);
  try {
    return await fn(stores, config);
  } finally {
    await stores.close();
  }
}

/**
 * The operator at the CLI as the audit trail names them (docs/audit.md): the OS user that runs `attestd`, on this
 * host, every record also streamed to --audit-file / --audit-syslog. Every command that changes state passes it to
 * the service; `close()` once the command is done sends what the sinks still hold.
 */
export function operatorActor(stores: Stores, config: Config): ChangeActor & { close(): Promise<void> } {
  const sinks = auditSinks(config);
  const trail = new AuditTrail(stores.durable, systemClock, cryptoRng, {
    sinks,
    log: { error: (obj, msg) => process.stderr.write(`warning: ${msg}: ${String((obj as { err?: unknown }).err)}\n`) },
  });
  return { ...trail.as({ kind: "operator", id: osUser() }, { kind: "cli", hostname: hostname() }), close: () => trail.close() };
}

function osUser(): string {
  try {
    return userInfo().username;
  } catch {
    // a uid with no passwd entry (a container's arbitrary uid)
    return `uid:${process.getuid?.() ?? "unknown"}`;
  }
}

/** Runs `fn` with the stores and the operator as the audit trail's actor, closing both afterwards. */
export async function withOperator<T>(cmd: Command, fn: (stores: Stores, by: ChangeActor, config: Config) => Promise<T>): Promise<T> {
  return withStores(cmd, async (stores, config) => {
    const by = operatorActor(stores, config);
    try {
      return await fn(stores, by, config);
    } finally {
      await by.close();
    }
  });
}

/** A command failure the user can act on: printed as one line, exit 1, no stack. */
export class CliError extends OperatorError {}

export async function tenantNamed(stores: Stores, name: string): Promise<Tenant> {
  const t = await stores.durable.getTenantByName(name);
  if (!t) throw new CliError(`no tenant named "${name}"`);
  return t;
}

/** The services' refusals (a taken name, no such tenant, a bad restriction) are the operator's to fix: one line, no stack. */
export async function refusals<T>(fn: () => Promise<T>): Promise<T> {
  try {
    return await fn();
  } catch (e) {
    if (isAppError(e)) throw new CliError(e.reason);
    throw e;
  }
}

/**
 * A file the command was given, or a CliError naming where it was given (`--service-account FILE`, or `FILE` for an
 * argument), the path, why it could not be read and what was expected there.
 */
export function readFileOrFail(file: string, what: string, expected?: string): Buffer {
  try {
    return readFileSync(file);
  } catch (e) {
    throw new CliError(pathMessage(what, file, fileProblem(e), expected));
  }
}

/** Writes a file the command was told to write, or a CliError naming the flag, the path and why it could not be. */
export function writeFileOrFail(file: string, data: string | Uint8Array, what: string, options?: { mode?: number; flag?: string }): void {
  try {
    writeFileSync(file, data, options);
  } catch (e) {
    const code = (e as NodeJS.ErrnoException).code;
    // the file is new: a missing path is its directory's
    const problem = code === "ENOENT" ? "no such directory to write it in" : code === "EEXIST" ? "already exists" : fileProblem(e);
    throw new CliError(pathMessage(what, file, problem));
  }
}
