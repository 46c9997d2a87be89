import { Command, CommanderError, type Option } from "commander";
import { OperatorError } from "../errors/operatorError.ts";
import { PACKAGE_VERSION } from "../packageInfo.ts";
import type { CommandDefinitions } from "./options.ts";

/**
 * The `attestd` command's top-level commands: each one's summary (the `attestd --help` list) and the module that
 * defines it. A module, and everything it imports, is loaded only when one of its commands runs or its help is
 * asked for: `attestd --help` loads commander alone, `attestd tenant list` the store and the tenant service, and
 * only `serve` loads the server (bench/README.md, "Start-up", measures it).
 */
const COMMANDS: Record<string, { summary: string; load: () => Promise<{ commands: CommandDefinitions }> }> = {
  serve: { summary: "run the service (https://localhost:8443 with dev TLS by default, listening on 127.0.0.1)", load: () => import("./serveCommand.ts") },
  tenant: { summary: "manage tenants", load: () => import("./tenantCommands.ts") },
  key: { summary: "manage Part A API keys", load: () => import("./tenantCommands.ts") },
  refvals: { summary: "manage reference values: the global sets, or a tenant's own", load: () => import("./referenceValueCommands.ts") },
  "dev-ca": { summary: "write a demo vendor CA (or with --android a demo Android attestation PKI, with --play-integrity a demo Play app's keys) for the simulator", load: () => import("./simulatorCommands.ts") },
  "device-sim": { summary: "write what a device sends: a vendor-container blob, an Android key-attestation chain or a Play Integrity token", load: () => import("./simulatorCommands.ts") },
  appraise: { summary: "appraise one blob offline with the same trust flags as serve", load: () => import("./appraiseCommand.ts") },
  client: { summary: "manage enrollment (Part B) API clients", load: () => import("./clientCommands.ts") },
  user: { summary: "manage people: the users enrollment clients act for, and who signs in to the portal", load: () => import("./clientCommands.ts") },
  activity: { summary: "print the activity log (Part A and B requests)", load: () => import("./clientCommands.ts") },
  encrypt: { summary: "encrypt TEXT to a tenant's encryption key (as a client does for userPassword)", load: () => import("./clientCommands.ts") },
  keys: { summary: "manage the keys attestd signs its results (EARs) with", load: () => import("./signingKeyCommands.ts") },
  "play-app": { summary: "manage a tenant's Google Play apps: their policy and the keys their Play Integrity tokens open with", load: () => import("./playAppCommands.ts") },
  "ios-app": { summary: "manage a tenant's iOS apps: the app ids (and environments) its App Attest attestations are judged against", load: () => import("./iosAppCommands.ts") },
  "ios-key": { summary: "list, show or revoke the App Attest keys a tenant's devices attested", load: () => import("./iosAppCommands.ts") },
  device: { summary: "per-device memory: the devices relying parties name, and their pins", load: () => import("./deviceCommands.ts") },
  webhook: { summary: "manage a tenant's signed webhooks: endpoints, their secrets, deliveries and resends", load: () => import("./webhookCommands.ts") },
  policy: { summary: "show, set, list or roll back a tenant's appraisal policy versions (docs/policy.md)", load: () => import("./policyCommands.ts") },
  sso: { summary: "map the identity provider's people to a tenant and role for the portal's single sign-on", load: () => import("./ssoCommands.ts") },
  audit: { summary: "print or export the audit trail: every change of state, who made it and from where", load: () => import("./auditCommands.ts") },
};

/**
 * commander's Command, but a mistyped flag is reported as itself. Commander checks for missing required options
 * before unknown ones, so `device-sim --nonse N` would say "required option '--nonce' not specified" and never
 * offer "did you mean --nonce?"; here an unknown option on the command line is reported first, with its suggestion.
 * `missingMandatoryOptionValue` and `unknownOption` are commander's own (untyped) error methods;
 * test/e2e/cliErrors.test.ts holds the behaviour, so an upgrade that renames them fails there.
 */
class AttestdCommand extends Command {
  override createCommand(name?: string): Command {
    return new AttestdCommand(name);
  }

  missingMandatoryOptionValue(option: Option): void {
    // what parsing left unknown starts at the first unknown option (operands before it never start with "-")
    const unknown = this.args.find((a) => a.startsWith("-") && a !== "-" && a !== "--");
    const own = Command.prototype as unknown as { unknownOption(flag: string): void; missingMandatoryOptionValue(o: Option): void };
    if (unknown !== undefined) own.unknownOption.call(this, unknown);
    own.missingMandatoryOptionValue.call(this, option);
  }
}

const program = new AttestdCommand()
  .name("attestd")
  .description("Device attestation service: nonces, blob appraisal, enrollment API")
  .version(PACKAGE_VERSION)
  // commander's "error: ..." as the command's other errors are written: "attestd: ..."
  .configureOutput({ outputError: (text, write) => write(text.replace(/^error: /, "attestd: ")) })
  .exitOverride();
for (const [name, { summary }] of Object.entries(COMMANDS)) program.command(name).summary(summary);

/**
 * After a usage error (unknown option or command, missing argument) one line says where the usage is, rather than
 * the whole help: the error and its "did you mean" stay on screen. Set on every command defined by now.
 */
function pointAtHelpAfterErrors(command: Command, words: readonly string[] = []): void {
  const path = ["attestd", ...words].join(" ");
  command.showHelpAfterError(command.commands.length ? `(${path} --help lists its commands)` : `(${path} --help lists its options)`);
  for (const sub of command.commands) pointAtHelpAfterErrors(sub, [...words, sub.name()]);
}

/** The command this invocation runs (or asks help for): the first word that is not an option, after `help`. */
function requestedCommand(argv: readonly string[]): string | undefined {
  const words = argv.slice(2).filter((a) => !a.startsWith("-"));
  return words[0] === "help" ? words[1] : words[0];
}

try {
  const name = requestedCommand(process.argv);
  const entry = name === undefined ? undefined : COMMANDS[name];
  if (entry) {
    const { commands } = await entry.load();
    commands[name!]!(program.commands.find((c) => c.name() === name)!);
  }
  pointAtHelpAfterErrors(program);
  await program.parseAsync(process.argv);
} catch (err) {
  if (err instanceof CommanderError) process.exit(err.exitCode);
  process.stderr.write(`attestd: ${(err as Error).message}\n`);
  if (!(err instanceof OperatorError) && process.env.ATTESTD_DEBUG) process.stderr.write(`${(err as Error).stack}\n`);
  process.exit(1);
}
