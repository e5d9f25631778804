/**
 * Renders docs/configuration.md from the flag table, so the document cannot drift from the code
 * (a unit test compares the committed file with this output). Run: node dist/src/cli/config-docs.js
 */
import { FLAGS } from '../compose/flags.js';

export function configurationMarkdown(): string {
  const lines = [
    '# Command-line options',
    '',
    '<!-- Generated from src/compose/flags.ts by `node dist/src/cli/config-docs.js > docs/configuration.md`. Do not edit. -->',
    '',
    "Nereid takes `tritonserver`'s flags, as `--flag=value` or `--flag value`; a boolean flag alone means `true`.",
    "Every flag of `tritonserver`'s parser is accepted. Flags marked *no effect* cannot apply to this server (GPU, SageMaker, Vertex AI) or are not built yet: they are accepted so that existing command lines keep working, and each one given logs one start-up warning saying why and what Nereid does instead.",
    '',
    '| flag | value | default | meaning |',
    '| --- | --- | --- | --- |',
  ];
  for (const f of FLAGS) {
    const names = [f.name, ...(f.aliases ?? [])].map((n) => `\`--${n}\``).join(', ');
    const note = f.apply ? '' : ` *No effect: ${f.inert ?? ''}.*`;
    const help = (f.help + note).replace(/\|/g, '\\|');
    lines.push(`| ${names} | ${f.kind} | ${f.defaultText ?? ''} | ${help} |`);
  }
  return lines.join('\n') + '\n';
}

if (process.argv[1] && import.meta.url === new URL(`file://${process.argv[1]}`).href) {
  process.stdout.write(configurationMarkdown());
}
