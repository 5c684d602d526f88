import assert from 'node:assert/strict'
import { describe, test } from 'node:test'
import { WasmPatchError, importedMemoryLimits, shareImportedMemory } from './wasm-shared-memory.ts'

/** A module importing a function, then `env.memory` with the given limits bytes, and nothing else. */
function moduleImportingMemory(limits: number[]): Uint8Array {
  const name = (text: string) => [text.length, ...new TextEncoder().encode(text)]
  const types = [0x01, 0x04, 0x01, 0x60, 0x00, 0x00] // section 1: one type, () -> ()
  const imports = [0x02, ...name('env'), ...name('f'), 0x00, 0x00, ...name('env'), ...name('memory'), 0x02, ...limits]
  return new Uint8Array([0x00, 0x61, 0x73, 0x6d, 0x01, 0x00, 0x00, 0x00, ...types, 0x02, imports.length, ...imports])
}

const instantiate = (bytes: Uint8Array, memory: WebAssembly.Memory) =>
  new WebAssembly.Instance(new WebAssembly.Module(bytes as Uint8Array<ArrayBuffer>), { env: { f: () => {}, memory } })

describe('declaring a WebAssembly module\'s imported memory shared', () => {
  test('a memory without a maximum gets the one given, and links only to a shared memory', () => {
    const original = moduleImportingMemory([0x00, 0x02])
    assert.deepEqual(importedMemoryLimits(original), { min: 2, max: null, shared: false })
    const shared = shareImportedMemory(original, 300)
    assert.deepEqual(importedMemoryLimits(shared), { min: 2, max: 300, shared: true })
    assert.throws(() => instantiate(shared, new WebAssembly.Memory({ initial: 2, maximum: 300 })), WebAssembly.LinkError)
    const memory = new WebAssembly.Memory({ initial: 2, maximum: 300, shared: true })
    instantiate(shared, memory)
    assert.ok(memory.buffer instanceof SharedArrayBuffer)
  })

  test('a memory with a maximum keeps it (a two-byte LEB128 number too)', () => {
    const shared = shareImportedMemory(moduleImportingMemory([0x01, 0x80, 0x10, 0x80, 0x80, 0x02]))
    assert.deepEqual(importedMemoryLimits(shared), { min: 2048, max: 32768, shared: true })
    instantiate(shared, new WebAssembly.Memory({ initial: 2048, maximum: 32768, shared: true }))
  })

  test('an already shared memory is left as it is', () => {
    const once = shareImportedMemory(moduleImportingMemory([0x00, 0x01]), 10)
    assert.equal(shareImportedMemory(once), once)
  })

  test('refuses what it cannot patch, with a precise error', () => {
    assert.throws(() => shareImportedMemory(new Uint8Array([1, 2, 3])), WasmPatchError)
    const noMemory = new Uint8Array([0x00, 0x61, 0x73, 0x6d, 0x01, 0x00, 0x00, 0x00])
    assert.equal(importedMemoryLimits(noMemory), null)
    assert.throws(() => shareImportedMemory(noMemory), /imports no memory/)
    assert.throws(() => shareImportedMemory(moduleImportingMemory([0x04, 0x01])), /unexpected memory limits flags 4/)
  })
})
