import { Command } from "commander";
import { loadConfig, settings, type SettingName } from "../../src/config.ts";
import { addSettings } from "../../src/cli/options.ts";
import { serve } from "../../src/main.ts";

/**
 * `attestd serve`, flags and all, with Part B's job worker spending `--device-delay-ms` on each device: the
 * crash test needs a batch still running when it kills the process. The delay is a createRuntime option, not a
 * setting, so production reads nothing of it.
 */
const command = addSettings(new Command("serve-slow-worker"), Object.keys(settings) as SettingName[])
  .requiredOption("--device-delay-ms <ms>", "time spent on each device before its result is written")
  .exitOverride();
command.parse(process.argv);
const { deviceDelayMs, ...flags } = command.opts() as { deviceDelayMs: string };
await serve(loadConfig(flags), true, { enrollment: { worker: { deviceDelayMs: Number(deviceDelayMs) } } });
