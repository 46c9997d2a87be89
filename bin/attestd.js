#!/usr/bin/env node
// Installed entry point: runs the TypeScript CLI through tsx, exactly as `npm run attestd` does in a checkout.
import { register } from "tsx/esm/api";
register();
await import("../src/cli/main.ts");
