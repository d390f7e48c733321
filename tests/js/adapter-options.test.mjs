// Every adapter that takes options refuses what it would otherwise ignore: a memory handed where
// its options belong (spread as options a memory is `{}`: the adapter ran with the defaults and
// the memory never saw a message), and an option it does not read. Each error is typed, names
// the field, and shows the right form; the right form is then taken as given.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { AutoContextMemory } from 'autocontext';
import { AutoContextPlugin } from 'autocontext/adk';
import { prepareStep } from 'autocontext/ai-sdk';
import { autocontextMiddleware } from 'autocontext/langchain';
import { autocontextProcessor } from 'autocontext/mastra';
import { AutoContextSession } from 'autocontext/openai-agents';
import { AutoContextConversationManager } from 'autocontext/strands';

/** `fn` throws an AutoContextError with `code` about `field`, whose message matches every one of `says`. */
function refused(fn, code, field, ...says) {
  assert.throws(fn, (e) => {
    assert.equal(e.name, 'AutoContextError');
    assert.equal(e.code, code, e.message);
    assert.equal(e.field, field, e.message);
    for (const s of says) assert.match(e.message, s);
    return true;
  });
}

test('Strands: a memory instead of options is refused with the right form; the right form is used', () => {
  const memory = new AutoContextMemory({ format: 'anthropic', maxToken: 4000 });
  refused(() => new AutoContextConversationManager(memory), 'INVALID_ARGUMENT', 'options', /not a memory/, /new AutoContextConversationManager\(\{ maxToken/, /memory: \(agent\) =>/);
  refused(() => new AutoContextConversationManager({ memory }), 'INVALID_ARGUMENT', 'memory', /is a function/);
  // A memory's option beside the factory would be lost on the factory's memories.
  refused(() => new AutoContextConversationManager({ memory: () => memory, maxToken: 4000 }), 'INVALID_CONFIG', 'maxToken', /give it to the memory the factory makes/);
  refused(() => new AutoContextConversationManager('anthropic'), 'INVALID_CONFIG', 'options', /must be an object/);

  // The right forms: the memory's options, or a factory; the agent's memory has them.
  const agent = { sessionId: 'strands-1' };
  const byOptions = new AutoContextConversationManager({ maxToken: 4000 });
  assert.equal(byOptions.memory(agent).toJSON().config.maxToken, 4000);
  assert.equal(byOptions.memory(agent).sessionId, 'strands-1');
  const byFactory = new AutoContextConversationManager({ memory: (a) => new AutoContextMemory({ format: 'anthropic', maxToken: 4000, sessionId: a.sessionId }) });
  assert.equal(byFactory.memory(agent).toJSON().config.maxToken, 4000);
});

test('ADK: the plugin takes a factory, and only its own options', () => {
  const factory = (sessionId) => new AutoContextMemory({ format: 'gemini', maxToken: 4000, sessionId });
  const memory = factory('s');
  refused(() => new AutoContextPlugin(memory), 'INVALID_ARGUMENT', 'memory', /not a memory/, /new AutoContextPlugin\(\(sessionId, agentName\) =>/);
  refused(() => new AutoContextPlugin(factory, memory), 'INVALID_ARGUMENT', 'options', /not a memory/);
  refused(() => new AutoContextPlugin(factory, { maxToken: 4000 }), 'INVALID_CONFIG', 'maxToken', /not an option of AutoContextPlugin/, /`maxSessions`/);
  refused(() => new AutoContextPlugin(factory, { maxSessions: 0 }), 'INVALID_CONFIG', 'maxSessions', /maxSessions must be a whole number/);
  const plugin = new AutoContextPlugin(factory, { name: 'ctx', maxSessions: 2 });
  assert.equal(plugin.name, 'ctx');
  assert.equal(plugin.memory('s1', 'a').toJSON().config.maxToken, 4000);
});

test('LangChain, Mastra, the AI SDK and the Agents SDK: the same refusals', () => {
  const openai = () => new AutoContextMemory({ maxToken: 4000 });
  const aiSdk = () => new AutoContextMemory({ format: 'ai-sdk', maxToken: 4000 });
  refused(() => autocontextMiddleware(openai()), 'INVALID_ARGUMENT', 'memory', /not a memory/);
  refused(() => autocontextMiddleware(openai, { maxToken: 4000 }), 'INVALID_CONFIG', 'maxToken', /autocontextMiddleware/);
  refused(() => autocontextMiddleware(openai, openai()), 'INVALID_ARGUMENT', 'options');
  refused(() => autocontextProcessor(aiSdk(), {}), 'INVALID_ARGUMENT', 'memory', /not a memory/);
  refused(() => autocontextProcessor(aiSdk, { maxTokens: 4000 }), 'INVALID_CONFIG', 'maxTokens', /autocontextProcessor/);
  refused(() => prepareStep({ maxToken: 4000 }), 'INVALID_ARGUMENT', 'memory', /prepareStep takes the memory/);
  refused(() => prepareStep(aiSdk(), { maxToken: 4000 }), 'INVALID_CONFIG', 'maxToken', /prepareStep/);
  const responses = new AutoContextMemory({ format: 'openai-responses', maxToken: 4000 });
  refused(() => new AutoContextSession(responses), 'INVALID_ARGUMENT', 'options', /new AutoContextSession\(\{ summarize \}, memory\)/);
  refused(() => new AutoContextSession({}, { maxToken: 4000 }), 'INVALID_ARGUMENT', 'memory');
  // The right form uses the memory it is given.
  assert.equal(new AutoContextSession({}, responses).memory, responses);
});
