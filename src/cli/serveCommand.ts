import type { Command } from "commander";
import { settings, type SettingName } from "../config.ts";
import { addSettings, configFrom, type CommandDefinitions } from "./options.ts";

/** `attestd serve` (operator.md): every setting is one of its flags. */
export const commands: CommandDefinitions = {
  serve(serve: Command) {
    addSettings(serve.description("run the service (https://localhost:8443 with dev TLS by default, listening on 127.0.0.1)"), Object.keys(settings) as SettingName[]).action(
      async (_opts: unknown, cmd: Command) => {
        const { serve: run } = await import("../main.ts");
        await run(configFrom(cmd));
      },
    );
  },
};
