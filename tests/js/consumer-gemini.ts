// Type-checked (never run), strict and without casts, against the installed declarations and
// `@google/genai`'s own types: a memory made with `format: 'gemini'` takes and gives the SDK's
// `Content`s, its reload tool is a `FunctionDeclaration`, and its calls and usage go in as the SDK
// gives them.
import type { GoogleGenAI, Content, FunctionCall, FunctionDeclaration, GenerateContentResponse, Part, Tool } from '@google/genai';
import { AutoContextMemory, compress } from 'autocontext';
import type { GeminiMessage, GeminiFunctionCall, GeminiPart, MessageFor, SummarizeFn, UsageReport } from 'autocontext';

/** `true` when each type is assignable to the other, else which way fails. */
type Mutual<A, B> = [A] extends [B] ? ([B] extends [A] ? true : 'the SDK type is not assignable to ours') : 'ours is not assignable to the SDK type';

export const content: Mutual<GeminiMessage, Content> = true;
export const part: Mutual<GeminiPart, Part> = true;
export const call: Mutual<GeminiFunctionCall, FunctionCall> = true;
export const byFormat: Mutual<MessageFor<'gemini'>, Content> = true;

declare const ai: GoogleGenAI;
declare const response: GenerateContentResponse;

const summarize: SummarizeFn<Content> = async ({ system, messages, signal }) => {
  const out = await ai.models.generateContent({
    model: 'gemini-2.5-flash',
    contents: [...messages, { role: 'user', parts: [{ text: 'Summarize the conversation above.' }] }],
    config: { systemInstruction: system, abortSignal: signal },
  });
  return out.text ?? '';
};
const memory = new AutoContextMemory({ format: 'gemini', maxToken: 1_000_000, reservedTokens: 2_000, summarize });
memory.add({ role: 'user', parts: [{ text: 'hi' }] });
const modelTurn = response.candidates?.[0]?.content;
if (modelTurn !== undefined) memory.add(modelTurn);
const contents: Content[] = memory.messages();
memory.add(contents);
const declaration: FunctionDeclaration = memory.reloadTool();
const tools: Tool[] = [{ functionDeclarations: [declaration, memory.reloadTool()] }];
for (const c of response.functionCalls ?? []) {
  if (c.name === 'context_reload') void memory.handleReloadCall(c);
}
for (const p of modelTurn?.parts ?? []) {
  if (p.functionCall?.name === 'context_reload') void memory.handleReloadCall(p);
}
const report: UsageReport | undefined = memory.observeUsage(response.usageMetadata);
const request = ai.models.generateContent({ model: 'gemini-2.5-pro', contents: memory.messages(), config: { tools } });
const restored = AutoContextMemory.fromJSON<'gemini'>(memory.toJSON());
const again: Content[] = restored.messages();
const once = compress(contents, { format: 'gemini', maxToken: 1_000 }).then((out) => {
  const messages: Content[] = out.messages;
  return messages.length;
});

// The format's shapes are enforced.
// @ts-expect-error an OpenAI message is not a Gemini content
memory.add({ role: 'user', content: 'x' });
// @ts-expect-error a Gemini memory's messages are not Anthropic messages
const wrong: { role: 'user' | 'assistant'; content: string }[] = memory.messages();

export { report, request, again, once, wrong };
