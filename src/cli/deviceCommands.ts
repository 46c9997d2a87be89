import { Command } from "commander";
import { systemClock } from "../clock.ts";
import { isAppError } from "../errors/AppError.ts";
import { catalog } from "../errors/catalog.ts";
import { DeviceService } from "../services/deviceService.ts";
import type { Config } from "../config.ts";
import type { Stores } from "../store/types.ts";
import { addSettings, CliError, STORAGE_SETTINGS, tenantNamed, withOperator, withStores, type CommandDefinitions } from "./options.ts";
import { EVENT_WRITING_SETTINGS, webhookPlannerFor } from "./webhookCommands.ts";

/** DeviceService's refusals, as one line naming the device and the tenant. */
async function deviceErrors<T>(deviceId: string, tenant: string, fn: () => Promise<T>): Promise<T> {
  try {
    return await fn();
  } catch (e) {
    if (isAppError(e) && e.entry === catalog.A_NOT_FOUND) throw new CliError(`no appraisal of a device "${deviceId}" for tenant ${tenant}`);
    if (isAppError(e)) throw new CliError(e.reason);
    throw e;
  }
}

/** a reset's device.pin.changed is written with it, as the server writes it (docs/events.md) */
const deviceService = (stores: Stores, config: Config) => new DeviceService(stores.durable, systemClock, webhookPlannerFor(stores, config));

async function withDevices<T>(cmd: Command, tenant: string, fn: (devices: DeviceService, tenantId: string) => Promise<T>) {
  return withStores(cmd, async (stores, config) => {
    const t = await tenantNamed(stores, tenant);
    return fn(deviceService(stores, config), t.tenantId);
  });
}

/** `attestd device show|reset` (docs/devices.md): a named device's history and pin, and the pin reset. */
export const commands: CommandDefinitions = { device: defineDevice };

function defineDevice(device: Command): void {
  addSettings(
    device
      .command("show <deviceId>")
      .description("print a tenant's device (history, latest facts, pin) and its pin resets as JSON")
      .requiredOption("--tenant <name>", "tenant name"),
    STORAGE_SETTINGS,
  ).action(async (deviceId: string, o: { tenant: string }, cmd: Command) => {
    await withDevices(cmd, o.tenant, async (devices, tenantId) => {
      const shown = await deviceErrors(deviceId, o.tenant, () => devices.history(tenantId, deviceId));
      process.stdout.write(JSON.stringify(shown, null, 2) + "\n");
    });
  });

  addSettings(
    device
      .command("reset <deviceId>")
      .description("clear a device's pin so that its next Yes pins it afresh; the reset is kept as an audit record (device show)")
      .requiredOption("--tenant <name>", "tenant name"),
    EVENT_WRITING_SETTINGS,
  ).action(async (deviceId: string, o: { tenant: string }, cmd: Command) => {
    await withOperator(cmd, async (stores, by, config) => {
      const { tenantId } = await tenantNamed(stores, o.tenant);
      const devices = deviceService(stores, config);
      const reset = await deviceErrors(deviceId, o.tenant, () => devices.resetPin(tenantId, deviceId, by));
      process.stdout.write(JSON.stringify(reset, null, 2) + "\n");
      process.stderr.write(
        `pin of device ${deviceId} (tenant ${o.tenant}) reset${reset.previousPin ? "" : " (it had none)"}; its next Yes pins it afresh\n`,
      );
    });
  });
}
