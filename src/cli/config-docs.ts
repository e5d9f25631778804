/**
 * Renders docs/configuration.md from the flag table, so the document cannot drift from the code
 * (a unit test compares the committed file with this output). Run: node dist/src/cli/config-docs.js
 */
import { FLAGS } from './flags.js';

export function configurationMarkdown(): string {
  const lines = [
    '# Command-line options',
    '',
    '<!-- Generated from src/cli/flags.ts by `node dist/src/cli/config-docs.js > docs/configuration.md`. Do not edit. -->',
    '',
    "Nereid takes `tritonserver`'s flags, as `--flag=value` or `--flag value`; a boolean flag alone means `true`.",
    'Flags marked *compatibility only* are accepted so that existing command lines keep working, and change nothing here.',
    '',
    '| flag | value | default | meaning |',
    '| --- | --- | --- | --- |',
  ];
  for (const f of FLAGS) {
    const names = [f.name, ...(f.aliases ?? [])].map((n) => `\`--${n}\``).join(', ');
    const help = f.help.replace(/\|/g, '\\|') + (f.apply ? '' : ' *(compatibility only)*');
    lines.push(`| ${names} | ${f.kind} | ${f.defaultText ?? ''} | ${help} |`);
  }
  return lines.join('\n') + '\n';
}

if (process.argv[1] && import.meta.url === new URL(`file://${process.argv[1]}`).href) {
  process.stdout.write(configurationMarkdown());
}
