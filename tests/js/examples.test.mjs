// The chat-loop examples (examples/openai-loop, examples/anthropic-loop, examples/gemini-loop, examples/openai-agents)
// driven by scripted fake models with the official SDKs' request and response shapes: tools run,
// the conversation is compressed in the middle of a turn, the model reloads what was offloaded,
// and every request is valid for its provider.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { validate } from 'autocontext';
import * as openaiLoop from '../examples/openai-loop/agent.mjs';
import * as anthropicLoop from '../examples/anthropic-loop/agent.mjs';
import * as geminiLoop from '../examples/gemini-loop/agent.mjs';
import * as agentsExample from '../examples/openai-agents/agent.mjs';
import { ScriptedModel, functionCall, message, outputText, reasoning, requestTokens } from './agents-model.mjs';
import { markers, text } from './helpers.mjs';

const files = { 'src/a.rs': `fn a() {}\n${text(30_000, 1)}`, 'src/b.rs': `fn b() {}\n${text(30_000, 2)}` };
const runTool = async (name, args) => (name === 'read_file' ? files[args.path] : `unknown tool ${name}`);

test('the OpenAI loop compresses mid-turn and answers after a reload', async () => {
  const requests = [];
  const reply = (message, finish) => ({
    id: `chatcmpl-${requests.length}`,
    object: 'chat.completion',
    model: 'fake',
    choices: [{ index: 0, message: { refusal: null, annotations: [], ...message }, finish_reason: finish, logprobs: null }],
    usage: { prompt_tokens: 1, completion_tokens: 1, total_tokens: 2 },
  });
  const client = {
    chat: {
      completions: {
        create: async (params) => {
          requests.push(structuredClone(params));
          const seen = JSON.stringify(params.messages);
          if (requests.length === 1) {
            const calls = Object.keys(files).map((path, k) => ({
              id: `call_${k}`,
              type: 'function',
              function: { name: 'read_file', arguments: JSON.stringify({ path }) },
            }));
            return reply({ role: 'assistant', content: null, tool_calls: calls }, 'tool_calls');
          }
          if (requests.length === 2) {
            const uuid = markers(seen)[0];
            assert.ok(uuid, 'the second request carries an offload marker');
            const args = JSON.stringify({ working_context_offload_uuid: uuid });
            return reply({ role: 'assistant', content: null, tool_calls: [{ id: 'call_r', type: 'function', function: { name: 'context_reload', arguments: args } }] }, 'tool_calls');
          }
          assert.match(seen, /Original content of offload/);
          return reply({ role: 'assistant', content: 'a() and b() are both empty.' }, 'stop');
        },
      },
    },
  };
  const memory = openaiLoop.createMemory({ maxToken: 16_000, toolResultLimit: 8_000, sessionId: 'openai-loop' });
  const tools = [{ type: 'function', function: { name: 'read_file', description: 'Read a file', parameters: { type: 'object', properties: { path: { type: 'string' } } } } }];
  const answer = await openaiLoop.runTurn({ client, memory, model: 'fake', system: 'Be brief.', tools, runTool, userText: 'What do a.rs and b.rs define?' });

  assert.equal(answer, 'a() and b() are both empty.');
  assert.equal(requests.length, 3);
  for (const [k, r] of requests.entries()) {
    assert.equal(r.messages[0].role, 'system');
    assert.deepStrictEqual(validate(r.messages, 'openai'), [], `request ${k}`);
    assert.equal(r.tools.at(-1).function.name, 'context_reload');
  }
  const reload = memory.messages().find((m) => m.role === 'tool' && m.tool_call_id === 'call_r');
  assert.ok(reload.content.includes('fn a() {}') || reload.content.includes('fn b() {}'), 'the reload holds an original head');
  // Nothing lost: the full results are in the original log.
  assert.ok((await memory.originalMessages()).some((m) => m.content === files['src/a.rs']));
});

