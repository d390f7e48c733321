/**
 * The summarizer a command uses (`--summarizer offline | openai | none`), wrapped to count its
 * calls and the tokens it read and wrote.
 *
 * The offline summarizer reports no usage of its own; its usage is counted with the package's
 * tokenizer (what a model would have read and written), so runs can be compared.
 *
 * @module
 */

import type { SummarizeFn, SummarizeRequest, SummarizeResult } from '../types.js';
import { UsageError } from './errors.js';
import { openaiSummarizer } from './openai.js';

/** The summarizers the command offers. */
export const SUMMARIZERS = ['offline', 'openai', 'none'] as const;

/** A summarizer name. */
export type SummarizerName = (typeof SUMMARIZERS)[number];

/** What a summarizer did during a run. */
export interface SummarizerStats {
  name: SummarizerName;
  /** The model, for `openai`. */
  model?: string;
  /** The endpoint, for `openai`. */
  baseURL?: string;
  /** Calls made. */
  calls: number;
  /** Calls that threw. */
  errors: number;
  /** Tokens read, as reported (openai) or counted (offline). */
  inputTokens: number;
  /** Tokens written, as reported (openai) or counted (offline). */
  outputTokens: number;
  /** Whether every call reported its usage. */
  usageComplete: boolean;
}

/** What the `openai` summarizer needs. */
export interface SummarizerSettings {
  name: SummarizerName;
  model?: string;
  baseURL?: string;
  apiKey?: string;
}

/** The package's functions a summarizer needs (passed in, so this module loads no engine). */
export interface SummarizerDeps {
  offlineSummarize: (request: SummarizeRequest) => string;
  countTokens: (text: string) => number;
}

/** Reads `--summarizer`, `--model` and the environment; refuses what cannot work. */
export function summarizerSettings(name: string | undefined, model: string | undefined, env: NodeJS.ProcessEnv): SummarizerSettings {
  const chosen = (name ?? 'offline') as SummarizerName;
  if (!SUMMARIZERS.includes(chosen)) {
    throw new UsageError(`--summarizer must be ${SUMMARIZERS.join(', ')}; got ${JSON.stringify(name)}`);
  }
  if (chosen !== 'openai') {
    if (model !== undefined) throw new UsageError(`--model is for --summarizer openai (the ${chosen} summarizer has no model)`);
    return { name: chosen };
  }
  const baseURL = env.OPENAI_BASE_URL?.trim() || 'https://api.openai.com/v1';
  if (!/^https?:\/\/[^\s/]+/i.test(baseURL)) throw new UsageError(`OPENAI_BASE_URL must be an http(s) URL, got ${JSON.stringify(baseURL)}`);
  const chosenModel = model ?? env.OPENAI_MODEL?.trim();
  if (!chosenModel) throw new UsageError('--summarizer openai needs a model: --model NAME (or OPENAI_MODEL)');
  const settings: SummarizerSettings = { name: 'openai', baseURL, model: chosenModel };
  const key = env.OPENAI_API_KEY?.trim();
  if (key) settings.apiKey = key;
  return settings;
}

/** The summarize function for the settings (`undefined` for `none`), and its running stats. */
export function makeSummarizer(settings: SummarizerSettings, deps: SummarizerDeps): { summarize?: SummarizeFn; stats: SummarizerStats } {
  const stats: SummarizerStats = { name: settings.name, calls: 0, errors: 0, inputTokens: 0, outputTokens: 0, usageComplete: true };
  if (settings.name === 'none') return { stats };
  let inner: (request: SummarizeRequest) => Promise<SummarizeResult> | SummarizeResult;
  if (settings.name === 'openai') {
    stats.model = settings.model!;
    stats.baseURL = settings.baseURL!;
    const options: Parameters<typeof openaiSummarizer>[0] = { baseURL: settings.baseURL!, model: settings.model! };
    if (settings.apiKey !== undefined) options.apiKey = settings.apiKey;
    inner = openaiSummarizer(options);
  } else {
    inner = (request) => {
      const text = deps.offlineSummarize(request);
      return { text, usage: { inputTokens: deps.countTokens(`${request.system}\n${request.prompt}`), outputTokens: deps.countTokens(text) } };
    };
  }
  const summarize: SummarizeFn = async (request) => {
    stats.calls++;
    let out: SummarizeResult;
    try {
      out = await inner(request);
    } catch (e) {
      stats.errors++;
      throw e;
    }
    const usage = typeof out === 'string' ? undefined : out.usage;
    if (typeof usage?.inputTokens === 'number') stats.inputTokens += usage.inputTokens;
    if (typeof usage?.outputTokens === 'number') stats.outputTokens += usage.outputTokens;
    if (typeof usage?.inputTokens !== 'number' || typeof usage?.outputTokens !== 'number') stats.usageComplete = false;
    return out;
  };
  return { summarize, stats };
}
