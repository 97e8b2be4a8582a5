// NestJS 12 ships ES modules: swc compiles TypeScript and those packages to CommonJS.
const swc = [
  '@swc/jest',
  {
    jsc: {
      parser: { syntax: 'typescript', decorators: true },
      transform: { legacyDecorator: true, decoratorMetadata: true },
      target: 'es2022',
    },
    module: { type: 'commonjs' },
  },
];
const base = {
  testEnvironment: 'node',
  moduleFileExtensions: ['js', 'mjs', 'json', 'ts'],
  // Only the innermost node_modules segment counts: light-my-request/node_modules/cookie is nested.
  // @fastify/cookie loads the ESM cookie package by import(), which jest's CommonJS runtime can only do once compiled to require.
  transformIgnorePatterns: [
    '/node_modules/(?!(?:[^/]+/)*node_modules/)(?!(@nestjs|cookie|file-type|strtok3|token-types|@tokenizer|uint8array-extras|@borewit|content-disposition|@fastify/cookie)/)',
  ],
  transform: { '^.+\\.(t|j|mj)s$': swc },
  moduleNameMapper: {
    '^@app/(common|db|signature|channels|region|queue|orders|operator|callbacks|recon)$': '<rootDir>/libs/$1/src',
    '^@app/(common|db|signature|channels|region|queue|orders|operator|callbacks|recon)/(.*)$': '<rootDir>/libs/$1/src/$2',
  },
};
// The Redis Sentinel, Cluster and TLS specs start their own Redis processes and the compiled apps (about
// 5 minutes): not part of npm test; .ci/redisha.sh runs them as the redis-ha project (REDIS_HA_TESTS=1).
const REDIS_HA_SPECS = ['<rootDir>/test/redis-sentinel.e2e-spec.ts', '<rootDir>/test/redis-cluster.e2e-spec.ts', '<rootDir>/test/redis-tls.e2e-spec.ts'];
const e2e = {
  ...base,
  globalSetup: '<rootDir>/test/global-setup.ts',
  globalTeardown: '<rootDir>/test/global-teardown.ts',
};
module.exports = {
  // A global option (ignored inside a project): e2e hooks boot apps and databases on a shared 2-core machine.
  testTimeout: 30000,
  projects: [
    { ...base, displayName: 'unit', testMatch: ['<rootDir>/libs/**/*.spec.ts', '<rootDir>/apps/**/*.spec.ts', '<rootDir>/examples/**/*.spec.ts'] },
    {
      ...e2e,
      displayName: 'e2e',
      testMatch: ['<rootDir>/test/**/*.e2e-spec.ts'],
      testPathIgnorePatterns: ['/node_modules/', '/test/redis-(sentinel|cluster|tls)\\.e2e-spec\\.ts$'],
    },
    ...(process.env.REDIS_HA_TESTS === '1' ? [{ ...e2e, displayName: 'redis-ha', testMatch: REDIS_HA_SPECS }] : []),
  ],
};