test('the Anthropic loop keeps thinking signed, turns alternating and results first', async () => {
  const requests = [];
  const reply = (content, stop) => ({
    id: `msg_${requests.length}`,
    type: 'message',
    role: 'assistant',
    model: 'fake',
    content,
    stop_reason: stop,
    stop_sequence: null,
    usage: { input_tokens: 1, output_tokens: 1 },
  });
  const thinking = (n) => ({ type: 'thinking', thinking: `Step ${n}: decide.`, signature: `SIG-${n}-${'x'.repeat(40)}` });
  const client = {
    messages: {
      create: async (params) => {
        requests.push(structuredClone(params));
        const seen = JSON.stringify(params.messages);
        if (requests.length === 1) {
          return reply(
            [
              thinking(1),
              { type: 'text', text: 'Reading both.', citations: null },
              ...Object.keys(files).map((path, k) => ({ type: 'tool_use', id: `toolu_${k}`, name: 'read_file', input: { path } })),
            ],
            'tool_use',
          );
        }
        if (requests.length === 2) {
          const uuid = markers(seen)[0];
          assert.ok(uuid, 'the second request carries an offload marker');
          return reply([thinking(2), { type: 'tool_use', id: 'toolu_r', name: 'context_reload', input: { working_context_offload_uuid: uuid } }], 'tool_use');
        }
        assert.match(seen, /Original content of offload/);
        return reply([thinking(3), { type: 'text', text: 'Both are empty functions.', citations: null }], 'end_turn');
      },
    },
  };
  const memory = anthropicLoop.createMemory({ maxToken: 16_000, toolResultLimit: 8_000, sessionId: 'anthropic-loop' });
  const tools = [{ name: 'read_file', description: 'Read a file', input_schema: { type: 'object', properties: { path: { type: 'string' } } } }];
  const answer = await anthropicLoop.runTurn({ client, memory, model: 'fake', system: 'Be brief.', tools, runTool, userText: 'What do a.rs and b.rs define?' });

  assert.equal(answer, 'Both are empty functions.');
  assert.equal(requests.length, 3);
  for (const [k, r] of requests.entries()) {
    assert.equal(r.system, 'Be brief.');
    assert.deepStrictEqual(validate(r.messages, 'anthropic'), [], `request ${k}`);
    assert.equal(r.tools.at(-1).name, 'context_reload');
    assert.ok(r.tools.at(-1).input_schema);
  }
  // The tool-use loop's assistant turns come back exactly as the model wrote them.
  const last = requests[2].messages;
  assert.deepStrictEqual(last[1].content[0], thinking(1));
  assert.deepStrictEqual(last[3].content, [thinking(2), { type: 'tool_use', id: 'toolu_r', name: 'context_reload', input: last[3].content[1].input }]);
  // Two results in one user turn, ids kept through truncation.
  assert.deepStrictEqual(last[2].content.map((b) => b.tool_use_id), ['toolu_0', 'toolu_1']);
  assert.ok(markers(JSON.stringify(last[2])).length >= 1);
});

