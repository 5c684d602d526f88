#!/usr/bin/env node
// The `service` command: loads the TypeScript CLI through tsx (no build step).
import { register } from 'tsx/esm/api'

register()
const { main } = await import('../src/main.ts')
process.exitCode = await main(process.argv.slice(2))
