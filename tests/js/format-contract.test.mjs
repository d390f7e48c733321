// The guarantees in every wire format (tests/contract/format-contract.mjs), in Node; the Deno
// and workerd suites run the same cases.
import { test } from 'node:test';
import { AutoContextMemory, validate } from 'autocontext';
import { MemoryStore } from 'autocontext/stores/memory';
import { formatContract } from '../contract/format-contract.mjs';

for (const { name, run } of formatContract({ AutoContextMemory, validate, MemoryStore })) test(name, run);
