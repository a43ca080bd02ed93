import { adapters } from '../adapters/index.js';
import { loadConfigWith, type LoadOptions } from '../config/load.js';
import type { Config } from '../config/schema.js';

/** Options of `loadConfig`: the built-in adapters unless a registry is given. */
export type LoadConfigOptions = Omit<LoadOptions, 'adapters'> & Partial<Pick<LoadOptions, 'adapters'>>;

/**
 * Build the one validated, frozen Config (defaults, then the JSON file, then the variables of
 * `env`: none of the process's unless given `env: process.env`) against the built-in adapter registry. Here, above the stages, because the registry is
 * adapter code and config/ imports no stage.
 */
export function loadConfig(options: LoadConfigOptions = {}): Config {
  return loadConfigWith({ adapters, ...options });
}

/** The Config `createIntake` runs on: the one given, else loaded from its file/env options. */
export function configOf(options: {
  config?: Config;
  configFile?: Record<string, unknown>;
  env?: LoadOptions['env'];
  cwd?: string;
}): Config {
  return (
    options.config ??
    loadConfig({
      ...(options.configFile ? { file: options.configFile } : {}),
      ...(options.env ? { env: options.env } : {}),
      ...(options.cwd ? { cwd: options.cwd } : {}),
    })
  );
}
