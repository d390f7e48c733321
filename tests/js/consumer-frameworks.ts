// Type-checked (never run) against the installed declarations: the framework adapters as a
// TypeScript user writes them, with LangChain's, Mastra's, ADK's and Strands' own types, strict
// and without casts.
import { createAgent, tool, type BaseMessage } from 'langchain';
import type { BaseChatModel } from '@langchain/core/language_models/chat_models';
import { Agent } from '@mastra/core/agent';
import type { MastraLanguageModel } from '@mastra/core/agent';
import { AutoContextMemory, type CompressResult } from 'autocontext';
import { autocontextMiddleware, fromOpenAI, toOpenAI } from 'autocontext/langchain';
import { autocontextProcessor } from 'autocontext/mastra';
import { InMemoryRunner, LlmAgent, type BasePlugin, type BaseTool } from '@google/adk';
import { Agent as StrandsAgent, type ConversationManager, type Message, type Tool } from '@strands-agents/sdk';
import { AutoContextPlugin } from 'autocontext/adk';
import { AutoContextConversationManager, fromWire, toWire, type StrandsMemory } from 'autocontext/strands';

declare const chatModel: BaseChatModel;
declare const summarize: (req: { prompt: string }) => Promise<string>;

// LangChain: the middleware goes straight into createAgent; its memories are typed.
const middleware = autocontextMiddleware((threadId) => new AutoContextMemory({ maxToken: 128_000, summarize, sessionId: threadId }), {
  onCompress: (r: CompressResult, thread: string) => void [r.tokensAfter, thread],
});
const search = tool(async ({ q }: { q: string }) => q, { name: 'search', description: 'Search', schema: { type: 'object', properties: { q: { type: 'string' } } } });
const agent = createAgent({ model: chatModel, tools: [search], middleware: [middleware] });
const langchainMemory: AutoContextMemory<'openai'> = middleware.memory('thread-1');
const last: Promise<BaseMessage | undefined> = agent.invoke({ messages: [{ role: 'user', content: 'hi' }] }).then((s) => s.messages.at(-1));
const roundTrip: BaseMessage = fromOpenAI(toOpenAI(fromOpenAI({ role: 'user', content: 'hi' })));

// Mastra: the processor goes into inputProcessors, its tools into the agent's tools.
declare const mastraModel: MastraLanguageModel;
const context = autocontextProcessor((threadId) => new AutoContextMemory({ format: 'ai-sdk', maxToken: 128_000, sessionId: threadId }));
const mastra = new Agent({ id: 'a', name: 'a', instructions: 'Be brief.', model: mastraModel, tools: { ...context.tools }, inputProcessors: [context] });
const mastraMemory: AutoContextMemory<'ai-sdk'> = context.memory('thread-1');

// ADK: the plugin goes into the runner's plugins; its memories are typed by their format.
const adk = new AutoContextPlugin((sessionId, agentName) => new AutoContextMemory({ format: 'gemini', maxToken: 1_000_000, sessionId: `${sessionId}:${agentName}` }), {
  onCompress: (r: CompressResult, where: { sessionId: string; agentName: string }) => void [r.tokensAfter, where.agentName],
});
const asPlugin: BasePlugin = adk;
const reloadTool: BaseTool = adk.reloadTool;
const runner = new InMemoryRunner({ agent: new LlmAgent({ name: 'a', model: 'gemini-2.5-flash', tools: [] }), appName: 'a', plugins: [adk] });
const adkMemory: AutoContextMemory<'gemini'> = adk.memory('session-1', 'a');

// Strands: the conversation manager goes into the agent; it gives the agent its tools.
const strands = new AutoContextConversationManager({ maxToken: 200_000, summarize, onCompress: (r: CompressResult) => void r.events });
const asManager: ConversationManager = strands;
const strandsTools: Tool[] = strands.getTools();
const strandsAgent = new StrandsAgent({ conversationManager: strands, printer: false });
const strandsMemory: StrandsMemory = strands.memory(strandsAgent);
const back: Message = fromWire(toWire(strandsAgent.messages[0]!));
// @ts-expect-error the manager's memories hold the Anthropic format, not OpenAI messages
const wrongMemory: AutoContextMemory<'openai'> = strands.memory(strandsAgent);

export { agent, last, langchainMemory, mastra, mastraMemory, roundTrip, asPlugin, reloadTool, runner, adkMemory, asManager, strandsTools, strandsMemory, back, wrongMemory };
