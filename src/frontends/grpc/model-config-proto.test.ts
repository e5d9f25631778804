import assert from 'node:assert/strict';
import { readFileSync } from 'node:fs';
import path from 'node:path';
import { describe, it } from 'node:test';
import protobuf from 'protobufjs';
import * as fixtures from '../../model-config/example-configs.testkit.js';
import {
  MESSAGES,
  freezeModelConfig,
  modelConfigToJson,
  parseModelConfigJson,
  parseModelConfigText,
  type FieldDescriptor,
} from '../../model-config/index.js';
import { PROTO_DIR, codec, protoRoot } from './messages.js';
import { renderModelConfigProto } from './model-config-proto.js';

describe('proto/model_config.proto', () => {
  it('is exactly what the schema table renders (regenerate it when the schema changes)', () => {
    const file = readFileSync(path.join(PROTO_DIR, 'model_config.proto'), 'utf8');
    assert.equal(file, renderModelConfigProto(), 'see the header of model-config-proto.ts to regenerate');
  });

  it('declares, for protobufjs, every schema message with the same fields and numbers', () => {
    const root = protoRoot();
    const kind = (f: FieldDescriptor): string =>
      f.type === 'message' || f.type === 'enum' ? f.typeName! : f.type;
    for (const [name, desc] of MESSAGES) {
      const type = root.lookupType(`inference.${name}`);
      assert.equal(type.fieldsArray.length, desc.fields.length, name);
      for (const f of desc.fields) {
        const pf = type.fields[f.name];
        assert.ok(pf, `${name}.${f.name}`);
        assert.equal(pf.id, f.number, `${name}.${f.name} number`);
        assert.equal(pf.repeated, f.label === 'repeated', `${name}.${f.name} label`);
        assert.equal(pf instanceof protobuf.MapField, f.label === 'map', `${name}.${f.name} map`);
        const resolved = pf.resolvedType ? pf.resolvedType.fullName.replace(/^\.inference\./, '') : pf.type;
        assert.equal(resolved, kind(f), `${name}.${f.name} type`);
        assert.equal(pf.partOf?.name, f.oneof, `${name}.${f.name} oneof`);
      }
    }
  });
});

describe('ModelConfigResponse encoding', () => {
  const texts: [string, string][] = [];
  for (const [name, value] of Object.entries(fixtures) as [string, unknown][]) {
    if (typeof value === 'string') texts.push([name, value]);
  }

  it('round-trips every fixture config: core JSON → protobuf → JSON reader gives the same config', () => {
    assert.ok(texts.length >= 8);
    const response = codec('inference.ModelConfigResponse');
    for (const [name, text] of texts) {
      const json = modelConfigToJson(freezeModelConfig(parseModelConfigText(text, name)));
      const bytes = response.encode({ config: json });
      const decoded = response.decode(Buffer.from(bytes));
      const type = protoRoot().lookupType('inference.ModelConfigResponse');
      // protobufjs' JSON form: 64-bit integers as strings, enums by name, unset fields absent.
      const asJson = type.toObject(type.decode(bytes), { longs: String, enums: String });
      const back = modelConfigToJson(
        freezeModelConfig(parseModelConfigJson(JSON.stringify(asJson.config), `${name} via protobuf`)),
      );
      assert.deepEqual(back, json, name);
      assert.ok(decoded.config, name);
    }
  });

  it('keeps 64-bit values exactly', () => {
    const response = codec('inference.ModelConfigResponse');
    const bytes = response.encode({
      config: {
        name: 'm',
        version_policy: { specific: { versions: ['9007199254740993'] } },
        max_batch_size: 4,
      },
    });
    const back = response.decode(Buffer.from(bytes));
    const config = back.config as { version_policy: { specific: { versions: string[] } } };
    assert.deepEqual(config.version_policy.specific.versions, ['9007199254740993']);
  });
});
