import assert from 'node:assert/strict';
import { test } from 'node:test';
import { parseAnswer, parseTools, toolGrammar, ToolStream, type ToolChoice } from './tools.js';

const { tools } = parseTools({
  tools: [
    {
      type: 'function',
      function: {
        name: 'get_weather',
        parameters: { type: 'object', properties: { city: { type: 'string' } } },
      },
    },
    { type: 'function', function: { name: 'get_time' } },
  ],
});
const auto: ToolChoice = { kind: 'auto' };

const calls = (text: string, choice: ToolChoice = auto) =>
  parseAnswer(text, tools, choice).calls.map((c) => [
    c.function.name,
    JSON.parse(c.function.arguments) as unknown,
  ]);

test('auto reads Hermes <tool_call> blocks and keeps the text around them as content', () => {
  const text =
    'Let me look.<tool_call>{"name": "get_weather", "arguments": {"city": "Oslo"}}</tool_call>\n<tool_call>{"name":"get_time","arguments":{}}</tool_call>';
  assert.deepEqual(calls(text), [
    ['get_weather', { city: 'Oslo' }],
    ['get_time', {}],
  ]);
  assert.equal(parseAnswer(text, tools, auto).content, 'Let me look.');
});

test('auto reads an answer that is only a call object (Llama 3 form), with `parameters` too', () => {
  assert.deepEqual(calls(' {"name": "get_time", "parameters": {"zone": "UTC"}} '), [
    ['get_time', { zone: 'UTC' }],
  ]);
  assert.equal(parseAnswer('{"name": "get_time", "arguments": {}}', tools, auto).content, null);
});

test('an unknown function, a malformed block or plain text stays text', () => {
  for (const text of [
    '<tool_call>{"name": "rm", "arguments": {}}</tool_call>',
    '<tool_call>{"name": </tool_call>',
    'hello',
    '{"a": 1}',
  ]) {
    assert.deepEqual(parseAnswer(text, tools, auto), { content: text, calls: [] });
  }
});

test('required reads a list of calls; a cut-off answer stays text', () => {
  const required: ToolChoice = { kind: 'required' };
  assert.deepEqual(
    calls(
      '[{"name": "get_time", "arguments": {}}, {"name": "get_weather", "arguments": {"city": "Paris"}}]\n\n',
      required,
    ),
    [
      ['get_time', {}],
      ['get_weather', { city: 'Paris' }],
    ],
  );
  assert.deepEqual(parseAnswer('[{"name": "get_ti', tools, required).calls, []);
  assert.deepEqual(parseAnswer('{"name": "get_time", "arguments": {}}', tools, { kind: 'none' }).calls, []);
});

test('the grammar for required lists every function; a named one is that function only', () => {
  const req = toolGrammar(tools, { kind: 'required' }, false) as {
    json: { items: { oneOf: unknown[] }; maxItems: number };
  };
  assert.equal(req.json.items.oneOf.length, 2);
  assert.equal(req.json.maxItems, 1);
  const named = toolGrammar(tools, { kind: 'function', name: 'get_time' }, true) as {
    json: { properties: { name: { const: string } } };
  };
  assert.equal(named.json.properties.name.const, 'get_time');
  assert.equal(toolGrammar(tools, auto, true), undefined);
});

test('streaming lets plain text through and holds from a possible <tool_call> on', () => {
  const s = new ToolStream(tools, auto);
  const sent = ['Sure', ', <tool', '_call>{"name": "get_time", ', '"arguments": {}}</tool_call>'].map((p) =>
    s.push(p),
  );
  assert.deepEqual(sent, ['Sure', ', ', '', '']);
  const end = s.finish();
  assert.equal(end.content, null);
  assert.deepEqual(
    end.calls.map((c) => c.function.name),
    ['get_time'],
  );
  const plain = new ToolStream(tools, auto);
  assert.equal(plain.push('a <to') + plain.push('y'), 'a <toy');
  assert.deepEqual(plain.finish(), { content: '', calls: [] });
});

test('tool_choice and tools are checked', () => {
  assert.throws(() => parseTools({ tool_choice: 'required' }), /needs 'tools'/);
  assert.throws(() => parseTools({ tools: [{ type: 'function', function: { name: 'a b' } }] }), /letters/);
  assert.throws(
    () =>
      parseTools({
        tools: tools.map((t) => t.raw),
        tool_choice: { type: 'function', function: { name: 'x' } },
      }),
    /does not have/,
  );
  assert.deepEqual(parseTools({ tools: tools.map((t) => t.raw) }).toolChoice, { kind: 'auto' });
});