test('the Gemini loop pairs id-less calls, keeps the turn\'s thought signatures and answers after a reload', async () => {
  const requests = [];
  // Gemini 3's shape: a thought, then parallel calls without ids, the first one signed.
  const reply = (parts, usage = 900) => ({ candidates: [{ content: { role: 'model', parts }, finishReason: 'STOP' }], usageMetadata: { promptTokenCount: usage, cachedContentTokenCount: 0 } });
  const signed = (n, call) => ({ functionCall: call, thoughtSignature: `U0lHLSR7${n}${'x'.repeat(40)}` });
  const client = {
    models: {
      generateContent: async (params) => {
        requests.push(structuredClone(params));
        const seen = JSON.stringify(params.contents);
        if (requests.length === 1) {
          const calls = Object.keys(files).map((path) => ({ name: 'read_file', args: { path } }));
          return reply([{ text: 'Two files to read.', thought: true }, signed(1, calls[0]), { functionCall: calls[1] }]);
        }
        if (requests.length === 2) {
          const uuid = markers(seen)[0];
          assert.ok(uuid, 'the second request carries an offload marker');
          return reply([signed(2, { name: 'context_reload', args: { working_context_offload_uuid: uuid } })]);
        }
        assert.match(seen, /Original content of offload/);
        return reply([{ text: 'Both are empty functions.', thoughtSignature: 'U0lHLWFuc3dlcg==' }]);
      },
    },
  };
  const memory = geminiLoop.createMemory({ maxToken: 16_000, toolResultLimit: 8_000, sessionId: 'gemini-loop' });
  const tools = [{ name: 'read_file', description: 'Read a file', parametersJsonSchema: { type: 'object', properties: { path: { type: 'string' } } } }];
  const answer = await geminiLoop.runTurn({ client, memory, model: 'fake', system: 'Be brief.', tools, runTool, userText: 'What do a.rs and b.rs define?' });

  assert.equal(answer, 'Both are empty functions.');
  assert.equal(requests.length, 3);
  for (const [k, r] of requests.entries()) {
    assert.equal(r.config.systemInstruction, 'Be brief.');
    assert.deepStrictEqual(validate(r.contents, 'gemini', { request: true }), [], `request ${k}`);
    const declared = r.config.tools[0].functionDeclarations.at(-1);
    assert.equal(declared.name, 'context_reload');
    assert.deepStrictEqual(declared.parametersJsonSchema.required, ['working_context_offload_uuid']);
  }
  // The turn's model contents come back exactly as the model wrote them, signatures included.
  const last = requests[2].contents;
  assert.equal(last[1].parts[1].thoughtSignature.slice(0, 8), 'U0lHLSR7');
  assert.deepStrictEqual(last[1].parts.map((p) => Object.keys(p)), [['text', 'thought'], ['functionCall', 'thoughtSignature'], ['functionCall']]);
  assert.deepStrictEqual(last[3].parts[0].functionCall.name, 'context_reload');
  // Both responses in one user content, by name, truncated behind a marker.
  assert.deepStrictEqual(last[2].parts.map((p) => p.functionResponse.name), ['read_file', 'read_file']);
  assert.ok(markers(JSON.stringify(last[2])).length >= 1);
  assert.ok((await memory.originalMessages()).some((c) => c.parts?.some((p) => p.functionResponse?.response?.output === files['src/a.rs'])));
});

test('the Agents SDK example keeps every model call in the window and answers after a reload', async () => {
  const big = { ...files, 'src/c.rs': `fn c() {}\n${text(30_000, 3)}`, 'src/d.rs': `fn d() {}\n${text(30_000, 4)}` };
  let reloaded = false;
  const model = new ScriptedModel((input, n) => {
    const last = input.at(-1);
    if (last.role === 'user') {
      const paths = last.content.includes('a.rs') ? ['src/a.rs', 'src/b.rs'] : ['src/c.rs', 'src/d.rs'];
      return [reasoning(n), ...paths.map((path, k) => functionCall(`call_${n}_${k}`, 'read_file', { path }))];
    }
    const uuid = markers(JSON.stringify(input))[0];
    if (last.type === 'function_call_result' && last.name === 'read_file' && uuid && !reloaded) {
      reloaded = true;
      return [functionCall(`call_${n}_r`, 'context_reload', { working_context_offload_uuid: uuid })];
    }
    const reload = input.find((i) => i.type === 'function_call_result' && i.name === 'context_reload');
    return [message(reload && /Original content of offload/.test(outputText(reload)) ? 'They define empty functions.' : 'I could not read them.', n)];
  });
  const session = agentsExample.createSession({ maxToken: 16_000, toolResultLimit: 8_000, sessionId: 'agents-example' });
  const agent = agentsExample.createAgent({ session, model, readFile: (path) => big[path] });
  assert.equal(await agentsExample.ask({ agent, session, question: 'What do a.rs and b.rs define?' }), 'They define empty functions.');
  assert.equal(await agentsExample.ask({ agent, session, question: 'And c.rs and d.rs?' }), 'They define empty functions.');
  assert.ok(reloaded, 'the model reloaded an offload');
  for (const [k, input] of model.inputs.entries()) {
    assert.deepStrictEqual(validate(input, 'openai-responses'), [], `request ${k}`);
    assert.ok(requestTokens(input) <= 16_000, `request ${k}: ${requestTokens(input)} tokens`);
  }
  // Both questions and all four files are in the session, once each.
  const originals = (await session.memory.originalMessages());
  assert.equal(originals.filter((i) => i.role === 'user').length, 2);
  assert.equal(originals.filter((i) => i.type === 'function_call_result' && i.name === 'read_file').length, 4);
});
