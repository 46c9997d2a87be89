import { Command, Option } from "commander";
import { cryptoRng, systemClock } from "../clock.ts";
import type { Tenant } from "../domain/tenants.ts";
import { AppAttestKeys } from "../services/appAttestKeys.ts";
import { openSecrets } from "../secrets/openSecrets.ts";
import { DEFAULT_IOS_ENVIRONMENT, IOS_APP_CACHE_MS, IOS_ENVIRONMENTS, IosAppRegistry, type DeveloperKeyInput } from "../services/iosApps.ts";
import type { IosEnvironment } from "../attestation/types.ts";
import type { Stores } from "../store/types.ts";
import type { ChangeActor } from "../services/auditTrail.ts";
import { addSettings, CliError, readFileOrFail, refusals, STORAGE_SETTINGS, tenantNamed, withOperator, type CommandDefinitions } from "./options.ts";

/**
 * `attestd ios-app add|list|remove|set-developer-key|clear-developer-key` (mobile-attestation.md, "Per-tenant
 * configuration") and `attestd ios-key list|show|revoke` (the App Attest keys a tenant's devices attested): the same
 * services as the admin API. The registry seals a developer key with the secrets key `serve` uses
 * (--secrets-key-file), as `attestd play-app` does.
 */
export const commands: CommandDefinitions = { "ios-app": defineIosApp, "ios-key": defineIosKey };

async function withTenant<T>(cmd: Command, tenantName: string, fn: (s: { apps: IosAppRegistry; keys: AppAttestKeys }, tenant: Tenant, by: ChangeActor) => Promise<T>): Promise<T> {
  return withOperator(cmd, async (stores: Stores, by, config) => {
    const tenant = await tenantNamed(stores, tenantName);
    const { box } = await openSecrets(stores.secrets, config);
    const apps = new IosAppRegistry(stores.durable, systemClock, cryptoRng, box);
    return fn({ apps, keys: new AppAttestKeys(stores.durable, apps, systemClock) }, tenant, by);
  });
}

const json = (v: unknown) => process.stdout.write(JSON.stringify(v, null, 2) + "\n");

const DEVELOPER_KEY_ID_HELP = "the App Attest developer key's id (10 characters, Apple developer account → Keys), for receipt refresh";
const DEVELOPER_KEY_FILE_HELP = "the key's .p8 file (EC P-256, PKCS#8 PEM); sealed in the store, never shown again";

/** --developer-key-id and --developer-key-file: both or neither */
function developerKeyOf(o: { developerKeyId?: string; developerKeyFile?: string }, required: boolean): DeveloperKeyInput | undefined {
  if (o.developerKeyId === undefined && o.developerKeyFile === undefined && !required) return undefined;
  if (o.developerKeyId === undefined || o.developerKeyFile === undefined) throw new CliError("give the developer key with both --developer-key-id ID and --developer-key-file FILE.p8");
  return { keyId: o.developerKeyId, privateKey: readFileOrFail(o.developerKeyFile, "--developer-key-file FILE", "the .p8 file of an App Attest developer key").toString("utf8") };
}

/** the registration's id from --id or --app-id (one of the two) */
async function appIdOf(apps: IosAppRegistry, tenant: Tenant, o: { appId?: string; id?: string }): Promise<string> {
  if ((o.appId === undefined) === (o.id === undefined)) throw new CliError("name the app with --app-id ID or --id ID (one of the two)");
  const id = o.id ?? (await apps.list(tenant)).find((a) => a.appId === o.appId)?.id;
  if (!id) throw new CliError(`tenant ${tenant.name} has no iOS app ${o.appId}`);
  return id;
}

