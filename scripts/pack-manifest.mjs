#!/usr/bin/env node
// `npm pack` ships package.json as it is on disk while the tarball is made. `prepack` (`strip`)
// leaves in it only the scripts an installed package can run: the others build from src/ and
// scripts/, which are not shipped, and an install script (`prepare`) makes npm warn on every
// install of the tarball. `postpack` (`restore`) puts the original back. Both keep the file's
// modification time, so ensure-build.mjs does not take the edit for a change to rebuild from.
import { existsSync, readFileSync, renameSync, statSync, utimesSync, writeFileSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';

const root = join(dirname(fileURLToPath(import.meta.url)), '..');
const manifest = join(root, 'package.json');
/** The original while a pack runs; left behind only by a pack that died before `postpack`. */
const original = join(root, '.package.json.packing');
/** `start` runs the shipped build (dist/main.js) and nothing else. */
const SHIPPED_SCRIPTS = new Set(['start']);

function restore() {
  // A rename keeps the original's modification time.
  if (existsSync(original)) renameSync(original, manifest);
}

function strip() {
  restore();
  const { atime, mtime } = statSync(manifest);
  const pkg = JSON.parse(readFileSync(manifest, 'utf8'));
  pkg.scripts = Object.fromEntries(Object.entries(pkg.scripts ?? {}).filter(([name]) => SHIPPED_SCRIPTS.has(name)));
  renameSync(manifest, original);
  writeFileSync(manifest, `${JSON.stringify(pkg, null, 2)}\n`);
  utimesSync(manifest, atime, mtime);
}

const step = process.argv[2];
if (step === 'strip') strip();
else if (step === 'restore') restore();
else {
  console.error('usage: node scripts/pack-manifest.mjs strip|restore (npm runs it around `npm pack`)');
  process.exit(2);
}
