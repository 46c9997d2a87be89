import { Command, CommanderError } from "commander";
import { ConfigError, settings, type SettingName } from "../config.ts";
import { serve, StartupError } from "../main.ts";
import { SecretsError } from "../secrets/secretBox.ts";
import { addSettings, CliError, configFrom } from "./options.ts";
import { registerTenantCommands } from "./tenantCommands.ts";
import { registerAttestationCommands } from "./attestationCommands.ts";
import { registerClientCommands } from "./clientCommands.ts";
import { registerSigningKeyCommands } from "./signingKeyCommands.ts";
import { registerDeviceCommands } from "./deviceCommands.ts";

const program = new Command()
  .name("attestd")
  .description("Device attestation service: nonces, blob appraisal, enrollment API")
  .showHelpAfterError()
  .exitOverride();

addSettings(
  program.command("serve").description("run the service (HTTPS on 127.0.0.1:8443 with dev TLS by default)"),
  Object.keys(settings) as SettingName[],
).action(async (_opts: unknown, cmd: Command) => {
  await serve(configFrom(cmd));
});

registerTenantCommands(program);
registerAttestationCommands(program);
registerClientCommands(program);
registerSigningKeyCommands(program);
registerDeviceCommands(program);

try {
  await program.parseAsync(process.argv);
} catch (err) {
  if (err instanceof CommanderError) process.exit(err.exitCode);
  const known = err instanceof CliError || err instanceof ConfigError || err instanceof StartupError || err instanceof SecretsError;
  process.stderr.write(`attestd: ${(err as Error).message}\n`);
  if (!known && process.env.ATTESTD_DEBUG) process.stderr.write(`${(err as Error).stack}\n`);
  process.exit(1);
}
