/**
 * Builds kubeconform's schema folder offline. kubeconform normally downloads JSON schemas converted from
 * Kubernetes' OpenAPI documents; here they are made from the OpenAPI v3 documents in the k8s.io/kubernetes
 * Go module (api/openapi-spec/v3) and from CustomResourceDefinition files (KServe, the Prometheus operator),
 * in the layout kubeconform reads for `-schema-location DIR -kubernetes-version V -strict`:
 * DIR/v<V>-standalone-strict/<kind><-group><-version>.json, every $ref inlined ("standalone") and every object
 * that lists its properties closed with additionalProperties: false ("strict"), so an unknown field fails.
 *
 * Usage (scripts/setup-deploy-tools.sh runs it): node k8s-schemas.js OUT_DIR K8S_VERSION OPENAPI_V3_DIR
 * [CRD_YAML...]
 */
import { mkdirSync, readdirSync, readFileSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import { parseAllDocuments } from 'yaml';

type Schema = { [key: string]: unknown };

const isObject = (v: unknown): v is Schema => typeof v === 'object' && v !== null && !Array.isArray(v);

/** kubeconform's file name for a kind: lower-case kind, the group's first label (if any), the version. */
export function schemaFileName(kind: string, group: string, version: string): string {
  const groupPart = group === '' ? '' : `-${group.split('.')[0].toLowerCase()}`;
  return `${kind.toLowerCase()}${groupPart}-${version.toLowerCase()}.json`;
}

/**
 * Closes every object schema that lists its properties (unless it says it keeps unknown fields), the way
 * kubeconform's strict schemas do, so a field the API does not know is an error rather than ignored.
 */
export function closeObjects(schema: unknown): unknown {
  if (Array.isArray(schema)) return schema.map(closeObjects);
  if (!isObject(schema)) return schema;
  const out: Schema = {};
  for (const [k, v] of Object.entries(schema)) {
    // `properties` maps names to schemas: recurse into each, without treating the map as a schema.
    out[k] =
      k === 'properties' && isObject(v)
        ? Object.fromEntries(Object.entries(v).map(([name, s]) => [name, closeObjects(s)]))
        : closeObjects(v);
  }
  if (
    isObject(out.properties) &&
    out.additionalProperties === undefined &&
    out['x-kubernetes-preserve-unknown-fields'] !== true
  ) {
    out.additionalProperties = false;
  }
  return out;
}

/**
 * Inlines `#/components/schemas/...` references. A type that contains itself (apiextensions'
 * JSONSchemaProps) is cut at the repeat with an open schema: those kinds are not ones a chart renders.
 */
export function inlineRefs(
  schema: unknown,
  components: Record<string, unknown>,
  seen: string[] = [],
): unknown {
  if (Array.isArray(schema)) return schema.map((s) => inlineRefs(s, components, seen));
  if (!isObject(schema)) return schema;
  const ref = schema.$ref;
  if (typeof ref === 'string') {
    const name = ref.replace(/^#\/components\/schemas\//, '');
    if (seen.includes(name)) return {};
    const target = components[name];
    if (target === undefined) throw new Error(`unresolved $ref ${ref}`);
    const { $ref: _drop, ...siblings } = schema;
    void _drop;
    return { ...siblings, ...(inlineRefs(target, components, [...seen, name]) as Schema) };
  }
  // OpenAPI writes a reference with siblings (a default, a description) as allOf: [{$ref}]; flatten it.
  if (Array.isArray(schema.allOf) && schema.allOf.length === 1 && isObject(schema.allOf[0])) {
    const { allOf, ...rest } = schema;
    return inlineRefs({ ...rest, ...(allOf as Schema[])[0] }, components, seen);
  }
  const out: Schema = {};
  for (const [k, v] of Object.entries(schema)) {
    out[k] =
      k === 'properties' && isObject(v)
        ? Object.fromEntries(Object.entries(v).map(([n, s]) => [n, inlineRefs(s, components, seen)]))
        : inlineRefs(v, components, seen);
  }
  return out;
}

interface Gvk {
  group: string;
  version: string;
  kind: string;
}

/** Writes one strict standalone schema per kind the OpenAPI v3 documents define; returns how many. */
export function convertOpenApi(openApiDir: string, outDir: string): number {
  const written = new Set<string>();
  for (const file of readdirSync(openApiDir).filter((f) => f.endsWith('.json'))) {
    const doc = JSON.parse(readFileSync(path.join(openApiDir, file), 'utf8')) as {
      components?: { schemas?: Record<string, Schema> };
    };
    const components = doc.components?.schemas ?? {};
    for (const [name, schema] of Object.entries(components)) {
      const gvks = schema['x-kubernetes-group-version-kind'] as Gvk[] | undefined;
      // A kind's list type and the apimachinery helpers appear in many documents: only top-level kinds,
      // once each (the same definition in every document that carries it).
      if (!gvks || name.endsWith('List')) continue;
      if (gvks.every((g) => written.has(schemaFileName(g.kind, g.group, g.version)))) continue;
      const standalone = closeObjects(inlineRefs(schema, components, [name])) as Schema;
      for (const gvk of gvks) {
        const fileName = schemaFileName(gvk.kind, gvk.group, gvk.version);
        if (written.has(fileName)) continue;
        writeFileSync(path.join(outDir, fileName), JSON.stringify(standalone));
        written.add(fileName);
      }
    }
  }
  return written.size;
}

/** Writes a strict schema for each served version of each CustomResourceDefinition in a YAML file. */
export function convertCrdFile(file: string, outDir: string): string[] {
  const names: string[] = [];
  for (const doc of parseAllDocuments(readFileSync(file, 'utf8'))) {
    const crd = doc.toJS() as {
      kind?: string;
      spec?: {
        group: string;
        names: { kind: string };
        versions: { name: string; schema?: { openAPIV3Schema?: Schema } }[];
      };
    } | null;
    if (crd?.kind !== 'CustomResourceDefinition' || !crd.spec) continue;
    for (const v of crd.spec.versions) {
      const schema = v.schema?.openAPIV3Schema;
      if (!schema) continue;
      const name = schemaFileName(crd.spec.names.kind, crd.spec.group, v.name);
      writeFileSync(path.join(outDir, name), JSON.stringify(closeObjects(schema)));
      names.push(name);
    }
  }
  return names;
}

function main(argv: string[]): void {
  const [outRoot, k8sVersion, openApiDir, ...crdFiles] = argv;
  if (!outRoot || !k8sVersion || !openApiDir) {
    process.stderr.write('usage: k8s-schemas OUT_DIR K8S_VERSION OPENAPI_V3_DIR [CRD_YAML...]\n');
    process.exit(2);
  }
  const outDir = path.join(outRoot, `v${k8sVersion.replace(/^v/, '')}-standalone-strict`);
  mkdirSync(outDir, { recursive: true });
  const n = convertOpenApi(openApiDir, outDir);
  const crds = crdFiles.flatMap((f) => convertCrdFile(f, outDir));
  process.stdout.write(`k8s-schemas: ${n} Kubernetes kinds and ${crds.length} custom kinds in ${outDir}\n`);
}

if (process.argv[1] && path.resolve(process.argv[1]) === path.resolve(new URL(import.meta.url).pathname)) {
  main(process.argv.slice(2));
}