function defineIosApp(iosApp: Command): void {
  addSettings(
    iosApp
      .command("add")
      .description("register a tenant's iOS app for App Attest: its app id (TEAMID.BUNDLEID) and the environments it accepts. Prints the registration as JSON")
      .requiredOption("--tenant <name>", "tenant name")
      .requiredOption("--app-id <id>", "the app id, TEAMID.BUNDLEID (such as ABCDE12345.com.example.app)")
      .addOption(new Option("--environment <env>", `whose keys are accepted: App Store / TestFlight (production), Xcode builds (development), or both (default ${DEFAULT_IOS_ENVIRONMENT})`).choices(IOS_ENVIRONMENTS))
      .option("--developer-key-id <id>", DEVELOPER_KEY_ID_HELP)
      .option("--developer-key-file <file>", DEVELOPER_KEY_FILE_HELP),
    STORAGE_SETTINGS,
  ).action(async (o: { tenant: string; appId: string; environment?: IosEnvironment; developerKeyId?: string; developerKeyFile?: string }, cmd: Command) => {
    const developerKey = developerKeyOf(o, false);
    await withTenant(cmd, o.tenant, async ({ apps }, tenant, by) => {
      const added = await refusals(() => apps.add(tenant, { appId: o.appId, ...(o.environment ? { environment: o.environment } : {}), ...(developerKey ? { developerKey } : {}) }, by));
      json(added);
      process.stderr.write(`${added.appId} registered for tenant ${tenant.name} (${added.id}, ${added.environment})\n`);
    });
  });

  addSettings(iosApp.command("list").description("list a tenant's iOS apps as JSON").requiredOption("--tenant <name>", "tenant name"), STORAGE_SETTINGS).action(
    async (o: { tenant: string }, cmd: Command) => {
      await withTenant(cmd, o.tenant, async ({ apps }, tenant) => json(await apps.list(tenant)));
    },
  );

  addSettings(
    iosApp
      .command("remove")
      .description(`remove a tenant's iOS app, by app id or registration id; its attestations are then refused (by a running server within ${IOS_APP_CACHE_MS / 1000} s)`)
      .requiredOption("--tenant <name>", "tenant name")
      .option("--app-id <id>", "the app id")
      .option("--id <id>", "the registration's id (ios-app list)"),
    STORAGE_SETTINGS,
  ).action(async (o: { tenant: string; appId?: string; id?: string }, cmd: Command) => {
    await withTenant(cmd, o.tenant, async ({ apps }, tenant, by) => {
      const id = await appIdOf(apps, tenant, o);
      if (!(await apps.remove(tenant, id, by))) throw new CliError(`tenant ${tenant.name} has no iOS app ${o.appId ?? o.id}`);
      process.stderr.write(`iOS app ${o.appId ?? o.id} of tenant ${tenant.name} removed\n`);
    });
  });

  addSettings(
    iosApp
      .command("set-developer-key")
      .description("register (or replace) the team's App Attest developer key for an app: its keys' receipts are then refreshed with Apple in the background, for the fraud-risk metric. Prints the registration (the key as its id only)")
      .requiredOption("--tenant <name>", "tenant name")
      .option("--app-id <id>", "the app id")
      .option("--id <id>", "the registration's id (ios-app list)")
      .requiredOption("--developer-key-id <id>", DEVELOPER_KEY_ID_HELP)
      .requiredOption("--developer-key-file <file>", DEVELOPER_KEY_FILE_HELP),
    STORAGE_SETTINGS,
  ).action(async (o: { tenant: string; appId?: string; id?: string; developerKeyId: string; developerKeyFile: string }, cmd: Command) => {
    const key = developerKeyOf(o, true)!;
    await withTenant(cmd, o.tenant, async ({ apps }, tenant, by) => {
      const id = await appIdOf(apps, tenant, o);
      json(await refusals(() => apps.setDeveloperKey(tenant, id, key, by)));
      process.stderr.write(`developer key ${key.keyId} set for iOS app ${o.appId ?? o.id} of tenant ${tenant.name}\n`);
    });
  });

  addSettings(
    iosApp
      .command("clear-developer-key")
      .description("remove an app's developer key: its keys' receipts are no longer refreshed (the metrics read so far stay)")
      .requiredOption("--tenant <name>", "tenant name")
      .option("--app-id <id>", "the app id")
      .option("--id <id>", "the registration's id (ios-app list)"),
    STORAGE_SETTINGS,
  ).action(async (o: { tenant: string; appId?: string; id?: string }, cmd: Command) => {
    await withTenant(cmd, o.tenant, async ({ apps }, tenant, by) => {
      const id = await appIdOf(apps, tenant, o);
      json(await refusals(() => apps.setDeveloperKey(tenant, id, null, by)));
      process.stderr.write(`developer key of iOS app ${o.appId ?? o.id} of tenant ${tenant.name} removed\n`);
    });
  });
}

function defineIosKey(iosKey: Command): void {
  addSettings(
    iosKey
      .command("list")
      .description("list the App Attest keys a tenant's devices attested, as JSON (by key id)")
      .requiredOption("--tenant <name>", "tenant name")
      .option("--after <keyId>", "the last key id of the page before")
      .option("--limit <n>", "how many (1..1000, default 100)", (v) => {
        if (!/^\d{1,4}$/.test(v) || Number(v) < 1 || Number(v) > 1000) throw new CliError("--limit is 1..1000");
        return Number(v);
      }),
    STORAGE_SETTINGS,
  ).action(async (o: { tenant: string; after?: string; limit?: number }, cmd: Command) => {
    await withTenant(cmd, o.tenant, async ({ keys }, tenant) => json(await refusals(() => keys.list(tenant.tenantId, { after: o.after, limit: o.limit ?? 100 }))));
  });

  addSettings(
    iosKey.command("show").description("one App Attest key of a tenant, as JSON").requiredOption("--tenant <name>", "tenant name").requiredOption("--key-id <base64>", "the key id"),
    STORAGE_SETTINGS,
  ).action(async (o: { tenant: string; keyId: string }, cmd: Command) => {
    await withTenant(cmd, o.tenant, async ({ keys }, tenant) => json(await refusals(() => keys.get(tenant.tenantId, o.keyId))));
  });

  addSettings(
    iosKey
      .command("revoke")
      .description("revoke an App Attest key of a tenant: its later assertions are refused (rule revoked-key)")
      .requiredOption("--tenant <name>", "tenant name")
      .requiredOption("--key-id <base64>", "the key id"),
    STORAGE_SETTINGS,
  ).action(async (o: { tenant: string; keyId: string }, cmd: Command) => {
    await withTenant(cmd, o.tenant, async ({ keys }, tenant, by) => {
      json(await refusals(() => keys.revoke(tenant.tenantId, o.keyId, by)));
      process.stderr.write(`App Attest key ${o.keyId} of tenant ${tenant.name} revoked\n`);
    });
  });
}
