#!/usr/bin/env node
// Regenerates fixtures/signature-vectors.json from the pinned twilio SDK.
// `--check` exits 1 if the file differs from what the SDK computes now.
'use strict';

const fs = require('node:fs');
const path = require('node:path');
const { document } = require(path.join(__dirname, '..', 'lib', 'signature-vectors.js'));

const FILE = path.join(__dirname, '..', 'fixtures', 'signature-vectors.json');
const text = `${JSON.stringify(document(), null, 2)}\n`;
if (process.argv.includes('--check')) {
  const current = fs.existsSync(FILE) ? fs.readFileSync(FILE, 'utf8') : '';
  if (current !== text) {
    process.stderr.write(`${FILE} is stale: run node bin/signature-vectors.js\n`);
    process.exit(1);
  }
} else {
  fs.writeFileSync(FILE, text);
  process.stdout.write(`wrote ${FILE}\n`);
}
