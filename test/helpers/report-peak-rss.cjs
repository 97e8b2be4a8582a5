// Preloaded into a child process (node --require): prints its peak resident memory as it exits, for specs that bound it.
process.on('exit', () => {
  require('node:fs').writeSync(2, `\npeak_rss_kib=${process.resourceUsage().maxRSS}\n`);
});
