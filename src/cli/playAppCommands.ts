import { Command, Option } from "commander";
import { cryptoRng, systemClock } from "../clock.ts";
import type { Tenant } from "../domain/tenants.ts";
import { openSecrets } from "../secrets/openSecrets.ts";
import { DEVICE_FLOOR_NAMES, PLAY_APP_CACHE_MS, PlayAppRegistry, type PlayAppInput } from "../services/playApps.ts";
import type { Stores } from "../store/types.ts";
import type { ChangeActor } from "../services/auditTrail.ts";
import { addSettings, CliError, readFileOrFail, refusals, STORAGE_SETTINGS, tenantNamed, withOperator, type CommandDefinitions } from "./options.ts";

/** `attestd play-app add|list|remove` (mobile-attestation.md, "Per-tenant configuration"): the same PlayAppRegistry as the portal. */
export const commands: CommandDefinitions = { "play-app": definePlayApp };

/**
 * Runs `fn` with the tenant's registry, over the secrets key `serve` uses (--secrets-key-file), as `attestd encrypt`
 * does: what `add` seals must open in the server.
 */
async function withRegistry<T>(cmd: Command, tenantName: string, fn: (apps: PlayAppRegistry, tenant: Tenant, by: ChangeActor) => Promise<T>): Promise<T> {
  return withOperator(cmd, async (stores: Stores, by, config) => {
    const tenant = await tenantNamed(stores, tenantName);
    const { box } = await openSecrets(stores.secrets, config);
    return fn(new PlayAppRegistry(stores.durable, systemClock, cryptoRng, box), tenant, by);
  });
}

const collect = (value: string, previous: string[] = []) => [...previous, value];

function positiveInteger(value: string): number {
  if (!/^\d{1,9}$/.test(value)) throw new CliError(`--max-age-seconds must be a whole number of seconds, not "${value}"`);
  return Number(value);
}

interface AddOptions {
  tenant: string;
  package: string;
  certDigest?: string[];
  decryptionKey?: string;
  verificationKey?: string;
  serviceAccount?: string;
  deviceFloor?: keyof typeof DEVICE_FLOOR_NAMES;
  maxAgeSeconds?: number;
  requireLicensed?: boolean;
  requirePlayProtect?: boolean;
  requireAppAccessRisk?: boolean;
}

function definePlayApp(playApp: Command): void {
  addSettings(
    playApp
      .command("add")
      .description(
        "register a tenant's Google Play app: its response keys from the Play Console (attestd opens its tokens) or a " +
          "service-account key file (Google decodes them). Prints the registration as JSON; the keys are sealed and never shown again",
      )
      .requiredOption("--tenant <name>", "tenant name")
      .requiredOption("--package <name>", "the app's package name (application id), such as com.example.app")
      .option("--cert-digest <hex>", "SHA-256 of a signing certificate (64 hex, or colon-separated as the Play Console shows it); repeat for several; none: any certificate", collect)
      .option("--decryption-key <base64>", "the Play Console's response decryption key (AES-256, base64)")
      .option("--verification-key <base64>", "the Play Console's response verification key (EC P-256, base64)")
      .option("--service-account <file>", "a Google service-account key file (JSON), instead of the two keys")
      .addOption(new Option("--device-floor <level>", "the lowest device verdict that passes (default device: MEETS_DEVICE_INTEGRITY)").choices(Object.keys(DEVICE_FLOOR_NAMES)))
      .option("--max-age-seconds <n>", "how old a token may be, 10..86400 (default 300)", positiveInteger)
      .option("--require-licensed", "the app must be licensed to the user (appLicensingVerdict LICENSED)")
      .option("--require-play-protect", "Play Protect must report no issues (playProtectVerdict NO_ISSUES)")
      .option("--require-app-access-risk", "no app that can capture the screen or control the device may be running"),
    STORAGE_SETTINGS,
  ).action(async (o: AddOptions, cmd: Command) => {
    const keys = o.decryptionKey !== undefined || o.verificationKey !== undefined;
    if (keys === (o.serviceAccount !== undefined)) {
      throw new CliError("give --decryption-key and --verification-key, or --service-account FILE (one of the two)");
    }
    if (keys && (o.decryptionKey === undefined || o.verificationKey === undefined)) {
      throw new CliError("the response keys are two: give both --decryption-key and --verification-key");
    }
    const input: PlayAppInput = {
      packageName: o.package,
      certDigests: o.certDigest ?? [],
      ...(o.deviceFloor ? { deviceFloor: DEVICE_FLOOR_NAMES[o.deviceFloor] } : {}),
      ...(o.maxAgeSeconds !== undefined ? { maxAgeSeconds: o.maxAgeSeconds } : {}),
      require: { licensed: o.requireLicensed === true, playProtect: o.requirePlayProtect === true, appAccessRisk: o.requireAppAccessRisk === true },
      ...(keys
        ? { responseKeys: { decryptionKey: o.decryptionKey!, verificationKey: o.verificationKey! } }
        : { serviceAccount: readFileOrFail(o.serviceAccount!, "--service-account FILE", "the JSON key of a Google Cloud service account").toString("utf8") }),
    };
    await withRegistry(cmd, o.tenant, async (apps, tenant, by) => {
      const added = await refusals(() => apps.add(tenant, input, by));
      process.stdout.write(JSON.stringify(added, null, 2) + "\n");
      process.stderr.write(`${added.policy.packageName} registered for tenant ${tenant.name} (${added.id}); its keys are sealed and will not be shown again\n`);
    });
  });

  addSettings(
    playApp.command("list").description("list a tenant's Play apps as JSON (their policies; never their keys)").requiredOption("--tenant <name>", "tenant name"),
    STORAGE_SETTINGS,
  ).action(async (o: { tenant: string }, cmd: Command) => {
    await withRegistry(cmd, o.tenant, async (apps, tenant) => {
      process.stdout.write(JSON.stringify(await apps.list(tenant), null, 2) + "\n");
    });
  });

  addSettings(
    playApp
      .command("remove")
      .description(`remove a tenant's Play app, by package name or id; its tokens are then refused (by a running server within ${PLAY_APP_CACHE_MS / 1000} s)`)
      .requiredOption("--tenant <name>", "tenant name")
      .option("--package <name>", "the app's package name")
      .option("--id <id>", "the registration's id (play-app list)"),
    STORAGE_SETTINGS,
  ).action(async (o: { tenant: string; package?: string; id?: string }, cmd: Command) => {
    if ((o.package === undefined) === (o.id === undefined)) throw new CliError("name the app with --package NAME or --id ID (one of the two)");
    await withRegistry(cmd, o.tenant, async (apps, tenant, by) => {
      const id = o.id ?? (await apps.list(tenant)).find((a) => a.policy.packageName === o.package)?.id;
      if (!id || !(await apps.remove(tenant, id, by))) throw new CliError(`tenant ${tenant.name} has no Play app ${o.package ?? o.id}`);
      process.stderr.write(`Play app ${o.package ?? o.id} of tenant ${tenant.name} removed\n`);
    });
  });
}
