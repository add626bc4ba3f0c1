// Belay's LLM gateway: the one way out of a run. A host HTTP server (Unix socket and/or
// 127.0.0.1) that takes a run's token, counts every token and dollar, stops a run at its budget,
// and forwards to the run's configured upstream with the real key, which never enters the run.
// One module per API shape: openai.ts (chat completions, responses), anthropic.ts (messages),
// gemini.ts (generateContent, streamGenerateContent), proxy.ts (Term Challenge's /llm/proxy);
// lm*.ts serve any of them from a model in the editor (VS Code's language-model API).
export type { Budget, HttpUpstream, LlmRequestRecord, LlmUsage, LocalUpstream, OpenRunOptions, RunGrant, Upstream } from './grant.ts';
export type { LocalModel } from './lmModel.ts';
export type { ModelPrice, PriceTable } from './prices.ts';
export { DEFAULT_PRICES } from './prices.ts';
export type { RetryPolicy } from './backoff.ts';
export { startGateway, type Gateway, type GatewayOptions } from './http.ts';

/**
 * What an agent's environment needs to reach the gateway at `baseUrl` (as the agent sees it) with
 * its run `token`: the Term Challenge proxy (`LLM_PROXY_URL`; `TERM_AGENT_HASH` too, which is what
 * makes the term_sdk client use it, and which the proxy takes as the token on its stream route),
 * the chat completions URL (`LLM_API_URL`), the base URLs the OpenAI and Anthropic SDKs and
 * litellm read (SDK 3.0 agents call litellm with `openrouter/…` models, which go to
 * `OPENROUTER_API_BASE`), the Gemini base URL Google's GenAI SDK and Gemini CLI read
 * (`GOOGLE_GEMINI_BASE_URL`, no version: each request's path names it), and the token in every
 * key variable they read (`GEMINI_API_KEY`, `GOOGLE_API_KEY` for Gemini).
 */
export function llmEnvironment(baseUrl: string, token: string): Record<string, string> {
  const base = baseUrl.replace(/\/+$/, '');
  return {
    LLM_PROXY_URL: base,
    LLM_API_URL: `${base}/v1/chat/completions`,
    OPENAI_BASE_URL: `${base}/v1`,
    OPENAI_API_BASE: `${base}/v1`,
    ANTHROPIC_BASE_URL: base,
    ANTHROPIC_API_BASE: base,
    OPENROUTER_API_BASE: `${base}/v1`,
    GOOGLE_GEMINI_BASE_URL: base,
    LLM_API_KEY: token,
    OPENAI_API_KEY: token,
    ANTHROPIC_API_KEY: token,
    OPENROUTER_API_KEY: token,
    GEMINI_API_KEY: token,
    GOOGLE_API_KEY: token,
    TERM_AGENT_HASH: token,
  };
}
