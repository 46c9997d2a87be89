import { Command, Option } from "commander";
import { cryptoRng, systemClock } from "../clock.ts";
import type { Tenant } from "../domain/tenants.ts";
import { AppAttestKeys } from "../services/appAttestKeys.ts";
import { DEFAULT_IOS_ENVIRONMENT, IOS_APP_CACHE_MS, IOS_ENVIRONMENTS, IosAppRegistry } from "../services/iosApps.ts";
import type { IosEnvironment } from "../attestation/types.ts";
import type { Stores } from "../store/types.ts";
import type { ChangeActor } from "../services/auditTrail.ts";
import { addSettings, CliError, refusals, STORAGE_SETTINGS, tenantNamed, withOperator, type CommandDefinitions } from "./options.ts";

/**
 * `attestd ios-app add|list|remove` (mobile-attestation.md, "Per-tenant configuration") and `attestd ios-key
 * list|show|revoke` (the App Attest keys a tenant's devices attested): the same services as the admin API.
 */
export const commands: CommandDefinitions = { "ios-app": defineIosApp, "ios-key": defineIosKey };

async function withTenant<T>(cmd: Command, tenantName: string, fn: (s: { apps: IosAppRegistry; keys: AppAttestKeys }, tenant: Tenant, by: ChangeActor) => Promise<T>): Promise<T> {
  return withOperator(cmd, async (stores: Stores, by) => {
    const tenant = await tenantNamed(stores, tenantName);
    const apps = new IosAppRegistry(stores.durable, systemClock, cryptoRng);
    return fn({ apps, keys: new AppAttestKeys(stores.durable, apps, systemClock) }, tenant, by);
  });
}

const json = (v: unknown) => process.stdout.write(JSON.stringify(v, null, 2) + "\n");

function defineIosApp(iosApp: Command): void {
  addSettings(
    iosApp
      .command("add")
      .description("register a tenant's iOS app for App Attest: its app id (TEAMID.BUNDLEID) and the environments it accepts. Prints the registration as JSON")
      .requiredOption("--tenant <name>", "tenant name")
      .requiredOption("--app-id <id>", "the app id, TEAMID.BUNDLEID (such as ABCDE12345.com.example.app)")
      .addOption(new Option("--environment <env>", `whose keys are accepted: App Store / TestFlight (production), Xcode builds (development), or both (default ${DEFAULT_IOS_ENVIRONMENT})`).choices(IOS_ENVIRONMENTS)),
    STORAGE_SETTINGS,
  ).action(async (o: { tenant: string; appId: string; environment?: IosEnvironment }, cmd: Command) => {
    await withTenant(cmd, o.tenant, async ({ apps }, tenant, by) => {
      const added = await refusals(() => apps.add(tenant, { appId: o.appId, ...(o.environment ? { environment: o.environment } : {}) }, by));
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
    if ((o.appId === undefined) === (o.id === undefined)) throw new CliError("name the app with --app-id ID or --id ID (one of the two)");
    await withTenant(cmd, o.tenant, async ({ apps }, tenant, by) => {
      const id = o.id ?? (await apps.list(tenant)).find((a) => a.appId === o.appId)?.id;
      if (!id || !(await apps.remove(tenant, id, by))) throw new CliError(`tenant ${tenant.name} has no iOS app ${o.appId ?? o.id}`);
      process.stderr.write(`iOS app ${o.appId ?? o.id} of tenant ${tenant.name} removed\n`);
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
