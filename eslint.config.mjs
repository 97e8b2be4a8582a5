import path from 'node:path';
import js from '@eslint/js';
import tseslint from 'typescript-eslint';
import prettier from 'eslint-config-prettier';

const ROOT = import.meta.dirname;
const MIGRATIONS = path.join(ROOT, 'migrations');

/** Where a file sits: { top: 'apps' | 'libs', name } for an app or a lib, else { top } (migrations, test, scripts...). */
function placeOf(file) {
  const [top, name] = path.relative(ROOT, file).split(path.sep);
  return top === 'apps' || top === 'libs' ? { top, name } : { top };
}

/** Why importing `source` from `file` crosses a boundary, or null when it does not. */
function crossing(file, source) {
  const from = placeOf(file);
  const relative = source.startsWith('.');
  const target = relative ? path.resolve(path.dirname(file), source) : null;
  // A package, or a lib by its @app/<lib> name: only a relative path can reach into a folder of this repository.
  const to = relative ? placeOf(target) : { top: 'package' };

  if (from.top === 'migrations') {
    const sibling = relative && path.dirname(target) === MIGRATIONS && path.dirname(file) === MIGRATIONS;
    return source === 'typeorm' || sibling
      ? null
      : 'A migration holds the SQL it ran as literal text: it imports typeorm and sibling migrations only, never current source (issue 39).';
  }
  if (from.top === 'libs' && to.top === 'apps') return 'A lib never imports an app: what both need belongs in a lib.';
  if (to.top === 'apps' && to.name !== from.name && from.name !== 'embedded')
    // apps/embedded alone runs the API and the worker in one process, so it may start them.
    return 'An app does not import another app: move what both need into a lib (libs/operator holds what the CLI and the embedded app share).';
  if (relative && to.top === 'libs' && to.name !== from.name) return `Import @app/${to.name}, not a path into it.`;
  if (relative && to.top === 'migrations' && !(from.top === 'libs' && from.name === 'db')) return 'Only libs/db reads migrations/.';
  if (relative && !['apps', 'libs', 'migrations'].includes(to.top) && !file.endsWith('.spec.ts'))
    return `apps and libs import nothing from ${to.top}/: it is built on them, not under them.`;
  return null;
}

/** apps -> libs -> nothing above; a lib through its @app/<lib> name; migrations frozen. */
const importBoundaries = {
  meta: { type: 'problem', docs: { description: 'Imports follow the layers: apps -> libs -> nothing above; migrations import typeorm only' }, schema: [] },
  create(context) {
    const file = context.filename;
    if (!['apps', 'libs', 'migrations'].includes(placeOf(file).top)) return {};
    const check = (node) => {
      if (node?.type !== 'Literal' || typeof node.value !== 'string') return;
      const why = crossing(file, node.value);
      if (why) context.report({ node, message: why });
    };
    return {
      ImportDeclaration: (n) => check(n.source),
      ExportNamedDeclaration: (n) => check(n.source),
      ExportAllDeclaration: (n) => check(n.source),
      ImportExpression: (n) => check(n.source),
      TSImportEqualsDeclaration: (n) => check(n.moduleReference.expression),
      'CallExpression[callee.name="require"]': (n) => check(n.arguments[0]),
    };
  },
};

const SQL_ELSEWHERE = 'SQL lives in libs/db (a repository method or libs/db/src/sql); call that instead.';
/** The start of a SQL statement as written here: upper-case keywords. */
const SQL_START = String.raw`/^\s*(SELECT|INSERT INTO|UPDATE|DELETE FROM|WITH|CREATE|ALTER|DROP|TRUNCATE|LOCK TABLE)\s/`;

export default tseslint.config(
  { ignores: ['dist/**', '.build/**', 'node_modules/**', '.data/**', 'coverage/**', 'libs/region/data/**'] },
  js.configs.recommended,
  ...tseslint.configs.recommended,
  {
    languageOptions: {
      globals: {
        process: 'readonly',
        console: 'readonly',
        Buffer: 'readonly',
        __dirname: 'readonly',
        require: 'readonly',
        module: 'writable',
        setTimeout: 'readonly',
        clearTimeout: 'readonly',
        setInterval: 'readonly',
        clearInterval: 'readonly',
        URL: 'readonly',
        URLSearchParams: 'readonly',
        AbortController: 'readonly',
        AbortSignal: 'readonly',
        fetch: 'readonly',
        TextEncoder: 'readonly',
        TextDecoder: 'readonly',
        performance: 'readonly',
        setImmediate: 'readonly',
        structuredClone: 'readonly',
      },
    },
    rules: {
      '@typescript-eslint/no-unused-vars': ['error', { argsIgnorePattern: '^_', varsIgnorePattern: '^_' }],
      '@typescript-eslint/no-require-imports': 'off',
    },
  },
  {
    files: ['apps/**/*.ts', 'libs/**/*.ts', 'migrations/**/*.ts'],
    plugins: { layers: { rules: { 'import-boundaries': importBoundaries } } },
    rules: { 'layers/import-boundaries': 'error' },
  },
  // SQL only in libs/db (unit specs aside: they may hold SQL as data). Caught: the driver, TypeORM's raw and builder entry points, and string or template text starting
  // like a statement. Not caught: SQL in lower case or built from fragments that do not start one, TypeORM's entity API.
  {
    files: ['apps/**/*.ts', 'libs/**/*.ts'],
    ignores: ['libs/db/**', '**/*.spec.ts'],
    rules: {
      'no-restricted-imports': ['error', { paths: [{ name: 'pg', message: SQL_ELSEWHERE }] }],
      'no-restricted-syntax': [
        'error',
        { selector: `Literal[value=${SQL_START}]`, message: SQL_ELSEWHERE },
        { selector: `TemplateElement[value.raw=${SQL_START}]`, message: SQL_ELSEWHERE },
        // A query method given text: TypeORM's DataSource, EntityManager and QueryRunner run it as SQL.
        { selector: `CallExpression[callee.property.name='query'][arguments.0.type='TemplateLiteral']`, message: SQL_ELSEWHERE },
        { selector: `CallExpression[callee.property.name='query'][arguments.0.type='Literal'][arguments.0.raw=/^['"]/]`, message: SQL_ELSEWHERE },
        { selector: `CallExpression[callee.property.name=/^(createQueryBuilder|getRepository)$/]`, message: SQL_ELSEWHERE },
      ],
    },
  },
  // Last: prettier owns layout, so eslint's layout rules (no-unexpected-multiline among them) stand down.
  prettier,
);
