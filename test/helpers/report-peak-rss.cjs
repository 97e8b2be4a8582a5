// Preloaded into a child process (node --require): prints its peak resident memory as it exits, for specs that bound it.
// VmHWM, not resourceUsage().maxRSS: Linux carries ru_maxrss across fork and exec, so a child of a large jest
// process would report its parent's size (seen: 822 MiB for a 220 MiB child late in a full run).
process.on('exit', () => {
  const fs = require('node:fs');
  const hwm = /^VmHWM:\s+(\d+) kB/m.exec(fs.readFileSync('/proc/self/status', 'utf8'));
  fs.writeSync(2, `\npeak_rss_kib=${hwm ? hwm[1] : process.resourceUsage().maxRSS}\n`);
});
