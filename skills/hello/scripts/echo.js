#!/usr/bin/env node
// Print the JSON arguments read from stdin inside a JSON object.
'use strict';

const chunks = [];
process.stdin.on('data', (chunk) => chunks.push(chunk));
process.stdin.on('end', () => {
  const raw = Buffer.concat(chunks).toString('utf8');
  let args = {};
  if (raw.trim() !== '') {
    try {
      args = JSON.parse(raw);
    } catch (err) {
      process.stderr.write(`echo.js: standard input is not JSON: ${err.message}\n`);
      process.exitCode = 1;
      return;
    }
  }
  process.stdout.write(JSON.stringify({ skill: 'hello', runtime: 'node', args }) + '\n');
});
