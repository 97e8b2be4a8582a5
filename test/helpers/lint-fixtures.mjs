// Judges fixture texts as `npm run lint` would judge files at their paths: ESLint's and Prettier's Node APIs with this
// repository's configuration. A process of its own: both load ES modules, which jest's module system cannot.
// stdin: [{ file, text }]; stdout: [{ problems: ['rule: message'], formatted }].
import { readFileSync } from 'node:fs';
import { join, resolve } from 'node:path';
import { ESLint } from 'eslint';
import * as prettier from 'prettier';

const root = resolve(import.meta.dirname, '../..');
const eslint = new ESLint({ cwd: root });
const judged = [];
for (const { file, text } of JSON.parse(readFileSync(0, 'utf8'))) {
  const path = join(root, file);
  const [result] = await eslint.lintText(text, { filePath: path });
  const formatted = await prettier.check(text, { ...(await prettier.resolveConfig(path)), filepath: path });
  judged.push({ problems: result.messages.map((m) => `${m.ruleId}: ${m.message}`), formatted });
}
process.stdout.write(JSON.stringify(judged));
