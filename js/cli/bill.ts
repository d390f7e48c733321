/**
 * The bill of a replay: what its model calls cost in input tokens with autocontext (each call
 * sends the working list `messages()` hands back) and without (each call sends the whole
 * history so far), plainly and as a provider with a prompt cache bills them. Priced by the
 * cost benchmark's own accounting (`accounting.js`): the longest common prefix, message by
 * message, with the previous request is served from the cache; each message is counted as the
 * engine counts it, in the conversation's own format.
 *
 * @module
 */

import { countMessageTokens } from '../wasm/autocontext.js';
import { Ledger, PRICES, type Message, type Provider } from '../accounting.js';

export { PRICES, type Provider } from '../accounting.js';

/** The providers `--prices` names, the default first. */
export const PROVIDERS = Object.keys(PRICES) as Provider[];

/** What one side of the bill (with or without autocontext) cost. */
export interface BillSide {
  /** Input tokens of every request, summed. */
  inputTokens: number;
  /** The part of them that the previous request had sent already (the cached prefix). */
  cachedTokens: number;
  /** The input tokens as the provider bills them, in tokens at the base input price (rounded). */
  cacheAware: number;
  /** Requests that did not extend the previous one (the cache served only the unchanged start). */
  rewrites: number;
  /** Requests larger than the window (the provider would have refused them). */
  overWindow: number;
}

/** The bill of a replay (`bill` in the `--json` report). */
export interface Bill {
  /** Whose prices: `anthropic` (cache read 0.1×, cache write 1.25×) or `openai` (cached input 0.1×). */
  prices: Provider;
  /** What a cached input token costs, as a multiple of the base input price. */
  cacheRead: number;
  /** What any other input token costs (Anthropic bills writing the cache at 1.25×). */
  cacheWrite: number;
  /** Model calls priced: one per model response of the conversation (the call after its last message is not billed: no response of it was recorded). */
  calls: number;
  without: BillSide;
  with: BillSide;
  /** `without` minus `with`, and as a share of `without` (percent, one decimal; negative when autocontext cost more). */
  saved: { inputTokens: number; cacheAware: number; inputPercent: number; cacheAwarePercent: number };
}

/** A share as a percentage with one decimal. */
const share = (part: number, whole: number): number => (whole === 0 ? 0 : Math.round((1000 * part) / whole) / 10);

/**
 * Prices a replay call by call: `call(withRequest, withoutRequest)` at each model call, then
 * `bill()`. Messages are counted once per distinct content.
 */
export class BillMeter {
  readonly #with: Ledger;
  readonly #without: Ledger;
  readonly #prices: Provider;

  constructor(format: string, window: number, prices: Provider) {
    const count = (m: Message): number => countMessageTokens(JSON.stringify([m]), format)[0]!;
    this.#with = new Ledger({ messageTokens: count, window });
    this.#without = new Ledger({ messageTokens: count, window });
    this.#prices = prices;
  }

  /** Accounts one model call: what autocontext sent, and what the agent would have sent without it. */
  call(withRequest: readonly object[], withoutRequest: readonly object[]): void {
    this.#with.turn(withRequest as Message[]);
    this.#without.turn(withoutRequest as Message[]);
  }

  /** The bill so far. */
  bill(): Bill {
    const side = (l: Ledger): BillSide => ({
      inputTokens: l.totals.plain,
      cachedTokens: l.totals.cachedTokens,
      cacheAware: Math.round(l.totals[this.#prices]),
      rewrites: l.totals.rewrites,
      overWindow: l.totals.overWindow,
    });
    return priced(this.#prices, this.#with.totals.turns, side(this.#with), side(this.#without));
  }
}

/** A bill from its two sides (also the sum of several bills' sides). */
export function priced(prices: Provider, calls: number, withSide: BillSide, without: BillSide): Bill {
  const inputTokens = without.inputTokens - withSide.inputTokens;
  const cacheAware = without.cacheAware - withSide.cacheAware;
  return {
    prices,
    cacheRead: PRICES[prices].read,
    cacheWrite: PRICES[prices].write,
    calls,
    without,
    with: withSide,
    saved: { inputTokens, cacheAware, inputPercent: share(inputTokens, without.inputTokens), cacheAwarePercent: share(cacheAware, without.cacheAware) },
  };
}

/** Sums the bills of several conversations (all at the same prices). */
export function sumBills(prices: Provider, bills: readonly Bill[]): Bill {
  const add = (pick: (b: Bill) => BillSide): BillSide => {
    const out: BillSide = { inputTokens: 0, cachedTokens: 0, cacheAware: 0, rewrites: 0, overWindow: 0 };
    for (const b of bills) for (const k of Object.keys(out) as (keyof BillSide)[]) out[k] += pick(b)[k];
    return out;
  };
  return priced(
    prices,
    bills.reduce((a, b) => a + b.calls, 0),
    add((b) => b.with),
    add((b) => b.without),
  );
}
