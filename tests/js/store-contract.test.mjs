// The OffloadStore contract (tests/contract) against the stores that live in Node: memory and fs.
import { test } from 'node:test';
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { MemoryStore } from 'autocontext/stores/memory';
import { FsStore } from 'autocontext/stores/fs';
import { storeContract } from '../contract/store-contract.mjs';

for (const { name, run } of storeContract(() => new MemoryStore())) test(`MemoryStore: ${name}`, run);

const dirs = new Map();
const openFs = async () => {
  const dir = await mkdtemp(join(tmpdir(), 'autocontext-contract-'));
  const store = new FsStore(dir);
  dirs.set(store, dir);
  return store;
};
const closeFs = (store) => rm(dirs.get(store), { recursive: true, force: true });
for (const { name, run } of storeContract(openFs, { close: closeFs, checksKeys: true })) test(`FsStore: ${name}`, run);
