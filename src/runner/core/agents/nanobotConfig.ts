// A micro-agent's configuration: the `terminal` section of a nanobot's config.json (camelCase on
// disk), as `belay nanobot` and the editor's micro-agent settings read it.
import * as z from 'zod';

/** An LLM provider's keys (handed to the bot in its envelope), models and endpoint. */
export const ProviderConfigSchema = z.object({
  apiKeys: z.array(z.string()).default([]),
  models: z.array(z.string()).optional(),
  baseUrl: z.string().optional(),
});

/** The `terminal` section of a bot's config.json. */
export const TerminalConfigSchema = z.object({
  enabled: z.boolean().default(false),
  command: z.string().default(''),
  timeout: z.number().positive().default(120),
  protocol: z.enum(['plain', 'rich']).default('plain'),
  passMedia: z.boolean().default(true),
  env: z.record(z.string(), z.string()).default({}),
  providers: z.record(z.string(), ProviderConfigSchema).default({}),
  /**
   * Rich mode: stdin stays open after the envelope, and lines sent while the bot runs reach it as
   * `inject` frames (each one restarting the timeout). Off by default, unlike the nanobot fork
   * that introduced it: a v1 bot that reads stdin to its end would otherwise wait for ever.
   */
  allowInjection: z.boolean().default(false),
});
export type TerminalConfig = z.infer<typeof TerminalConfigSchema>;
