/**
 * Renders proto/model_config.proto from the model-config schema table, so the .proto we ship for
 * ModelConfigResponse and the table the config parser, printer and gRPC encoder use can never drift
 * apart (model-config-proto.test.ts compares the file with this output).
 *
 * Regenerate after a schema change:
 *   npx tsc -p tsconfig.json && node -e "import('./dist/src/frontends/grpc/model-config-proto.js')
 *     .then((m) => process.stdout.write(m.renderModelConfigProto()))" > proto/model_config.proto
 */
import {
  ENUMS,
  MESSAGES,
  type EnumDescriptor,
  type FieldDescriptor,
  type MessageDescriptor,
} from '../../model-config/schema.js';

const HEADER = `// Triton's model configuration (package \`inference\`), the message ModelConfigResponse carries.
// GENERATED from src/model-config/schema.ts by src/frontends/grpc/model-config-proto.ts: do not edit;
// change the schema table and regenerate. Names and field numbers are the wire contract.

syntax = "proto3";

package inference;
`;

interface Node {
  readonly name: string;
  message?: MessageDescriptor;
  enumDesc?: EnumDescriptor;
  readonly children: Node[];
}

/** Builds the nesting tree: 'A.B' lives inside message 'A'. Declaration order is kept. */
function buildTree(): Node[] {
  const roots: Node[] = [];
  const byPath = new Map<string, Node>();
  const place = (path: string): Node => {
    const existing = byPath.get(path);
    if (existing) return existing;
    const dot = path.lastIndexOf('.');
    const node: Node = { name: path.slice(dot + 1), children: [] };
    byPath.set(path, node);
    (dot === -1 ? roots : place(path.slice(0, dot)).children).push(node);
    return node;
  };
  for (const [name, e] of ENUMS) place(name).enumDesc = e;
  for (const [name, m] of MESSAGES) place(name).message = m;
  return roots;
}

function typeOf(f: FieldDescriptor): string {
  return f.type === 'message' || f.type === 'enum' ? f.typeName! : f.type;
}

function fieldLine(f: FieldDescriptor): string {
  if (f.label === 'map') return `map<${f.keyType!}, ${typeOf(f)}> ${f.name} = ${f.number};`;
  const prefix = f.label === 'repeated' ? 'repeated ' : '';
  return `${prefix}${typeOf(f)} ${f.name} = ${f.number};`;
}

function renderNode(node: Node, indent: string, out: string[]): void {
  if (node.enumDesc) {
    out.push(`${indent}enum ${node.name}`, `${indent}{`);
    for (const v of node.enumDesc.values) out.push(`${indent}  ${v.name} = ${v.number};`);
    out.push(`${indent}}`);
    return;
  }
  const msg = node.message;
  if (!msg) throw new Error(`schema names '${node.name}' only as a scope`);
  const inner = indent + '  ';
  if (msg.fields.length === 0 && node.children.length === 0) {
    out.push(`${indent}message ${node.name} {}`);
    return;
  }
  out.push(`${indent}message ${node.name}`, `${indent}{`);
  for (const child of node.children) {
    renderNode(child, inner, out);
    out.push('');
  }
  const doneOneofs = new Set<string>();
  for (const f of msg.fields) {
    if (f.oneof === undefined) {
      out.push(inner + fieldLine(f));
      continue;
    }
    if (doneOneofs.has(f.oneof)) continue;
    doneOneofs.add(f.oneof);
    out.push(`${inner}oneof ${f.oneof}`, `${inner}{`);
    for (const g of msg.fields) if (g.oneof === f.oneof) out.push(`${inner}  ${fieldLine(g)}`);
    out.push(`${inner}}`);
  }
  if (out[out.length - 1] === '') out.pop();
  out.push(`${indent}}`);
}

export function renderModelConfigProto(): string {
  const out: string[] = [HEADER];
  for (const node of buildTree()) {
    renderNode(node, '', out);
    out.push('');
  }
  return out.join('\n');
}
